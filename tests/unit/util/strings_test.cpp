#include "mlw/util/strings.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"

namespace mlw {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(DidYouMean, SuggestsTheNearestCloseName) {
  EXPECT_EQ(did_you_mean("nvidiaDoker", {"nvidiaDocker", "sharedVolumes"}),
            " (did you mean \"nvidiaDocker\"?)");
  EXPECT_EQ(did_you_mean("locl", {"docker", "local"}), " (did you mean \"local\"?)");
}

TEST(DidYouMean, CompletesAPrefix) {
  EXPECT_EQ(did_you_mean("tensorflow", {"blank", "tensorflow-mnist"}),
            " (did you mean \"tensorflow-mnist\"?)");
  EXPECT_EQ(did_you_mean("te", {"tensorflow-mnist"}), "");
}

TEST(DidYouMean, StaysQuietWhenNothingIsClose) {
  EXPECT_EQ(did_you_mean("zzzzzzzz", {"local", "docker"}), "");
  EXPECT_EQ(did_you_mean("x", {}), "");
}

TEST(Split, KeepsEmptyFields) {
  EXPECT_EQ(split("a\t\tb", '\t'), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
}

TEST(Trim, RemovesSurroundingWhitespace) {
  EXPECT_EQ(trim("  a b \n"), "a b");
}

TEST(ParseInteger, OnlyDigitsInRangeCount) {
  EXPECT_EQ(parse_integer("0", 0, 255), 0);
  EXPECT_EQ(parse_integer("255", 0, 255), 255);
  EXPECT_EQ(parse_integer("-3", -5, 5), -3);
  for (const char* bad : {"", "256", "4096", "-1", "running", "12x", " 1", "1 ", "+1",
                          "99999999999999999999999", "0x10"}) {
    EXPECT_EQ(parse_integer(bad, 0, 255), std::nullopt) << bad;
  }
}

TEST(ParseDecimal, PlainDecimalsInRangeOnly) {
  EXPECT_EQ(parse_decimal("45.5", 0, 100), 45.5);
  EXPECT_EQ(parse_decimal("0", 0, 100), 0);
  EXPECT_EQ(parse_decimal(".5", 0, 100), 0.5);
  EXPECT_EQ(parse_decimal("-2.5", -5, 5), -2.5);
  EXPECT_EQ(parse_decimal("1764322000.25", 0, 1e12), 1764322000.25);
  for (const char* bad : {"", ".", "-", "101", "-1", "1e3", "inf", "nan", "+1", " 1", "1 ", "1.2.3",
                          "0x10", "[N/A]", "1,5", "1e400"}) {
    EXPECT_EQ(parse_decimal(bad, 0, 100), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_decimal(std::string(400, '9'), 0, 1e12), std::nullopt);
}

TEST(Printable, EscapesControlAndNonUtf8BytesAndCuts) {
  EXPECT_EQ(printable("r\xe9sum\xc3\xa9\n\x1b[31m"), "r\\xe9sum\xc3\xa9\\x0a\\x1b[31m");
  EXPECT_EQ(printable(std::string(100, 'a'), 10), std::string(10, 'a') + "…");
  EXPECT_EQ(printable("exactly10!", 10), "exactly10!");
}

TEST(ExitCodes, OneTableForEveryCommandAndSubmit) {
  using namespace exit_code;
  const CommandCodes plain = CommandCodes::Plain;
  const CommandCodes submit = CommandCodes::Submit;
  EXPECT_EQ(exit_code_of(k_command_default, plain), 1);
  EXPECT_EQ(exit_code_of(k_command_default, submit), 125);
  EXPECT_EQ(exit_code_of(k_usage, plain), 2);
  EXPECT_EQ(exit_code_of(k_usage, submit), 125);  // as docker run
  EXPECT_EQ(exit_code_of(k_failure, submit), 1);
  for (const int code : {k_cannot_start, k_not_executable, k_not_found}) {
    EXPECT_EQ(exit_code_of(code, plain), 1) << code;  // 125-127 are submit's only
    EXPECT_EQ(exit_code_of(code, submit), code) << code;
  }
}

}  // namespace mlw
