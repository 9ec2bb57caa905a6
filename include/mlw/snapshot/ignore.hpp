#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// Matches `text` against one gitignore glob (`*`, `?`, `[a-z]`, `[!x]`, `**`, `\` escapes).
bool glob_match(std::string_view pattern, std::string_view text);

/// Rules in gitignore syntax (`.amlignore`): comments, `!` negation, `/` anchors, `dir/`, `**`.
class IgnoreRules {
 public:
  /// Adds the rules of a file's text (later rules win over earlier ones).
  void add_text(std::string_view text);
  /// Adds one line of gitignore syntax.
  void add_line(std::string_view line);
  /// True when `path` (relative, '/'-separated) is excluded. Callers walk top-down and do not
  /// descend into excluded folders, as git does.
  bool ignored(std::string_view path, bool is_directory) const;

 private:
  struct Rule {
    std::string pattern;
    bool negated = false;
    bool directory_only = false;
    bool anchored = false;  ///< matches the whole path, not just the last component
  };
  std::vector<Rule> m_rules;
};

}  // namespace mlw
