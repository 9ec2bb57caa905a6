#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// How results are printed on stdout (`-o`).
enum class OutputFormat { Table, Json, Jsonc, Tsv, Yaml, None };

/// Parses "table", "json", "jsonc", "tsv", "yaml" or "none"; throws mlw::UsageError otherwise.
OutputFormat parse_output_format(const std::string& text);

/// A column of a listing: the key in each row object and its header.
struct Column {
  std::string key;
  std::string header;
};

/// Prints results in the chosen format; every command's data goes through it to stdout.
class Output {
 public:
  /// An output writing to `out` in `format`; `color`: jsonc is coloured (stdout is a terminal).
  Output(std::ostream& out, OutputFormat format, bool color = false)
      : m_out(out), m_format(format), m_color(color) {}

  /// Prints rows (a JSON array of objects); `columns` choose and order table and tsv columns.
  void print_list(const nlohmann::ordered_json& rows, const std::vector<Column>& columns) const;
  /// Prints one object: "key  value" lines in a table, the object itself otherwise.
  void print_object(const nlohmann::ordered_json& object) const;
  /// The format in use.
  OutputFormat format() const { return m_format; }
  /// True for json, jsonc and yaml, whose stdout must hold only the document.
  bool structured() const {
    return m_format == OutputFormat::Json || m_format == OutputFormat::Jsonc ||
           m_format == OutputFormat::Yaml;
  }

 private:
  void print_json(const nlohmann::ordered_json& value) const;

  std::ostream& m_out;
  OutputFormat m_format;
  bool m_color;
};

/// The columns of a run's one `-o tsv` line, the same in history list, last, info and submit:
/// run_id, run_number, script, target, status, created, duration_s (seconds, as the JSON has
/// it), exit_code.
const std::vector<Column>& run_tsv_columns();

/// `value` as `dump(2)` writes it, with ANSI colours for keys, strings, numbers and literals.
std::string to_colored_json(const nlohmann::ordered_json& value);

/// How many terminal cells `text` (UTF-8) takes: wide East Asian characters and most emoji 2,
/// combining marks 0.
std::size_t display_width(const std::string& text);

/// A JSON value as YAML text.
std::string to_yaml(const nlohmann::ordered_json& value);

/// A scalar JSON value as plain text for a table cell (strings unquoted, null empty).
std::string cell_text(const nlohmann::ordered_json& value);

}  // namespace mlw
