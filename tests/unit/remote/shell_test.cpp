// LocalShell, the shell of the docker target and of doctor: input, output and the end of the
// command, and nothing left behind when a caller's callback throws.

#include "mlw/remote/shell.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "mlw/util/error.hpp"

namespace mlw {
namespace {

std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

TEST(LocalShell, FeedsInputAndSeparatesOutputFromErrors) {
  LocalShell shell;
  const ShellResult result = shell.run_with_input("tr a-z A-Z; echo oops >&2; exit 3", "hello\n");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.output, "HELLO\n");
  EXPECT_EQ(result.errors, "oops\n");
}

TEST(LocalShell, ACallbackThatThrowsStopsTheCommandAndLeavesNoPipeOpen) {
  LocalShell shell;
  const std::size_t before = open_descriptors();
  ShellStreams streams;
  streams.on_output = [](std::string_view) { throw Error("the caller gave up"); };
  const auto started = std::chrono::steady_clock::now();
  EXPECT_THROW(shell.run("echo first; sleep 30; echo never", streams), Error);
  // The command was stopped (SIGTERM), not waited for to its end.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  EXPECT_EQ(open_descriptors(), before);
}

TEST(LocalShell, ShouldStopEndsTheCommandWith143) {
  LocalShell shell;
  ShellStreams streams;
  int asked = 0;
  streams.should_stop = [&] { return ++asked > 2; };
  EXPECT_EQ(shell.run("sleep 30", streams).exit_code, 143);
}

}  // namespace
}  // namespace mlw
