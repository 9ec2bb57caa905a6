// A port that a notebook kernel holds (bound, not yet listened on) while its run waits: another
// program that binds with SO_REUSEADDR, as most servers do, must not get it too (Linux lets two
// sockets that both set it share a port none listens on).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "api/run_start.hpp"
#include "remote/forward_relay.hpp"

namespace mlw::api {
namespace {

/// A server's bind of 127.0.0.1:`port` with SO_REUSEADDR: its socket, or -1 with errno.
int server_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

TEST(HeldPort, AnotherProgramThatReusesAddressesCannotBindIt) {
  int bound = 0;
  const int held = bind_loopback(0, bound, false);
  ASSERT_GE(held, 0);
  const int other = server_bind(bound);
  EXPECT_LT(other, 0) << "a server with SO_REUSEADDR bound the held port " << bound;
  EXPECT_EQ(errno, EADDRINUSE);
  if (other >= 0) ::close(other);
  ::close(held);
}

TEST(HeldPort, ItIsListenedOnLaterAndFreedWhenClosed) {
  int bound = 0;
  const int held = bind_loopback(0, bound, false);
  ASSERT_GE(held, 0);
  EXPECT_EQ(mlw::listen_held(held), 0);
  ::close(held);
  const int again = server_bind(bound);
  EXPECT_GE(again, 0);
  if (again >= 0) ::close(again);
}

}  // namespace
}  // namespace mlw::api
