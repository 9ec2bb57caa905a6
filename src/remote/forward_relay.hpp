#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "mlw/remote/shell.hpp"

namespace mlw {

/// What a ForwardPeer's read or write says besides a count of bytes.
constexpr long k_peer_again = -1;   ///< nothing now: try again when the fds say so
constexpr long k_peer_failed = -2;  ///< the stream broke

/// The machine's end of one forwarded connection: a socket or pipe here, or an SSH channel.
class ForwardPeer {
 public:
  virtual ~ForwardPeer() = default;
  /// Bytes read into `buffer` (>0), 0 at the stream's end, k_peer_again or k_peer_failed.
  virtual long read(char* buffer, std::size_t size) = 0;
  /// Bytes of `data` taken (>0), k_peer_again or k_peer_failed.
  virtual long write(const char* data, std::size_t size) = 0;
  /// Says that nothing more will be written; false: not now, ask again.
  virtual bool send_eof() = 0;
  /// Its own fd to poll; -1 when the relay's shared fd (the SSH socket) covers it.
  virtual int fd() const { return -1; }
  /// Whether it holds data already read from its fd (libssh2's queue of a channel's packets),
  /// which no poll of the fd announces.
  virtual bool buffered() const { return false; }
};

/// What opening a connection's peer gave.
struct PeerOpen {
  std::unique_ptr<ForwardPeer> peer;  ///< nullptr: none (the hook has said why, unless `later`)
  bool later = false;  ///< none now (the machine's limit on channels): ask again once one ends
};

/// How the relay reaches the machine.
struct RelayHooks {
  /// The peer for a connection accepted on `port` (its client's port here, for the SSH server's
  /// records; `open_now` connections have their peers now).
  std::function<PeerOpen(const ForwardPort& port, int client_port, int open_now)> open;
  int shared_fd = -1;                    ///< polled besides the peers' own fds (-1: none)
  std::function<short()> shared_events;  ///< the poll events shared_fd is waited for
  /// Called at least once a second: keep-alives; throws mlw::Error when the machine is lost.
  std::function<void()> tick;
};

/// Accepts connections on every port's listen_fd and carries their bytes both ways (each
/// direction's end passed on as a half-close) until `keep_going` says no (forward_relay.cpp).
void relay_forwards(const std::vector<ForwardPort>& ports, const RelayHooks& hooks,
                    const std::function<bool()>& keep_going);

/// Listens on a port held until now (api::bind_loopback without `listen`: bound with address
/// reuse turned off again, so that no other program could bind it meanwhile); reuse is turned on
/// first, as on every listening port here. 0, or -1 with errno.
int listen_held(int fd);

}  // namespace mlw
