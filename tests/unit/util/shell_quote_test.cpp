#include "mlw/util/shell_quote.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "mlw/util/process.hpp"

namespace mlw {

TEST(ShellQuote, LeavesSafeWordsAlone) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("--epochs=10"), "--epochs=10");
}

TEST(ShellQuote, QuotesEverythingElse) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
  EXPECT_EQ(shell_quote("~"), "'~'");
  EXPECT_EQ(shell_quote("#epochs"), "'#epochs'");
}

// The real test: a POSIX shell receives exactly the words that were quoted.
TEST(ShellQuote, RoundTripsHostileWordsThroughARealShell) {
  const std::vector<std::string> words = {
      "", "a b", "it's", "\"double\"", "$(id)", "`id`", "; rm -rf", "line1\nline2", "tab\there",
      "ünïcødé", "*", "\\", "!$HOME", "-n",
      // A tilde would expand to a home folder and a leading # comment the rest of the line out.
      "~", "~root", "~/data", "#", "#epochs", "a#b", "x=~"};
  std::string script = "for w in " + shell_join(words) + "; do printf '%s\\0' \"$w\"; done";
  SystemProcessRunner runner;
  auto result = runner.run({{"/bin/sh", "-c", script}, {}, {}});
  ASSERT_TRUE(result);
  ASSERT_EQ(result->exit_code, 0);
  std::vector<std::string> received;
  std::string current;
  for (char c : result->output) {
    if (c == '\0') {
      received.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  EXPECT_EQ(received, words);
}

}  // namespace mlw
