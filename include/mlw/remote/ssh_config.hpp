#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlw {

/// What `~/.ssh/config` says for one host, as OpenSSH resolves it (first value wins;
/// IdentityFile accumulates). Values are as written (`~` and %-tokens left for the caller),
/// except HostName's %h, which is the alias.
struct SshConfigEntry {
  std::optional<std::string> host_name;
  std::optional<int> port;
  std::optional<std::string> user;
  std::vector<std::string> identity_files;
  std::optional<std::string> proxy_command;  ///< "none" turns one set earlier off
  std::optional<std::string> proxy_jump;     ///< [user@]host[:port][,…]; "none" as above
  std::vector<std::string> user_known_hosts_files;
  std::optional<std::string> strict_host_key_checking;  ///< yes, no, accept-new, ask
  std::optional<bool> identities_only;
  /// Keys in a block that applies which mlw does not use: "FILE:LINE: Key" (named at -v).
  std::vector<std::string> unsupported;
};

/// Where Include looks and who the user is (Match user, %u).
struct SshConfigContext {
  std::filesystem::path ssh_dir;  ///< ~/.ssh: relative Include paths start here
  std::filesystem::path home;     ///< for ~ in Include
  std::string local_user;         ///< Match localuser; the default remote user
};

/// Resolves `alias` in the config `text` (from `file`): Host blocks (patterns with * ? and !),
/// Match blocks (all, host, originalhost, user, localuser; exec and the rest are named as
/// unsupported and do not match), Include (globs, nested at most 16 deep).
SshConfigEntry read_ssh_config(const std::string& text, const std::string& alias,
                               const SshConfigContext& context, const std::string& file = "config");

/// read_ssh_config without Include or Match user (for tests of plain Host blocks).
SshConfigEntry read_ssh_config(const std::string& text, const std::string& alias);

}  // namespace mlw
