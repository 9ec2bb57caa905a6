// src/remote/engine.sh and engine.pl, run by /bin/sh and this machine's perl as a target runs them,
// against a stand-in engine: a unix socket served by a child process that answers one request.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "mlw/remote/probe.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// A child process listening on `path` that answers one request with `answer` and writes what it
/// was sent into `request`. Its pid.
pid_t serve_once(const fs::path& path, const fs::path& request, const std::string& answer) {
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0) {
    return -1;
  }
  const pid_t child = ::fork();
  if (child != 0) {
    ::close(listener);
    return child;
  }
  ::alarm(20);  // bounded, whatever the client does
  const int connection = ::accept(listener, nullptr, nullptr);
  std::string seen;
  char buffer[4096];
  while (true) {
    const auto head = seen.find("\r\n\r\n");
    if (head != std::string::npos) {
      const auto length = seen.find("Content-Length: ");
      const std::size_t body =
          length == std::string::npos ? 0 : std::stoul(seen.substr(length + 16));
      if (seen.size() >= head + 4 + body) break;
    }
    const ssize_t n = ::read(connection, buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  atomic_write_file(request, seen);
  (void)!::write(connection, answer.data(), answer.size());
  ::close(connection);
  std::_Exit(0);
}

}  // namespace

TEST(EngineScript, HttpSendsOneRequestOnTheSocketAndPrintsTheStatus) {
  test::TempDir dir("mlw-engine");
  const fs::path socket = dir.path() / "e.sock";
  const pid_t server = serve_once(
      socket, dir.path() / "request",
      "HTTP/1.0 201 Created\r\nContent-Type: application/json\r\n\r\n{\"Id\":\"c0ffee\"}");
  ASSERT_GT(server, 0);
  atomic_write_file(dir.path() / "body.json", "{\"Image\":\"x\"}");
  const test::CommandResult ran = test::run_command(
      "cd " + shell_quote(dir.path().string()) + " && DOCKER_HOST=unix://" +
      shell_quote(socket.string()) + " && export DOCKER_HOST\n" + engine_socket_lookup() +
      "mlw_engine && mlw_http 5 POST '/containers/create?name=mlw-1' body.json answer.json");
  ::waitpid(server, nullptr, 0);
  EXPECT_EQ(ran.status, 0);
  EXPECT_EQ(ran.output, "201");
  EXPECT_EQ(read_file_if_exists(dir.path() / "answer.json"), "{\"Id\":\"c0ffee\"}");
  const std::string request = read_file_if_exists(dir.path() / "request").value_or("");
  EXPECT_EQ(request.rfind("POST /containers/create?name=mlw-1 HTTP/1.0\r\n", 0), 0u) << request;
  EXPECT_NE(request.find("Content-Type: application/json\r\n"), std::string::npos) << request;
  EXPECT_EQ(request.substr(request.size() - 13), "{\"Image\":\"x\"}") << request;
}

TEST(EngineScript, TheEngineIsAskedDirectlyOnlyThroughAUnixSocket) {
  test::TempDir dir("mlw-engine");
  const auto asks = [&](const std::string& docker_host) {
    return test::run_command("DOCKER_HOST=" + shell_quote(docker_host) +
                             " && export DOCKER_HOST\n" + engine_socket_lookup() +
                             "mlw_engine && echo \"$s\"")
        .output;
  };
  EXPECT_EQ(asks("tcp://127.0.0.1:2375"), "");
  EXPECT_EQ(asks("unix://" + (dir.path() / "none.sock").string()), "");  // no such socket
  const fs::path socket = dir.path() / "e.sock";
  const pid_t server = serve_once(socket, dir.path() / "request", "");
  ASSERT_GT(server, 0);
  EXPECT_EQ(asks("unix://" + socket.string()), socket.string() + "\n");
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
}

}  // namespace mlw
