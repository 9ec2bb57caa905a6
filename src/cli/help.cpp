#include "cli/help.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "mlw/util/strings.hpp"

namespace mlw::cli {

namespace {

constexpr std::size_t k_name_column = 30;

/// The first option name a person types: "--address" of "-a,--address".
std::string long_name(const CLI::Option* option) {
  const auto& names = option->get_lnames();
  if (!names.empty()) return names.front();
  const auto& shorts = option->get_snames();
  return shorts.empty() ? option->get_name() : shorts.front();
}

/// "private-key-file" as "PRIVATE_KEY_FILE".
std::string upper_snake(std::string name) {
  for (char& c : name)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

/// Columns a UTF-8 text takes on a terminal: one per character, not per byte ("…" is three).
std::size_t columns(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::size_t help_width() {
  struct winsize size {};
  if (::isatty(1) && ::ioctl(1, TIOCGWINSZ, &size) == 0 && size.ws_col >= 40) return size.ws_col;
  return 80;
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent,
                      std::size_t first_used) {
  std::string out;
  std::size_t used = first_used;
  std::size_t line_start = 0;
  for (const std::string& paragraph : split(text, '\n')) {
    if (line_start++ > 0) {
      out += "\n" + std::string(indent, ' ');
      used = indent;
    }
    bool first = true;
    for (const std::string& word : split(paragraph, ' ')) {
      if (word.empty()) continue;
      if (!first && used + 1 + columns(word) > width) {
        out += "\n" + std::string(indent, ' ');
        used = indent;
        first = true;
      }
      if (!first) {
        out += ' ';
        ++used;
      }
      out += word;
      used += columns(word);
      first = false;
    }
  }
  return out;
}

HelpFormatter::HelpFormatter(const CLI::App& root, std::size_t width)
    : m_root(root), m_width(width) {
  column_width(k_name_column);
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  std::string text;
  std::string type = option->get_type_name();
  if (option->get_type_size() != 0 && !type.empty()) {  // a flag has no type name
    // CLI11's own names say nothing to a reader: name the value after its option instead.
    if (type == "TEXT" || type == "INT" || type == "UINT") {
      type = upper_snake(long_name(option));
    }
    text += " " + type;
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size ||
        option->get_expected_max() > 1) {
      text += " …";
    }
  }
  if (option->get_required()) text += " (required)";
  return text;
}

std::string HelpFormatter::make_option(const CLI::Option* option, bool is_positional) const {
  return row(make_option_name(option, is_positional) + make_option_opts(option),
             make_option_desc(option));
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return row(sub->get_display_name(true), sub->get_description());
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string description = app->get_description();
  if (description.empty()) return "";
  return wrap_text(description, m_width, 0, 0) + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string footer = app->get_footer();
  if (footer.empty()) return "";
  std::string out;
  bool in_examples = false;
  for (const std::string& line : split(footer, '\n')) {
    in_examples = in_examples || line == "Examples:";
    if (line.size() <= m_width) {
      out += line + "\n";
    } else if (in_examples && line.starts_with("  ")) {
      // A long example stays one command to copy: continued with a backslash.
      const auto parts = split(wrap_text(line.substr(2), m_width - 4, 6, 2), '\n');
      for (std::size_t i = 0; i < parts.size(); ++i) {
        out += (i == 0 ? "  " : "") + parts[i] + (i + 1 < parts.size() ? " \\\n" : "\n");
      }
    } else {
      // A note wraps flush; an indented item's continuation goes two columns further in.
      const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
      const std::size_t hanging = indent == 0 ? 0 : indent + 2;
      out += std::string(indent, ' ') + wrap_text(line.substr(indent), m_width, hanging, indent) +
             "\n";
    }
  }
  return out;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
  std::string help = CLI::Formatter::make_help(app, std::move(name), mode);
  // The root, and submit, which takes the global options itself, list them among their own.
  if (app == &m_root || mode == CLI::AppFormatMode::Sub || app->get_option_no_throw("--output")) {
    return help;
  }
  // Options given to `mlw` itself hold below it too (fallthrough): every command lists them.
  std::string globals = "\nGlobal options:\n";
  for (const CLI::Option* option : m_root.get_options()) {
    if (option->get_lnames().empty() || option->get_lnames().front() == "help" ||
        option->get_lnames().front() == "version") {
      continue;
    }
    globals += make_option(option, false);
  }
  const std::size_t footer = help.find("\n\nExamples:");
  if (footer == std::string::npos) return help + globals;
  std::size_t end = footer;
  while (end > 0 && help[end - 1] == '\n') --end;  // CLI11 leaves a blank line or two
  return help.substr(0, end) + "\n" + globals + help.substr(footer + 1);
}

std::string HelpFormatter::row(const std::string& name, const std::string& description) const {
  std::string line = "  " + name;
  if (description.empty()) return line + "\n";
  if (columns(line) + 1 > k_name_column) {
    line += "\n" + std::string(k_name_column, ' ');
  } else {
    line += std::string(k_name_column - columns(line), ' ');
  }
  return line + wrap_text(description, m_width, k_name_column, k_name_column) + "\n";
}

}  // namespace mlw::cli
