#include "mlw/config/keys.hpp"

#include <fmt/format.h>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

std::string SourcePosition::to_string(bool with_column) const {
  if (line <= 0) return file;
  if (!with_column || column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

SourcePosition ConfigDocument::position_of(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return {display_path, 0, 0};
  return {display_path, mark.line + 1, mark.column + 1};
}

namespace {

/// Refuses a mapping (at any depth) that names a key twice: yaml-cpp keeps both, and the later
/// one would win in silence (the 2017 guide has users add `nvidiaDocker: true` above the line
/// that mlw wrote).
void refuse_duplicate_keys(const ConfigDocument& doc, const YAML::Node& node, int depth) {
  if (depth > 64) return;
  if (node.IsSequence()) {
    for (const auto& item : node) refuse_duplicate_keys(doc, item, depth + 1);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Node> seen;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    if (entry.first.IsScalar()) {
      const auto [first, inserted] = seen.emplace(key, entry.first);
      if (!inserted) {
        fail_at(doc, entry.first,
                fmt::format("the key \"{}\" is given twice (first at {}); keep one of the two "
                            "lines",
                            key, doc.position_of(first->second).to_string()));
      }
    }
    refuse_duplicate_keys(doc, entry.second, depth + 1);
  }
}

}  // namespace

namespace {

/// Counts the values of `node` (an alias counts each time it is used, as a reader walks it) into
/// `count`; false once past k_yaml_node_bound values or k_yaml_depth_bound levels.
bool within_yaml_bounds(const YAML::Node& node, int depth, std::size_t& count) {
  if (++count > k_yaml_node_bound || depth > k_yaml_depth_bound) return false;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!within_yaml_bounds(item, depth + 1, count)) return false;
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!within_yaml_bounds(entry.first, depth + 1, count) ||
          !within_yaml_bounds(entry.second, depth + 1, count)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

YAML::Node load_bounded_yaml(const std::string& text, const std::string& display_path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}:{}:{}: malformed YAML: {}", display_path, e.mark.line + 1,
                            e.mark.column + 1, e.msg));
  }
  std::size_t count = 0;
  if (!within_yaml_bounds(root, 0, count)) {
    throw Error(
        fmt::format("{}: too large to read: more than {} values or {} levels of nesting "
                    "(each use of a YAML alias counts again)",
                    display_path, k_yaml_node_bound, k_yaml_depth_bound));
  }
  return root;
}

ConfigDocument parse_config_text(const std::string& text, const std::string& display_path) {
  ConfigDocument doc;
  doc.display_path = display_path;
  doc.root = load_bounded_yaml(text, display_path);
  if (doc.root.IsNull()) {
    doc.root = YAML::Node(YAML::NodeType::Map);
  } else if (!doc.root.IsMap()) {
    throw Error(fmt::format("{}: expected a mapping of keys to values at the top level",
                            doc.position_of(doc.root).to_string()));
  }
  refuse_duplicate_keys(doc, doc.root, 0);
  return doc;
}

ConfigDocument load_config_file(const fs::path& path, const std::string& display_path) {
  return parse_config_text(read_file(path), display_path);
}

void fail_at(const ConfigDocument& doc, const YAML::Node& node, const std::string& message) {
  throw Error(doc.position_of(node).to_string() + ": " + message);
}

std::string scalar_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key) {
  if (!node.IsScalar()) fail_at(doc, node, fmt::format("{} must be a single value", key));
  return node.Scalar();
}

bool bool_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key) {
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text == "true" || text == "True" || text == "TRUE" || text == "yes") return true;
    if (text == "false" || text == "False" || text == "FALSE" || text == "no") return false;
  }
  fail_at(doc, node, fmt::format("{} must be true or false", key));
}

int int_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key) {
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    std::size_t used = 0;
    try {
      const int value = std::stoi(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
  }
  fail_at(doc, node, fmt::format("{} must be a whole number", key));
}

std::vector<std::string> list_value(const ConfigDocument& doc, const YAML::Node& node,
                                    std::string_view key) {
  std::vector<std::string> out;
  if (node.IsNull()) return out;
  if (node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) fail_at(doc, node, fmt::format("{} must be a list of strings", key));
  for (const auto& item : node) {
    if (!item.IsScalar()) fail_at(doc, item, fmt::format("{} must be a list of strings", key));
    out.push_back(item.Scalar());
  }
  return out;
}

std::map<std::string, std::string> map_value(const ConfigDocument& doc, const YAML::Node& node,
                                             std::string_view key) {
  std::map<std::string, std::string> out;
  if (node.IsNull()) return out;
  if (!node.IsMap())
    fail_at(doc, node, fmt::format("{} must be a mapping of names to values", key));
  for (const auto& entry : node) {
    if (!entry.second.IsScalar() && !entry.second.IsNull()) {
      fail_at(doc, entry.second,
              fmt::format("{}: the value of {} must be a single value", key, entry.first.Scalar()));
    }
    out[entry.first.Scalar()] = entry.second.IsNull() ? "" : entry.second.Scalar();
  }
  return out;
}

std::string unknown_key_warning(const ConfigDocument& doc, const YAML::Node& key_node,
                                const std::string& key, const std::vector<std::string>& known) {
  return fmt::format("{}: unknown key \"{}\"{}", doc.position_of(key_node).to_string(false), key,
                     did_you_mean(key, known));
}

std::string choices_message(std::string_view key, const std::string& value,
                            const std::vector<std::string>& choices) {
  return fmt::format("{} must be one of {} (got \"{}\"){}", key, join(choices, ", "), value,
                     did_you_mean(value, choices));
}

std::string yaml_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace mlw
