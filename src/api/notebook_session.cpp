// Which notebook a kernel serves: one bounded GET of Jupyter's /api/sessions on 127.0.0.1.

#include "notebook_session.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "mlw/util/strings.hpp"
#include "notebook_cells.hpp"

namespace mlw::api {

namespace {

/// The most bytes of Jupyter's answer read.
constexpr std::size_t k_max_answer = 1 << 20;

/// The answer's body to `GET path` at 127.0.0.1:`port` (HTTP/1.0: the server closes at its
/// end), 2 s at most for the send and for each read; nullopt on any failure or a status not 200.
std::optional<std::string> http_get(int port, const std::string& path, const std::string& token) {
  // A connection on loopback is made or refused at once; the reads and the send are bounded.
  const int fd = connect_loopback(port);
  if (fd < 0) return std::nullopt;
  timeval limit{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  std::string answer;
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" +
                              "Authorization: token " + token + "\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buffer[16384];
    ssize_t n = 0;
    while (answer.size() < k_max_answer && (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) {
      answer.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return http_answer_body(answer);
}

}  // namespace

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

std::optional<std::string> http_answer_body(const std::string& answer) {
  const auto head_end = answer.find("\r\n\r\n");
  const auto space = answer.find(' ');
  if (head_end == std::string::npos || !answer.starts_with("HTTP/1.") ||
      space == std::string::npos || answer.compare(space + 1, 3, "200") != 0) {
    return std::nullopt;
  }
  return answer.substr(head_end + 4);
}

std::string notebook_in_sessions(const std::string& body, const std::string& kernel_id) {
  const auto sessions = nlohmann::json::parse(body, nullptr, false);
  if (!sessions.is_array()) return "";
  for (const auto& session : sessions) {
    if (!session.is_object() || !session.contains("kernel") || !session["kernel"].is_object()) {
      continue;
    }
    if (text_at(session["kernel"], "id") == kernel_id) return text_at(session, "path");
  }
  return "";
}

std::string notebook_of_kernel(const std::filesystem::path& connection_file) {
  const char* port_text = std::getenv("MLW_NOTEBOOK_PORT");
  const char* token = std::getenv("JUPYTER_TOKEN");
  if (port_text == nullptr || token == nullptr) return "";
  const auto port = parse_integer(port_text, 1, 65535);
  // kernel-ID.json: ID is the kernel's id in Jupyter.
  std::string id = connection_file.stem().string();
  if (!port || !id.starts_with("kernel-")) return "";
  id = id.substr(7);
  const auto body = http_get(static_cast<int>(*port), "/api/sessions", token);
  if (!body) {
    spdlog::debug("Jupyter on port {} did not list its sessions", *port);
    return "";
  }
  return notebook_in_sessions(*body, id);
}

}  // namespace mlw::api
