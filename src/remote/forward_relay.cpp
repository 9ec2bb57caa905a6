// `experiment forward`'s relay: connections accepted on 127.0.0.1 here, each carried to a peer on
// the run's machine (a TCP connection or a relay command here, an SSH channel there), bytes both
// ways with each direction's end passed on, as `ssh -L` does.

#include "forward_relay.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "mlw/remote/shell.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_held = 256 * 1024;  // bytes held for one direction before reading stops

constexpr auto k_wait_for_channel = std::chrono::seconds(60);  // a connection's wait for a peer

/// One accepted connection and its peer (none yet while it waits for the machine's limit).
struct Connection {
  int client = -1;
  const ForwardPort* port = nullptr;
  int client_port = 0;
  std::chrono::steady_clock::time_point accepted;
  std::unique_ptr<ForwardPeer> peer;
  std::string up;    // read from the client, not yet taken by the peer
  std::string down;  // read from the peer, not yet written to the client
  bool client_done = false;
  bool eof_sent = false;
  bool peer_done = false;
  bool shut = false;
  bool broken = false;

  bool finished() const { return broken || (client_done && eof_sent && peer_done && shut); }
};

/// Moves what can move now, each way; never blocks.
void pump(Connection& c, char* buffer, std::size_t size) {
  if (!c.client_done && c.up.size() < k_held) {
    const ssize_t n = ::read(c.client, buffer, size);
    if (n > 0) c.up.append(buffer, static_cast<std::size_t>(n));
    if (n == 0) c.client_done = true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) c.broken = true;
  }
  while (!c.up.empty() && !c.broken) {
    const long n = c.peer->write(c.up.data(), c.up.size());
    if (n == k_peer_again) break;
    if (n < 0) c.broken = true;
    if (n > 0) c.up.erase(0, static_cast<std::size_t>(n));
  }
  if (c.client_done && c.up.empty() && !c.eof_sent) c.eof_sent = c.peer->send_eof();
  while (!c.peer_done && c.down.size() < k_held && !c.broken) {
    const long n = c.peer->read(buffer, size);
    if (n == k_peer_again) break;
    if (n == 0) c.peer_done = true;
    if (n < 0) c.broken = true;
    if (n > 0) c.down.append(buffer, static_cast<std::size_t>(n));
  }
  while (!c.down.empty() && !c.broken) {
    const ssize_t n = ::send(c.client, c.down.data(), c.down.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n <= 0) c.broken = true;
    if (n > 0) c.down.erase(0, static_cast<std::size_t>(n));
  }
  if (c.peer_done && c.down.empty() && !c.shut) {
    ::shutdown(c.client, SHUT_WR);
    c.shut = true;
  }
}

/// The client's port (for the SSH server's records of who asked).
int client_port(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  return ntohs(address.sin_port);
}

/// Accepts what waits on `port`, behind the connections that wait for their peers; true when
/// one came.
bool accept_on(const ForwardPort& port, std::deque<Connection>& waiting) {
  bool accepted = false;
  while (true) {
    const int client = ::accept4(port.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return accepted;
    accepted = true;
    // Small messages (a notebook's) go at once, as the peers' own sockets send them (ZeroMQ and
    // OpenSSH turn Nagle's algorithm off too): no wait for the last segment's acknowledgement.
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Connection c;
    c.client = client;
    c.port = &port;
    c.client_port = client_port(client);
    c.accepted = std::chrono::steady_clock::now();
    waiting.push_back(std::move(c));
  }
}

/// Opens the peers of the connections that wait, in turn, while the machine gives them; one
/// that has waited too long is closed, saying why.
void open_waiting(const RelayHooks& hooks, std::deque<Connection>& waiting,
                  std::vector<Connection>& open) {
  while (!waiting.empty()) {
    Connection& c = waiting.front();
    PeerOpen made = hooks.open(*c.port, c.client_port, static_cast<int>(open.size()));
    if (made.later) {
      if (std::chrono::steady_clock::now() - c.accepted < k_wait_for_channel) return;
      spdlog::warn(
          "a connection to port {} waited {} s for a channel and none came free: it "
          "is closed",
          c.port->to.port, k_wait_for_channel.count());
    }
    if (made.peer) {
      c.peer = std::move(made.peer);
      open.push_back(std::move(c));
    } else {
      ::close(c.client);
    }
    waiting.pop_front();
  }
}

}  // namespace

void relay_forwards(const std::vector<ForwardPort>& ports, const RelayHooks& hooks,
                    const std::function<bool()>& keep_going) {
  for (const auto& port : ports) {
    // A port held but not yet listened on (a notebook kernel's, while its job queued) refused
    // connections until now, so that none waited for a relay that was not there.
    if (listen_held(port.listen_fd) != 0) {
      throw Error(std::string("cannot listen on a forwarded port here: ") + std::strerror(errno));
    }
    ::fcntl(port.listen_fd, F_SETFL, O_NONBLOCK);
  }
  std::vector<Connection> open;
  std::deque<Connection> waiting;  // accepted; their peers wait for a channel to come free
  std::array<char, 32768> buffer{};
  auto asked = std::chrono::steady_clock::now();
  while (true) {
    std::vector<pollfd> items;
    for (const auto& port : ports) items.push_back({port.listen_fd, POLLIN, 0});
    bool pending = false;
    bool ready = false;
    for (const auto& c : open) {
      short events = 0;
      if (!c.client_done && c.up.size() < k_held) events |= POLLIN;
      if (!c.down.empty()) events |= POLLOUT;
      items.push_back({c.client, events, 0});
      if (c.peer->fd() >= 0) items.push_back({c.peer->fd(), POLLIN | POLLOUT, 0});
      pending = pending || !c.up.empty() || (c.client_done && !c.eof_sent);
      // Data the peer holds already (read from the SSH socket with another packet) wakes no
      // poll: it is taken now, not after the wait.
      ready = ready || (!c.peer_done && c.down.size() < k_held && c.peer->buffered());
    }
    if (hooks.shared_fd >= 0) items.push_back({hooks.shared_fd, hooks.shared_events(), 0});
    ::poll(items.data(), items.size(), ready ? 0 : pending ? 20 : 500);
    bool accepted = false;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      if ((items[i].revents & POLLIN) && accept_on(ports[i], waiting)) accepted = true;
    }
    for (auto& c : open) pump(c, buffer.data(), buffer.size());
    bool ended = false;
    for (auto it = open.begin(); it != open.end();) {
      if (!it->finished()) {
        ++it;
        continue;
      }
      ::close(it->client);
      it = open.erase(it);
      ended = true;
    }
    const bool second = std::chrono::steady_clock::now() - asked >= std::chrono::seconds(1);
    // Once a loop at most: each open that waits is a round trip to the server.
    if (accepted || ended || second) open_waiting(hooks, waiting, open);
    if (hooks.tick) hooks.tick();
    if (second) {
      asked = std::chrono::steady_clock::now();
      if (!keep_going()) break;
    }
  }
  for (auto& c : open) ::close(c.client);
  for (auto& c : waiting) ::close(c.client);
}

namespace {

/// A peer here: a connected socket, or a socket pair to a relay command (reaped when done).
class FdPeer : public ForwardPeer {
 public:
  FdPeer(int fd, pid_t pid) : m_fd(fd), m_pid(pid) {}
  ~FdPeer() override {
    ::close(m_fd);
    if (m_pid > 0) {
      // The command ends once its stdin has ended and its own connection has; one that lingers
      // is hung up, so that no child is left behind.
      for (int i = 0; i < 20 && ::waitpid(m_pid, nullptr, WNOHANG) == 0; ++i) ::usleep(50000);
      if (::waitpid(m_pid, nullptr, WNOHANG) == 0) {
        ::kill(m_pid, SIGHUP);
        ::waitpid(m_pid, nullptr, 0);
      }
    }
  }
  FdPeer(const FdPeer&) = delete;
  FdPeer& operator=(const FdPeer&) = delete;

  long read(char* buffer, std::size_t size) override {
    const ssize_t n = ::read(m_fd, buffer, size);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EINTR ? k_peer_again : k_peer_failed;
  }
  long write(const char* data, std::size_t size) override {
    const ssize_t n = ::send(m_fd, data, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EINTR ? k_peer_again : k_peer_failed;
  }
  bool send_eof() override {
    ::shutdown(m_fd, SHUT_WR);
    return true;
  }
  int fd() const override { return m_fd; }

 private:
  int m_fd;
  pid_t m_pid;
};

/// A TCP connection to host:port here, each address tried in turn; -1 (and why) when none
/// answers.
int connect_here(const ForwardTo& to, std::string& why) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved =
      ::getaddrinfo(to.host.c_str(), std::to_string(to.port).c_str(), &hints, &found);
  if (resolved != 0) {
    why = ::gai_strerror(resolved);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

/// `command` under /bin/sh with one end of a socket pair as its stdin and stdout; stderr is
/// this process's.
std::unique_ptr<ForwardPeer> start_relay(const std::string& command) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw Error(std::string("cannot make a socket pair: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pair[1], STDIN_FILENO);
    ::dup2(pair[1], STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pair[1]);
  if (pid < 0) {
    ::close(pair[0]);
    throw Error(std::string("cannot start a relay: ") + std::strerror(errno));
  }
  ::fcntl(pair[0], F_SETFL, O_NONBLOCK);
  return std::make_unique<FdPeer>(pair[0], pid);
}

}  // namespace

void LocalShell::forward(const std::vector<ForwardPort>& ports,
                         const std::function<bool()>& keep_going) {
  RelayHooks hooks;
  hooks.open = [](const ForwardPort& port, int, int) {
    PeerOpen made;
    if (!port.to.command.empty()) {
      made.peer = start_relay(port.to.command);
      return made;
    }
    std::string why;
    const int fd = connect_here(port.to, why);
    if (fd < 0) {
      spdlog::warn("nothing answers on port {} of {} ({}): this connection is closed", port.to.port,
                   port.to.host, why);
      return made;
    }
    made.peer = std::make_unique<FdPeer>(fd, 0);
    return made;
  };
  relay_forwards(ports, hooks, keep_going);
}

void Shell::forward(const std::vector<ForwardPort>&, const std::function<bool()>&) {
  throw Error("forwarding a port needs a login of its own, not a kept connection");
}

int listen_held(int fd) {
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  return ::listen(fd, k_listen_backlog);
}

}  // namespace mlw
