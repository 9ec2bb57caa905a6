// `experiment forward` over an SSH login of its own: each connection accepted here is a
// direct-tcpip channel to the run's port (what `ssh -L` opens, through any ProxyJump or
// ProxyCommand the login used), or an exec channel running a relay inside the run's container.

#include <libssh2.h>
#include <poll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "forward_relay.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"
#include "ssh_channel.hpp"

namespace mlw {

namespace {

/// True for the errors of a connection that is gone (not of one channel).
bool link_lost(int rc) {
  return rc == LIBSSH2_ERROR_SOCKET_SEND || rc == LIBSSH2_ERROR_SOCKET_RECV ||
         rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_TIMEOUT;
}

/// True for "not now": libssh2 would block (EAGAIN), or another channel's packet is half-sent on
/// the shared session (BAD_USE: libssh2 sends nothing else until that channel's next write
/// finishes it), as happens when many connections move data at once.
bool busy(long rc) {
  return rc == LIBSSH2_ERROR_EAGAIN || rc == LIBSSH2_ERROR_BAD_USE;
}

/// How long a channel may find the session held by another's half-sent packet before its
/// connection is given up (a packet whose channel went away is never finished).
constexpr auto k_held_by_another = std::chrono::seconds(30);

/// Writes all of `data` to stderr (a relay's own lines).
void to_stderr(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, data.data(), data.size());
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

/// A channel as the relay's peer; its stderr (a relay command's lines) goes to this stderr.
class ChannelPeer : public ForwardPeer {
 public:
  explicit ChannelPeer(ChannelPtr channel) : m_channel(std::move(channel)) {}

  long read(char* buffer, std::size_t size) override {
    std::array<char, 4096> errors{};
    ssize_t e = 0;
    while ((e = libssh2_channel_read_stderr(m_channel.get(), errors.data(), errors.size())) > 0) {
      to_stderr(std::string_view(errors.data(), static_cast<std::size_t>(e)));
    }
    const ssize_t n = libssh2_channel_read(m_channel.get(), buffer, size);
    if (n > 0) return static_cast<long>(n);
    // 0 is not the end: libssh2 says 0 when it took in another channel's packet (a keep-alive's
    // answer) and none of this one's; only the channel's EOF is.
    if (n == 0 || busy(n)) return libssh2_channel_eof(m_channel.get()) ? 0 : k_peer_again;
    return k_peer_failed;
  }
  long write(const char* data, std::size_t size) override {
    const ssize_t n = libssh2_channel_write(m_channel.get(), data, size);
    if (n != LIBSSH2_ERROR_BAD_USE) m_held_since = {};
    if (n >= 0) return static_cast<long>(n);
    if (n == LIBSSH2_ERROR_BAD_USE) {
      const auto now = std::chrono::steady_clock::now();
      if (m_held_since == std::chrono::steady_clock::time_point{}) m_held_since = now;
      if (now - m_held_since > k_held_by_another) return k_peer_failed;
    }
    return busy(n) ? k_peer_again : k_peer_failed;
  }
  bool send_eof() override { return !busy(libssh2_channel_send_eof(m_channel.get())); }
  bool buffered() const override { return libssh2_poll_channel_read(m_channel.get(), 0) != 0; }

 private:
  ChannelPtr m_channel;
  std::chrono::steady_clock::time_point m_held_since;  ///< writes found the session held since
};

/// A direct-tcpip channel to to.host:to.port from the machine; none (said) when the server
/// cannot connect there or forbids it.
PeerOpen open_direct(const SshLink& link, const ForwardTo& to, int client) {
  PeerOpen made;
  ChannelPtr channel(nullptr, ChannelFree{&link});
  const int rc = link.retry(
      [&] {
        channel.reset(libssh2_channel_direct_tcpip_ex(link.session, to.host.c_str(), to.port,
                                                      "127.0.0.1", client));
        return channel ? 0 : libssh2_session_last_errno(link.session);
      },
      link.timeout_ms);
  if (channel) {
    made.peer = std::make_unique<ChannelPeer>(std::move(channel));
    return made;
  }
  if (link_lost(rc) || rc == LIBSSH2_ERROR_TIMEOUT) link.fail("forward", link.last_error());
  const std::string why = link.last_error();
  if (why.find("prohibited") != std::string::npos) {
    link.fail("forward", "the SSH server does not allow port forwarding (" + why +
                             "): its administrator can set AllowTcpForwarding yes in sshd_config");
  }
  spdlog::warn("nothing answers on port {} of {} there ({}): this connection is closed", to.port,
               to.host, why);
  return made;
}

/// A channel running `command` (a relay whose stdin and stdout are the connection). A session
/// channel the server refuses while others are open is its limit per connection (OpenSSH's
/// MaxSessions, 10 by default): that connection waits for one to end (said once), and the
/// others go on.
PeerOpen open_relay(const SshLink& link, const std::string& command, int open_now,
                    bool& said_limit) {
  PeerOpen made;
  int rc = 0;
  ChannelPtr channel = try_open_channel(link, rc);
  if (!channel) {
    if (link_lost(rc) || rc == LIBSSH2_ERROR_TIMEOUT) {
      link.fail("forward", "cannot open a channel: " + link.last_error());
    }
    if (open_now == 0) {
      spdlog::warn("the SSH server opens no channel for the relay ({}): this connection is closed",
                   link.last_error());
      return made;
    }
    if (!said_limit) {
      spdlog::warn(
          "the SSH server opens no more channels on this connection ({} are open: "
          "MaxSessions in its sshd_config): more connections wait until one ends",
          open_now);
      said_limit = true;
    }
    made.later = true;
    return made;
  }
  const std::string line = "exec /bin/sh -c " + shell_quote(command);
  if (link.retry([&] { return libssh2_channel_exec(channel.get(), line.c_str()); },
                 link.timeout_ms) != 0) {
    link.fail("forward", "cannot start the relay: " + link.last_error());
  }
  made.peer = std::make_unique<ChannelPeer>(std::move(channel));
  return made;
}

}  // namespace

void forward_channels(const SshLink& link, const std::vector<ForwardPort>& ports,
                      const std::function<bool()>& keep_going) {
  RelayHooks hooks;
  bool said_limit = false;
  hooks.open = [&link, &said_limit](const ForwardPort& port, int client, int open_now) {
    return port.to.command.empty() ? open_direct(link, port.to, client)
                                   : open_relay(link, port.to.command, open_now, said_limit);
  };
  hooks.shared_fd = link.socket;
  hooks.shared_events = [&link] {
    const int directions = libssh2_session_block_directions(link.session);
    return static_cast<short>(POLLIN |
                              ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0));
  };
  hooks.tick = [&link] {
    int next = 0;
    const int rc = libssh2_keepalive_send(link.session, &next);
    if (rc != 0 && !busy(rc)) link.fail("the connection", link.last_error());
  };
  relay_forwards(ports, hooks, keep_going);
}

}  // namespace mlw
