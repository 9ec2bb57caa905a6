#pragma once

// What a failed environment build's output says, read for the run's problem and its summary.

#include <cstddef>
#include <string>

namespace mlw {

/// Why an environment build failed, where its install script said so: the first line of the build
/// output that starts with `mlw-error[CODE]: ` (CODE 125 or 127, the run's exit code; and the
/// message).
struct BuildFailure {
  int exit_code = 0;    ///< 0 when the output names no reason
  std::string message;  ///< the reason, with its fix
};

/// Reads the reason of a failed build from the end of its output.
BuildFailure build_failure_reason(const std::string& output);

/// The last lines of a failed build's output as a person reads them: colour codes and Docker's
/// notice that its legacy builder is deprecated taken out, at most `lines` lines.
std::string build_output_tail(const std::string& output, std::size_t lines);

/// One line of a build's output as `experiment prepare` shows it on a terminal (its log keeps it
/// whole): Docker's notice that its legacy builder is deprecated dropped (""), and the Dockerfile's
/// RUN of mlw's install script shown without its words (the messages it would say on a failure
/// read like an error on a build that succeeds).
std::string build_line_for_terminal(const std::string& line);

/// When a failed build could not get its base image `image` on `host`: an mlw sentence that
/// says so — not found locally and the registry not reachable, or no such image in the
/// registry — instead of Docker's raw registry error; "" otherwise.
std::string base_image_problem(const std::string& output, const std::string& image,
                               const std::string& host, const std::string& user = "");

/// The ssh command that reaches `host` ("name", "name:port", "[v6]:port") as `user` (none:
/// ssh's own default): `ssh -p PORT USER@NAME`, as OpenSSH takes it.
std::string ssh_command_for(const std::string& host, const std::string& user);

/// The line of a failed build's output that says why (pip's and conda's last error), with a
/// word when the target could not reach the network; "" when there is none.
std::string build_error_line(const std::string& output);

}  // namespace mlw
