#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "mlw/config/compute_file.hpp"
#include "mlw/context.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/remote/ssh_endpoint.hpp"

namespace mlw {

/// How one command logs in to a target (attach and doctor set more than submit does).
struct ConnectRequest {
  bool accept_new_host_key = false;     ///< --accept-host-key
  std::optional<std::string> password;  ///< given to this command (attach); else the stored one
  bool only_key_file = false;           ///< log in with the compute file's key alone (-k check)
  bool attaching = false;  ///< attach: the target's files are not written yet (no doctor hint)
  /// Whether a kept connection may serve this command, and this one be kept (MLW_SSH_LINGER);
  /// attach and doctor log in themselves, to check the login.
  bool reuse = true;
};

/// The endpoint of a target's compute file, with ~/.ssh/config applied.
SshEndpoint target_endpoint(const ComputeConfig& compute);

/// The one door to other machines, held by Context (unit tests give a fake): SSH logins to
/// targets, a shell on this machine, and this machine's Docker engine.
class Connector {
 public:
  virtual ~Connector() = default;
  /// Connects and logs in to a target's machine (spec §7): host key checked against
  /// ~/.ssh/known_hosts (asked on a terminal), then the compute file's key, ssh-agent, the
  /// default keys, the stored password. The connect timeout is MLW_SSH_CONNECT_TIMEOUT seconds.
  virtual std::unique_ptr<Shell> connect(Context& ctx, const std::string& target_name,
                                         const ComputeConfig& compute,
                                         const ConnectRequest& request = {}) = 0;
  /// A shell on this machine (/bin/sh).
  virtual std::unique_ptr<Shell> local_shell() = 0;
  /// This machine's Docker engine over its Unix socket; nullptr when there is no socket.
  virtual std::unique_ptr<DockerEngine> local_engine() = 0;
};

/// The real Connector: libssh2 with ~/.ssh/config and the secret store, /bin/sh, the socket of
/// DOCKER_HOST or /var/run/docker.sock.
class SystemConnector : public Connector {
 public:
  std::unique_ptr<Shell> connect(Context& ctx, const std::string& target_name,
                                 const ComputeConfig& compute,
                                 const ConnectRequest& request = {}) override;
  std::unique_ptr<Shell> local_shell() override;
  std::unique_ptr<DockerEngine> local_engine() override;
};

}  // namespace mlw
