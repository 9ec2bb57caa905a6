#include "ssh_channel.hpp"

#include <poll.h>

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "mlw/remote/frame.hpp"
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

namespace {

/// Frees a channel, waiting (bounded) for libssh2 to close it on the non-blocking session; one
/// still busy after that is freed with the session.
struct ChannelFree {
  const SshLink* link = nullptr;
  void operator()(LIBSSH2_CHANNEL* channel) const {
    link->retry([channel] { return libssh2_channel_free(channel); }, 2000);
  }
};
using ChannelPtr = std::unique_ptr<LIBSSH2_CHANNEL, ChannelFree>;

/// One command on one channel: input fed as the command takes it, both outputs passed on.
class ChannelCommand {
 public:
  ChannelCommand(const SshLink& link, const ShellStreams& streams, FramedStream (&frames)[2])
      : m_link(link), m_streams(streams), m_frames(frames), m_owner(nullptr, ChannelFree{&link}) {
    m_input_done = !streams.read_input;
  }

  /// Opens the channel and starts `command` on it.
  void start(const std::string& command) {
    m_link.retry(
        [&] {
          m_owner.reset(libssh2_channel_open_session(m_link.session));
          return m_owner ? 0 : libssh2_session_last_errno(m_link.session);
        },
        m_link.timeout_ms);
    if (!m_owner) fail("cannot open a channel: " + m_link.last_error());
    if (m_link.retry([&] { return libssh2_channel_exec(m_owner.get(), command.c_str()); },
                     m_link.timeout_ms) != 0) {
      fail(m_link.last_error());
    }
  }

  /// One round of input and output; false when nothing moved.
  bool exchange(ShellResult& result) {
    bool progress = feed_input();
    for (int stream = 0; stream < 2; ++stream) progress = read_output(stream, result) || progress;
    return progress;
  }

  /// Whether the command's output has ended.
  bool at_end() const { return libssh2_channel_eof(m_owner.get()) != 0; }

  /// Keeps the connection alive while nothing moves, then waits a little for the socket.
  void idle() {
    int next = 0;
    const int rc = libssh2_keepalive_send(m_link.session, &next);
    if (rc != 0 && rc != LIBSSH2_ERROR_EAGAIN) lost(rc);
    m_link.wait_socket(200);
  }

  /// Closes the channel and reads how the command ended: its exit status, or 128+N for a
  /// signal. A connection that died mid-command ends the channel without an exit status
  /// (which libssh2 would read as 0): only a clean close counts as the command's end.
  int exit_code() {
    LIBSSH2_CHANNEL* const channel = m_owner.get();
    if (const int rc =
            m_link.retry([&] { return libssh2_channel_close(channel); }, m_link.timeout_ms);
        rc != 0) {
      lost(rc);
    }
    if (const int rc =
            m_link.retry([&] { return libssh2_channel_wait_closed(channel); }, m_link.timeout_ms);
        rc != 0) {
      lost(rc);
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

  /// Writes what the streams give as input; sends EOF once they are done.
  bool feed_input() {
    bool progress = false;
    if (!m_input_done && m_offset == m_pending.size() &&
        (!m_streams.input_ready || m_streams.input_ready())) {
      m_pending.resize(sizeof m_buffer);
      m_pending.resize(m_streams.read_input(m_pending.data(), m_pending.size()));
      m_offset = 0;
      if (m_pending.empty()) m_input_done = true;
    }
    if (!m_input_done && m_offset < m_pending.size()) {
      const ssize_t n = libssh2_channel_write(m_owner.get(), m_pending.data() + m_offset,
                                              m_pending.size() - m_offset);
      if (n > 0) {
        m_offset += static_cast<std::size_t>(n);
        progress = true;
      } else if (n == LIBSSH2_ERROR_CHANNEL_EOF_SENT || n == LIBSSH2_ERROR_CHANNEL_CLOSED) {
        m_input_done = true;
      } else if (n != LIBSSH2_ERROR_EAGAIN) {
        lost(static_cast<int>(n));
      }
    }
    if (m_input_done && !m_eof_sent) {
      const int rc = libssh2_channel_send_eof(m_owner.get());
      if (rc == 0 || rc == LIBSSH2_ERROR_CHANNEL_CLOSED) {
        m_eof_sent = true;
      } else if (rc != LIBSSH2_ERROR_EAGAIN) {
        lost(rc);
      }
    }
    return progress;
  }

  /// Reads what `stream` (0: stdout, 1: stderr) has, unframed, into the streams or `result`.
  bool read_output(int stream, ShellResult& result) {
    bool progress = false;
    while (true) {
      const ssize_t n = libssh2_channel_read_ex(m_owner.get(), stream, m_buffer, sizeof m_buffer);
      if (n == LIBSSH2_ERROR_EAGAIN || n == 0) return progress;
      if (n < 0) lost(static_cast<int>(n));
      progress = true;
      const std::string_view chunk =
          m_frames[stream].feed(std::string_view(m_buffer, static_cast<std::size_t>(n)));
      if (chunk.empty()) continue;
      if (stream == 0) {
        m_streams.on_output ? m_streams.on_output(chunk) : (void)result.output.append(chunk);
      } else {
        m_streams.on_errors ? m_streams.on_errors(chunk) : (void)result.errors.append(chunk);
      }
    }
  }

  const SshLink& m_link;
  const ShellStreams& m_streams;
  FramedStream (&m_frames)[2];
  ChannelPtr m_owner;
  std::string m_pending;  // input read from the streams, not yet written
  std::size_t m_offset = 0;
  bool m_input_done = false;
  bool m_eof_sent = false;
  char m_buffer[65536];
};

}  // namespace

ShellResult run_channel(const SshLink& link, const std::string& command,
                        const ShellStreams& streams, FramedStream (&frames)[2], bool& stopped) {
  ChannelCommand channel(link, streams, frames);
  channel.start(command);
  ShellResult result;
  while (true) {
    const bool progress = channel.exchange(result);
    if (channel.at_end()) break;
    if (streams.should_stop && streams.should_stop()) {
      result.exit_code = 143;
      stopped = true;
      return result;
    }
    if (!progress) channel.idle();
  }
  result.exit_code = channel.exit_code();
  return result;
}

}  // namespace mlw
