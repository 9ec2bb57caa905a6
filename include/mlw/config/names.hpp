#pragma once

#include <string>
#include <string_view>

namespace mlw {

/// Throws mlw::UsageError unless `name` matches [A-Za-z0-9_-]{1,64}; `what` names the thing.
void validate_name(const std::string& name, const std::string& what);

/// True when `name` can name an environment variable everywhere a run goes (the shell's rule,
/// which `-e` and `docker run -e` follow): an ASCII letter or _, then letters, digits and _.
bool is_environment_name(std::string_view name);

/// True when OpenSSH's ssh accepts `host` as a host name (CVE-2023-51385: no shell syntax,
/// spaces, control characters or commas, no '-' first), as `ssh -G HOST` tells.
bool is_ssh_host_name(std::string_view host);

/// True when OpenSSH's ssh accepts `user` as the remote user name, as `ssh -G -l USER` tells.
bool is_ssh_user_name(std::string_view user);

/// Throws mlw::UsageError (its message begins with `where`) when `user` is not empty and
/// OpenSSH would refuse it as a remote user name.
void check_ssh_user(const std::string& user, const std::string& where = "");

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
