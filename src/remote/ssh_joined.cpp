// A command on its own channel joined to this process's terminal (`experiment shell`): what
// `ssh -t host command` does. With a pty the target's terminal is sized as this one, resized on
// SIGWINCH, and this terminal is raw meanwhile, so keys (Ctrl-C included) go to the target.

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mlw/util/error.hpp"
#include "ssh_channel.hpp"

namespace mlw {

namespace {

volatile sig_atomic_t g_resized = 0;  // set by SIGWINCH, read by the relay's loop

void on_resize(int) {
  g_resized = 1;
}

/// This terminal's size (columns, rows); 80×24 when it has none.
std::pair<int, int> window_size() {
  winsize size{};
  for (int fd : {STDOUT_FILENO, STDIN_FILENO, STDERR_FILENO}) {
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0) {
      return {size.ws_col, size.ws_row};
    }
  }
  return {80, 24};
}

/// Puts standard input's terminal in raw mode and SIGWINCH's handler in place while it lives.
class RawTerminal {
 public:
  explicit RawTerminal(bool raw) {
    struct sigaction resize {};
    resize.sa_handler = on_resize;
    ::sigaction(SIGWINCH, &resize, &m_old_winch);
    if (raw && ::tcgetattr(STDIN_FILENO, &m_saved) == 0) {
      termios changed = m_saved;
      ::cfmakeraw(&changed);
      m_raw = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &changed) == 0;
    }
  }
  ~RawTerminal() {
    if (m_raw) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &m_saved);
    ::sigaction(SIGWINCH, &m_old_winch, nullptr);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios m_saved{};
  bool m_raw = false;
  struct sigaction m_old_winch {};
};

/// Writes all of `data` to `fd` (a blocking write; the terminal or a pipe).
void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: what follows is lost, the command goes on
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

/// The exit code a signal's SSH name stands for (RFC 4254 names, no "SIG"), as a shell says it.
int signal_code(const std::string& name) {
  static const std::array<std::pair<const char*, int>, 10> k_signals = {{{"HUP", SIGHUP},
                                                                         {"INT", SIGINT},
                                                                         {"QUIT", SIGQUIT},
                                                                         {"ILL", SIGILL},
                                                                         {"ABRT", SIGABRT},
                                                                         {"FPE", SIGFPE},
                                                                         {"KILL", SIGKILL},
                                                                         {"SEGV", SIGSEGV},
                                                                         {"PIPE", SIGPIPE},
                                                                         {"TERM", SIGTERM}}};
  for (const auto& [known, number] : k_signals) {
    if (name == known) return 128 + number;
  }
  return 255;  // as OpenSSH's client says of a signal it does not know
}

/// Relays stdin to the channel and the channel's two streams to stdout and stderr until the
/// command's end; then its exit code.
class JoinedRelay {
 public:
  JoinedRelay(const SshLink& link, LIBSSH2_CHANNEL* channel, bool pty)
      : m_link(link), m_channel(channel), m_pty(pty) {}

  int run() {
    std::array<char, 32768> buffer{};
    while (!libssh2_channel_eof(m_channel)) {
      wait();
      if (g_resized && m_pty) resize();
      read_input(buffer.data(), buffer.size());
      send_input();
      bool got = drain(0, STDOUT_FILENO, buffer.data(), buffer.size());
      got = drain(SSH_EXTENDED_DATA_STDERR, STDERR_FILENO, buffer.data(), buffer.size()) || got;
      int next = 0;
      libssh2_keepalive_send(m_link.session, &next);
      if (!got && m_dead) {
        m_link.fail("the command's channel",
                    "the connection was lost (" + m_link.last_error() + ")");
      }
    }
    drain(0, STDOUT_FILENO, buffer.data(), buffer.size());
    drain(SSH_EXTENDED_DATA_STDERR, STDERR_FILENO, buffer.data(), buffer.size());
    m_link.retry([&] { return libssh2_channel_close(m_channel); }, m_link.timeout_ms);
    m_link.retry([&] { return libssh2_channel_wait_closed(m_channel); }, m_link.timeout_ms);
    return exit_code();
  }

 private:
  void wait() {
    const int directions = libssh2_session_block_directions(m_link.session);
    pollfd items[2] = {{m_link.socket, POLLIN, 0}, {STDIN_FILENO, 0, 0}};
    if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) items[0].events |= POLLOUT;
    if (!m_input_done && m_pending.empty()) items[1].events = POLLIN;
    ::poll(items, m_input_done ? 1 : 2, m_pending.empty() ? 1000 : 20);
    if (!m_input_done && (items[1].revents & (POLLIN | POLLHUP | POLLERR))) m_input_ready = true;
  }

  void resize() {
    g_resized = 0;
    const auto size = window_size();
    const int columns = size.first;
    const int rows = size.second;
    m_link.retry([&] { return libssh2_channel_request_pty_size(m_channel, columns, rows); },
                 m_link.timeout_ms);
  }

  void read_input(char* buffer, std::size_t size) {
    if (m_input_done || !m_input_ready || !m_pending.empty()) return;
    m_input_ready = false;
    const ssize_t n = ::read(STDIN_FILENO, buffer, size);
    if (n > 0) {
      m_pending.assign(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      m_input_done = true;
      m_eof_due = true;
    }
  }

  void send_input() {
    while (!m_pending.empty()) {
      const ssize_t n = libssh2_channel_write(m_channel, m_pending.data(), m_pending.size());
      if (n == LIBSSH2_ERROR_EAGAIN) return;
      if (n < 0) {
        m_dead = true;
        m_pending.clear();
        return;
      }
      m_pending.erase(0, static_cast<std::size_t>(n));
    }
    if (m_eof_due && libssh2_channel_send_eof(m_channel) != LIBSSH2_ERROR_EAGAIN) m_eof_due = false;
  }

  /// Copies what the stream `id` holds now to `fd`; true when anything came.
  bool drain(int id, int fd, char* buffer, std::size_t size) {
    bool got = false;
    while (true) {
      const ssize_t n = libssh2_channel_read_ex(m_channel, id, buffer, size);
      if (n > 0) {
        write_all(fd, std::string_view(buffer, static_cast<std::size_t>(n)));
        got = true;
        continue;
      }
      if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) m_dead = true;
      return got;
    }
  }

  int exit_code() {
    char* name = nullptr;
    std::size_t length = 0;
    libssh2_channel_get_exit_signal(m_channel, &name, &length, nullptr, nullptr, nullptr, nullptr);
    if (name) {
      const std::string signal(name, length);
      libssh2_free(m_link.session, name);
      return signal_code(signal);
    }
    return libssh2_channel_get_exit_status(m_channel);
  }

  const SshLink& m_link;
  LIBSSH2_CHANNEL* m_channel;
  bool m_pty;
  std::string m_pending;  // read from stdin, not yet taken by the channel
  bool m_input_ready = false;
  bool m_input_done = false;
  bool m_eof_due = false;
  bool m_dead = false;
};

}  // namespace

int run_joined_channel(const SshLink& link, const std::string& command, bool pty) {
  const ChannelPtr channel = open_channel(link);
  if (pty) {
    const char* set = std::getenv("TERM");
    const std::string term = set && *set ? set : "xterm";
    const auto size = window_size();
    const int columns = size.first;
    const int rows = size.second;
    if (link.retry(
            [&] {
              return libssh2_channel_request_pty_ex(channel.get(), term.c_str(),
                                                    static_cast<unsigned>(term.size()), nullptr, 0,
                                                    columns, rows, 0, 0);
            },
            link.timeout_ms) != 0) {
      link.fail("the target refused a terminal (pty)", link.last_error());
    }
  }
  if (link.retry([&] { return libssh2_channel_exec(channel.get(), command.c_str()); },
                 link.timeout_ms) != 0) {
    link.fail("cannot start the command", link.last_error());
  }
  RawTerminal terminal(pty && ::isatty(STDIN_FILENO));
  return JoinedRelay(link, channel.get(), pty).run();
}

}  // namespace mlw
