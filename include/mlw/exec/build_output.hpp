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

/// When a failed build could not get its base image `image` on `host`: an mlw sentence that
/// says so — not found locally and the registry not reachable, or no such image in the
/// registry — instead of Docker's raw registry error; "" otherwise.
std::string base_image_problem(const std::string& output, const std::string& image,
                               const std::string& host);

/// The line of a failed build's output that says why (pip's and conda's last error), with a
/// word when the target could not reach the network; "" when there is none.
std::string build_error_line(const std::string& output);

}  // namespace mlw
