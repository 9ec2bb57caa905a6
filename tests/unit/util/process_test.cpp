// Exit codes as the shell and docker give them: N for exit(N), 128+N for a death by signal N.
#include "mlw/util/process.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include "temp_dir.hpp"

#include "mlw/util/strings.hpp"

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

namespace mlw {
namespace {

/// Runs `spec` through spawn with stdout and stderr into one pipe; its exit code and output.
std::pair<int, std::string> spawned(const ProcessSpec& spec, bool new_session = false) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t pid =
      spawn(spec, {.stdout_fd = fds[1], .stderr_fd = fds[1], .new_session = new_session});
  ::close(fds[1]);
  std::string output;
  char buffer[256];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {exit_code_from_wait_status(status), output};
}

TEST(Spawn, RunsArgvWithItsEnvironmentAndFolderFoundOnPath) {
  const auto [code, output] = spawned(
      {{"sh", "-c", "echo \"$GREETING\" \"$(pwd)\"; echo err >&2"}, {{"GREETING", "hi"}}, "/"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(output, "hi /\nerr\n");
}

TEST(Spawn, TellsWhyAChildCouldNotStartWithTheShellsExitCodes) {
  auto [code, output] = spawned({{"/nonexistent/python3"}, {}, {}});
  EXPECT_EQ(code, 127);
  EXPECT_EQ(output, "mlw: cannot run /nonexistent/python3: No such file or directory\n");
  test::TempDir dir("spawn");
  const std::string plain = (dir.path() / "plain.txt").string();
  std::ofstream(plain) << "not a program\n";
  std::tie(code, output) = spawned({{plain}, {}, {}});
  EXPECT_EQ(code, 126);
  EXPECT_EQ(output, "mlw: cannot run " + plain + ": Permission denied\n");
  std::tie(code, output) = spawned({{"true"}, {}, "/nonexistent"});
  EXPECT_EQ(code, 125);
  EXPECT_EQ(output, "mlw: cannot enter /nonexistent: No such file or directory\n");
}

TEST(Spawn, ANewSessionLeadsItsOwnProcessGroup) {
  const auto [code, output] =
      spawned({{"sh", "-c", "awk '{print $5}' /proc/$$/stat; echo $$"}, {}, {}}, true);
  EXPECT_EQ(code, 0);
  const auto lines = split(trim(output), '\n');
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(trim(lines[0]), trim(lines[1]));
}

TEST(Spawn, StdinIsEmptyWhenNotGiven) {
  const auto [code, output] = spawned({{"cat"}, {}, {}});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace mlw
