#include "mlw/remote/connect.hpp"

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "conversation.hpp"
#include "kept.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/remote/frame.hpp"
#include "mlw/remote/known_hosts.hpp"
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

/// A stored password goes only to the endpoint it was given for: for another one (a changed
/// address, port or user in the compute file, or ~/.ssh/config), the user is asked at a
/// terminal; without one the login is refused, naming both.
void confirm_other_endpoint(Context& ctx, bool terminal, const StoredSecret& stored,
                            const std::string& now, const std::string& target) {
  const std::string was = stored.endpoint.empty()
                              ? "an endpoint mlw did not record (stored by an older mlw)"
                              : stored.endpoint;
  if (terminal) {
    const std::string answer = lower_ascii(trim(read_terminal_line(
        *ctx.err,
        fmt::format("The password stored for target \"{}\" was given for {}; send it to {}? "
                    "(yes/no) ",
                    target, was, now),
        true)));
    if (answer == "y" || answer == "yes") return;
  }
  throw Error(fmt::format(
      "the password stored for target \"{}\" was given for {}, not {}: it is not sent there; "
      "if {} is right, attach again: mlw computetarget attach … -n {} --force --password-stdin",
      target, was, now, now, target));
}

/// `streams` whose input begins with `taken` (what a stale shell was sent), then goes on.
ShellStreams replaying(const ShellStreams& streams, std::string taken) {
  if (taken.empty()) return streams;
  ShellStreams again = streams;
  auto state = std::make_shared<std::pair<std::string, std::size_t>>(std::move(taken), 0);
  again.read_input = [state, rest = streams.read_input](char* buffer, std::size_t size) {
    auto& [text, at] = *state;
    return at == text.size() ? rest(buffer, size) : read_held(text, at, buffer, size);
  };
  if (streams.input_ready) {
    again.input_ready = [state, ready = streams.input_ready] {
      return state->second < state->first.size() || ready();
    };
  }
  return again;
}

/// A shell over a kept connection (kept.hpp); when that connection is gone before a
/// command, the command logs in itself (`direct`), so no command fails for it.
class KeptShell : public Shell {
 public:
  KeptShell(std::filesystem::path socket, std::string host, std::string where, int timeout_ms,
            std::function<std::unique_ptr<Shell>()> direct)
      : m_socket(std::move(socket)),
        m_host(std::move(host)),
        m_where(std::move(where)),
        m_timeout_ms(timeout_ms),
        m_direct(std::move(direct)) {}

  /// Opens a conversation (`fresh`: its shell started now, not ahead); false when the kept
  /// connection does not answer.
  bool open(bool fresh = false) {
    const auto started = std::chrono::steady_clock::now();
    std::string marker;
    bool ahead = false;
    auto pipe = kept_open(m_socket, m_timeout_ms, fresh, marker, ahead);
    if (!pipe) return false;
    m_conversation = std::make_unique<Conversation>(std::move(pipe), m_where, marker, ahead);
    spdlog::trace("ssh {}: through the kept connection {}, {} in {} ms", m_where, m_socket.string(),
                  ahead ? "its shell started ahead" : "channel open",
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count());
    return true;
  }

  std::string host() const override { return m_fallback ? m_fallback->host() : m_host; }
  std::string auth_method() const override { return "the kept connection"; }
  bool kept() const override { return !m_fallback; }

  ShellResult run(const std::string& script, const ShellStreams& streams = {}) override {
    if (!m_fallback && (!m_conversation || !m_conversation->usable()) && !open()) {
      m_fallback = m_direct();
    }
    if (m_fallback) return m_fallback->run(script, streams);
    const auto started = std::chrono::steady_clock::now();
    const int waits = m_conversation->waits();
    bool stopped = false;
    ShellResult result;
    try {
      result = m_conversation->step(script, streams, stopped);
      if (m_conversation->stale()) {
        // Nothing ran and no input was taken: the step goes to a shell started now.
        spdlog::trace(
            "ssh {}: the shell started ahead ended before the step (a login file "
            "changed since, exit {}); asking for one started now",
            m_where, result.exit_code);
        const ShellStreams again = replaying(streams, std::string(m_conversation->taken_input()));
        if (!open(true)) m_fallback = m_direct();
        return m_fallback ? m_fallback->run(script, again) : run(script, again);
      }
    } catch (const Error& e) {
      m_conversation.reset();
      throw Error(starts_with(e.what(), "ssh ") ? e.what() : "ssh " + m_where + ": " + e.what());
    }
    if (stopped) m_conversation.reset();
    spdlog::trace("ssh {}: exit {} after {} ms, {} waits for the server: {}", m_where,
                  result.exit_code,
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count(),
                  (m_conversation ? m_conversation->waits() : waits) - waits,
                  script.substr(0, std::min<std::size_t>(script.find('\n'), 60)));
    return result;
  }

  void abandon() override {
    if (m_fallback) m_fallback->abandon();
  }

 private:
  std::filesystem::path m_socket;
  std::string m_host;
  std::string m_where;  // host:port, as SshShell's messages name it
  int m_timeout_ms;
  std::function<std::unique_ptr<Shell>()> m_direct;
  std::unique_ptr<Conversation> m_conversation;
  std::unique_ptr<Shell> m_fallback;
};

/// What makes two logins the same connection.
std::string connection_key(const SshEndpoint& endpoint, const SshOptions& options) {
  std::string key = fmt::format("mlw-2|{}|{}|{}|{}|{}", endpoint.user, endpoint.host, endpoint.port,
                                options.proxy_command, options.known_hosts.string());
  for (const auto& file : endpoint.identity_files) key += "|" + file.string();
  return key;
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
    // A copy of the given password: a kept connection's fallback logs in after this call.
    options.password = [&ctx, &compute, given = request.password, terminal,
                        bound = endpoint_identity(endpoint),
                        target_name]() -> std::optional<std::string> {
      if (given) return given;
      if (compute.password.empty()) return std::nullopt;
      const StoredSecret stored = SecretStore(ctx.config_dir).lookup(compute.password);
      if (stored.endpoint != bound)
        confirm_other_endpoint(ctx, terminal, stored, bound, target_name);
      return stored.value;
    };
  }
  const bool reuse = request.reuse && !request.attaching && !request.only_key_file &&
                     !request.password && !request.accept_new_host_key &&
                     setting("MLW_SSH_KEPT") > 0;
  std::optional<std::filesystem::path> socket;
  if (reuse)
    socket = kept_socket(ctx.config_dir / "connections", connection_key(endpoint, options));
  if (!socket) return SshShell::connect(endpoint, options);
  options.kept_socket = *socket;
  options.kept_s = static_cast<int>(setting("MLW_SSH_KEPT"));
  auto direct = [endpoint, options]() -> std::unique_ptr<Shell> {
    return SshShell::connect(endpoint, options);
  };
  const std::string host = endpoint.alias.empty() ? endpoint.host : endpoint.alias;
  auto kept = std::make_unique<KeptShell>(*socket, host, endpoint_name(endpoint),
                                          options.connect_timeout_ms, direct);
  if (kept->open()) return kept;
  return direct();
}

std::unique_ptr<Shell> SystemConnector::local_shell() {
  return std::make_unique<LocalShell>();
}

std::unique_ptr<DockerEngine> SystemConnector::local_engine() {
  const auto socket = local_engine_socket();
  return socket ? unix_socket_engine(*socket) : nullptr;
}

}  // namespace mlw
