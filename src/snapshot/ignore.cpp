#include "mlw/snapshot/ignore.hpp"

#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

bool match_class(std::string_view pattern, std::size_t& pi, char c) {
  // pattern[pi] == '['; on return pi is past the closing ']'.
  std::size_t i = pi + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < pattern.size() && (first || pattern[i] != ']')) {
    first = false;
    char low = pattern[i];
    if (low == '\\' && i + 1 < pattern.size()) low = pattern[++i];
    char high = low;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      high = pattern[i + 2];
      i += 2;
    }
    if (c >= low && c <= high) matched = true;
    ++i;
  }
  pi = i + 1;
  return matched != negate;
}

bool match_from(std::string_view p, std::size_t pi, std::string_view t, std::size_t ti) {
  while (pi < p.size()) {
    const bool double_star = p.compare(pi, 2, "**") == 0 && (pi == 0 || p[pi - 1] == '/') &&
                             (pi + 2 == p.size() || p[pi + 2] == '/');
    if (double_star) {
      if (pi + 2 == p.size()) return true;
      for (std::size_t k = ti;;) {
        if (match_from(p, pi + 3, t, k)) return true;
        k = t.find('/', k);
        if (k == std::string_view::npos) return false;
        ++k;
      }
    }
    const char c = p[pi];
    if (c == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      for (std::size_t k = ti; k <= t.size(); ++k) {
        if (match_from(p, pi, t, k)) return true;
        if (k < t.size() && t[k] == '/') break;
      }
      return false;
    }
    if (ti >= t.size()) return false;
    if (c == '?') {
      if (t[ti] == '/') return false;
      ++pi;
      ++ti;
    } else if (c == '[' && p.find(']', pi + 2) != std::string_view::npos) {
      if (t[ti] == '/' || !match_class(p, pi, t[ti])) return false;
      ++ti;
    } else {
      char literal = c;
      if (c == '\\' && pi + 1 < p.size()) literal = p[++pi];
      if (t[ti] != literal) return false;
      ++pi;
      ++ti;
    }
  }
  return ti == t.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  return match_from(pattern, 0, text, 0);
}

void IgnoreRules::add_text(std::string_view text) {
  for (const auto& line : split(text, '\n')) add_line(line);
}

void IgnoreRules::add_line(std::string_view raw) {
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
  m_rules.push_back(std::move(rule));
}

bool IgnoreRules::ignored(std::string_view path, bool is_directory) const {
  const auto slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  bool result = false;
  for (const auto& rule : m_rules) {
    if (rule.directory_only && !is_directory) continue;
    const bool matched =
        rule.anchored ? glob_match(rule.pattern, path) : glob_match(rule.pattern, base);
    if (matched) result = !rule.negated;
  }
  return result;
}

}  // namespace mlw
