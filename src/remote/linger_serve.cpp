// The lingering connection's side (see linger.cpp for the protocol): one process, one loop,
// a channel of the session for each client.

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <list>
#include <string>

#include "linger.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

using Clock = std::chrono::steady_clock;

/// The most held for a client (or its channel) before that side is no longer read.
constexpr std::size_t k_hold = 1 << 20;

std::string frame(char type, std::string_view data) {
  std::string out(5, '\0');
  out[0] = type;
  const auto n = static_cast<std::uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  out.append(data);
  return out;
}

struct Client {
  int fd = -1;
  std::string request;   // "open N\n" and the command, until complete
  std::string command;   // empty until the request is complete
  LIBSSH2_CHANNEL* channel = nullptr;
  bool exec_done = false;
  std::string to_channel;
  std::string to_client;
  bool done = false;  // nothing more to do but flush to_client
  bool eof = false;   // the command's output ended; the channel is being closed
  Clock::time_point deadline;
  Clock::time_point queued_until;  // how long it may wait for the one being served
};

/// How long a client waits while another is served before it is told to log in itself.
constexpr auto k_queue_wait = std::chrono::milliseconds(300);

/// One loop's worth of a session's channels, serialised as libssh2 needs: one channel is opened
/// at a time, and a call that left a packet half sent is the only one made until it is done.
class Master {
 public:
  Master(const SshLink& link, int timeout_ms) : m_link(link), m_timeout_ms(timeout_ms) {}

  /// Moves what can move for `c`; false when the session is gone.
  bool pump(Client& c) {
    if (m_busy && m_busy != &c) return true;
    if (c.command.empty() && !c.done && !read_request(c)) return true;
    if (!c.done && !c.exec_done && !open(c)) return !m_dead;
    if (c.exec_done && !c.done) relay(c);
    flush(c);
    return !m_dead;
  }

  /// The session's socket, for poll, and whether a call waits to send.
  short ssh_events() const {
    const int directions = libssh2_session_block_directions(m_link.session);
    return static_cast<short>(POLLIN | ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0));
  }

  /// Frees a finished client's channel (or leaves it to the session's end).
  void release(Client& c) {
    if (c.channel) libssh2_channel_free(c.channel);  // EAGAIN: the session frees it at the end
    if (m_busy == &c) m_busy = nullptr;
    if (m_opening == &c) m_opening = nullptr;
    ::close(c.fd);
  }

  bool dead() const { return m_dead; }

 private:
  /// Notes a libssh2 result: EAGAIN with a packet half sent makes `c` the only caller.
  bool again(Client& c, long rc) {
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      if (m_busy == &c) m_busy = nullptr;
      return false;
    }
    m_busy = (libssh2_session_block_directions(m_link.session) & LIBSSH2_SESSION_BLOCK_OUTBOUND)
                 ? &c
                 : nullptr;
    return true;
  }

  bool read_request(Client& c) {
    char buffer[4096];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      c.done = true;
      return false;
    }
    if (n > 0) c.request.append(buffer, static_cast<std::size_t>(n));
    const auto newline = c.request.find('\n');
    if (newline == std::string::npos || !starts_with(c.request, "open ")) {
      if (c.request.size() > 64) c.done = true;  // not a client of ours
      return false;
    }
    const auto size = parse_integer(c.request.substr(5, newline - 5), 1, 1 << 20);
    if (!size) {
      c.done = true;
      return false;
    }
    if (c.request.size() - newline - 1 < static_cast<std::size_t>(*size)) return false;
    c.command = c.request.substr(newline + 1, static_cast<std::size_t>(*size));
    c.to_channel = c.request.substr(newline + 1 + static_cast<std::size_t>(*size));
    c.request.clear();
    c.deadline = Clock::now() + std::chrono::milliseconds(m_timeout_ms);
    return true;
  }

  /// Opens the client's channel and starts its command; false until that is done.
  bool open(Client& c) {
    if (!c.channel) {
      if (m_opening && m_opening != &c) return false;
      m_opening = &c;
      c.channel = libssh2_channel_open_session(m_link.session);
      if (!c.channel) {
        const int rc = libssh2_session_last_errno(m_link.session);
        if (again(c, rc) && Clock::now() < c.deadline) return false;
        refuse(c, "cannot open a channel: " + m_link.last_error());
        return false;
      }
      m_opening = nullptr;
    }
    const int rc = libssh2_channel_exec(c.channel, c.command.c_str());
    if (again(c, rc) && Clock::now() < c.deadline) return false;
    if (rc != 0) {
      refuse(c, "cannot start the command: " + m_link.last_error());
      return false;
    }
    c.exec_done = true;
    c.to_client += frame('r', "");
    return true;
  }

  /// A channel that cannot be had: the client logs in itself; a session that cannot open one
  /// (its peer vanished: no answer in time, or the socket failed) is over.
  void refuse(Client& c, const std::string& why) {
    if (m_opening == &c) m_opening = nullptr;
    c.to_client += frame('f', why);
    c.done = true;
    m_dead = true;
  }

  void relay(Client& c) {
    char buffer[65536];
    if (c.to_channel.size() < k_hold) {
      const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        c.done = true;  // the client left: its channel goes
        return;
      }
      if (n > 0) c.to_channel.append(buffer, static_cast<std::size_t>(n));
    }
    if (!c.to_channel.empty()) {
      const ssize_t n = libssh2_channel_write(c.channel, c.to_channel.data(), c.to_channel.size());
      if (n > 0) c.to_channel.erase(0, static_cast<std::size_t>(n));
      if (n < 0 && !again(c, n)) return lost();
      if (m_busy == &c) return;
    }
    for (int stream = 0; stream < 2 && c.to_client.size() < k_hold; ++stream) {
      const ssize_t n = libssh2_channel_read_ex(c.channel, stream, buffer, sizeof buffer);
      if (n > 0) c.to_client += frame(stream == 0 ? 'o' : 'e', std::string_view(buffer, n));
      if (n < 0 && !again(c, n)) return lost();
      if (m_busy == &c) return;
    }
    if (!c.eof && libssh2_channel_eof(c.channel) && c.to_client.size() < k_hold) c.eof = true;
    if (c.eof) finish(c);
  }

  /// Closes an ended channel for its exit status (which comes after the output's end).
  void finish(Client& c) {
    int rc = libssh2_channel_close(c.channel);
    if (rc == 0) rc = libssh2_channel_wait_closed(c.channel);
    if (again(c, rc)) return;
    c.to_client += frame('x', std::to_string(rc == 0 ? libssh2_channel_get_exit_status(c.channel) : -1));
    c.done = true;
  }

  void lost() { m_dead = true; }

 public:
  /// Sends what is held for `c`.
  void flush(Client& c) {
    if (c.to_client.empty()) return;
    const ssize_t n =
        ::send(c.fd, c.to_client.data(), c.to_client.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) c.to_client.erase(0, static_cast<std::size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      c.to_client.clear();
      c.done = true;
    }
  }

  const SshLink& m_link;
  int m_timeout_ms;
  Client* m_busy = nullptr;
  Client* m_opening = nullptr;
  bool m_dead = false;
};

}  // namespace

void linger_serve(const SshLink& link, int listen_fd, const std::filesystem::path& socket,
                  int idle_s) {
  struct stat bound {};
  ::lstat(socket.c_str(), &bound);
  Master master(link, link.timeout_ms);
  std::list<Client> clients;
  auto idle_until = Clock::now() + std::chrono::seconds(idle_s);
  while (!master.dead()) {
    std::vector<pollfd> items = {{listen_fd, POLLIN, 0},
                                 {link.socket, clients.empty() ? short(POLLRDHUP) : master.ssh_events(), 0}};
    for (const Client& c : clients) {
      const short wanted = static_cast<short>(
          (c.done || c.to_channel.size() >= k_hold ? 0 : POLLIN) | (c.to_client.empty() ? 0 : POLLOUT));
      items.push_back({c.fd, wanted, 0});
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(idle_until - Clock::now());
    const int timeout = clients.empty() ? static_cast<int>(std::max<long>(0, left.count())) : 20;
    ::poll(items.data(), items.size(), timeout);
    if (clients.empty() && (items[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) break;  // peer gone
    if (items[0].revents & POLLIN) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      ucred who{};
      socklen_t size = sizeof who;
      if (fd >= 0 && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &who, &size) == 0 &&
          who.uid == ::geteuid()) {
        clients.push_back({});
        clients.back().fd = fd;
        clients.back().queued_until = Clock::now() + k_queue_wait;
      } else if (fd >= 0) {
        ::close(fd);  // never another user's
      }
    }
    // One client at a time (libssh2's non-blocking calls on one session do not interleave
    // safely); one that waited too long is told to log in itself.
    for (auto it = clients.begin(); it != clients.end();) {
      if (it != clients.begin()) {
        if (!it->done && Clock::now() > it->queued_until) {
          it->to_client = frame('f', "busy with another command");
          it->done = true;
        }
        if (it->done) master.flush(*it);
      } else if (!master.pump(*it)) {
        break;
      }
      if (it->done && it->to_client.empty()) {
        master.release(*it);
        it = clients.erase(it);
        if (clients.empty()) idle_until = Clock::now() + std::chrono::seconds(idle_s);
      } else {
        ++it;
      }
    }
    int next = 0;
    if (const int rc = libssh2_keepalive_send(link.session, &next);
        rc != 0 && rc != LIBSSH2_ERROR_EAGAIN) {
      break;
    }
    if (clients.empty() && Clock::now() >= idle_until) break;
  }
  struct stat now {};
  if (::lstat(socket.c_str(), &now) == 0 && now.st_ino == bound.st_ino) ::unlink(socket.c_str());
  for (Client& c : clients) master.release(c);
  ::close(listen_fd);
}

}  // namespace mlw
