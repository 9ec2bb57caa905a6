#include "cli/completion.hpp"

#include <fmt/format.h>

#include "cli/app.hpp"
#include "mlw/api/project.hpp"
#include "mlw/config/user_config.hpp"
#include "mlw/history/record.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::cli {

namespace {

/// The shell scripts: each hands the words typed so far to `mlw __complete` and offers what it
/// prints ("value<TAB>description" lines; ":files" asks for the shell's own file completion).
constexpr const char* k_bash = R"(# bash completion for mlw: source <(mlw completion bash)
_mlw() {
  local cur=${COMP_WORDS[COMP_CWORD]} out value
  COMPREPLY=()
  out=$(command mlw __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
  if [[ $out == :files ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return 0
  fi
  # Each value is quoted for the command line (printf %q: $, (, spaces and the rest escaped with
  # a backslash, as zsh's completion quotes), so a run id or a target name is one word, as it is.
  while IFS=$'\t' read -r value _; do
    [[ -n $value && $value == "$cur"* ]] && printf -v value '%q' "$value" && COMPREPLY+=("$value")
  done <<< "$out"
}
complete -F _mlw mlw
)";

constexpr const char* k_zsh = R"(#compdef mlw
# zsh completion for mlw: source <(mlw completion zsh), or save as _mlw in a folder of $fpath
_mlw() {
  local -a lines described
  local line
  lines=("${(@f)$(command mlw __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ ${lines[1]} == :files ]]; then
    _files
    return
  fi
  for line in $lines; do
    [[ -z $line ]] && continue
    described+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
  done
  _describe -t values 'mlw' described
}
if [[ $funcstack[1] == _mlw ]]; then
  _mlw "$@"
else
  compdef _mlw mlw
fi
)";

constexpr const char* k_fish = R"(# fish completion for mlw: mlw completion fish | source
function __mlw_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -e tokens[1]
    set -l out (command mlw __complete $tokens "$current" 2>/dev/null)
    if test "$out[1]" = ":files"
        __fish_complete_path "$current"
        return
    end
    printf '%s\n' $out
end
complete -c mlw -f -a '(__mlw_complete)'
)";

const std::vector<std::string> k_shells = {"bash", "zsh", "fish"};

using Candidates = std::vector<std::pair<std::string, std::string>>;

/// The option of `command` (or of a command above it: global options fall through) named `word`.
const CLI::Option* find_option(const CLI::App* command, const std::string& word) {
  for (const CLI::App* at = command; at; at = at->get_parent()) {
    for (const CLI::Option* option : at->get_options()) {
      if (option->nonpositional() && option->check_name(word)) return option;
    }
  }
  return nullptr;
}

std::string path_of(const CLI::App* command) {
  std::string path;
  for (const CLI::App* at = command; at && at->get_parent(); at = at->get_parent()) {
    path = at->get_name() + (path.empty() ? "" : " " + path);
  }
  return path;
}

struct Walk {
  const CLI::App* command = nullptr;
  const CLI::Option* pending = nullptr;  ///< an option whose value is the current word
  std::size_t positionals = 0;           ///< positional words given to `command`
  std::string previous_positional;       ///< the last of them (config set KEY VALUE)
  bool script_words = false;             ///< past submit's SCRIPT: the script's own words
};

Walk walk(const CLI::App& root, Context& ctx, const std::vector<std::string>& words) {
  Walk at;
  at.command = &root;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (at.script_words) continue;
    if (at.pending) {
      if (at.pending->check_name("--project")) ctx.project_dir = word;
      at.pending = nullptr;
      continue;
    }
    if (word.size() > 1 && word[0] == '-') {
      const std::string name = word.substr(0, word.find('='));
      const CLI::Option* option = find_option(at.command, name);
      if (option && option->get_type_size() > 0 && !option->get_type_name().empty() &&
          name.size() == word.size()) {
        at.pending = option;
      }
      continue;
    }
    const CLI::App* sub = nullptr;
    for (const CLI::App* candidate : at.command->get_subcommands({})) {
      if (candidate->get_name() == word) sub = candidate;
    }
    if (sub) {
      at.command = sub;
      at.positionals = 0;
    } else {
      ++at.positionals;
      at.previous_positional = word;
      at.script_words = path_of(at.command) == "experiment submit";
    }
  }
  return at;
}

std::vector<std::string> names_or_nothing(Context& ctx, bool run_configs) {
  try {
    const Project& project = ctx.project();
    return run_configs ? project.run_config_names() : project.compute_names();
  } catch (const Error&) {
    return {};
  }
}

/// Values of an option or a positional, by what it names; ":files" for paths.
Candidates values_for(Context& ctx, const std::string& command, const std::string& name,
                      const std::string& current, const std::string& previous) {
  Candidates out;
  auto add_all = [&out](const std::vector<std::string>& values, const std::string& about) {
    for (const auto& value : values) out.emplace_back(value, about);
  };
  if (name == "output") {
    add_all({"table", "json", "jsonc", "tsv", "yaml", "none"}, "output format");
  } else if (name == "run" || name == "runs") {
    try {
      add_all(run_ids_with_prefix(ctx.project().state_dir(), current, 200), "run");
    } catch (const Error&) {
    }
  } else if (name == "run-configuration") {
    add_all(names_or_nothing(ctx, true), "run configuration");
  } else if (name == "target" || (name == "name" && command.starts_with("computetarget ") &&
                                  !command.starts_with("computetarget attach"))) {
    add_all(names_or_nothing(ctx, false), "compute target");
  } else if (name == "status") {
    add_all(status::all(), "status");
  } else if (name == "template") {
    for (const auto& [template_name, folder] : api::project_templates()) {
      out.emplace_back(template_name, "project template");
    }
  } else if (name == "shell") {
    add_all(k_shells, "shell");
  } else if (name == "key") {
    for (const UserKey& key : user_keys()) out.emplace_back(key.name, key.help);
  } else if (name == "value") {
    if (previous == "defaults.output") return values_for(ctx, command, "output", current, "");
    if (previous == "defaults.target") return values_for(ctx, command, "target", current, "");
    if (previous.starts_with("core.")) add_all({"true", "false"}, previous);
  } else if (name == "project" || name == "destination" || name == "private-key-file" ||
             name == "script") {
    out.emplace_back(":files", "");
  }
  return out;
}

std::string option_name(const CLI::Option* option) {
  if (!option->get_lnames().empty()) return option->get_lnames().front();
  if (!option->get_snames().empty()) return option->get_snames().front();
  return option->get_name();
}

Candidates complete_words(const CLI::App& root, Context& ctx,
                          const std::vector<std::string>& words) {
  const std::string current = words.empty() ? "" : words.back();
  const Walk at = walk(root, ctx, words);
  const std::string command = path_of(at.command);
  if (at.script_words) return {{":files", ""}};
  if (at.pending) return values_for(ctx, command, option_name(at.pending), current, "");
  Candidates out;
  if (current.starts_with("-")) {
    // The command's own options and the global ones (the root's): not those of the groups in
    // between (attach's 2017 form has every kind's options, which attach remotedocker has not).
    std::vector<const CLI::App*> owners = {at.command};
    if (at.command != &root) owners.push_back(&root);
    for (const CLI::App* from : owners) {
      for (const CLI::Option* option : from->get_options()) {
        if (!option->nonpositional()) continue;
        for (const auto& name : option->get_lnames())
          out.emplace_back("--" + name, option->get_description());
        for (const auto& name : option->get_snames())
          out.emplace_back("-" + name, option->get_description());
      }
    }
    return out;
  }
  for (const CLI::App* sub : at.command->get_subcommands({})) {
    out.emplace_back(sub->get_name(), sub->get_description());
  }
  if (!out.empty()) return out;
  std::vector<const CLI::Option*> positionals;
  for (const CLI::Option* option : at.command->get_options()) {
    if (option->get_positional()) positionals.push_back(option);
  }
  if (command == "experiment submit") return values_for(ctx, command, "script", current, "");
  if (positionals.empty()) return out;
  const CLI::Option* positional = positionals[std::min(at.positionals, positionals.size() - 1)];
  return values_for(ctx, command, positional->get_name(), current, at.previous_positional);
}

}  // namespace

int complete(const CLI::App& root, Context& ctx, const std::vector<std::string>& words) {
  const std::string current = words.empty() ? "" : words.back();
  for (const auto& [value, about] : complete_words(root, ctx, words)) {
    if (value == ":files") {
      *ctx.out << ":files\n";
      return 0;
    }
    if (!value.starts_with(current)) continue;
    *ctx.out << value << "\t" << about << "\n";
  }
  return 0;
}

std::string completion_script(const std::string& shell) {
  if (shell == "bash") return k_bash;
  if (shell == "zsh") return k_zsh;
  if (shell == "fish") return k_fish;
  throw UsageError(fmt::format("unknown shell \"{}\"{}; mlw completes {}", shell,
                               did_you_mean(shell, k_shells), join(k_shells, ", ")));
}

void register_completion(CLI::App& app, Context& ctx) {
  auto* command = app.add_subcommand("completion", "Print a shell completion script");
  auto shell = std::make_shared<std::string>();
  command->add_option("shell", *shell, "bash, zsh or fish")->required()->type_name("SHELL");
  command->footer(examples({"source <(mlw completion bash)        # in ~/.bashrc",
                            "source <(mlw completion zsh)         # in ~/.zshrc, after compinit",
                            "mlw completion fish > ~/.config/fish/completions/mlw.fish"}));
  command->callback([&ctx, shell] { *ctx.out << completion_script(*shell); });
}

}  // namespace mlw::cli
