#pragma once

#include <libssh2.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conversation.hpp"
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

/// Frees a channel, waiting (bounded) for libssh2 to close it on the non-blocking session; one
/// still busy after that is freed with the session.
struct ChannelFree {
  const SshLink* link = nullptr;  ///< the session's view; outlives the channel
  /// Frees `channel` on `link`'s session.
  void operator()(LIBSSH2_CHANNEL* channel) const;
};
/// A channel of a session, freed through the link it was opened on.
using ChannelPtr = std::unique_ptr<LIBSSH2_CHANNEL, ChannelFree>;

/// Opens a session channel on `link` (which must outlive it); a failure goes to link.fail.
ChannelPtr open_channel(const SshLink& link);
/// A session channel, or none with libssh2's error in `rc` (the server refused it, or the
/// connection failed: the caller tells which).
ChannelPtr try_open_channel(const SshLink& link, int& rc);

/// Opens a channel on the session and starts `command` (conversation_command()) on it.
std::unique_ptr<ShellPipe> open_shell_pipe(const SshLink& link, const std::string& command);

/// Runs `command` on a channel of its own joined to this process's stdin, stdout and stderr
/// (ssh_joined.cpp); `pty`: in a terminal of the target's, sized and resized as this one.
/// Returns its exit code (128+N for signal N).
int run_joined_channel(const SshLink& link, const std::string& command, bool pty);

/// Carries the connections accepted on `ports` over channels of `link`'s session
/// (ssh_forward.cpp), until `keep_going` says no.
void forward_channels(const SshLink& link, const std::vector<ForwardPort>& ports,
                      const std::function<bool()>& keep_going);

}  // namespace mlw
