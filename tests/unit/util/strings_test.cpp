#include "mlw/util/strings.hpp"

#include <gtest/gtest.h>

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

}  // namespace mlw
