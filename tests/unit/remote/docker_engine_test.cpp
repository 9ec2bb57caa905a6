#include "mlw/remote/docker_engine.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "temp_dir.hpp"

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

namespace {

/// What a reader made of a response fed `step` bytes at a time.
struct Decoded {
  std::string body;
  int status = 0;
  bool complete = false;
};

Decoded decode(const std::string& response, std::size_t step) {
  Decoded decoded;
  HttpResponseReader reader([&](std::string_view chunk) { decoded.body.append(chunk); });
  for (std::size_t i = 0; i < response.size(); i += step) {
    reader.feed(std::string_view(response).substr(i, step));
  }
  decoded.status = reader.status();
  decoded.complete = reader.complete();
  return decoded;
}

/// Sets an environment variable for one test and restores it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    value ? ::setenv(name.c_str(), value, 1) : ::unsetenv(name.c_str());
  }
  ~ScopedEnv() { old ? ::setenv(name.c_str(), old->c_str(), 1) : ::unsetenv(name.c_str()); }
};

}  // namespace

/// Fed one byte, a few bytes or all at once, the response decodes to `body` and is complete.
void expect_decodes(const std::string& response, const std::string& body, int status) {
  for (std::size_t step : {1, 3, 7, 1000}) {
    const Decoded decoded = decode(response, step);
    EXPECT_EQ(decoded.body, body) << "in pieces of " << step;
    EXPECT_EQ(decoded.status, status);
    EXPECT_TRUE(decoded.complete);
  }
}

TEST(HttpResponseReader, ReadsABodyByLengthInAnyPieces) {
  expect_decodes(
      "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
      "{\"Id\":\"abc\"}\n",
      "{\"Id\":\"abc\"}\n", 201);
}

TEST(HttpResponseReader, UndoesChunkedTransferEncoding) {
  expect_decodes(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n",
      "hello, world", 200);
}

TEST(HttpResponseReader, AChunkedBodyIsNotCompleteBeforeItsLastChunk) {
  const Decoded decoded =
      decode("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", 2);
  EXPECT_EQ(decoded.body, "abc");
  EXPECT_FALSE(decoded.complete);
}

TEST(HttpResponseReader, NoContentHasNoBody) {
  const Decoded decoded = decode("HTTP/1.1 204 No Content\r\nServer: Docker\r\n\r\n", 5);
  EXPECT_EQ(decoded.body, "");
  EXPECT_EQ(decoded.status, 204);
  EXPECT_TRUE(decoded.complete);
}

TEST(HttpResponseReader, RefusesWhatIsNotHttp) {
  HttpResponseReader reader([](std::string_view) {});
  EXPECT_THROW(reader.feed("SSH-2.0-OpenSSH_9.2\r\n\r\n"), Error);
}

TEST(DockerStreamDemuxer, SplitsFramesAcrossPieces) {
  std::string out, err;
  DockerStreamDemuxer demuxer(
      [&](int stream, std::string_view payload) { (stream == 2 ? err : out).append(payload); });
  const std::string frames = std::string("\x01\0\0\0\0\0\0\x06line 1", 14) +
                             std::string("\x02\0\0\0\0\0\0\x04oops", 12) +
                             std::string("\x01\0\0\0\0\0\0\x07line 2\n", 15);
  for (std::size_t i = 0; i < frames.size(); i += 3) demuxer.feed(frames.substr(i, 3));
  EXPECT_EQ(out, "line 1line 2\n");
  EXPECT_EQ(err, "oops");
}

TEST(DockerEngine, SocketFollowsDockerHostAndContexts) {
  test::TempDir dir("mlw-engine");
  ScopedEnv config("DOCKER_CONFIG", dir.path().c_str());
  ScopedEnv context("DOCKER_CONTEXT", nullptr);
  {
    ScopedEnv host("DOCKER_HOST", "unix:///tmp/x/docker.sock");
    EXPECT_EQ(local_engine_socket(), fs::path("/tmp/x/docker.sock"));
  }
  {
    ScopedEnv host("DOCKER_HOST", "tcp://127.0.0.1:2375");
    EXPECT_EQ(local_engine_socket(), std::nullopt);
  }
  ScopedEnv host("DOCKER_HOST", nullptr);
  EXPECT_EQ(local_engine_socket(), fs::path("/var/run/docker.sock"));
  atomic_write_file(dir.path() / "config.json", R"({"currentContext": "rootless"})");
  EXPECT_EQ(local_engine_socket(), std::nullopt);
  atomic_write_file(dir.path() / "config.json", R"({"currentContext": "default"})");
  EXPECT_EQ(local_engine_socket(), fs::path("/var/run/docker.sock"));
  ScopedEnv other("DOCKER_CONTEXT", "remote");
  EXPECT_EQ(local_engine_socket(), std::nullopt);
}

TEST(DockerEngine, AnAbsentSocketIsAClearError) {
  test::TempDir dir("mlw-engine");
  auto engine = unix_socket_engine(dir.path() / "none.sock");
  try {
    engine->request("GET", "/info");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach the Docker engine at unix://"),
              std::string::npos);
  }
}

}  // namespace mlw
