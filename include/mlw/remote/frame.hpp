#pragma once

#include <string>
#include <string_view>

#include "mlw/remote/shell.hpp"

namespace mlw {

/// Separates a command's own output from what the user's login shell printed before it (a
/// `.bashrc` that echoes, an HPC login node's module messages, a conda hook): the command
/// prints `marker` and a newline first on each stream, and everything up to and including that
/// line is dropped. What was dropped is kept (the first 4 KiB) for messages.
class FramedStream {
 public:
  /// Frames a stream whose command prints `marker` + '\n' before anything else.
  explicit FramedStream(std::string marker);
  /// The part of `chunk` that the command printed (empty until the marker line was seen).
  std::string_view feed(std::string_view chunk);
  /// True once the marker line was seen.
  bool started() const { return m_started; }
  /// What the shell printed before the marker (at most 4 KiB of it, and the tail not yet
  /// known to be noise).
  std::string noise() const;

 private:
  std::string m_marker;
  std::string m_window;  // the tail not yet known to be noise (shorter than the marker line)
  std::string m_noise;
  bool m_started = false;
};

/// A marker no shell prints by chance: "mlw-frame-" and 16 random hex digits.
std::string new_frame_marker();

/// The script that prints `marker` on stdout and stderr, then runs `script`.
std::string framed_script(const std::string& marker, const std::string& script);

/// What the login shell on `where` printed around a command (stdout, stderr frames) is ignored
/// (named at -v); a shell that ended before the command began makes `result` a failure whose
/// reason is what it printed.
void report_noise(const std::string& where, const FramedStream (&frames)[2], ShellResult& result);

}  // namespace mlw
