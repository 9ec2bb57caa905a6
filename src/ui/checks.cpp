// The dashboard's checks of what a browser sends: the Host header, an output's path.
#include <arpa/inet.h>

#include "mlw/ui/server.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::ui {

namespace {

bool is_ip_literal(const std::string& host) {
  unsigned char buffer[16];
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  return inet_pton(AF_INET, bare.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, bare.c_str(), buffer) == 1;
}

}  // namespace

bool is_wildcard(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]";
}

bool host_header_allowed(const std::string& header, const std::string& bound_host, int port,
                         const std::string& machine_name) {
  // host[:port]; an IPv6 literal in brackets.
  std::string host = header;
  std::string port_text;
  const auto colon = header.rfind(':');
  if (colon != std::string::npos && header.find(']', colon) == std::string::npos) {
    host = header.substr(0, colon);
    port_text = header.substr(colon + 1);
  }
  if (port_text != std::to_string(port)) return false;
  host = lower_ascii(host);
  const std::string bound = lower_ascii(bound_host);
  if (host == bound || (bound.find(':') != std::string::npos && host == "[" + bound + "]")) {
    return true;
  }
  const bool loopback = bound == "127.0.0.1" || bound == "::1" || bound == "localhost";
  if ((loopback || is_wildcard(bound)) &&
      (host == "localhost" || host == "127.0.0.1" || host == "[::1]")) {
    return true;
  }
  // Bound to every address: any IP literal, or this machine's name, reaches it; other names
  // could be a DNS rebinding of someone else's site.
  return is_wildcard(bound) && (is_ip_literal(host) || host == lower_ascii(machine_name));
}

std::vector<std::string> output_path_components(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return {};
  std::vector<std::string> parts;
  for (const auto& part : split(path, '/')) {
    if (part.empty() || part == "." || part == "..") return {};
    parts.push_back(part);
  }
  return parts;
}

int http_status_of(std::exception_ptr error, std::string& message) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    message = e.what();
    return 400;  // a malformed parameter
  } catch (const NotFoundError& e) {
    message = e.what();
    return 404;  // no such run, output or file
  } catch (const Error& e) {
    message = e.what();
    return 500;  // the history could not be read (damaged, locked, a full disk)
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "internal error";
  }
  return 500;
}

}  // namespace mlw::ui
