#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlw/remote/shell.hpp"
#include "mlw/remote/ssh_config.hpp"
#include "mlw/remote/ssh_endpoint.hpp"
#include "mlw/remote/ssh_keys.hpp"

namespace mlw {

/// What happened to an unknown host key.
enum class HostKeyDecision { Refuse, Accept };

/// How to connect: files, secrets and the questions that may be asked.
struct SshOptions {
  std::filesystem::path known_hosts;  ///< ~/.ssh/known_hosts: read, and where new keys go
  /// Read after known_hosts, never written (/etc/ssh/ssh_known_hosts).
  std::vector<std::filesystem::path> global_known_hosts = {"/etc/ssh/ssh_known_hosts"};
  std::filesystem::path ssh_dir;  ///< ~/.ssh, for the default keys
  bool use_agent = true;
  std::string proxy_command;         ///< see SshEndpoint::proxy_command
  bool accept_new_host_key = false;  ///< --accept-host-key: record an unknown key without asking
  bool refuse_new_host_key = false;  ///< StrictHostKeyChecking yes: never ask about a new key
  /// Asks whether to trust an unknown key (shown its fingerprint); empty: no terminal to ask on.
  std::function<HostKeyDecision(const std::string& question)> ask_host_key;
  /// The stored password, fetched only when every key failed; empty or nullopt: none.
  std::function<std::optional<std::string>()> password;
  /// Asks for a key's passphrase on a terminal; empty: no terminal.
  std::function<std::optional<std::string>(const std::string& prompt)> ask_passphrase;
  std::optional<std::string> key_passphrase;  ///< for the compute file's key
  int connect_timeout_ms = 10000;
  int keepalive_interval_s = 15;
  std::string
      fix_hint;  ///< appended to connection errors, e.g. "run: mlw computetarget doctor -n X"
  /// How login errors name the password (given to attach, or kept in the secret store).
  std::string password_label = "the stored password";
  /// Where the connection waits for the next command once this one is done (kept.hpp);
  /// empty: it is closed.
  std::filesystem::path kept_socket;
  int kept_s = 0;  ///< MLW_SSH_LINGER: how long it waits with no command
};

/// How messages name an endpoint: the address as the user gave it ("gpu-vm:2222"), with the
/// host it stands for when that differs.
std::string endpoint_name(const SshEndpoint& endpoint);

/// A logged-in SSH connection (libssh2) that runs shell scripts; one serves a whole command.
class SshShell : public Shell {
 public:
  /// Resolves, connects (with the timeout), checks the host key against known_hosts (asking or
  /// recording as the options say) and logs in; throws mlw::Error naming the host, the step and
  /// the fix.
  static std::unique_ptr<SshShell> connect(const SshEndpoint& endpoint, const SshOptions& options);
  ~SshShell() override;
  SshShell(const SshShell&) = delete;
  SshShell& operator=(const SshShell&) = delete;

  std::string host() const override;
  ShellResult run(const std::string& script, const ShellStreams& streams = {}) override;
  /// On a channel of its own (ssh_joined.cpp), as `ssh -t`.
  int run_joined(const std::string& script, bool pty) override;
  /// direct-tcpip channels (as ssh -L), a command's on a channel of its own (ssh_forward.cpp).
  void forward(const std::vector<ForwardPort>& ports,
               const std::function<bool()>& keep_going) override;
  /// How the login succeeded ("key ~/.ssh/id_ed25519", "ssh-agent", "password").
  std::string auth_method() const override;
  /// The host key's fingerprint.
  std::string fingerprint() const override;
  void abandon() override;

 private:
  struct Impl;
  explicit SshShell(std::unique_ptr<Impl> impl);
  /// Logs (-vv) what the connection cost: commands, their time, waits for the server.
  void account(const char* how) const;
  /// Leaves the connection behind in a process of its own that serves the next commands of
  /// this user (options.kept_socket); false when it cannot (then it is closed).
  bool keep();
  std::unique_ptr<Impl> m_impl;
};

}  // namespace mlw
