#include <gtest/gtest.h>

#include "mlw/util/error.hpp"

#include "mlw/ui/server.hpp"

namespace mlw::ui {

/// One Host header against one server: bound address, port, machine name, and the answer.
struct HostCase {
  const char* header;
  const char* bound;
  int port;
  bool allowed;
};

TEST(HostHeader, OnlyNamesOfTheBoundAddressAndPortPass) {
  const HostCase cases[] = {
      // Bound to loopback: its own address and localhost, with its port, in any case.
      {"127.0.0.1:8717", "127.0.0.1", 8717, true},
      {"localhost:8717", "127.0.0.1", 8717, true},
      {"LOCALHOST:8717", "127.0.0.1", 8717, true},
      {"[::1]:8717", "127.0.0.1", 8717, true},
      {"localhost:8718", "127.0.0.1", 8717, false},
      {"localhost", "127.0.0.1", 8717, false},
      {"attacker.example:8717", "127.0.0.1", 8717, false},  // DNS rebinding
      {"box:8717", "127.0.0.1", 8717, false},
      {"", "127.0.0.1", 8717, false},
      {"127.0.0.1:8717:8717", "127.0.0.1", 8717, false},
      // Bound to another address: that address only.
      {"127.0.0.2:80", "127.0.0.2", 80, true},
      {"localhost:80", "127.0.0.2", 80, false},
      {"127.0.0.1:80", "127.0.0.2", 80, false},
      {"[::1]:80", "::1", 80, true},
      // Bound to every address: any address literal, and this machine's name.
      {"10.1.2.3:80", "0.0.0.0", 80, true},
      {"[fe80::1]:80", "::", 80, true},
      {"box:80", "0.0.0.0", 80, true},
      {"BOX:80", "0.0.0.0", 80, true},
      {"localhost:80", "0.0.0.0", 80, true},
      {"attacker.example:80", "0.0.0.0", 80, false},
      {"10.1.2.3.example:80", "0.0.0.0", 80, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(host_header_allowed(c.header, c.bound, c.port, "box"), c.allowed)
        << "Host: " << c.header << " to a server on " << c.bound << ":" << c.port;
  }
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

TEST(UiChecks, EachErrorHasItsHttpStatus) {
  std::string message;
  EXPECT_EQ(
      http_status_of(std::make_exception_ptr(UsageError("limit must be a whole number")), message),
      400);
  EXPECT_EQ(message, "limit must be a whole number");
  EXPECT_EQ(http_status_of(std::make_exception_ptr(NotFoundError("no run \"x\"")), message), 404);
  EXPECT_EQ(
      http_status_of(std::make_exception_ptr(Error("the record of run x is damaged")), message),
      500);
  EXPECT_EQ(message, "the record of run x is damaged");
  EXPECT_EQ(http_status_of(std::make_exception_ptr(std::runtime_error("boom")), message), 500);
}

}  // namespace mlw::ui
