#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "mlw/config/compute_file.hpp"
#include "mlw/context.hpp"
#include "mlw/remote/ssh.hpp"

namespace mlw {

/// How one command logs in to a target (attach and doctor set more than submit does).
struct ConnectRequest {
  bool accept_new_host_key = false;     ///< --accept-host-key
  std::optional<std::string> password;  ///< given to this command (attach); else the stored one
  bool only_key_file = false;           ///< log in with the compute file's key alone (-k check)
  bool attaching = false;  ///< attach: the target's files are not written yet (no doctor hint)
};

/// The endpoint of a target's compute file, with ~/.ssh/config applied.
SshEndpoint target_endpoint(const ComputeConfig& compute);

/// Connects and logs in to a target's machine (spec §7): host key checked against
/// ~/.ssh/known_hosts (asked on a terminal), then the compute file's key, ssh-agent, the default
/// keys, the stored password. The connect timeout is MLW_SSH_CONNECT_TIMEOUT seconds (10).
std::unique_ptr<SshShell> connect_target(Context& ctx, const std::string& target_name,
                                         const ComputeConfig& compute,
                                         const ConnectRequest& request = {});

}  // namespace mlw
