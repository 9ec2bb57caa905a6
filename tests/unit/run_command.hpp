#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace mlw::test {

/// What a command run by /bin/sh printed on its stdout, and its exit status (-1: it did not exit).
struct CommandResult {
  int status = -1;
  std::string output;
};

/// Runs `command` with /bin/sh (popen) and reads all it prints (add 2>&1 for its errors).
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) {
    result.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace mlw::test
