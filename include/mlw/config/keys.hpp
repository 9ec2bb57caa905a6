#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mlw {

/// A position in a configuration file, for messages like `aml_config/x.compute:4:9: …`.
struct SourcePosition {
  std::string file;  ///< the path as shown to the user (relative to the project)
  int line = 0;      ///< 1-based; 0 when unknown
  int column = 0;    ///< 1-based; 0 when unknown
  /// "file:line:column" (or less when unknown).
  std::string to_string(bool with_column = true) const;
};

/// A configuration file parsed into a YAML mapping, with its warnings.
struct ConfigDocument {
  std::string display_path;           ///< path shown in messages
  YAML::Node root;                    ///< a mapping (empty when the file was empty)
  std::vector<std::string> warnings;  ///< e.g. unknown keys, with file:line
  /// The position of a node in this file.
  SourcePosition position_of(const YAML::Node& node) const;
};

/// The most values one YAML file may hold, counting each use of an alias (a 1 KB "billion
/// laughs" file names billions): past it the file is refused, not walked.
inline constexpr std::size_t k_yaml_node_bound = 200000;
/// The most levels of nesting one YAML file may have.
inline constexpr int k_yaml_depth_bound = 64;

/// Parses YAML text from `display_path`; throws mlw::Error in one line for malformed YAML and for
/// a document past k_yaml_node_bound values or k_yaml_depth_bound levels (alias bombs).
YAML::Node load_bounded_yaml(const std::string& text, const std::string& display_path);

/// Parses YAML (or the JSON of 2017 .runconfig files) from `text`; throws mlw::Error with
/// file:line:column for malformed input or a top level that is not a mapping.
ConfigDocument parse_config_text(const std::string& text, const std::string& display_path);

/// Reads and parses a configuration file.
ConfigDocument load_config_file(const std::filesystem::path& path, const std::string& display_path);

/// What a key in a configuration file holds.
enum class ValueKind { String, Bool, Int, StringList, StringMap };

/// One row of a key table: where the value goes in the struct `T`, its kind and its docs.
template <class T>
struct KeySpec {
  /// A pointer to the field of `T` that holds the value.
  using Field = std::variant<std::string T::*, bool T::*, int T::*, std::vector<std::string> T::*,
                             std::map<std::string, std::string> T::*>;
  std::string_view name;                  ///< the key as written in the file (case-sensitive)
  Field field;                            ///< where the parsed value goes
  std::string_view help;                  ///< one-line explanation, written as a comment
  std::vector<std::string_view> choices;  ///< allowed values of a string key (empty: any)
  /// Types of compute target the key applies to (empty: all); used when writing files.
  std::vector<std::string_view> applies_to;
  bool ignored = false;  ///< accepted for compatibility but not used (noted on first use)
  /// Written as a comment while it holds its default, so that adding the key by hand (as the 2017
  /// GPU guide tells users to add `nvidiaDocker: true`) does not give it twice.
  bool commented_default = false;
};

/// Reads one scalar as a string, failing with file:line:column when it is not a scalar.
std::string scalar_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key);
/// Reads a boolean (true/false/yes/no), failing with file:line:column otherwise.
bool bool_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key);
/// Reads an integer, failing with file:line:column otherwise.
int int_value(const ConfigDocument& doc, const YAML::Node& node, std::string_view key);
/// Reads a list of scalars (a lone scalar is a list of one).
std::vector<std::string> list_value(const ConfigDocument& doc, const YAML::Node& node,
                                    std::string_view key);
/// Reads a mapping of scalars (null is an empty map).
std::map<std::string, std::string> map_value(const ConfigDocument& doc, const YAML::Node& node,
                                             std::string_view key);

/// Throws mlw::Error "file:line:column: message" for `node`.
[[noreturn]] void fail_at(const ConfigDocument& doc, const YAML::Node& node,
                          const std::string& message);

/// A YAML double-quoted scalar for `text`.
std::string yaml_quote(std::string_view text);

/// Fills `out` from the document through the key table; unknown keys become warnings with a
/// "did you mean"; names of ignored keys that are present are returned.
template <class T>
std::vector<std::string> apply_key_table(ConfigDocument& doc, const std::vector<KeySpec<T>>& table,
                                         T& out);

/// "file:line: unknown key \"x\" (did you mean \"y\"?)".
std::string unknown_key_warning(const ConfigDocument& doc, const YAML::Node& key_node,
                                const std::string& key, const std::vector<std::string>& known);

/// "x must be one of a, b, c (got \"d\")" with a "did you mean".
std::string choices_message(std::string_view key, const std::string& value,
                            const std::vector<std::string>& choices);

/// The YAML text of the value in `field` of `value`, as it would be written in a file.
template <class T>
std::string render_value(const KeySpec<T>& spec, const T& value);

/// The value in `field` of `value` as JSON (for show commands and `-o json`).
template <class T>
nlohmann::ordered_json json_value(const KeySpec<T>& spec, const T& value) {
  return std::visit([&](auto member) { return nlohmann::ordered_json(value.*member); }, spec.field);
}

/// Writes the keys of `table` that apply to `type` (all when empty), each preceded by its
/// help as a comment: the text of a generated configuration file.
template <class T>
std::string render_with_comments(const std::vector<KeySpec<T>>& table, const T& value,
                                 std::string_view header, std::string_view type = {});

// ---- template definitions ----

template <class T>
std::vector<std::string> apply_key_table(ConfigDocument& doc, const std::vector<KeySpec<T>>& table,
                                         T& out) {
  std::vector<std::string> names;
  for (const auto& spec : table) names.emplace_back(spec.name);
  std::vector<std::string> ignored_present;
  for (const auto& entry : doc.root) {
    const std::string key = entry.first.Scalar();
    const KeySpec<T>* spec = nullptr;
    for (const auto& candidate : table) {
      if (candidate.name == key) spec = &candidate;
    }
    if (!spec) {
      doc.warnings.push_back(unknown_key_warning(doc, entry.first, key, names));
      continue;
    }
    if (spec->ignored) {
      ignored_present.push_back(key);
      continue;
    }
    const YAML::Node& node = entry.second;
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(out.*member)>;
          if constexpr (std::is_same_v<Value, std::string>) {
            if (node.IsNull()) return;
            std::string text = scalar_value(doc, node, key);
            if (!spec->choices.empty()) {
              bool found = false;
              std::vector<std::string> choices;
              for (auto choice : spec->choices) {
                choices.emplace_back(choice);
                found = found || choice == text;
              }
              if (!found) fail_at(doc, node, choices_message(key, text, choices));
            }
            out.*member = std::move(text);
          } else if constexpr (std::is_same_v<Value, bool>) {
            out.*member = bool_value(doc, node, key);
          } else if constexpr (std::is_same_v<Value, int>) {
            out.*member = int_value(doc, node, key);
          } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
            out.*member = list_value(doc, node, key);
          } else {
            out.*member = map_value(doc, node, key);
          }
        },
        spec->field);
  }
  return ignored_present;
}

template <class T>
std::string render_value(const KeySpec<T>& spec, const T& value) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& field = value.*member;
        using Value = std::remove_cvref_t<decltype(field)>;
        if constexpr (std::is_same_v<Value, std::string>) {
          return yaml_quote(field);
        } else if constexpr (std::is_same_v<Value, bool>) {
          return field ? "true" : "false";
        } else if constexpr (std::is_same_v<Value, int>) {
          return std::to_string(field);
        } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
          std::string out;
          for (const auto& item : field) out += "\n  - " + yaml_quote(item);
          return out.empty() ? "[]" : out;
        } else {
          std::string out;
          for (const auto& [k, v] : field) out += "\n  " + yaml_quote(k) + ": " + yaml_quote(v);
          return out.empty() ? "{}" : out;
        }
      },
      spec.field);
}

template <class T>
std::string render_with_comments(const std::vector<KeySpec<T>>& table, const T& value,
                                 std::string_view header, std::string_view type) {
  std::string out(header);
  for (const auto& spec : table) {
    if (spec.ignored) continue;
    bool applies = spec.applies_to.empty() || type.empty();
    for (auto t : spec.applies_to) applies = applies || t == type;
    if (!applies) continue;
    out += "\n# ";
    out += spec.help;
    out += "\n";
    const std::string text = render_value(spec, value);
    if (spec.commented_default && text == render_value(spec, T{})) out += "# ";
    out += spec.name;
    out += text.starts_with('\n') ? ":" : ": ";
    out += text;
    out += "\n";
  }
  return out;
}

}  // namespace mlw
