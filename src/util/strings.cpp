#include "mlw/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "mlw/util/error.hpp"

namespace mlw {

int exit_code_of(int code, CommandCodes command) {
  struct Row {
    int error;   ///< the code the error was raised with
    int plain;   ///< its exit code in every command but submit
    int submit;  ///< in a waiting submit
  };
  using namespace exit_code;
  static constexpr Row k_table[] = {
      {k_command_default, k_failure, k_cannot_start},
      {k_failure, k_failure, k_failure},
      {k_usage, k_usage, k_cannot_start},  // a usage error of submit is 125, as docker run
      {k_cannot_start, k_failure, k_cannot_start},
      {k_not_executable, k_failure, k_not_executable},
      {k_not_found, k_failure, k_not_found},
  };
  for (const Row& row : k_table) {
    if (row.error == code) return command == CommandCodes::Submit ? row.submit : row.plain;
  }
  // Any other code: as raised in submit; past 2 it is a failure in every other command.
  return command == CommandCodes::Submit || code <= k_usage ? code : k_failure;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
  if (word.size() >= 3) {
    for (const auto& candidate : candidates) {
      if (candidate.size() > word.size() && starts_with(candidate, word)) return candidate;
    }
  }
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (best && best_distance <= limit && best_distance < std::max(word.size(), best->size())) {
    return best;
  }
  return std::nullopt;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto best = nearest(word, candidates);
  return best ? " (did you mean \"" + *best + "\"?)" : std::string();
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      out.emplace_back(text.substr(start));
      return out;
    }
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::string lower_ascii(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<long long> parse_integer(std::string_view text, long long min, long long max) {
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (text.empty() || (text[0] == '+')) return std::nullopt;
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last || value < min || value > max) return std::nullopt;
  return value;
}

std::optional<double> parse_decimal(std::string_view text, double min, double max) {
  const std::string_view digits = !text.empty() && text[0] == '-' ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789.") != std::string_view::npos ||
      digits.find('.') != digits.rfind('.') || digits.find_first_of("0123456789") == digits.npos) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
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

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= limit) {
      out += "…";
      break;
    }
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0 || (length == 1 && (byte < 0x20 || byte == 0x7f))) {
      out += fmt::format("\\x{:02x}", byte);
      continue;
    }
    out.append(text, i, length);
    i += length - 1;
  }
  return out;
}

bool wildcard_match(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool pattern_list_matches(const std::vector<std::string>& patterns, std::string_view name,
                          bool ignore_case) {
  const std::string subject = ignore_case ? lower_ascii(std::string(name)) : std::string(name);
  bool matched = false;
  for (const auto& pattern : patterns) {
    const bool negated = starts_with(pattern, "!");
    std::string body = negated ? pattern.substr(1) : pattern;
    if (ignore_case) body = lower_ascii(std::move(body));
    if (wildcard_match(body, subject)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

}  // namespace mlw
