#include "mlw/util/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace mlw {

namespace {

/// The length of the UTF-8 sequence at `text[i]`, or 0 when it is not one (overlong forms,
/// surrogates and code points over U+10FFFF are not UTF-8).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t code = 0;
  if ((b & 0xe0) == 0xc0) {
    length = 2;
    code = b & 0x1f;
  } else if ((b & 0xf0) == 0xe0) {
    length = 3;
    code = b & 0x0f;
  } else if ((b & 0xf8) == 0xf0) {
    length = 4;
    code = b & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  static const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < smallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string json_safe_text(std::string_view text) {
  if (is_utf8(text) && (text.empty() || text[0] != '\0')) return std::string(text);
  std::string out(1, '\0');
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
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
