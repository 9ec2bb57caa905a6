#include "mlw/remote/connect.hpp"

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "mlw/config/secret_store.hpp"
#include "mlw/remote/ssh.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/strings.hpp"
#include "mlw/util/terminal.hpp"

namespace mlw {

SshEndpoint target_endpoint(const ComputeConfig& compute) {
  const auto home = home_directory();
  const std::string config = read_file_if_exists(home / ".ssh" / "config").value_or("");
  const passwd* me = ::getpwuid(::getuid());
  const SshConfigContext context{home / ".ssh", home, me && me->pw_name ? me->pw_name : ""};
  return resolve_endpoint(compute.address, compute.username, compute.private_key_file, config, home,
                          &context);
}

namespace {

/// What ~/.ssh/config says about host keys, keys and proxies, applied to the options; a key
/// mlw does not use is named once at -v.
void apply_config(const SshEndpoint& endpoint, const ConnectRequest& request, SshOptions& options) {
  for (const auto& key : endpoint.unsupported) {
    spdlog::debug("~/.ssh/{}: not used by mlw", key);
  }
  if (!endpoint.known_hosts_files.empty()) {
    options.known_hosts = endpoint.known_hosts_files.front();
    options.global_known_hosts.insert(options.global_known_hosts.begin(),
                                      endpoint.known_hosts_files.begin() + 1,
                                      endpoint.known_hosts_files.end());
  }
  const std::string& strict = endpoint.strict_host_key_checking;
  if (strict == "accept-new" || strict == "no") options.accept_new_host_key = true;
  if (strict == "yes" && !request.accept_new_host_key) options.refuse_new_host_key = true;
  if (endpoint.identities_only && !endpoint.identity_files.empty()) {
    options.use_agent = false;
    options.ssh_dir = "/nonexistent";
  }
  options.proxy_command = endpoint.proxy_command;
}

}  // namespace

std::unique_ptr<Shell> SystemConnector::connect(Context& ctx, const std::string& target_name,
                                                const ComputeConfig& compute,
                                                const ConnectRequest& request) {
  SshEndpoint endpoint = target_endpoint(compute);
  const auto home = home_directory();
  SshOptions options;
  options.known_hosts = home / ".ssh" / "known_hosts";
  options.ssh_dir = request.only_key_file ? std::filesystem::path("/nonexistent") : home / ".ssh";
  options.use_agent = !request.only_key_file;
  options.accept_new_host_key = request.accept_new_host_key;
  // doctor reads the target's files, which a failing attach has not written.
  if (!request.attaching)
    options.fix_hint = "check with: mlw computetarget doctor -n " + target_name;
  if (request.password) options.password_label = "the password given";
  options.connect_timeout_ms = setting("MLW_SSH_CONNECT_TIMEOUT") * 1000;
  apply_config(endpoint, request, options);
  if (request.only_key_file)
    endpoint.identity_files.resize(std::min<std::size_t>(1, endpoint.identity_files.size()));
  const bool terminal = ctx.stdin_is_terminal && ctx.stderr_is_terminal;
  if (terminal) {
    options.ask_host_key = [&ctx](const std::string& question) {
      const std::string answer = lower_ascii(trim(read_terminal_line(*ctx.err, question, true)));
      return answer == "y" || answer == "yes" ? HostKeyDecision::Accept : HostKeyDecision::Refuse;
    };
    options.ask_passphrase = [&ctx](const std::string& prompt) -> std::optional<std::string> {
      std::string entered = read_terminal_line(*ctx.err, prompt, false);
      if (entered.empty()) return std::nullopt;
      return entered;
    };
  }
  if (!compute.private_key_passphrase.empty()) {
    options.key_passphrase = SecretStore(ctx.config_dir).get(compute.private_key_passphrase);
  }
  if (!request.only_key_file) {
    options.password = [&ctx, &compute, &request]() -> std::optional<std::string> {
      if (request.password) return request.password;
      if (compute.password.empty()) return std::nullopt;
      return SecretStore(ctx.config_dir).get(compute.password);
    };
  }
  return SshShell::connect(endpoint, options);
}

std::unique_ptr<Shell> SystemConnector::local_shell() {
  return std::make_unique<LocalShell>();
}

std::unique_ptr<DockerEngine> SystemConnector::local_engine() {
  const auto socket = local_engine_socket();
  return socket ? unix_socket_engine(*socket) : nullptr;
}

}  // namespace mlw
