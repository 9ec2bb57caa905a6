#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// Edit distance between two strings (insertions, deletions, substitutions, case-sensitive).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word` when it is close enough to be a likely typo.
std::optional<std::string> nearest(std::string_view word,
                                   const std::vector<std::string>& candidates);

/// " (did you mean \"x\"?)" for the nearest candidate, or an empty string.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// Joins `parts` with `separator`.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

/// Splits on every `separator` (empty fields kept).
std::vector<std::string> split(std::string_view text, char separator);

/// `text` without leading and trailing whitespace.
std::string trim(std::string_view text);

/// True when `text` starts with `prefix`.
inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// The integer `text` spells (an optional '-' and decimal digits, nothing else) when it lies in
/// [min, max]; nullopt otherwise. For numbers read from outside (a target's answer, a file).
std::optional<long long> parse_integer(std::string_view text, long long min, long long max);

/// The plain decimal number `text` spells (an optional '-', digits, at most one '.'; no '+',
/// exponent, inf or nan) when it lies in [min, max]; nullopt otherwise. For numbers read from
/// outside: nvidia-smi's figures, a setting such as idleGpu's minutes.
std::optional<double> parse_decimal(std::string_view text, double min, double max);

/// The length of the UTF-8 sequence that starts at `text[i]`, or 0 when none does (a stray
/// byte, a cut sequence, an overlong form, a surrogate, a code point over U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

/// `text` for a one-line message: control bytes and bytes that are not UTF-8 as \xNN escapes,
/// cut to `limit` bytes with "…".
std::string printable(std::string_view text, std::size_t limit = 80);

/// OpenSSH's pattern match (Host lines, known_hosts): `*` any run, `?` one character, every
/// other character literal (brackets too). Linear: one backtrack point, never exponential.
bool wildcard_match(std::string_view pattern, std::string_view text);

/// OpenSSH's pattern list: true when a pattern matches `name` (wildcard_match) and no
/// `!pattern` does.
bool pattern_list_matches(const std::vector<std::string>& patterns, std::string_view name,
                          bool ignore_case);

/// `text` with ASCII letters in lower case.
std::string lower_ascii(std::string text);

}  // namespace mlw
