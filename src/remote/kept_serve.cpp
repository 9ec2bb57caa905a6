// The kept connection's side (see kept.cpp for the protocol): one process, one loop,
// a channel of the session for each client.

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <list>
#include <string>

#include "kept.hpp"
#include "mlw/remote/frame.hpp"
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

/// Bytes waiting to go one way, taken from the front by an offset: erasing the front of a 1 MiB
/// buffer for every 32 KiB packet libssh2 took moved 16 MB for each MB sent, which bounded a
/// large push through the kept connection (B14 in docs/benchmarks.md).
class Pending {
 public:
  std::size_t size() const { return m_bytes.size() - m_offset; }
  bool empty() const { return size() == 0; }
  const char* data() const { return m_bytes.data() + m_offset; }
  void clear() { m_bytes.clear(), m_offset = 0; }
  Pending& operator=(std::string_view bytes) {
    m_bytes.assign(bytes);
    m_offset = 0;
    return *this;
  }
  Pending& operator+=(std::string_view bytes) {
    if (m_offset > 0 && m_offset >= m_bytes.size() / 2) {
      m_bytes.erase(0, m_offset);  // at most once per half a buffer sent
      m_offset = 0;
    }
    m_bytes.append(bytes);
    return *this;
  }
  /// The first `n` bytes went.
  void consume(std::size_t n) {
    m_offset += n;
    if (m_offset == m_bytes.size()) clear();
  }

 private:
  std::string m_bytes;
  std::size_t m_offset = 0;
};

struct Client {
  int fd = -1;
  std::string request;  // "conv\n" or "cnow\n", until complete
  bool asked = false;   // the request is complete
  bool fresh = false;   // "cnow": a shell started now, not the one started ahead
  LIBSSH2_CHANNEL* channel = nullptr;
  Pending to_channel;
  Pending to_client;
  bool done = false;               // nothing more to do but flush to_client
  bool eof = false;                // the command's output ended; the channel is being closed
  Clock::time_point queued_until;  // how long it may wait for the one being served
  Clock::time_point came;          // when it connected
};

/// How long a client waits while another is served before it is told to log in itself.
constexpr auto k_queue_wait = std::chrono::milliseconds(300);

/// Served this long, a client is taken for one that lasts (a foreground run's follow step): the
/// next is told at once to log in itself. Shorter, it is waited for: a detached submit's launch
/// ends right after the submit returned, and the next submit takes the connection then.
constexpr auto k_long_served = std::chrono::seconds(2);

/// A session's channels, one client at a time (libssh2's non-blocking calls on one session do
/// not interleave safely). The next client's shell is started ahead while idle (a round trip and
/// the target's session set-up saved); it checks, when the client's first step comes, that no
/// login file changed since it started (a ~/.bashrc that now puts a new folder on PATH), and if
/// one did it ends having run nothing, and the client asks for a shell started now ("cnow").
class Master {
 public:
  explicit Master(const SshLink& link) : m_link(link) {}

  /// Moves what can move for the client being served; false when the session is gone.
  bool pump(Client& c) {
    if (!c.asked && !c.done && !read_request(c)) return !m_dead;
    if (!c.done && !c.channel && !give_conversation(c)) return !m_dead;
    if (c.channel && !c.done) relay(c);
    flush(c);
    return !m_dead;
  }

  /// Opens the next client's session channel ahead (a step each call), without starting its
  /// shell: a channel open is one round trip that nothing on the target can make stale (its
  /// shell, which reads ~/.bashrc, starts only when a client asks). True once it is open.
  bool open_channel() {
    if (m_opening.channel) return true;
    if (!m_opening.opening) {
      m_opening.opening = true;
      m_opening.deadline = Clock::now() + std::chrono::milliseconds(m_link.timeout_ms);
    }
    m_opening.channel = libssh2_channel_open_session(m_link.session);
    if (!m_opening.channel) return waiting(libssh2_session_last_errno(m_link.session));
    return true;
  }

  /// Starts a conversation's shell on the channel opened ahead (a step each call): one started
  /// `ahead` of a client, or the one a client asked for; true once it is running.
  bool open_conversation(bool ahead) {
    if (!open_channel()) return false;
    if (m_opening.marker.empty()) {
      m_opening.marker = new_frame_marker();
      m_opening.ahead = ahead;
      m_opening.deadline = Clock::now() + std::chrono::milliseconds(m_link.timeout_ms);
    }
    if (m_opening.running) return true;
    const int rc = libssh2_channel_exec(
        m_opening.channel, conversation_command(m_opening.marker, m_opening.ahead).c_str());
    if (rc != 0) return waiting(rc);
    m_opening.running = true;
    return true;
  }

  /// Whether a shell started ahead waits for the next client.
  bool ahead_running() const { return m_opening.running; }

  /// The session's socket events for poll.
  short ssh_events() const {
    const int directions = libssh2_session_block_directions(m_link.session);
    return static_cast<short>(POLLIN |
                              ((directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0));
  }

  /// Frees a finished client's channel (bounded) and closes its socket.
  void release(Client& c) {
    if (c.channel) {
      m_link.retry([&] { return libssh2_channel_free(c.channel); }, 2000);
    }
    ::close(c.fd);
  }

  /// Frees the channel opened ahead, if any (bounded).
  void release_spare() {
    if (m_opening.channel) {
      m_link.retry([&] { return libssh2_channel_free(m_opening.channel); }, 2000);
    }
    m_opening = {};
  }

  bool dead() const { return m_dead; }

  /// Sends what is held for `c`.
  void flush(Client& c) {
    if (c.to_client.empty()) return;
    const ssize_t n =
        ::send(c.fd, c.to_client.data(), c.to_client.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) c.to_client.consume(static_cast<std::size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      c.to_client.clear();
      c.done = true;
    }
  }

 private:
  struct Opening {
    LIBSSH2_CHANNEL* channel = nullptr;
    bool opening = false;  // the channel open was asked for
    std::string marker;    // set when its shell was asked for
    bool ahead = false;    // its shell was started before a client asked
    bool running = false;  // its shell was started
    Clock::time_point deadline;
  };

  /// EAGAIN within the deadline: not yet. Anything else, or no answer in time (the peer
  /// vanished): the session is over.
  bool waiting(int rc) {
    if (rc == LIBSSH2_ERROR_EAGAIN && Clock::now() < m_opening.deadline) return false;
    m_dead = true;
    return false;
  }

  bool read_request(Client& c) {
    char buffer[64];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      c.done = true;
      return false;
    }
    if (n > 0) c.request.append(buffer, static_cast<std::size_t>(n));
    if (c.request.size() < 5) return false;
    c.fresh = starts_with(c.request, "cnow\n");
    if (!c.fresh && !starts_with(c.request, "conv\n")) {
      c.done = true;  // not a client of ours
      return false;
    }
    c.to_channel = c.request.substr(5);
    c.asked = true;
    return true;
  }

  /// Gives the client its conversation, once it is open.
  bool give_conversation(Client& c) {
    // A client whose shell started ahead was stale asks for one started now (the one ahead is
    // let start first: libssh2 has no way to drop a request on its way).
    if (c.fresh && m_opening.ahead) {
      if (!open_conversation(true)) return false;
      release_spare();
    }
    if (!open_conversation(false)) {
      if (m_dead) {
        c.to_client += frame('f', "cannot open a channel: " + m_link.last_error());
        c.done = true;
      }
      return false;
    }
    c.channel = m_opening.channel;
    c.to_client += frame(m_opening.ahead ? 'a' : 'r', m_opening.marker);
    m_opening = {};
    return true;
  }

  /// Moves what each side has for the other until neither can take more now.
  void relay(Client& c) {
    char buffer[65536];
    bool moved = true;
    while (moved && !c.done) {
      moved = false;
      if (c.to_channel.size() < k_hold) {
        const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          c.done = true;  // the client left: its channel goes
          return;
        }
        if (n > 0)
          c.to_channel += std::string_view(buffer, static_cast<std::size_t>(n)), moved = true;
      }
      if (!c.to_channel.empty()) {
        const ssize_t n =
            libssh2_channel_write(c.channel, c.to_channel.data(), c.to_channel.size());
        if (n > 0) c.to_channel.consume(static_cast<std::size_t>(n)), moved = true;
        if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) return lost(c);
      }
      for (int stream = 0; stream < 2 && c.to_client.size() < k_hold; ++stream) {
        const ssize_t n = libssh2_channel_read_ex(c.channel, stream, buffer, sizeof buffer);
        if (n > 0) {
          c.to_client += frame(stream == 0 ? 'o' : 'e', std::string_view(buffer, n));
          moved = true;
        }
        if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) return lost(c);
      }
      flush(c);
    }
    if (!c.eof && libssh2_channel_eof(c.channel) && c.to_client.size() < k_hold) c.eof = true;
    if (c.eof) finish(c);
  }

  /// Closes an ended channel for its exit status (which comes after the output's end).
  void finish(Client& c) {
    int rc = libssh2_channel_close(c.channel);
    if (rc == 0) rc = libssh2_channel_wait_closed(c.channel);
    if (rc == LIBSSH2_ERROR_EAGAIN) return;
    c.to_client +=
        frame('x', std::to_string(rc == 0 ? libssh2_channel_get_exit_status(c.channel) : -1));
    c.done = true;
  }

  /// The session failed under a client: it sees its channel end without a status.
  void lost(Client& c) {
    c.done = true;
    m_dead = true;
  }

  const SshLink& m_link;
  Opening m_opening;
  bool m_dead = false;
};

}  // namespace

void kept_serve(const SshLink& link, int listen_fd, const std::filesystem::path& socket,
                int idle_s) {
  struct stat bound {};
  ::lstat(socket.c_str(), &bound);
  Master master(link);
  std::list<Client> clients;
  auto idle_until = Clock::now() + std::chrono::seconds(idle_s);
  int keepalive_s = 1;  // until the next keep-alive, as libssh2 says
  while (!master.dead()) {
    // Serving nobody, with the next shell started, the session is watched only for its end;
    // else for what libssh2 needs.
    if (clients.empty() && !master.ahead_running() && !master.open_conversation(true) &&
        master.dead()) {
      break;
    }
    const bool quiet = clients.empty() && master.ahead_running();
    std::vector<pollfd> items = {{listen_fd, POLLIN, 0},
                                 {link.socket, quiet ? short(POLLRDHUP) : master.ssh_events(), 0}};
    for (const Client& c : clients) {
      const short wanted =
          static_cast<short>((c.done || c.to_channel.size() >= k_hold ? 0 : POLLIN) |
                             (c.to_client.empty() ? 0 : POLLOUT));
      items.push_back({c.fd, wanted, 0});
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(idle_until - Clock::now());
    // Idle, it wakes for keep-alives too: a link that drops idle connections (NAT) is kept, and
    // a peer that vanished shows as a failed send.
    const int timeout =
        quiet ? static_cast<int>(std::clamp<long>(left.count(), 0, keepalive_s * 1000L)) : 20;
    ::poll(items.data(), items.size(), timeout);
    if (quiet && (items[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) break;  // peer gone
    if (items[0].revents & POLLIN) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      ucred who{};
      socklen_t size = sizeof who;
      if (fd >= 0 && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &who, &size) == 0 &&
          who.uid == ::geteuid()) {
        // Behind a command that lasts (a foreground run's follow step, as long as the run), it
        // is told at once to log in itself.
        const auto now = Clock::now();
        const bool long_ahead = !clients.empty() && now - clients.front().came > k_long_served;
        clients.push_back({});
        clients.back().fd = fd;
        clients.back().came = now;
        clients.back().queued_until = long_ahead ? now : now + k_queue_wait;
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
    if (const int rc = libssh2_keepalive_send(link.session, &keepalive_s);
        rc != 0 && rc != LIBSSH2_ERROR_EAGAIN) {
      break;
    }
    keepalive_s = std::max(keepalive_s, 1);
    if (clients.empty() && Clock::now() >= idle_until) break;
  }
  struct stat now {};
  if (::lstat(socket.c_str(), &now) == 0 && now.st_ino == bound.st_ino) ::unlink(socket.c_str());
  for (Client& c : clients) master.release(c);
  if (!master.dead()) master.release_spare();
  ::close(listen_fd);
}

}  // namespace mlw
