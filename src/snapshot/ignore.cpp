#include "mlw/snapshot/ignore.hpp"

#include <algorithm>
#include <optional>

#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The POSIX class `name` (ASCII, as git's wildmatch) holds `c`; nullopt for an unknown name.
std::optional<bool> in_posix_class(std::string_view name, char c) {
  const auto u = static_cast<unsigned char>(c);
  const bool upper = u >= 'A' && u <= 'Z', lower = u >= 'a' && u <= 'z';
  const bool digit = u >= '0' && u <= '9';
  const bool graph = u > 0x20 && u < 0x7f;
  if (name == "alnum") return upper || lower || digit;
  if (name == "alpha") return upper || lower;
  if (name == "blank") return u == ' ' || u == '\t';
  if (name == "cntrl") return u < 0x20 || u == 0x7f;
  if (name == "digit") return digit;
  if (name == "graph") return graph;
  if (name == "lower") return lower;
  if (name == "print") return graph || u == ' ';
  if (name == "punct") return graph && !upper && !lower && !digit;
  if (name == "space") return u == ' ' || (u >= '\t' && u <= '\r');
  if (name == "upper") return upper;
  if (name == "xdigit") return digit || (u >= 'a' && u <= 'f') || (u >= 'A' && u <= 'F');
  return std::nullopt;
}

/// Whether one pattern element at `p[pi]` (not '*') matches `c`; `pi` moves past it. nullopt
/// when the pattern is malformed there (an unclosed class, an unknown [:name:], a lone '\'),
/// which git treats as matching nothing.
std::optional<bool> match_element(std::string_view p, std::size_t& pi, char c) {
  if (p[pi] == '?') {
    ++pi;
    return true;
  }
  if (p[pi] == '\\') {
    if (pi + 1 >= p.size()) return std::nullopt;
    pi += 2;
    return p[pi - 1] == c;
  }
  if (p[pi] != '[') return p[pi++] == c;
  std::size_t i = pi + 1;
  const bool negate = i < p.size() && (p[i] == '!' || p[i] == '^');
  if (negate) ++i;
  bool matched = false;
  int previous = -1;  // the last single character, start of a range
  for (bool first = true; i < p.size() && (first || p[i] != ']'); first = false) {
    char ch = p[i];
    if (ch == '\\') {
      if (++i >= p.size()) return std::nullopt;
      ch = p[i];
      matched = matched || ch == c;
      previous = static_cast<unsigned char>(ch);
      ++i;
    } else if (ch == '-' && previous >= 0 && i + 1 < p.size() && p[i + 1] != ']') {
      char high = p[++i];
      if (high == '\\' && ++i < p.size()) high = p[i];
      if (i >= p.size()) return std::nullopt;
      const int u = static_cast<unsigned char>(c);
      matched = matched || (u >= previous && u <= static_cast<unsigned char>(high));
      previous = -1;
      ++i;
    } else if (ch == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const std::size_t close = p.find(']', i + 2);
      if (close == std::string_view::npos) return std::nullopt;
      if (p[close - 1] != ':' || close < i + 3) {  // not "[:name:]": a literal '['
        matched = matched || c == '[';
        previous = '[';
        ++i;
        continue;
      }
      const auto in = in_posix_class(p.substr(i + 2, close - i - 3), c);
      if (!in) return std::nullopt;
      matched = matched || *in;
      previous = -1;
      i = close + 1;
    } else {
      matched = matched || ch == c;
      previous = static_cast<unsigned char>(ch);
      ++i;
    }
  }
  if (i >= p.size()) return std::nullopt;  // no closing ']'
  pi = i + 1;
  return matched != negate;
}

/// One path component against one pattern component (no '/'): greedy with one backtrack
/// point, so linear in practice and never exponential.
bool match_component(std::string_view p, std::string_view t) {
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      star = pi;
      mark = ti;
      continue;
    }
    if (pi < p.size()) {
      std::size_t next = pi;
      const auto matched = match_element(p, next, t[ti]);
      if (!matched) return false;
      if (*matched) {
        pi = next;
        ++ti;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    pi = star;
    ti = ++mark;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Components are matched one to one, except a component that is exactly "**": it matches
  // any number of components (at least one when it ends the pattern, as git's "abc/**").
  const auto pattern_parts = split(pattern, '/');
  const auto text_parts = split(text, '/');
  const std::size_t n = text_parts.size();
  std::vector<char> reach(n + 1, 0), next(n + 1, 0);
  reach[0] = 1;
  for (std::size_t i = 0; i < pattern_parts.size(); ++i) {
    std::fill(next.begin(), next.end(), 0);
    if (pattern_parts[i] == "**") {
      const bool last = i + 1 == pattern_parts.size();
      bool before = false;
      for (std::size_t j = 0; j <= n; ++j) {
        if (!last) before = before || reach[j];
        next[j] = before;
        if (last) before = before || reach[j];
      }
    } else {
      for (std::size_t j = 1; j <= n; ++j) {
        next[j] = reach[j - 1] && match_component(pattern_parts[i], text_parts[j - 1]);
      }
    }
    std::swap(reach, next);
  }
  return reach[n] != 0;
}

void IgnoreRules::add_text(std::string_view text, std::string_view folder) {
  for (const auto& line : split(text, '\n')) add_line(line, folder);
}

void IgnoreRules::add_line(std::string_view raw, std::string_view folder) {
  std::string line(raw);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  // Trailing spaces are dropped unless escaped with a backslash.
  while (!line.empty() && line.back() == ' ' &&
         !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
    line.pop_back();
  }
  if (line.empty() || line[0] == '#') return;
  Rule rule;
  if (line[0] == '!') {
    rule.negated = true;
    line.erase(0, 1);
  } else if (line[0] == '\\' && line.size() > 1 && (line[1] == '!' || line[1] == '#')) {
    line.erase(0, 1);
  }
  if (!line.empty() && line.back() == '/') {
    rule.directory_only = true;
    line.pop_back();
  }
  if (line.empty()) return;
  if (line.find('/') != std::string::npos) rule.anchored = true;
  if (line[0] == '/') line.erase(0, 1);
  rule.pattern = line;
  rule.folder = folder;
  m_rules.push_back(std::move(rule));
}

bool IgnoreRules::ignored(std::string_view path, bool is_directory) const {
  const auto slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  bool result = false;
  for (const auto& rule : m_rules) {
    if (rule.directory_only && !is_directory) continue;
    std::string_view relative = path;
    if (!rule.folder.empty()) {
      // A subfolder's .amlignore speaks of paths under that folder, relative to it.
      if (path.size() <= rule.folder.size() || !starts_with(path, rule.folder) ||
          path[rule.folder.size()] != '/') {
        continue;
      }
      relative = path.substr(rule.folder.size() + 1);
    }
    const bool matched =
        rule.anchored ? glob_match(rule.pattern, relative) : glob_match(rule.pattern, base);
    if (matched) result = !rule.negated;
  }
  return result;
}

}  // namespace mlw
