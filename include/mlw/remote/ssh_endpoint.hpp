#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "mlw/remote/ssh_config.hpp"

namespace mlw {

/// Where to connect and as whom, after `~/.ssh/config` aliases are applied.
struct SshEndpoint {
  std::string alias;  ///< the address as written in the compute file (host, host:port, alias)
  std::string host;   ///< the host name or IP to connect to (HostName)
  int port = 22;
  std::string user;
  std::vector<std::filesystem::path> identity_files;  ///< privateKeyFile, then IdentityFile
  /// True when identity_files[0] is the compute file's privateKeyFile (which must exist; a
  /// missing IdentityFile is skipped, as OpenSSH does).
  bool private_key_file_given = false;
  /// A command whose stdin/stdout carry the connection (ProxyCommand, or ProxyJump as
  /// `ssh -W`); empty: a TCP connection.
  std::string proxy_command;
  std::vector<std::filesystem::path> known_hosts_files;  ///< UserKnownHostsFile (empty: default)
  std::string strict_host_key_checking;                  ///< "", yes, no, accept-new, ask
  bool identities_only = false;                          ///< IdentitiesOnly yes
  std::vector<std::string> unsupported;                  ///< config keys mlw does not use
};

/// Resolves a compute file's address/username/privateKeyFile into an endpoint, with the
/// aliases of `ssh_config` (the text of ~/.ssh/config, may be empty); `home` expands `~`.
SshEndpoint resolve_endpoint(const std::string& address, const std::string& username,
                             const std::string& private_key_file, const std::string& ssh_config,
                             const std::filesystem::path& home,
                             const SshConfigContext* context = nullptr);

/// `user@host:port` (`user@[v6]:port`): what a stored password is bound to.
std::string endpoint_identity(const SshEndpoint& endpoint);

/// ProxyJump's hops ([user@]host[:port], comma-separated) as the OpenSSH command that carries
/// the connection to `host`:`port` (`ssh -W`, which is how OpenSSH itself jumps).
std::string proxy_jump_command(const std::string& jump, const std::string& host, int port,
                               const std::filesystem::path& config = {});

}  // namespace mlw
