#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mlw {

/// True when `text` is well-formed UTF-8.
bool is_utf8(std::string_view text);

/// A string for JSON, losslessly: UTF-8 text as it is; any other bytes (a file name or an
/// argument that is not UTF-8) as U+0000 followed by the text with each byte outside UTF-8
/// written \xNN and each backslash doubled. No name, argument or value can hold U+0000, so the
/// form is never ambiguous (docs/cli.md, "Bytes that are not UTF-8").
std::string json_safe_text(std::string_view text);

/// The bytes a string from JSON stands for: json_safe_text undone.
std::string text_from_json(std::string_view text);

/// Every string value in `json` (not keys) that is not UTF-8 made JSON-safe, so that dump()
/// cannot throw; strings already in the marked form stay as they are.
void make_json_safe(nlohmann::ordered_json& json);

/// How deeply `json` nests arrays and objects (a scalar: 0), found without recursion.
std::size_t json_depth(const nlohmann::ordered_json& json);

/// A string from JSON for a person to read: the \xNN form without its marker.
std::string shown_text(std::string_view text);

}  // namespace mlw
