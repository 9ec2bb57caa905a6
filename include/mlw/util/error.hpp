#pragma once

#include <stdexcept>
#include <string>

namespace mlw {

/// Process exit codes used by every command (spec §4, docker's convention for submit).
namespace exit_code {
inline constexpr int k_success = 0;
inline constexpr int k_failure = 1;
inline constexpr int k_usage = 2;
inline constexpr int k_cannot_start = 125;
inline constexpr int k_not_executable = 126;
inline constexpr int k_not_found = 127;
/// Marker: use the failure code of the running command (1, or 125 for a waiting submit).
inline constexpr int k_command_default = -1;
}  // namespace exit_code

/// Which exit codes a command's errors take: submit follows `docker run` (125-127), every other
/// command 1 and 2 (docs/cli.md "Exit codes").
enum class CommandCodes { Plain, Submit };

/// The exit code of an error raised with `code` (an exit_code::…, or k_command_default) in a
/// command of `command`: the one table of that mapping.
int exit_code_of(int code, CommandCodes command);

/// An expected failure with a one-line message for the user; caught only in main.
class Error : public std::runtime_error {
 public:
  /// Creates an error; `code` is the exit code it maps to (default: the command's failure code).
  explicit Error(const std::string& message, int code = exit_code::k_command_default)
      : std::runtime_error(message), m_code(code) {}
  /// The exit code this error maps to, or exit_code::k_command_default.
  int code() const { return m_code; }

 private:
  int m_code;
};

/// A mistake in how a command was called (exit code 2).
class UsageError : public Error {
 public:
  /// Creates a usage error with its message.
  explicit UsageError(const std::string& message) : Error(message, exit_code::k_usage) {}
};

/// Something asked for by name that does not exist (a run, an output, a file): the dashboard
/// answers 404; a command fails as with any Error.
class NotFoundError : public Error {
 public:
  /// Creates a not-found error with its message.
  explicit NotFoundError(const std::string& message) : Error(message) {}
};

/// Text of errno `err`, e.g. "No such file or directory".
std::string errno_text(int err);

}  // namespace mlw
