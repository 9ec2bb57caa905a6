#include "mlw/snapshot/ignore.hpp"

#include <gtest/gtest.h>

namespace mlw {

TEST(GlobMatch, StarAndQuestionStopAtSlashes) {
  EXPECT_TRUE(glob_match("*.pyc", "a.pyc"));
  EXPECT_FALSE(glob_match("*.pyc", "dir/a.pyc"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
}

TEST(GlobMatch, ClassesAndEscapes) {
  EXPECT_TRUE(glob_match("file[0-9].txt", "file7.txt"));
  EXPECT_FALSE(glob_match("file[!0-9].txt", "file7.txt"));
  EXPECT_TRUE(glob_match("\\*literal", "*literal"));
  EXPECT_FALSE(glob_match("\\*literal", "xliteral"));
}

TEST(GlobMatch, DoubleStarSpansFolders) {
  EXPECT_TRUE(glob_match("**/cache", "cache"));
  EXPECT_TRUE(glob_match("**/cache", "a/b/cache"));
  EXPECT_TRUE(glob_match("data/**", "data/x/y.csv"));
  EXPECT_FALSE(glob_match("data/**", "data"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(glob_match("a/**/b", "a/x/c"));
}

TEST(IgnoreRules, UnanchoredPatternsMatchAnyFolder) {
  IgnoreRules rules;
  rules.add_text("*.log\n__pycache__/\n");
  EXPECT_TRUE(rules.ignored("run.log", false));
  EXPECT_TRUE(rules.ignored("deep/in/run.log", false));
  EXPECT_TRUE(rules.ignored("pkg/__pycache__", true));
  EXPECT_FALSE(rules.ignored("pkg/__pycache__", false));  // dir/ matches only folders
}

TEST(IgnoreRules, LeadingOrMiddleSlashAnchorsToTheProject) {
  IgnoreRules rules;
  rules.add_text("/data\ndocs/build\n");
  EXPECT_TRUE(rules.ignored("data", true));
  EXPECT_FALSE(rules.ignored("src/data", true));
  EXPECT_TRUE(rules.ignored("docs/build", true));
  EXPECT_FALSE(rules.ignored("x/docs/build", true));
}

TEST(IgnoreRules, NegationReincludesAndLastRuleWins) {
  IgnoreRules rules;
  rules.add_text("*.csv\n!keep.csv\n# a comment\n\n\\#hash\n");
  EXPECT_TRUE(rules.ignored("big.csv", false));
  EXPECT_FALSE(rules.ignored("keep.csv", false));
  EXPECT_TRUE(rules.ignored("#hash", false));
  rules.add_line("keep.csv");
  EXPECT_TRUE(rules.ignored("keep.csv", false));
}

TEST(IgnoreRules, TrailingSpacesAreTrimmedUnlessEscaped) {
  IgnoreRules rules;
  rules.add_line("a.txt   ");
  rules.add_line("b\\ ");
  EXPECT_TRUE(rules.ignored("a.txt", false));
  EXPECT_TRUE(rules.ignored("b ", false));
}

TEST(GlobMatch, PosixClassesAndGitsBracketRules) {
  EXPECT_TRUE(glob_match("run[[:digit:]].log", "run7.log"));
  EXPECT_FALSE(glob_match("run[[:digit:]].log", "runx.log"));
  EXPECT_TRUE(glob_match("[[:upper:][:digit:]]x", "Qx"));
  EXPECT_TRUE(glob_match("[^a]", "b"));
  EXPECT_TRUE(glob_match("[]]", "]"));
  EXPECT_TRUE(glob_match("[!]]", "a"));
  EXPECT_FALSE(glob_match("[[:nosuch:]]", "a"));  // malformed: matches nothing
  EXPECT_FALSE(glob_match("[abc", "a"));
  EXPECT_FALSE(glob_match("abc\\", "abc"));
  EXPECT_TRUE(glob_match("a[[:x]", "a[")) << "not [:name:]: a literal [";
}

TEST(GlobMatch, BacktrackingIsNeverExponential) {
  const std::string name = std::string(200, 'a');
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*a*b", name));
  }
  EXPECT_TRUE(glob_match("**/**/**/**/**/**/x", "a/b/c/d/e/f/g/h/i/j/k/x"));
}

TEST(IgnoreRules, AnAmlignoreInASubfolderSpeaksForThatFolder) {
  IgnoreRules rules;
  rules.add_text("*.csv\n");
  rules.add_text("!keep.csv\n/local.txt\ncache/\n", "data");
  EXPECT_TRUE(rules.ignored("big.csv", false));
  EXPECT_FALSE(rules.ignored("data/keep.csv", false));
  EXPECT_TRUE(rules.ignored("other/keep.csv", false));
  EXPECT_TRUE(rules.ignored("data/local.txt", false));
  EXPECT_FALSE(rules.ignored("local.txt", false));
  EXPECT_FALSE(rules.ignored("data/x/local.txt", false));
  EXPECT_TRUE(rules.ignored("data/x/cache", true));
  EXPECT_FALSE(rules.ignored("datax/keep.csv", false) == false);
}

}  // namespace mlw
