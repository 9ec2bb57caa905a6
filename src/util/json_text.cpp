#include "mlw/util/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string json_safe_text(std::string_view text) {
  if (is_utf8(text) && (text.empty() || text[0] != '\0')) return std::string(text);
  std::string out(1, '\0');
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    } else if (text[i] == '\\') {
      out += "\\\\";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string text_from_json(std::string_view text) {
  if (text.empty() || text[0] != '\0') return std::string(text);
  std::string out;
  for (std::size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\\') {
      out += '\\';
      ++i;
    } else if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' &&
               hex_value(text[i + 2]) >= 0 && hex_value(text[i + 3]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 2]) * 16 + hex_value(text[i + 3]));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

void make_json_safe(nlohmann::ordered_json& json) {
  if (json.is_string()) {
    const auto& text = json.get_ref<const std::string&>();
    if (!is_utf8(text)) json = json_safe_text(text);  // a marked string stays as it is
  } else if (json.is_structured()) {
    for (auto& item : json) make_json_safe(item);
  }
}

std::size_t json_depth(const nlohmann::ordered_json& json) {
  std::size_t deepest = 0;
  std::vector<std::pair<const nlohmann::ordered_json*, std::size_t>> pending = {{&json, 0}};
  while (!pending.empty()) {
    const auto [value, depth] = pending.back();
    pending.pop_back();
    if (!value->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& item : *value) pending.emplace_back(&item, depth + 1);
  }
  return deepest;
}

std::string shown_text(std::string_view text) {
  return !text.empty() && text[0] == '\0' ? std::string(text.substr(1)) : std::string(text);
}

}  // namespace mlw
