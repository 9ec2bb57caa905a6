#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// Matches `text` against one gitignore glob as git's wildmatch does (`*` and `?` within a path
/// component, `[a-z]`, `[!x]`, `[^x]`, `[[:digit:]]` and the other POSIX classes, `**` as a
/// whole component across folders, `\` escapes); a malformed pattern matches nothing. Never
/// exponential: components are matched greedily, `**` by a table over components.
bool glob_match(std::string_view pattern, std::string_view text);

/// Rules in gitignore syntax (`.amlignore`): comments, `!` negation, `/` anchors, `dir/`, `**`.
class IgnoreRules {
 public:
  /// Adds the rules of a file's text (later rules win over earlier ones); `folder` is where an
  /// .amlignore in a subfolder lies ("" for the project's): its rules apply below it, relative
  /// to it, as a .gitignore's do.
  void add_text(std::string_view text, std::string_view folder = "");
  /// Adds one line of gitignore syntax.
  void add_line(std::string_view line, std::string_view folder = "");
  /// True when `path` (relative, '/'-separated) is excluded. Callers walk top-down and do not
  /// descend into excluded folders, as git does.
  bool ignored(std::string_view path, bool is_directory) const;

 private:
  struct Rule {
    std::string pattern;
    bool negated = false;
    bool directory_only = false;
    bool anchored = false;  ///< matches the whole path, not just the last component
    std::string folder;     ///< the folder of the .amlignore it came from ("" for the root)
  };
  std::vector<Rule> m_rules;
};

}  // namespace mlw
