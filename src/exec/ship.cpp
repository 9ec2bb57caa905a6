#include "mlw/exec/ship.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "mlw/remote/tar.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

std::string object_name(const ManifestEntry& entry) {
  return entry.sha256 + (is_executable(entry.mode) ? ".x" : "");
}

/// The helper and the environment's build files, in the run folder's tree.
void add_helper_and_env(TarWriter& tar, const EnvironmentSpec& env, const std::string& objects) {
  tar.add_directory("helper");
  tar.add_directory("env");
  tar.add_directory("env/files");
  for (auto& [path, contents] : run_folder_files(env))
    tar.add_data(path, std::move(contents), 0644);
  std::set<std::string> dirs;
  for (const auto& entry : env.local_files) {
    const auto parts = split(entry.path, '/');
    std::string prefix = "env/files";
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      prefix += "/" + parts[i];
      if (dirs.insert(prefix).second) tar.add_directory(prefix);
    }
    tar.add_hard_link("env/files/" + entry.path, objects + "/" + object_name(entry));
  }
}

/// A progress line on the submitting terminal while objects are sent.
std::function<void(std::uint64_t)> ship_progress(Context& ctx, std::uint64_t total,
                                                 std::size_t count) {
  if (!ctx.stderr_is_terminal || ctx.quiet) return {};
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [&ctx, last, total, count](std::uint64_t sent) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(100) && sent < total) return;
    *last = now;
    const int width = 30;
    const int filled = total ? static_cast<int>(width * sent / total) : width;
    *ctx.err << fmt::format("\rShipping {} new files: [{}{}] {:.1f}/{:.1f} MB\x1b[K", count,
                            std::string(static_cast<std::size_t>(filled), '#'),
                            std::string(static_cast<std::size_t>(width - filled), '.'),
                            static_cast<double>(sent) / 1e6, static_cast<double>(total) / 1e6)
             << std::flush;
  };
}

/// The run folder's tree: the snapshot as hard links into the target's store, the helper and
/// the environment's build files.
void add_run_tree(TarWriter& tree, const RunPlan& plan, const EnvironmentSpec& env,
                  const std::string& objects) {
  std::set<std::string> dirs = {"snapshot", "snapshot/outputs"};
  tree.add_directory("snapshot");
  tree.add_directory("snapshot/outputs");
  for (const auto& entry : plan.manifest.entries) {
    const auto parts = split(entry.path, '/');
    std::string prefix = "snapshot";
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      prefix += "/" + parts[i];
      if (dirs.insert(prefix).second) tree.add_directory(prefix);
    }
    if (!entry.link_target.empty()) {
      tree.add_symlink("snapshot/" + entry.path, entry.link_target);
    } else {
      tree.add_hard_link("snapshot/" + entry.path, objects + "/" + object_name(entry));
    }
  }
  add_helper_and_env(tree, env, objects);
}

}  // namespace

std::string ship_script(const std::string& store, const std::string& nonce,
                        const std::string& run_dir, bool end_when_complete) {
  const std::string s = shell_quote(store);
  return "set -e\nS=" + s + "/objects\nI=" + s + "/incoming\nD=\"$I\"/" + shell_quote(nonce) +
         "\nR=" + shell_quote(run_dir) +
         "\nmkdir -p \"$S\" \"$I\"\ncd \"$I\"\n"
         "for d in */; do\n"
         "  [ -d \"$d\" ] || continue\n"
         "  d=${d%/}\n"
         "  ( flock -n 9 || exit 0\n"
         "    cd \"$d\" && ls | grep -E '^[0-9a-f]{64}(\\.x)?$' | xargs -r sha256sum -- |\n"
         "      awk '$1 == substr($2, 1, 64) { print $2 }' | xargs -r mv -f -t \"$S\"/\n"
         "    cd \"$I\" && rm -rf \"$d\" \"$d.lock\" ) 9>\"$d.lock\"\n"
         "done\n"
         "read n\ncd \"$S\"\n" +
         std::string(end_when_complete ? "if " : "") +
         "head -c \"$n\" | awk 'BEGIN { while ((\"ls -f\" | getline n) > 0) have[n] = 1 } "
         "!($0 in have) { print; m = 1 } END { exit m }'" +
         // Without a run folder to make, a store that has it all ends here: one round trip.
         (end_when_complete ? "; then echo :end; exit 0; fi\n" : " || :\n") +
         "echo :end\nread u t\n"
         "if [ \"$u\" -gt 0 ]; then\n"
         "  exec 9>\"$D.lock\"\n  flock 9\n  mkdir -p \"$D\"\n"
         "  head -c \"$u\" | tar -x -C \"$D\"\n  cd \"$D\"\n"
         "  sha256sum -- * | awk '$1 == substr($2, 1, 64) { print $2 }' | xargs -r mv -f -t "
         "\"$S\"/\n"
         "  set -- *\n  cd \"$I\"\n"
         "  if [ -e \"$D/$1\" ]; then\n"
         "    printf 'damaged: %s\\n' \"$@\"\n    rm -rf \"$D\" \"$D.lock\"\n"
         "    head -c \"$t\" >/dev/null\n    exit 1\n"
         "  fi\n  rm -rf \"$D\" \"$D.lock\"\nfi\n"
         "[ \"$t\" -gt 0 ] || exit 0\n"
         "mkdir -p \"$(dirname \"$R\")\"\nrm -rf \"$R.tmp\"\nmkdir \"$R.tmp\"\n"
         "head -c \"$t\" | tar -x -P -C \"$R.tmp\"\n: > \"$R.tmp/driver_log.txt\"\n"
         "mv \"$R.tmp\" \"$R\"\n";
}

std::vector<std::pair<std::string, std::string>> run_folder_files(const EnvironmentSpec& env) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& file : embedded_files()) {
    if (!starts_with(file.path, "python/")) continue;
    files.emplace_back("helper/" + std::string(file.path.substr(7)), std::string(file.contents));
  }
  files.emplace_back("env/Dockerfile", env.dockerfile);
  files.emplace_back("env/install.sh", env.install_script);
  files.emplace_back("env/conda_dependencies.yml", env.conda_file);
  files.emplace_back("env/requirements.txt", env.requirements);
  return files;
}

namespace {

/// One ship as a conversation over one command: the object names the run needs, the store's
/// answer (those it lacks, then `:end`), then "U T" and two tar streams: the objects it lacks
/// and the run's folder.
class ShipConversation {
 public:
  ShipConversation(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
                   const EnvironmentSpec& env, bool make_run_folder)
      : m_ctx(ctx),
        m_shell(shell),
        m_plan(plan),
        m_store(store),
        m_env(env),
        m_make_run_folder(make_run_folder) {
    for (const auto& entry : plan.manifest.entries) {
      if (entry.link_target.empty()) m_wanted.emplace(object_name(entry), &entry);
    }
    for (const auto& [name, entry] : m_wanted) m_question += name + "\n";
    m_question = std::to_string(m_question.size()) + "\n" + m_question;
  }

  /// The streams that hold the conversation.
  ShellStreams streams() {
    ShellStreams streams;
    streams.on_output = [this](std::string_view chunk) { on_output(chunk); };
    streams.input_ready = [this] { return m_phase != Phase::waiting || m_answered; };
    streams.read_input = [this](char* buffer, std::size_t size) { return read(buffer, size); };
    return streams;
  }

  /// What the store printed after its answer (its reason, when the command failed).
  std::string said() const { return m_answered ? trim(m_answer.substr(m_answer_after)) : ""; }

  /// Clears the progress line, when one was drawn.
  void end_progress() const {
    if (m_progress) *m_ctx.err << "\r\x1b[K" << std::flush;
  }

 private:
  enum class Phase { question, waiting, second, upload, tree };

  void on_output(std::string_view chunk) {
    // The answer names only objects asked about (then a line or two): more is a target that
    // lies, and would otherwise grow without end.
    const std::size_t bound = 2 * m_question.size() + 65536;
    if (m_answer.size() + chunk.size() > bound) {
      throw Error(fmt::format("{}: the target answered the ship with more than {} bytes, which no "
                              "list of the {} files asked about can be; is a tool on its PATH "
                              "(awk, ls, head) replaced?",
                              m_shell.host(), bound, m_wanted.size()),
                  exit_code::k_cannot_start);
    }
    m_answer.append(chunk);
    if (m_answered) return;
    const auto end = m_answer.starts_with(":end\n") ? 0 : m_answer.find("\n:end\n");
    if (end == std::string::npos) return;
    m_answered = true;
    m_answer_end = end;
    m_answer_after = end == 0 ? 5 : end + 6;
  }

  std::size_t copy_from(const std::string& text, char* buffer, std::size_t size) {
    const std::size_t n = std::min(size, text.size() - m_offset);
    std::copy_n(text.data() + m_offset, n, buffer);
    m_offset += n;
    return n;
  }

  /// Once the answer is in: the objects the store lacks, the run's folder, and "U T".
  void prepare_second() {
    const fs::path local_objects = m_plan.project.state_dir() / "objects";
    std::vector<std::string> missing;
    for (const auto& name : split(m_answer.substr(0, m_answer_end), '\n')) {
      if (m_wanted.count(name)) missing.push_back(name);
    }
    for (const auto& name : missing) {
      const ManifestEntry& entry = *m_wanted[name];
      fs::path source = object_path(local_objects, entry.sha256, is_executable(entry.mode));
      if (!fs::exists(source)) source = m_plan.project.root / entry.path;
      m_upload.add_file(name, source, entry.size, is_executable(entry.mode) ? 0555 : 0444);
      m_upload_total += entry.size;
    }
    if (!missing.empty()) {
      spdlog::debug("shipping {} objects ({} bytes) to {}", missing.size(), m_upload_total,
                    m_shell.host());
      m_progress = ship_progress(m_ctx, m_upload_total, missing.size());
    }
    if (m_make_run_folder) add_run_tree(m_tree, m_plan, m_env, m_store + "/objects");
    m_second = fmt::format("{} {}\n", missing.empty() ? 0 : m_upload.size(),
                           m_make_run_folder ? m_tree.size() : 0);
  }

  /// The command's stdin, phase by phase.
  std::size_t read(char* buffer, std::size_t size) {
    while (true) {
      switch (m_phase) {
        case Phase::question: {
          const std::size_t n = copy_from(m_question, buffer, size);
          if (m_offset == m_question.size()) {
            m_phase = Phase::waiting;  // input_ready holds the next call until the answer is in
            m_offset = 0;
          }
          return n;
        }
        case Phase::waiting:
          prepare_second();
          // The store had it all and no run folder is made: the script ended after its answer.
          if (m_second == "0 0\n") return 0;
          m_phase = Phase::second;
          break;
        case Phase::second: {
          const std::size_t n = copy_from(m_second, buffer, size);
          if (m_offset == m_second.size()) {
            m_phase = m_second.starts_with("0 ") ? Phase::tree : Phase::upload;
            m_offset = 0;
          }
          return n;
        }
        case Phase::upload:
          if (const std::size_t n = m_upload.read(buffer, size); n > 0) {
            m_upload_sent += n;
            if (m_progress) m_progress(std::min(m_upload_sent, m_upload_total));
            return n;
          }
          m_phase = Phase::tree;
          break;
        case Phase::tree:
          return m_make_run_folder ? m_tree.read(buffer, size) : 0;
      }
    }
  }

  Context& m_ctx;
  Shell& m_shell;
  const RunPlan& m_plan;
  const std::string& m_store;
  const EnvironmentSpec& m_env;
  const bool m_make_run_folder;
  std::map<std::string, const ManifestEntry*> m_wanted;
  std::string m_question;
  std::string m_answer;
  bool m_answered = false;
  std::size_t m_answer_end = 0;    // where the list of missing names ends
  std::size_t m_answer_after = 0;  // where what follows `:end` starts
  TarWriter m_upload;
  TarWriter m_tree;
  std::string m_second;  // "U T\n", sent once the answer is in
  std::uint64_t m_upload_total = 0;
  std::uint64_t m_upload_sent = 0;
  std::function<void(std::uint64_t)> m_progress;
  Phase m_phase = Phase::question;
  std::size_t m_offset = 0;
};

}  // namespace

void ship_snapshot(Context& ctx, Shell& shell, const RunPlan& plan, const std::string& store,
                   const EnvironmentSpec& env, const std::string& run_dir, bool make_run_folder) {
  ShipConversation conversation(ctx, shell, plan, store, env, make_run_folder);
  const std::string nonce = plan.record.run_id + "-" + std::to_string(::getpid());
  const ShellResult shipped =
      shell.run(ship_script(store, nonce, run_dir, !make_run_folder), conversation.streams());
  conversation.end_progress();
  if (shipped.exit_code != 0) {
    throw Error(fmt::format("{}: shipping the snapshot to {} failed: {}", shell.host(), run_dir,
                            trim(trim(shipped.errors) + "\n" + conversation.said())),
                exit_code::k_cannot_start);
  }
}

}  // namespace mlw
