#pragma once

#include <string>
#include <string_view>

namespace mlw {

/// Throws mlw::UsageError unless `name` matches [A-Za-z0-9_-]{1,64}; `what` names the thing.
void validate_name(const std::string& name, const std::string& what);

/// True when `name` can name an environment variable everywhere a run goes (the shell's rule,
/// which `-e` and `docker run -e` follow): an ASCII letter or _, then letters, digits and _.
bool is_environment_name(std::string_view name);

/// An SSH endpoint: host (or ~/.ssh/config alias) and port.
struct Address {
  std::string host;
  int port = 22;
  bool port_given = false;  ///< true when the text named a port
};

/// Parses `host`, `host:port`, `[v6addr]:port`, `[v6addr]` or a bare IPv6 address;
/// throws mlw::UsageError with the reason when it is malformed.
Address parse_address(const std::string& text);

}  // namespace mlw
