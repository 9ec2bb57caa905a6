#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mlw/remote/shell.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw::test {

/// One answer of a FakeEngine: to the first request whose head contains `match`.
struct FakeRoute {
  std::string match;   ///< a part of the request's head ("" matches all)
  std::string status;  ///< its status code
  std::string body;    ///< its body (any bytes)
};

/// A stand-in Docker engine on a unix socket (python3, started in the background): it answers
/// each request by the first route that matches it, as HTTP/1.1 before closing, and appends each
/// request it read (head and body) to `requests`. It serves at most 10 requests and 30 s, and is
/// killed by its pid when the object goes.
class FakeEngine {
 public:
  /// Listens on `socket`, answering every request with `status` and `body`.
  FakeEngine(const std::filesystem::path& socket, const std::string& status,
             const std::string& body)
      : FakeEngine(socket, std::vector<FakeRoute>{{"", status, body}}) {}

  /// Listens on `socket` (ready when the constructor returns, or after 10 s at most).
  FakeEngine(const std::filesystem::path& socket, const std::vector<FakeRoute>& routes)
      : m_socket(socket), m_requests(socket.string() + ".requests") {
    std::string table;  // match, status and body per line, the body in hex
    for (const auto& route : routes) {
      std::string hex;
      for (const unsigned char c : route.body) hex += fmt::format("{:02x}", c);
      table += route.match + "\t" + route.status + "\t" + hex + "\n";
    }
    atomic_write_file(m_socket.string() + ".routes", table);  // over one argument's 128 KiB
    static const char* const k_server = R"(import socket, sys
path, table, log = sys.argv[1:4]
routes = [line.split("\t") for line in open(table).read().splitlines()]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
s.settimeout(30)
open(path + ".ready", "w").close()
for _ in range(10):
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(65536)
        if not d:
            break
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(rest) < n:
        d = c.recv(65536)
        if not d:
            break
        rest += d
    with open(log, "ab") as f:
        f.write(head + b"\r\n\r\n" + rest + b"\n")
    match = [r for r in routes if r[0].encode() in head] + [["", "500", ""]]
    status, body = match[0][1], bytes.fromhex(match[0][2])
    c.sendall(("HTTP/1.1 %s Answer\r\nContent-Type: application/json\r\n\r\n" % status).encode()
              + body)
    c.close()
)";
    const ShellResult started = LocalShell().run(
        "python3 -c " + shell_quote(k_server) + " " + shell_quote(m_socket.string()) + " " +
        shell_quote(m_socket.string() + ".routes") + " " + shell_quote(m_requests.string()) +
        " </dev/null >/dev/null 2>&1 & echo $!\n"
        "i=0; while [ ! -e " +
        shell_quote(m_socket.string() + ".ready") +
        " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done");
    m_pid = static_cast<pid_t>(std::stol("0" + started.output));
  }
  ~FakeEngine() {
    if (m_pid > 0) ::kill(m_pid, SIGKILL);
  }
  FakeEngine(const FakeEngine&) = delete;
  FakeEngine& operator=(const FakeEngine&) = delete;

  /// The requests it read so far, each head and body as sent.
  std::string requests() const { return read_file_if_exists(m_requests).value_or(""); }

 private:
  std::filesystem::path m_socket;
  std::filesystem::path m_requests;
  pid_t m_pid = 0;
};

}  // namespace mlw::test
