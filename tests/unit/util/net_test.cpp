#include "mlw/util/net.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace mlw {
namespace {

/// A listening socket on 127.0.0.1 at a port the kernel chose; closed with the object.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = 0;
  Listener() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::listen(fd, 4) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
  }
  ~Listener() { ::close(fd); }
};

TEST(TcpConnect, AListeningPortGivesAConnectedSocket) {
  Listener listener;
  ASSERT_GT(listener.port, 0);
  const TcpConnection connection = tcp_connect("127.0.0.1", listener.port, 2000);
  ASSERT_GE(connection.fd, 0);
  EXPECT_TRUE(connection.resolve_error.empty());
  EXPECT_EQ(connection.connect_errno, 0);
  ::close(connection.fd);
}

TEST(TcpConnect, AClosedPortSaysConnectionRefused) {
  int port = 0;
  {
    Listener listener;  // a port that was free a moment ago, closed again
    port = listener.port;
  }
  ASSERT_GT(port, 0);
  const TcpConnection connection = tcp_connect("127.0.0.1", port, 2000);
  EXPECT_EQ(connection.fd, -1);
  EXPECT_TRUE(connection.any_address);
  EXPECT_EQ(connection.connect_errno, ECONNREFUSED);
}

}  // namespace
}  // namespace mlw
