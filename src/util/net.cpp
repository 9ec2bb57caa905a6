#include "mlw/util/net.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace mlw {

namespace {

/// Connects a non-blocking socket to one address; 0 or the errno (ETIMEDOUT after timeout_ms).
int connect_within(int fd, const addrinfo& address, int timeout_ms) {
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) return 0;
  int err = errno;
  if (err != EINPROGRESS) return err;
  pollfd item{fd, POLLOUT, 0};
  if (::poll(&item, 1, timeout_ms) <= 0) return ETIMEDOUT;
  socklen_t length = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length);
  return err;
}

}  // namespace

TcpConnection tcp_connect(const std::string& host, int port, int timeout_ms) {
  TcpConnection result;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    result.resolve_error = ::gai_strerror(rc);
    return result;
  }
  for (addrinfo* address = found; address; address = address->ai_next) {
    const int fd =
        ::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    result.any_address = true;
    result.connect_errno = connect_within(fd, *address, timeout_ms);
    if (result.connect_errno == 0) {
      result.fd = fd;
      break;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return result;
}

}  // namespace mlw
