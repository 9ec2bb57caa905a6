#include "ssh_channel.hpp"

#include <poll.h>

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "mlw/util/error.hpp"

namespace mlw {

bool SshLink::wait_socket(int timeout) const {
  const int directions = libssh2_session_block_directions(session);
  pollfd item{socket, 0, 0};
  if (directions & LIBSSH2_SESSION_BLOCK_INBOUND) item.events |= POLLIN;
  if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) item.events |= POLLOUT;
  if (!item.events) item.events = POLLIN;
  if (waits) ++*waits;
  return ::poll(&item, 1, timeout) > 0;
}

int SshLink::retry(const std::function<int()>& call, int timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  while (true) {
    const int rc = call();
    if (rc != LIBSSH2_ERROR_EAGAIN) return rc;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !wait_socket(static_cast<int>(left.count()))) {
      return LIBSSH2_ERROR_TIMEOUT;
    }
  }
}

std::string SshLink::last_error() const {
  char* text = nullptr;
  int length = 0;
  libssh2_session_last_error(session, &text, &length, 0);
  return text && length > 0 ? std::string(text, static_cast<std::size_t>(length))
                            : "libssh2 gave no reason";
}

void ChannelFree::operator()(LIBSSH2_CHANNEL* channel) const {
  link->retry([channel] { return libssh2_channel_free(channel); }, 2000);
}

ChannelPtr try_open_channel(const SshLink& link, int& rc) {
  ChannelPtr channel(nullptr, ChannelFree{&link});
  rc = link.retry(
      [&] {
        channel.reset(libssh2_channel_open_session(link.session));
        return channel ? 0 : libssh2_session_last_errno(link.session);
      },
      link.timeout_ms);
  return channel;
}

ChannelPtr open_channel(const SshLink& link) {
  int rc = 0;
  ChannelPtr channel = try_open_channel(link, rc);
  if (!channel) link.fail("exec", "cannot open a channel: " + link.last_error());
  return channel;
}

namespace {

/// A shell on its own channel, as a ShellPipe: every call returns at once.
class ChannelPipe : public ShellPipe {
 public:
  explicit ChannelPipe(const SshLink& link)
      : m_link(link), m_owner(nullptr, ChannelFree{&m_link}) {}

  /// Opens the channel and starts `command` on it.
  void start(const std::string& command) {
    m_owner = open_channel(m_link);
    if (m_link.retry([&] { return libssh2_channel_exec(m_owner.get(), command.c_str()); },
                     m_link.timeout_ms) != 0) {
      fail(m_link.last_error());
    }
  }

  std::size_t write(std::string_view data) override {
    const ssize_t n = libssh2_channel_write(m_owner.get(), data.data(), data.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (n != LIBSSH2_ERROR_EAGAIN) lost(static_cast<int>(n));
    return 0;
  }

  std::size_t read(int stream, char* buffer, std::size_t size) override {
    const ssize_t n = libssh2_channel_read_ex(m_owner.get(), stream, buffer, size);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n != 0 && n != LIBSSH2_ERROR_EAGAIN) lost(static_cast<int>(n));
    return 0;
  }

  bool ended() override { return libssh2_channel_eof(m_owner.get()) != 0; }

  /// Keeps the connection alive while nothing moves, then waits a little for the socket.
  void wait(int ms) override {
    int next = 0;
    const int rc = libssh2_keepalive_send(m_link.session, &next);
    if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN) lost(rc);
    m_link.wait_socket(ms);
  }

  int waits() const override { return m_link.waits ? *m_link.waits : 0; }

  /// Closes the channel and reads how the shell ended: its exit status, or 128+N for a signal.
  /// A connection that died ends the channel without one (which libssh2 would read as 0): only
  /// a clean close counts.
  int exit_status() override {
    LIBSSH2_CHANNEL* const channel = m_owner.get();
    if (m_link.retry([&] { return libssh2_channel_close(channel); }, m_link.timeout_ms) != 0 ||
        m_link.retry([&] { return libssh2_channel_wait_closed(channel); }, m_link.timeout_ms) !=
            0) {
      return -1;
    }
    char* signal = nullptr;
    libssh2_channel_get_exit_signal(channel, &signal, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (!signal) return libssh2_channel_get_exit_status(channel);
    static const std::vector<std::pair<std::string, int>> numbers = {
        {"HUP", 1}, {"INT", 2}, {"KILL", 9}, {"PIPE", 13}, {"TERM", 15}};
    int code = 128;
    for (const auto& [name, number] : numbers) {
      if (name == signal) code = 128 + number;
    }
    libssh2_free(m_link.session, signal);
    return code;
  }

  void forget() override { (void)m_owner.release(); }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    m_link.fail("exec", what);
    throw Error(what);  // fail throws; this keeps [[noreturn]] true
  }

  [[noreturn]] void lost(int rc) const {
    fail(fmt::format("the connection was lost ({})",
                     rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_SEND
                         ? "socket closed"
                         : m_link.last_error()));
  }

  SshLink m_link;
  ChannelPtr m_owner;
};

}  // namespace

std::unique_ptr<ShellPipe> open_shell_pipe(const SshLink& link, const std::string& command) {
  auto pipe = std::make_unique<ChannelPipe>(link);
  pipe->start(command);
  return pipe;
}

}  // namespace mlw
