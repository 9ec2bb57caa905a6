#include "mlw/output/output.hpp"

#include <utf8proc.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "mlw/util/error.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

OutputFormat parse_output_format(const std::string& text) {
  if (text == "table") return OutputFormat::Table;
  if (text == "json") return OutputFormat::Json;
  if (text == "jsonc") return OutputFormat::Jsonc;
  if (text == "tsv") return OutputFormat::Tsv;
  if (text == "yaml") return OutputFormat::Yaml;
  if (text == "none") return OutputFormat::None;
  const std::vector<std::string> formats = {"table", "json", "jsonc", "tsv", "yaml", "none"};
  throw UsageError("output format must be " + join(formats, ", ") + " (got \"" + text + "\")" +
                   did_you_mean(text, formats));
}

std::string cell_text(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return shown_text(value.get<std::string>());
  if (value.is_number_float()) {
    std::string text = value.dump();
    return text;
  }
  return value.dump();
}

namespace {

/// A cell of a table, as a person reads it: a float in 6 significant digits (0.000367355, not
/// 0.00036735525164001404; json, yaml and tsv keep the whole value), the rest as cell_text.
std::string table_cell(const nlohmann::ordered_json& value) {
  if (!value.is_number_float()) return cell_text(value);
  const double number = value.get<double>();
  if (!std::isfinite(number)) return cell_text(value);
  return fmt::format("{:.6g}", number);
}

constexpr const char* k_key_color = "\x1b[1;34m";
constexpr const char* k_string_color = "\x1b[32m";
constexpr const char* k_number_color = "\x1b[36m";
constexpr const char* k_literal_color = "\x1b[35m";
constexpr const char* k_reset = "\x1b[0m";

void colored(std::string& out, const nlohmann::ordered_json& value, int depth) {
  const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string close(static_cast<std::size_t>(depth) * 2, ' ');
  if (value.is_object() && !value.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (const auto& [key, item] : value.items()) {
      out += indent + k_key_color + nlohmann::ordered_json(key).dump() + k_reset + ": ";
      colored(out, item, depth + 1);
      out += ++i < value.size() ? ",\n" : "\n";
    }
    out += close + "}";
  } else if (value.is_array() && !value.empty()) {
    out += "[\n";
    std::size_t i = 0;
    for (const auto& item : value) {
      out += indent;
      colored(out, item, depth + 1);
      out += ++i < value.size() ? ",\n" : "\n";
    }
    out += close + "]";
  } else if (value.is_string()) {
    out += k_string_color + value.dump() + k_reset;
  } else if (value.is_number()) {
    out += k_number_color + value.dump() + k_reset;
  } else if (value.is_structured()) {
    out += value.dump();  // {} or []
  } else {
    out += k_literal_color + value.dump() + k_reset;
  }
}

void emit(YAML::Emitter& out, const nlohmann::ordered_json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      emit(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : value) emit(out, item);
    out << YAML::EndSeq;
  } else if (value.is_null()) {
    out << YAML::Null;
  } else if (value.is_string()) {
    out << YAML::DoubleQuoted << value.get<std::string>();
  } else {
    out << value.dump();
  }
}

}  // namespace

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t code = 0;
    utf8proc_ssize_t used = utf8proc_iterate(bytes, left, &code);
    if (used <= 0) {  // not UTF-8 (cells hold \xNN instead, but stay safe): one cell a byte
      used = 1;
      code = 0x20;
    }
    width += static_cast<std::size_t>(std::max(0, utf8proc_charwidth(code)));
    bytes += used;
    left -= used;
  }
  return width;
}

std::string to_colored_json(const nlohmann::ordered_json& value) {
  std::string out;
  colored(out, value, 0);
  return out;
}

void Output::print_json(const nlohmann::ordered_json& value) const {
  m_out << (m_format == OutputFormat::Jsonc && m_color ? to_colored_json(value) : value.dump(2))
        << "\n";
}

std::string to_yaml(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

void Output::print_list(const nlohmann::ordered_json& given,
                        const std::vector<Column>& columns) const {
  nlohmann::ordered_json rows = given;
  make_json_safe(rows);  // names and arguments that are not UTF-8, shown in their \xNN form
  switch (m_format) {
    case OutputFormat::None:
      return;
    case OutputFormat::Json:
    case OutputFormat::Jsonc:
      print_json(rows);
      return;
    case OutputFormat::Yaml:
      m_out << (rows.empty() ? std::string("[]\n") : to_yaml(rows));
      return;
    case OutputFormat::Tsv:
      for (const auto& row : rows) {
        for (std::size_t i = 0; i < columns.size(); ++i) {
          std::string text = cell_text(row.value(columns[i].key, nlohmann::ordered_json()));
          std::replace(text.begin(), text.end(), '\t', ' ');
          std::replace(text.begin(), text.end(), '\n', ' ');
          m_out << (i ? "\t" : "") << text;
        }
        m_out << "\n";
      }
      return;
    case OutputFormat::Table: {
      std::vector<std::vector<std::string>> cells;
      std::vector<std::size_t> widths;
      for (const auto& column : columns) widths.push_back(display_width(column.header));
      for (const auto& row : rows) {
        std::vector<std::string> line;
        for (std::size_t i = 0; i < columns.size(); ++i) {
          line.push_back(table_cell(row.value(columns[i].key, nlohmann::ordered_json())));
          widths[i] = std::max(widths[i], display_width(line.back()));
        }
        cells.push_back(std::move(line));
      }
      auto print_line = [&](const std::vector<std::string>& line) {
        std::string text;
        for (std::size_t i = 0; i < line.size(); ++i) {
          text += line[i];
          if (i + 1 < line.size()) text += std::string(widths[i] - display_width(line[i]) + 2, ' ');
        }
        m_out << text << "\n";
      };
      std::vector<std::string> headers;
      for (const auto& column : columns) headers.push_back(column.header);
      print_line(headers);
      for (const auto& line : cells) print_line(line);
      return;
    }
  }
}

void Output::print_object(const nlohmann::ordered_json& given) const {
  nlohmann::ordered_json object = given;
  make_json_safe(object);
  switch (m_format) {
    case OutputFormat::None:
      return;
    case OutputFormat::Json:
    case OutputFormat::Jsonc:
      print_json(object);
      return;
    case OutputFormat::Yaml:
      m_out << to_yaml(object);
      return;
    case OutputFormat::Tsv:
      for (const auto& [key, value] : object.items()) {
        m_out << key << "\t" << (value.is_structured() ? value.dump() : cell_text(value)) << "\n";
      }
      return;
    case OutputFormat::Table: {
      std::size_t width = 0;
      for (const auto& [key, value] : object.items()) width = std::max(width, display_width(key));
      for (const auto& [key, value] : object.items()) {
        m_out << key << std::string(width - display_width(key) + 2, ' ');
        if (value.is_object() && !value.empty()) {
          m_out << "\n";
          for (const auto& [inner, item] : value.items()) {
            m_out << "  " << inner << ": " << (item.is_structured() ? item.dump() : cell_text(item))
                  << "\n";
          }
        } else if (value.is_array()) {
          std::string text;
          for (const auto& item : value) {
            text +=
                (text.empty() ? "" : ", ") + (item.is_structured() ? item.dump() : cell_text(item));
          }
          m_out << text << "\n";
        } else {
          m_out << (value.is_object() ? "" : cell_text(value)) << "\n";
        }
      }
      return;
    }
  }
}

const std::vector<Column>& run_tsv_columns() {
  static const std::vector<Column> columns = {
      {"run_id", "RUN ID"},           {"run_number", "#"},  {"script", "SCRIPT"},
      {"target", "TARGET"},           {"status", "STATUS"}, {"created", "CREATED (UTC)"},
      {"duration_s", "DURATION (S)"}, {"exit_code", "EXIT"}};
  return columns;
}

}  // namespace mlw
