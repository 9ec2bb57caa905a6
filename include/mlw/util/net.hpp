#pragma once

#include <string>

namespace mlw {

/// The outcome of tcp_connect: a connected socket, or why there is none.
struct TcpConnection {
  int fd = -1;                ///< the connected socket (non-blocking, close-on-exec); -1: none
  std::string resolve_error;  ///< getaddrinfo's reason when the name did not resolve
  int connect_errno = 0;      ///< the last address's connect error (ETIMEDOUT after timeout_ms)
  bool any_address = false;   ///< whether a socket was opened for some address at all
};

/// Resolves `host`:`port` and connects to each address in turn, waiting at most `timeout_ms`
/// for each; the first that answers wins. The caller owns (and closes) the socket.
TcpConnection tcp_connect(const std::string& host, int port, int timeout_ms);

}  // namespace mlw
