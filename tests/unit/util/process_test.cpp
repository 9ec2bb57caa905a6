// Exit codes as the shell and docker give them: N for exit(N), 128+N for a death by signal N.
#include "mlw/util/process.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>

namespace mlw {

TEST(ExitCode, ExitStatusIsTakenAsIs) {
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(0, 0)), 0);
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(3, 0)), 3);
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(255, 0)), 255);
}

TEST(ExitCode, DeathBySignalIs128PlusTheSignal) {
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(0, SIGTERM)), 143);
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(0, SIGKILL)), 137);
  EXPECT_EQ(exit_code_from_wait_status(W_EXITCODE(0, SIGINT)), 130);
}

TEST(ExitCode, AProcessThatKillsItselfReportsTheSignal) {
  SystemProcessRunner runner;
  for (const auto& [signal, code] : {std::pair{"TERM", 143}, {"KILL", 137}, {"SEGV", 139}}) {
    const auto result =
        runner.run({{"/bin/sh", "-c", std::string("kill -") + signal + " $$"}, {}, {}});
    ASSERT_TRUE(result);
    EXPECT_EQ(result->exit_code, code) << signal;
  }
  const auto plain = runner.run({{"/bin/sh", "-c", "exit 7"}, {}, {}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->exit_code, 7);
}

}  // namespace mlw
