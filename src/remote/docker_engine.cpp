#include "mlw/remote/docker_engine.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace fs = std::filesystem;

HttpResponseReader::HttpResponseReader(std::function<void(std::string_view)> on_body)
    : m_on_body(std::move(on_body)) {}

void HttpResponseReader::feed(std::string_view data) {
  if (m_in_body) return feed_body(data);
  m_head.append(data);
  const auto end = m_head.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (m_head.size() > 65536) throw Error("the Docker engine sent an HTTP header over 64 KiB");
    return;
  }
  const std::string rest = m_head.substr(end + 4);
  const auto lines = split(m_head.substr(0, end), '\n');
  const auto words = split(trim(lines.empty() ? "" : lines[0]), ' ');
  if (words.size() < 2 || !starts_with(words[0], "HTTP/1.")) {
    throw Error("the Docker engine did not answer in HTTP/1.1");
  }
  try {
    m_status = std::stoi(words[1]);
  } catch (const std::exception&) {
    throw Error("the Docker engine sent a bad HTTP status line: " + trim(lines[0]));
  }
  bool has_length = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower_ascii(trim(lines[i].substr(0, colon)));
    const std::string value = lower_ascii(trim(lines[i].substr(colon + 1)));
    if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
      m_chunked = true;
    } else if (name == "content-length") {
      has_length = true;
      m_left = std::strtoull(value.c_str(), nullptr, 10);
    }
  }
  m_in_body = true;
  m_head.clear();
  const bool no_body = m_status == 204 || m_status == 304 || (m_status >= 100 && m_status < 200);
  if (no_body || (!m_chunked && has_length && m_left == 0)) {
    m_complete = true;
  } else if (!m_chunked && !has_length) {
    m_until_close = true;
  }
  if (!rest.empty()) feed_body(rest);
}

void HttpResponseReader::feed_body(std::string_view data) {
  while (!data.empty() && !m_complete) {
    if (!m_chunked) {
      if (m_until_close) {
        m_on_body(data);
        return;
      }
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(m_left, data.size()));
      m_on_body(data.substr(0, n));
      data.remove_prefix(n);
      m_left -= n;
      if (m_left == 0) m_complete = true;
      continue;
    }
    if (m_chunk_state == 0 || m_chunk_state == 2 || m_chunk_state == 3) {
      const auto newline = data.find('\n');
      m_chunk_line.append(data.substr(0, newline));
      if (newline == std::string_view::npos) {
        if (m_chunk_line.size() > 4096) throw Error("the Docker engine sent a bad chunk");
        return;
      }
      data.remove_prefix(newline + 1);
      const std::string line = trim(m_chunk_line);
      m_chunk_line.clear();
      if (m_chunk_state == 2) {
        m_chunk_state = 0;
      } else if (m_chunk_state == 3) {
        if (line.empty()) m_complete = true;
      } else {
        m_left = std::strtoull(line.c_str(), nullptr, 16);
        m_chunk_state = m_left == 0 ? 3 : 1;
      }
      continue;
    }
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(m_left, data.size()));
    m_on_body(data.substr(0, n));
    data.remove_prefix(n);
    m_left -= n;
    if (m_left == 0) m_chunk_state = 2;
  }
}

DockerStreamDemuxer::DockerStreamDemuxer(std::function<void(int, std::string_view)> on_payload)
    : m_on_payload(std::move(on_payload)) {}

void DockerStreamDemuxer::feed(std::string_view data) {
  while (!data.empty()) {
    if (m_left == 0) {
      const std::size_t n = std::min<std::size_t>(8 - m_header.size(), data.size());
      m_header.append(data.substr(0, n));
      data.remove_prefix(n);
      if (m_header.size() < 8) return;
      const auto* h = reinterpret_cast<const unsigned char*>(m_header.data());
      m_stream = h[0];
      m_left = (std::uint32_t{h[4]} << 24) | (std::uint32_t{h[5]} << 16) |
               (std::uint32_t{h[6]} << 8) | std::uint32_t{h[7]};
      m_header.clear();
      continue;
    }
    const std::size_t n = std::min<std::size_t>(m_left, data.size());
    m_on_payload(m_stream, data.substr(0, n));
    data.remove_prefix(n);
    m_left -= static_cast<std::uint32_t>(n);
  }
}

namespace {

class UnixSocketEngine : public DockerEngine {
 public:
  explicit UnixSocketEngine(fs::path socket) : m_socket(std::move(socket)) {}

  std::string where() const override { return "unix://" + m_socket.string(); }

  EngineResponse request(const std::string& method, const std::string& path,
                         const std::string& body) override {
    EngineResponse response;
    response.status = exchange(
        method, path, body, [&](std::string_view chunk) { response.body.append(chunk); }, {},
        false);
    return response;
  }

  int stream(const std::string& method, const std::string& path,
             const std::function<void(std::string_view)>& on_body,
             const std::function<void()>& on_idle) override {
    return exchange(method, path, "", on_body, on_idle, true);
  }

 private:
  int connect_socket() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Error("cannot create a socket: " + errno_text(errno));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = m_socket.string();
    if (path.size() >= sizeof address.sun_path) {
      ::close(fd);
      throw Error("the Docker socket path is too long: " + path);
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      const int error = errno;
      ::close(fd);
      throw Error(
          fmt::format("cannot reach the Docker engine at {}: {}", where(), errno_text(error)));
    }
    return fd;
  }

  int exchange(const std::string& method, const std::string& path, const std::string& body,
               const std::function<void(std::string_view)>& on_body,
               const std::function<void()>& on_idle, bool success_body_only) {
    const int fd = connect_socket();
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    std::string request =
        fmt::format("{} {} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n", method, path);
    if (!body.empty()) {
      request +=
          fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", body.size());
    } else if (method == "POST" || method == "PUT") {
      request += "Content-Length: 0\r\n";
    }
    request += "\r\n" + body;
    std::string_view left = request;
    while (!left.empty()) {
      const ssize_t n = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw Error(fmt::format("the Docker engine at {} closed the connection", where()));
      left.remove_prefix(static_cast<std::size_t>(n));
    }
    HttpResponseReader* self = nullptr;
    HttpResponseReader reader([&](std::string_view chunk) {
      if (!success_body_only || (self->status() >= 200 && self->status() < 300)) on_body(chunk);
    });
    self = &reader;
    char buffer[65536];
    while (!reader.complete()) {
      pollfd item{fd, POLLIN, 0};
      const int ready = ::poll(&item, 1, 100);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (on_idle) on_idle();
        continue;
      }
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (reader.until_close() || (n == 0 && reader.complete())) break;
        throw Error(fmt::format("the Docker engine at {} closed the connection mid-answer to {} {}",
                                where(), method, path));
      }
      reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
    return reader.status();
  }

  fs::path m_socket;
};

}  // namespace

std::optional<fs::path> local_engine_socket() {
  if (const char* host = std::getenv("DOCKER_HOST"); host && *host) {
    const std::string value = host;
    if (!starts_with(value, "unix://")) return std::nullopt;
    return fs::path(value.substr(7));
  }
  if (const char* context = std::getenv("DOCKER_CONTEXT");
      context && *context && std::string(context) != "default") {
    return std::nullopt;
  }
  fs::path config_dir;
  if (const char* dir = std::getenv("DOCKER_CONFIG"); dir && *dir) {
    config_dir = dir;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    config_dir = fs::path(home) / ".docker";
  }
  if (!config_dir.empty()) {
    if (const auto text = read_file_if_exists(config_dir / "config.json")) {
      const auto json = nlohmann::json::parse(*text, nullptr, false);
      if (json.is_object() && json.contains("currentContext") &&
          json["currentContext"].is_string()) {
        const std::string current = json["currentContext"].get<std::string>();
        if (!current.empty() && current != "default") return std::nullopt;
      }
    }
  }
  return fs::path("/var/run/docker.sock");
}

std::unique_ptr<DockerEngine> unix_socket_engine(const fs::path& socket) {
  return std::make_unique<UnixSocketEngine>(socket);
}

}  // namespace mlw
