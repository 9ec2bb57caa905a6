#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace mlw::cli {

/// The width help is wrapped to: the terminal's on a terminal, 80 columns otherwise.
std::size_t help_width();

/// `text` wrapped at spaces to `width` columns; lines after the first are indented by `indent`,
/// and the first starts at column `first_used`. Newlines in `text` start new lines.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t indent,
                      std::size_t first_used);

/// Help as people read it: wrapped to the terminal, values named after their option (not TEXT),
/// required options marked, and the global options listed under every command.
class HelpFormatter : public CLI::Formatter {
 public:
  /// A formatter for the tree under `root`, wrapping at `width` columns.
  HelpFormatter(const CLI::App& root, std::size_t width);

  /// The value's name and "(required)" after the option's names.
  std::string make_option_opts(const CLI::Option* option) const override;
  /// One option's row: names on the left, the wrapped description on the right.
  std::string make_option(const CLI::Option* option, bool is_positional) const override;
  /// One subcommand's row.
  std::string make_subcommand(const CLI::App* sub) const override;
  /// The command's description, wrapped.
  std::string make_description(const CLI::App* app) const override;
  /// The footer (notes and examples) wrapped; a long example continues with a backslash.
  std::string make_footer(const CLI::App* app) const override;
  /// The whole help, with "Global options:" below every command but the root.
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;

 private:
  std::string row(const std::string& name, const std::string& description) const;

  const CLI::App& m_root;
  std::size_t m_width;
};

}  // namespace mlw::cli
