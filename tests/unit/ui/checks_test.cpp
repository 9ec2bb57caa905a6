#include <gtest/gtest.h>

#include "mlw/ui/server.hpp"

namespace mlw::ui {

TEST(HostHeader, LoopbackServerAcceptsItsOwnNamesOnly) {
  EXPECT_TRUE(host_header_allowed("127.0.0.1:8717", "127.0.0.1", 8717, "box"));
  EXPECT_TRUE(host_header_allowed("localhost:8717", "127.0.0.1", 8717, "box"));
  EXPECT_TRUE(host_header_allowed("LOCALHOST:8717", "127.0.0.1", 8717, "box"));
  EXPECT_FALSE(host_header_allowed("localhost:8718", "127.0.0.1", 8717, "box"));
  EXPECT_FALSE(host_header_allowed("localhost", "127.0.0.1", 8717, "box"));
  EXPECT_FALSE(host_header_allowed("attacker.example:8717", "127.0.0.1", 8717, "box"));
  EXPECT_FALSE(host_header_allowed("box:8717", "127.0.0.1", 8717, "box"));
  EXPECT_FALSE(host_header_allowed("", "127.0.0.1", 8717, "box"));
}

TEST(HostHeader, WildcardServerAcceptsAddressesAndTheMachineName) {
  EXPECT_TRUE(host_header_allowed("10.1.2.3:80", "0.0.0.0", 80, "box"));
  EXPECT_TRUE(host_header_allowed("[fe80::1]:80", "::", 80, "box"));
  EXPECT_TRUE(host_header_allowed("box:80", "0.0.0.0", 80, "box"));
  EXPECT_FALSE(host_header_allowed("attacker.example:80", "0.0.0.0", 80, "box"));
  EXPECT_TRUE(host_header_allowed("[::1]:80", "::1", 80, "box"));
}

TEST(OutputPath, RefusesEverythingThatCouldLeaveOutputs) {
  EXPECT_EQ(output_path_components("model.pkl"), (std::vector<std::string>{"model.pkl"}));
  EXPECT_EQ(output_path_components("a/b.txt"), (std::vector<std::string>{"a", "b.txt"}));
  const std::vector<std::string> refused = {
      "", "/etc/passwd", "../run.json", "a/../../x", "a//b", "./a", "a/", std::string("a\0b", 3)};
  for (const auto& bad : refused) {
    EXPECT_TRUE(output_path_components(bad).empty()) << bad;
  }
}

}  // namespace mlw::ui
