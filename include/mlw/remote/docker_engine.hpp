#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mlw {

/// A whole HTTP response from the Docker Engine API.
struct EngineResponse {
  int status = 0;    ///< HTTP status (200, 201, 204, 304, 404, …)
  std::string body;  ///< the decoded body (chunked transfer undone)
};

/// The Docker Engine API, reached without the docker CLI (one process start less per call).
class DockerEngine {
 public:
  virtual ~DockerEngine() = default;
  /// Where the engine listens, for messages.
  virtual std::string where() const = 0;
  /// Sends one request (`body` as JSON when not empty) and returns the whole response; throws
  /// mlw::Error when the engine cannot be reached.
  virtual EngineResponse request(const std::string& method, const std::string& path,
                                 const std::string& body = "") = 0;
  /// Sends one request and streams the response body to `on_body` as it arrives (only for a
  /// 2xx answer), asking `on_idle` every 100 ms (it may send other requests); returns the HTTP
  /// status.
  virtual int stream(const std::string& method, const std::string& path,
                     const std::function<void(std::string_view)>& on_body,
                     const std::function<void()>& on_idle) = 0;
};

/// The engine the docker CLI on this machine talks to, when that is a unix socket mlw can use
/// directly: DOCKER_HOST=unix://PATH, or /var/run/docker.sock when neither DOCKER_HOST nor a
/// docker context (DOCKER_CONTEXT, ~/.docker/config.json's currentContext) says otherwise.
/// Empty where the CLI must be used.
std::optional<std::filesystem::path> local_engine_socket();

/// An engine on a unix socket; one connection per request.
std::unique_ptr<DockerEngine> unix_socket_engine(const std::filesystem::path& socket);

/// Reads an HTTP/1.1 response fed in pieces: status line, headers, then the body, undoing
/// chunked transfer encoding; the body goes to `on_body` as it is decoded.
class HttpResponseReader {
 public:
  /// Body bytes go to `on_body`.
  explicit HttpResponseReader(std::function<void(std::string_view)> on_body);
  /// Feeds the next piece of the response.
  void feed(std::string_view data);
  /// The status, once the status line has arrived (0 before).
  int status() const { return m_status; }
  /// True when the whole body has arrived (by length or final chunk).
  bool complete() const { return m_complete; }
  /// True when the body runs until the connection closes (no length, not chunked).
  bool until_close() const { return m_until_close; }

 private:
  void feed_body(std::string_view data);
  std::function<void(std::string_view)> m_on_body;
  std::string m_head;
  bool m_in_body = false;
  bool m_chunked = false;
  bool m_until_close = false;
  bool m_complete = false;
  int m_status = 0;
  std::uint64_t m_left = 0;  ///< bytes left in the body (by length) or in the current chunk
  std::string m_chunk_line;  ///< a chunk-size line still arriving
  int m_chunk_state = 0;     ///< 0 size line, 1 data, 2 CRLF after data, 3 trailers
};

/// Splits Docker's multiplexed stdout/stderr stream (8-byte frame headers) into payloads.
class DockerStreamDemuxer {
 public:
  /// Payloads go to `on_payload` (stream 1 stdout, 2 stderr).
  explicit DockerStreamDemuxer(std::function<void(int stream, std::string_view)> on_payload);
  /// Feeds the next piece of the stream.
  void feed(std::string_view data);

 private:
  std::function<void(int, std::string_view)> m_on_payload;
  std::string m_header;
  int m_stream = 0;
  std::uint32_t m_left = 0;
};

}  // namespace mlw
