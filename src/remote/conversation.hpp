#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "mlw/remote/frame.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// A two-way byte stream to one `/bin/sh` on a target, with two outputs: an SSH channel, or
/// one that a kept connection relays. Every call returns at once.
class ShellPipe {
 public:
  virtual ~ShellPipe() = default;
  /// Writes what can be written of `data` now; the count (0: wait and try again).
  virtual std::size_t write(std::string_view data) = 0;
  /// Reads what has arrived on `stream` (0 stdout, 1 stderr); 0 when nothing has.
  virtual std::size_t read(int stream, char* buffer, std::size_t size) = 0;
  /// True once the shell's output has ended (it exited, or the connection is gone).
  virtual bool ended() = 0;
  /// Waits up to `ms` for something to move, keeping an idle connection alive.
  virtual void wait(int ms) = 0;
  /// How many times a caller waited for the peer (a round trip each, on a slow link).
  virtual int waits() const = 0;
  /// How the shell ended once ended(): its exit status, 128+N for signal N, -1 when unknown.
  virtual int exit_status() = 0;
  /// The connection is about to be freed (or a forked child carries it on): free nothing.
  virtual void forget() {}
};

/// Finds the end of one step in a stream that may hold any bytes: `pattern` (MARKER " " on
/// stdout, then the exit code and a newline; MARKER "\n" on stderr). Only a tail that may begin
/// the pattern is held back, so output is passed on as it comes.
class StepEnd {
 public:
  /// `with_code`: the pattern is followed by a decimal exit code and a newline.
  StepEnd(std::string pattern, bool with_code);
  /// The part of `chunk` that is the command's output; sets done() at the pattern.
  std::string take(std::string_view chunk);
  /// True once the pattern (and its code) was read.
  bool done() const { return m_done; }
  /// The exit code after the pattern (-1 without one).
  int code() const { return m_code; }
  /// Ready for the next step.
  void reset();

 private:
  std::string m_pattern;
  bool m_with_code;
  std::string m_held;  // a tail that may be the start of the pattern
  bool m_done = false;
  int m_code = -1;
};

/// One shell on a target that runs every command of a connection in turn (spec §7 and issue
/// 15: a command costs one round trip, not a channel's four): each script runs in its own
/// `/bin/sh -c`, its input is sent in counted chunks, and the end of its output on both streams
/// is a line with a random marker (and the exit code).
class Conversation {
 public:
  /// Talks with the shell on `pipe`, started with conversation_command(marker, ahead).
  Conversation(std::unique_ptr<ShellPipe> pipe, std::string where, const std::string& marker,
               bool ahead = false);
  /// Runs `script` as one step; `stopped` is set when streams.should_stop ended it (the
  /// conversation is then over: the step may still run there).
  ShellResult step(const std::string& script, const ShellStreams& streams, bool& stopped);
  /// False once the shell ended or a step was stopped: the next command needs a new one.
  bool usable() const { return m_usable; }
  /// True when a shell started ahead ended before its first step ran (a login file changed
  /// since it started, or it died): nothing ran; ask for a new shell.
  bool stale() const { return m_stale; }
  /// What a stale shell was sent of the step's input (at most one chunk, sent with the script):
  /// the new shell gets it first, then the rest of the input.
  std::string_view taken_input() const;
  /// The pipe's count of waits for the peer.
  int waits() const { return m_pipe->waits(); }
  /// See ShellPipe::forget.
  void forget() { m_pipe->forget(); }

 private:
  void send(std::string_view data, const ShellStreams& streams);
  bool feed_input(const ShellStreams& streams);
  void stream_owed(const ShellStreams& streams);
  bool read_outputs(const ShellStreams& streams, ShellResult& result);
  ShellResult ended_early(ShellResult result);

  bool m_ahead;  // started ahead, its first step not yet run
  bool m_stale = false;
  std::unique_ptr<ShellPipe> m_pipe;
  std::string m_where;
  std::string m_marker;
  FramedStream m_frames[2];
  StepEnd m_ends[2];
  std::string m_outgoing;            // written to the shell next
  std::unique_ptr<char[]> m_buffer;  // a chunk of input as read (made at the first input)
  std::size_t m_sent = 0;
  bool m_ahead_chunk = false;     // a chunk was sent before the marker of a shell started ahead
  std::size_t m_ahead_taken = 0;  // its size (it stays in m_buffer until the marker)
  std::size_t m_owed = 0;         // bytes of an announced chunk not yet read from the input
  bool m_input_done = true;
  bool m_usable = true;
  bool m_noise_told = false;
};

/// The command that starts a conversation's shell (run by the login shell); it prints `marker`
/// on both outputs first (FramedStream), then runs the steps it is sent. `ahead`: started before
/// a command asks (a kept connection's), it first checks, when the first step comes, that no
/// login file changed since it started; if one did, it exits 86 having run nothing (stale()).
std::string conversation_command(const std::string& marker, bool ahead = false);

}  // namespace mlw
