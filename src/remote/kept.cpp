// Kept SSH connections (issue 15), as OpenSSH's ControlPersist: the process that logged in
// stays behind for a while and opens channels on its session for the next commands of the same
// user, over a Unix socket in a folder only that user may enter. A client says "conv\n" (give me
// a conversation, conversation.hpp; "cnow\n": one started now, not ahead), then sends the
// channel's stdin as it comes; it is answered in frames of one type byte, a 4-byte big-endian
// length and the bytes: 'r' the conversation is open (its marker), 'a' likewise, its shell
// started ahead (conversation_command's `ahead`), 'f' it could not be (why), 'o' stdout,
// 'e' stderr, 'x' the channel ended (its exit status).

#include "kept.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "mlw/util/error.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// The most either side holds for the other before it stops reading.
constexpr std::size_t k_buffer_cap = 1 << 20;

bool fill_address(const fs::path& socket, sockaddr_un& address) {
  address = {};
  address.sun_family = AF_UNIX;
  const std::string path = socket.string();
  if (path.size() >= sizeof address.sun_path) return false;
  std::copy(path.begin(), path.end(), address.sun_path);
  return true;
}

/// The uid of the process at the other end of a Unix socket.
std::optional<uid_t> peer_uid(int fd) {
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return std::nullopt;
  return credentials.uid;
}

/// A client's end: a channel of the kept connection, as a ShellPipe.
class KeptPipe : public ShellPipe {
 public:
  explicit KeptPipe(int fd) : m_fd(fd) {}
  ~KeptPipe() override { ::close(m_fd); }

  /// Pumps the socket until the master said 'r' (true) or 'f', closed, or `timeout_ms` passed.
  bool await_ready(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!m_ready && !m_ended) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      wait(static_cast<int>(left));
      pump();
    }
    return m_ready && !m_ended;
  }

  std::size_t write(std::string_view data) override {
    if (m_write_closed) return data.size();  // the other end is gone: nothing more goes
    const ssize_t n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    m_want_write = n < static_cast<ssize_t>(data.size());  // wait() then waits for room too
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    if (errno == EPIPE || errno == ECONNRESET) {
      // The kept process closed the channel: a shell that ended before it read all of the
      // step (one started ahead finding a login file changed exits 86), or a lost connection.
      // What it sent before closing says which; the rest of the input is dropped.
      m_write_closed = true;
      m_want_write = false;
      pump();
      return data.size();
    }
    throw Error("the connection was lost (the kept connection: " + errno_text(errno) + ")");
  }

  std::size_t read(int stream, char* buffer, std::size_t size) override {
    pump();
    std::string& queue = m_out[stream];
    const std::size_t n = std::min(size, queue.size() - m_taken[stream]);
    std::copy_n(queue.data() + m_taken[stream], n, buffer);
    m_taken[stream] += n;
    if (m_taken[stream] == queue.size()) {
      queue.clear();
      m_taken[stream] = 0;
    }
    return n;
  }

  bool ended() override {
    pump();
    return m_ended;
  }

  void wait(int ms) override {
    pollfd item{m_fd, static_cast<short>(POLLIN | (m_want_write ? POLLOUT : 0)), 0};
    ++m_waits;
    ::poll(&item, 1, ms);
  }

  int waits() const override { return m_waits; }
  int exit_status() override { return m_status; }
  /// What the master said when it could not open the channel.
  const std::string& refusal() const { return m_refusal; }
  /// The marker of the conversation it opened.
  const std::string& marker() const { return m_marker; }
  /// Whether that conversation's shell was started ahead.
  bool ahead() const { return m_ahead; }

 private:
  /// Reads what the socket has and unpacks whole frames.
  void pump() {
    char buffer[65536];
    while (!m_ended && m_out[0].size() < k_buffer_cap && m_out[1].size() < k_buffer_cap) {
      const ssize_t n = ::recv(m_fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        m_ended = true;  // the master is gone: a lost connection
        break;
      }
      if (n < 0) break;
      m_in.append(buffer, static_cast<std::size_t>(n));
      unpack();
    }
  }

  void unpack() {
    std::size_t at = 0;
    while (m_in.size() - at >= 5) {
      std::uint32_t length = 0;
      for (int i = 0; i < 4; ++i)
        length = (length << 8) | static_cast<unsigned char>(m_in[at + 1 + i]);
      if (m_in.size() - at - 5 < length) break;
      const std::string_view data(m_in.data() + at + 5, length);
      switch (m_in[at]) {
        case 'r':
        case 'a':
          m_ready = true, m_ahead = m_in[at] == 'a', m_marker = std::string(data);
          break;
        case 'f':
          m_refusal = std::string(data), m_ended = true;
          break;
        case 'o':
          m_out[0].append(data);
          break;
        case 'e':
          m_out[1].append(data);
          break;
        case 'x':
          m_status = parse_integer(std::string(data), -1, 255).value_or(-1);
          m_ended = true;
          break;
        default:
          m_ended = true;
          break;
      }
      at += 5 + length;
    }
    m_in.erase(0, at);
  }

  int m_fd;
  std::string m_in;
  std::string m_out[2];
  std::size_t m_taken[2] = {0, 0};
  bool m_ready = false;
  bool m_ahead = false;
  bool m_ended = false;
  bool m_want_write = false;
  bool m_write_closed = false;  ///< the kept process closed the channel while input was going
  int m_status = -1;
  int m_waits = 0;
  std::string m_refusal;
  std::string m_marker;
};

}  // namespace

std::optional<fs::path> kept_socket(const fs::path& folder, const std::string& key) {
  struct stat info {};
  if (::lstat(folder.c_str(), &info) != 0) {
    std::error_code ec;
    fs::create_directories(folder.parent_path(), ec);
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return std::nullopt;
    if (::lstat(folder.c_str(), &info) != 0) return std::nullopt;
  }
  std::string wrong;
  if (!S_ISDIR(info.st_mode)) {
    wrong = "is not a folder";
  } else if (info.st_uid != ::geteuid()) {
    wrong = fmt::format("belongs to uid {}, not to you", info.st_uid);
  } else if ((info.st_mode & 077) != 0) {
    wrong = fmt::format("may be entered by others (mode {:o}; chmod 700 it)", info.st_mode & 0777);
  }
  if (!wrong.empty()) {
    spdlog::warn("not keeping SSH connections open: {} {}", folder.string(), wrong);
    return std::nullopt;
  }
  const fs::path socket = folder / (sha256_hex(key).substr(0, 24) + ".sock");
  sockaddr_un address{};
  if (!fill_address(socket, address)) {
    spdlog::debug("not keeping SSH connections open: {} is too long for a socket", socket.string());
    return std::nullopt;
  }
  return socket;
}

std::unique_ptr<ShellPipe> kept_open(const fs::path& socket, int timeout_ms, bool fresh,
                                     std::string& marker, bool& ahead) {
  struct stat info {};
  if (::lstat(socket.c_str(), &info) != 0) return nullptr;
  if (!S_ISSOCK(info.st_mode) || info.st_uid != ::geteuid()) {
    spdlog::warn("not using {}: it is not a socket of yours", socket.string());
    return nullptr;
  }
  sockaddr_un address{};
  fill_address(socket, address);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  auto pipe = std::make_unique<KeptPipe>(fd);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    // Nobody listens: a connection that ended without removing its socket.
    if (errno == ECONNREFUSED) ::unlink(socket.c_str());
    return nullptr;
  }
  if (peer_uid(fd) != ::geteuid()) {
    spdlog::warn("not using {}: another user's process listens there", socket.string());
    return nullptr;
  }
  const std::string request = fresh ? "cnow\n" : "conv\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return nullptr;
  }
  if (!pipe->await_ready(timeout_ms)) {
    spdlog::debug("the kept SSH connection {} did not open a channel{}; logging in again",
                  socket.filename().string(),
                  pipe->refusal().empty() ? "" : " (" + pipe->refusal() + ")");
    return nullptr;
  }
  marker = pipe->marker();
  ahead = pipe->ahead();
  return pipe;
}

int kept_listen(const fs::path& socket) {
  sockaddr_un address{};
  if (!fill_address(socket, address)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    // One that answers is another connection's; one that does not is left over.
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = probe >= 0 && ::connect(probe, reinterpret_cast<const sockaddr*>(&address),
                                              sizeof address) == 0;
    if (probe >= 0) ::close(probe);
    if (live || ::unlink(socket.c_str()) != 0 ||
        ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
  }
  if (::listen(fd, 16) != 0) {
    ::close(fd);
    ::unlink(socket.c_str());
    return -1;
  }
  return fd;
}

}  // namespace mlw
