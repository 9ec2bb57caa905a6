#include "cli/manual.hpp"

#include <fmt/format.h>

#include "cli/help.hpp"
#include "mlw/config/user_config.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::cli {

namespace {

/// Text made safe for roff: backslashes, hyphens that must stay ASCII, a leading dot or quote.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  std::string safe;
  for (const std::string& line : split(out, '\n')) {
    if (!safe.empty()) safe += "\n";
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) safe += "\\&";
    safe += line;
  }
  return safe;
}

std::string option_entries(const HelpFormatter& help, const CLI::App& command, bool positional) {
  std::string out;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_positional() != positional) continue;
    if (!option->get_lnames().empty() && option->get_lnames().front() == "help") continue;
    std::string label = help.make_option_name(option, positional) + help.make_option_opts(option);
    out += ".TP\n.B " + roff(label) + "\n" + roff(option->get_description()) + "\n";
  }
  return out;
}

/// A command's footer: its notes as a paragraph, its examples as literal lines.
std::string footer_text(const CLI::App& command) {
  const std::string footer = command.get_footer();
  const std::size_t at = footer.find("Examples:\n");
  std::string out;
  const std::string notes = trim(footer.substr(0, at));
  if (!notes.empty()) out += ".PP\n" + roff(notes) + "\n";
  if (at != std::string::npos) {
    out += ".PP\nExamples:\n.RS\n.nf\n";
    for (const std::string& line : split(footer.substr(at + 10), '\n')) {
      if (!trim(line).empty()) out += roff(trim(line)) + "\n";
    }
    out += ".fi\n.RE\n";
  }
  return out;
}

void commands(const HelpFormatter& help, const CLI::App& command, const std::string& path,
              std::string& out) {
  const auto subs = command.get_subcommands({});
  if (subs.empty() ||
      !command.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) {
    out += ".SS \"" + roff(path) + "\"\n" + roff(command.get_description()) + "\n";
    out += option_entries(help, command, true) + option_entries(help, command, false);
    out += footer_text(command);
  }
  for (const CLI::App* sub : subs) commands(help, *sub, path + " " + sub->get_name(), out);
}

}  // namespace

std::string man_page(const CLI::App& root) {
  const HelpFormatter help(root, 80);
  std::string out = fmt::format(
      ".\\\" Generated from mlw's command tree at build time (mlw __man); do not edit.\n"
      ".TH MLW 1 \"\" \"mlw {}\" \"User Commands\"\n"
      ".SH NAME\nmlw \\- run Python training scripts on any compute target and keep the history "
      "of every run\n"
      ".SH SYNOPSIS\n.B mlw\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
      ".SH DESCRIPTION\n{}\n.PP\nData goes to stdout, messages to stderr. Global options may "
      "stand anywhere before a command's own arguments (for \\fBexperiment submit\\fR, before "
      "SCRIPT).\n.SH GLOBAL OPTIONS\n",
      MLW_VERSION, roff(root.get_description()));
  out += option_entries(help, root, false);
  out += ".SH COMMANDS\n";
  for (const CLI::App* sub : root.get_subcommands({})) {
    commands(help, *sub, "mlw " + sub->get_name(), out);
  }
  out += ".SH ENVIRONMENT\n";
  for (const UserKey& key : user_keys()) {
    out += ".TP\n.B " + roff(std::string(key.env)) + "\n" +
           roff(fmt::format("{} (config key {})", key.help, key.name)) + "\n";
  }
  for (const Setting& row : settings()) {
    out += ".TP\n.B " + roff(std::string(row.name)) + "\n" +
           roff(fmt::format("{} (default {} {})", row.meaning, row.default_value, row.unit)) + "\n";
  }
  out +=
      ".TP\n.B NO_COLOR\nany value: no colours\n"
      ".TP\n.B XDG_CONFIG_HOME\nwhere mlw/config.yaml and mlw/secrets.json are kept "
      "(default ~/.config)\n";
  out +=
      ".SH FILES\n"
      ".TP\n.I $XDG_CONFIG_HOME/mlw/config.yaml\nyour settings (mlw config set)\n"
      ".TP\n.I .mlw/config.yaml\nthe project's settings (mlw config set \\-\\-local); over "
      "yours, under the environment and flags\n"
      ".TP\n.I aml_config/NAME.compute, aml_config/NAME.runconfig\na compute target and its "
      "run configuration (Azure ML Workbench 2017 format)\n"
      ".TP\n.I .mlw/history.db, .mlw/runs/RUN_ID/\nthe history of runs\n";
  out +=
      ".SH EXIT STATUS\n0 success, 1 failure, 2 usage error. \\fBexperiment submit\\fR exits "
      "with the script's code (128+N when it died of signal N), 125 when mlw could not start "
      "the run, 126 when the script cannot be executed, 127 when it or python is missing, 130 "
      "when Ctrl\\-C detached from a run that goes on.\n";
  out +=
      ".SH SEE ALSO\n\\fBssh_config\\fR(5), \\fBdocker\\fR(1), \\fBsbatch\\fR(1), "
      "\\fBjq\\fR(1); docs/cli.md in the source.\n";
  return out;
}

}  // namespace mlw::cli
