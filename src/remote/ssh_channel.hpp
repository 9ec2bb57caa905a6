#pragma once

#include <libssh2.h>

#include <functional>
#include <string>

#include "mlw/remote/frame.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// A logged-in, non-blocking libssh2 session as its channels see it (the layer under SshShell):
/// the session, its socket, and how a failure is told.
struct SshLink {
  LIBSSH2_SESSION* session = nullptr;
  int socket = -1;
  int timeout_ms = 10000;  ///< MLW_SSH_CONNECT_TIMEOUT, for each step
  int* waits = nullptr;    ///< counts each wait for the peer (a round trip, on a slow link)
  /// Throws mlw::Error for a failed step ("ssh HOST: STEP: WHAT (hint)").
  std::function<void(const std::string& step, const std::string& what)> fail;

  /// Waits for the socket in the direction libssh2 wants; false on timeout.
  bool wait_socket(int timeout_ms) const;
  /// Calls `call` until it no longer says EAGAIN; LIBSSH2_ERROR_TIMEOUT after `timeout_ms`.
  int retry(const std::function<int()>& call, int timeout_ms) const;
  /// libssh2's text for the session's last error.
  std::string last_error() const;
};

/// Runs one framed command (`command`, already quoted) on a new channel of the session: input
/// from streams.read_input, output through `frames` to the streams; the exit code (128+N for
/// signal N; 143 and `stopped` set when streams.should_stop ended it). The channel is freed on
/// every way out, a callback that throws included.
ShellResult run_channel(const SshLink& link, const std::string& command,
                        const ShellStreams& streams, FramedStream (&frames)[2], bool& stopped);

}  // namespace mlw
