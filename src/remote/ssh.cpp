#include "mlw/remote/ssh.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libssh2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "kept.hpp"
#include "mlw/config/names.hpp"
#include "mlw/remote/frame.hpp"
#include "mlw/remote/known_hosts.hpp"
#include "mlw/remote/ssh_keys.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/net.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "ssh_channel.hpp"

namespace mlw {

namespace {

/// Frees a libssh2 session after a bounded goodbye: disconnect before free, always.
struct SessionFree {
  void operator()(LIBSSH2_SESSION* session) const {
    libssh2_session_set_blocking(session, 1);
    libssh2_session_set_timeout(session, 2000);
    libssh2_session_disconnect(session, "mlw done");
    libssh2_session_free(session);
  }
};
using SessionPtr = std::unique_ptr<LIBSSH2_SESSION, SessionFree>;

/// Frees a session without a goodbye: one whose handshake never finished, or one whose
/// connection a forked child carries on.
void free_quietly(SessionPtr& session) {
  if (session) libssh2_session_free(session.release());
}

}  // namespace

struct SshShell::Impl {
  SshEndpoint endpoint;
  SshOptions options;
  int socket = -1;
  SessionPtr session;
  std::string auth_method;
  std::string fingerprint;
  std::unique_ptr<Conversation> conversation;  // the shell that runs every command
  pid_t proxy_pid = -1;                        // the ProxyCommand, when there is one
  std::optional<KnownHosts> known;             // see known_hosts()
  // What the connection cost, for -vv: waits for the server (round trips, on a slow link),
  // commands (steps of a conversation), channels and the time they took.
  mutable int waits = 0;
  int commands = 0;
  int channels = 0;
  std::int64_t command_ms = 0;

  ~Impl() {
    if (conversation) conversation->forget();  // freed with the session
    conversation.reset();
    session.reset();  // its goodbye goes over the socket, closed next
    if (socket >= 0) ::close(socket);
    if (proxy_pid > 0) {
      ::kill(proxy_pid, SIGTERM);
      ::waitpid(proxy_pid, nullptr, 0);
    }
  }

  std::string where() const { return endpoint_name(endpoint); }

  [[noreturn]] void fail(const std::string& step, const std::string& what,
                         const std::string& fix) const {
    std::string message = fmt::format("ssh {}: {}: {}", where(), step, what);
    if (!fix.empty()) message += "; " + fix;
    if (!options.fix_hint.empty()) message += " (" + options.fix_hint + ")";
    throw Error(message);
  }

  /// The session as its channels see it (ssh_channel.hpp): one retry, wait and error text.
  SshLink link() const {
    SshLink view;
    view.session = session.get();
    view.socket = socket;
    view.timeout_ms = options.connect_timeout_ms;
    view.waits = &waits;
    view.fail = [this](const std::string& step, const std::string& what) { fail(step, what, ""); };
    return view;
  }

  std::string last_error() const { return link().last_error(); }

  /// ProxyCommand: the command runs with one end of a socket pair as its stdin and stdout;
  /// the session talks over the other end (as OpenSSH does).
  void open_proxy() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      fail("connect", "cannot make a socket pair: " + errno_text(errno), "");
    }
    pid_t pid = -1;
    try {
      pid = spawn({{"/bin/sh", "-c", options.proxy_command}, {}, {}},
                  {.stdin_fd = pair[1], .stdout_fd = pair[1], .stderr_fd = 2});
    } catch (const Error& e) {
      ::close(pair[0]);
      ::close(pair[1]);
      fail("connect", "cannot start the ProxyCommand: " + std::string(e.what()), "");
    }
    ::close(pair[1]);
    ::fcntl(pair[0], F_SETFL, ::fcntl(pair[0], F_GETFL) | O_NONBLOCK);
    proxy_pid = pid;
    socket = pair[0];
    spdlog::debug("ssh {}: through the proxy command: {}", where(), options.proxy_command);
  }

  void open_socket() {
    if (!options.proxy_command.empty()) return open_proxy();
    const TcpConnection connection =
        tcp_connect(endpoint.host, endpoint.port, options.connect_timeout_ms);
    if (!connection.resolve_error.empty()) {
      fail("resolve", connection.resolve_error,
           "check the address in the compute file or your ~/.ssh/config");
    }
    if (connection.fd >= 0) {
      const int one = 1;
      ::setsockopt(connection.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(connection.fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
      socket = connection.fd;
      return;
    }
    const std::string last =
        !connection.any_address ? "no address"
        : connection.connect_errno == ETIMEDOUT
            ? fmt::format("no answer within {} s", options.connect_timeout_ms / 1000)
            : errno_text(connection.connect_errno);
    fail("connect", last, fmt::format("check that sshd listens on port {} there", endpoint.port));
  }

  /// Calls `call` until it no longer says EAGAIN, bounded by `timeout_ms`.
  int retry(const std::function<int()>& call, int timeout_ms) const {
    return link().retry(call, timeout_ms);
  }

  /// Connects and shakes hands. A server that closes the connection before its banner is
  /// throttling new connections (sshd's MaxStartups, e.g. many submits at once): tried again,
  /// bounded, after a growing random pause.
  void connect_and_handshake() {
    std::minstd_rand jitter(
        static_cast<unsigned>(::getpid()) ^
        static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    for (int attempt = 0;; ++attempt) {
      open_socket();
      session.reset(libssh2_session_init());
      if (!session) fail("connect", "cannot create an SSH session", "");
      libssh2_session_set_blocking(session.get(), 0);
      prefer_known_key_types();
      const int rc = retry([&] { return libssh2_session_handshake(session.get(), socket); },
                           options.connect_timeout_ms);
      if (rc == 0) break;
      const bool throttled =
          rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_RECV;
      if (!throttled || attempt >= 6) {
        // A server that never sends its banner leaves libssh2 with no message of its own.
        fail("handshake",
             rc == LIBSSH2_ERROR_TIMEOUT
                 ? fmt::format("no SSH answer within {} s (MLW_SSH_CONNECT_TIMEOUT)",
                               options.connect_timeout_ms / 1000)
                 : last_error(),
             throttled ? "the server keeps closing new connections (sshd MaxStartups?)"
                       : "is it an SSH server on that port?");
      }
      spdlog::debug("ssh {}: closed before the banner; trying again", where());
      free_quietly(session);
      ::close(socket);
      socket = -1;
      const int pause_ms = (100 << std::min(attempt, 4)) + static_cast<int>(jitter() % 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    libssh2_keepalive_config(session.get(), 1, static_cast<unsigned>(options.keepalive_interval_s));
  }

  /// known_hosts, the user's then the global ones, read once per connection (the handshake's
  /// preference and the check both use it); bad lines are named at -v.
  const KnownHosts& known_hosts() {
    if (!known) {
      std::vector<std::filesystem::path> files = {options.known_hosts};
      files.insert(files.end(), options.global_known_hosts.begin(),
                   options.global_known_hosts.end());
      known = KnownHosts::read(files);
      for (const auto& skipped : known->skipped) spdlog::debug("{}", skipped);
    }
    return *known;
  }

  /// The host key types to offer first in the handshake: those known_hosts has for the host.
  void prefer_known_key_types() {
    // OpenSSH's order after the types already known for the host.
    const auto types = known_key_types(known_hosts(), endpoint.host, endpoint.port);
    std::vector<std::string> order;
    for (const auto& type : types) {
      if (type == "ssh-rsa") {
        order.insert(order.end(), {"rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"});
      } else {
        order.push_back(type);
      }
    }
    for (const char* type : {"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                             "ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"}) {
      if (std::find(order.begin(), order.end(), type) == order.end()) order.push_back(type);
    }
    // Only names this libssh2 supports: stripping others, libssh2 1.10 copies overlapping
    // memory (ASan: memcpy-param-overlap).
    const char** supported = nullptr;
    const int count =
        libssh2_session_supported_algs(session.get(), LIBSSH2_METHOD_HOSTKEY, &supported);
    std::set<std::string> known_to_libssh2;
    for (int i = 0; i < count; ++i) known_to_libssh2.insert(supported[i]);
    if (supported) libssh2_free(session.get(), supported);
    std::erase_if(order, [&](const std::string& type) { return !known_to_libssh2.count(type); });
    if (order.empty() || libssh2_session_method_pref(session.get(), LIBSSH2_METHOD_HOSTKEY,
                                                     join(order, ",").c_str()) != 0) {
      spdlog::debug("ssh {}: cannot prefer the known host key types {}", where(), join(types, ","));
    }
  }

  void check_host_key() {
    std::size_t length = 0;
    int type = 0;
    const char* raw = libssh2_session_hostkey(session.get(), &length, &type);
    if (!raw) fail("host key", "the server sent no host key", "");
    const std::string key(raw, length);
    fingerprint = ssh_fingerprint(key);
    const HostKeyCheck check = check_known_host(known_hosts(), endpoint.host, endpoint.port, key);
    if (check.verdict == HostKeyVerdict::Known) return;
    if (check.verdict == HostKeyVerdict::Revoked) {
      fail("host key",
           fmt::format("the host key {} is marked @revoked at {}:{}", fingerprint,
                       check.entry->file, check.entry->line),
           "it must not be trusted; ask the machine's owner for its new key");
    }
    if (check.verdict == HostKeyVerdict::Changed) {
      fail("host key",
           fmt::format("the host key CHANGED (now {}); this may be an attack, or the machine was "
                       "reinstalled",
                       fingerprint),
           fmt::format("if you trust the change, remove line {} of {} (ssh-keygen -R {} -f {}) "
                       "and connect again",
                       check.entry->line, check.entry->file,
                       known_host_name(endpoint.host, endpoint.port), check.entry->file));
    }
    bool accept = options.accept_new_host_key;
    if (!accept && options.ask_host_key && !options.refuse_new_host_key) {
      accept = options.ask_host_key(fmt::format(
                   "The authenticity of host {} can't be established.\nIts {} key fingerprint "
                   "is {}.\nTrust it and record it in {}? [y/N] ",
                   where(), type == LIBSSH2_HOSTKEY_TYPE_ED25519 ? "ED25519" : "host", fingerprint,
                   options.known_hosts.string())) == HostKeyDecision::Accept;
    }
    if (!accept) {
      fail("host key", fmt::format("unknown host key {}", fingerprint),
           "check the fingerprint with the machine's owner, then attach again with "
           "--accept-host-key (or connect once with ssh)");
    }
    append_known_host(options.known_hosts, known_hosts_entry(key));
    spdlog::info("recorded the host key of {} ({}) in {}", where(), fingerprint,
                 options.known_hosts.string());
  }

  /// The known_hosts line for this host and key, as OpenSSH writes it (not hashed).
  std::string known_hosts_entry(const std::string& key) const {
    return fmt::format(
        "{} {} {}\n", known_host_name(endpoint.host, endpoint.port), key_type_of(key),
        encode_base64(reinterpret_cast<const unsigned char*>(key.data()), key.size(), true));
  }

  bool try_key(const std::filesystem::path& file, const std::optional<std::string>& passphrase,
               std::vector<std::string>& refused_rsa, bool ask) {
    const int rc = retry(
        [&] {
          return libssh2_userauth_publickey_fromfile_ex(
              session.get(), endpoint.user.c_str(), static_cast<unsigned>(endpoint.user.size()),
              nullptr, file.c_str(), passphrase ? passphrase->c_str() : nullptr);
        },
        options.connect_timeout_ms);
    if (rc == 0) {
      auth_method = "key " + file.string();
      return true;
    }
    spdlog::debug("ssh {}: key {} not accepted: {}", where(), file.string(), last_error());
    if (rc == LIBSSH2_ERROR_FILE && !passphrase && ask && options.ask_passphrase) {
      if (auto entered = options.ask_passphrase("Passphrase for " + file.string() + ": ")) {
        return try_key(file, entered, refused_rsa, false);
      }
    }
    if (rc == LIBSSH2_ERROR_FILE && !ask) {
      fail("auth", "the passphrase of " + file.string() + " is wrong", "");
    }
    if (is_rsa_key_file(file)) refused_rsa.push_back(file.string());
    return false;
  }

  bool try_agent() {
    LIBSSH2_AGENT* agent = libssh2_agent_init(session.get());
    if (!agent) return false;
    bool ok = false;
    libssh2_session_set_blocking(session.get(), 1);
    libssh2_session_set_timeout(session.get(), options.connect_timeout_ms);
    if (::getenv("SSH_AUTH_SOCK") && libssh2_agent_connect(agent) == 0 &&
        libssh2_agent_list_identities(agent) == 0) {
      libssh2_agent_publickey* identity = nullptr;
      libssh2_agent_publickey* previous = nullptr;
      while (libssh2_agent_get_identity(agent, &identity, previous) == 0) {
        if (libssh2_agent_userauth(agent, endpoint.user.c_str(), identity) == 0) {
          auth_method = "ssh-agent";
          ok = true;
          break;
        }
        previous = identity;
      }
      libssh2_agent_disconnect(agent);
    }
    libssh2_agent_free(agent);
    libssh2_session_set_timeout(session.get(), 0);
    libssh2_session_set_blocking(session.get(), 0);
    return ok;
  }

  void login() {
    if (endpoint.user.empty()) {
      fail("auth", "no user name", "give -u USER when attaching, or User in ~/.ssh/config");
    }
    const char* methods = nullptr;
    retry(
        [&] {
          methods = libssh2_userauth_list(session.get(), endpoint.user.c_str(),
                                          static_cast<unsigned>(endpoint.user.size()));
          return methods || libssh2_userauth_authenticated(session.get())
                     ? 0
                     : libssh2_session_last_errno(session.get());
        },
        options.connect_timeout_ms);
    if (libssh2_userauth_authenticated(session.get())) {
      auth_method = "none";
      return;
    }
    const std::string offered = methods ? methods : "";
    std::vector<std::string> refused_rsa;
    std::vector<std::string> tried;
    if (offered.find("publickey") != std::string::npos) {
      for (std::size_t i = 0; i < endpoint.identity_files.size(); ++i) {
        const auto& file = endpoint.identity_files[i];
        if (!std::filesystem::exists(file)) {
          if (i == 0 && endpoint.private_key_file_given) {
            fail("auth", "key file " + file.string() + " not found",
                 "fix privateKeyFile in the compute file");
          }
          // As OpenSSH: an IdentityFile that is not there is skipped.
          spdlog::debug("ssh {}: IdentityFile {} not found; skipped", where(), file.string());
          continue;
        }
        tried.push_back(file.string());
        if (try_key(file, i == 0 ? options.key_passphrase : std::nullopt, refused_rsa, true))
          return;
      }
      if (options.use_agent && try_agent()) return;
      if (options.use_agent && ::getenv("SSH_AUTH_SOCK")) tried.push_back("ssh-agent");
      for (const char* name : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
        const auto file = options.ssh_dir / name;
        if (!std::filesystem::exists(file)) continue;
        tried.push_back(file.string());
        if (try_key(file, std::nullopt, refused_rsa, true)) return;
      }
    }
    std::optional<std::string> password;
    if (options.password) password = options.password();
    if (password && !password->empty() && offered.find("password") != std::string::npos) {
      tried.push_back(options.password_label);
      const int rc = retry(
          [&] {
            return libssh2_userauth_password_ex(
                session.get(), endpoint.user.c_str(), static_cast<unsigned>(endpoint.user.size()),
                password->c_str(), static_cast<unsigned>(password->size()), nullptr);
          },
          options.connect_timeout_ms);
      if (rc == 0) {
        auth_method = "password";
        return;
      }
      spdlog::debug("ssh {}: password refused: {}", where(), last_error());
    }
    if (!refused_rsa.empty()) {
      fail("auth",
           fmt::format("the server refused the RSA key {} for {}: Debian 12's libssh2 can sign "
                       "only with ssh-rsa (SHA-1), which OpenSSH 8.8 and later refuse",
                       refused_rsa.front(), endpoint.user),
           "attach again with -k/--use-ssh-key (mlw makes an ed25519 key for the target), or use "
           "an ed25519 or ECDSA key");
    }
    fail("auth",
         fmt::format("login as {} failed (tried: {}; the server offers: {})", endpoint.user,
                     tried.empty() ? "nothing" : join(tried, ", "), offered),
         "attach again with the right -u/-w, or with -k to install a key");
  }
};

std::string endpoint_name(const SshEndpoint& endpoint) {
  const std::string target = known_host_name(endpoint.host, endpoint.port);
  if (endpoint.alias.empty() || endpoint.alias == endpoint.host) return target;
  if (parse_address(endpoint.alias).host == endpoint.host) return endpoint.alias;
  return fmt::format("{} ({})", endpoint.alias, target);
}

SshShell::SshShell(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
namespace {

std::int64_t ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

SshShell::~SshShell() {
  if (m_impl && m_impl->session && !keep()) account("closed");
}

namespace {

/// Whether this process runs one thread (a fork copies only the caller's).
bool single_threaded() {
  std::error_code ec;
  int threads = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++threads;
  }
  return threads == 1;
}

/// In the kept process: nothing of the command's files or terminal is kept open.
void detach_from_command(int keep_a, int keep_b) {
  ::setsid();
  ::prctl(PR_SET_NAME, "mlw-ssh-kept");  // what ps shows
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  const int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null_fd, fd);
  for (int fd = 3; fd < 1024; ++fd) {
    if (fd != keep_a && fd != keep_b) ::close(fd);
  }
}

}  // namespace

bool SshShell::keep() {
  Impl& s = *m_impl;
  if (s.options.kept_socket.empty() || s.options.kept_s <= 0 || s.proxy_pid > 0 ||
      !single_threaded()) {
    return false;
  }
  const int listen_fd = kept_listen(s.options.kept_socket);
  if (listen_fd < 0) return false;
  account("left to be kept");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    if (::fork() != 0) ::_exit(0);  // the grandchild is nobody's child to reap
    detach_from_command(s.socket, listen_fd);
    try {
      s.conversation.reset();  // its channel is closed: the shell there ends
      kept_serve(s.link(), listen_fd, s.options.kept_socket, s.options.kept_s);
    } catch (...) {
    }
    s.session.reset();  // the goodbye
    ::_exit(0);
  }
  ::close(listen_fd);
  if (child > 0) ::waitpid(child, nullptr, 0);
  if (s.conversation) s.conversation->forget();
  s.conversation.reset();
  // The kept process owns the protocol state now (as in abandon).
  if (s.socket >= 0) ::close(s.socket);
  s.socket = -1;
  free_quietly(s.session);
  if (child < 0) ::unlink(s.options.kept_socket.c_str());
  return child > 0;
}

void SshShell::account(const char* how) const {
  const Impl& s = *m_impl;
  spdlog::trace("ssh {}: {} after {} commands on {} channel(s) in {} ms, {} waits for the server",
                s.where(), how, s.commands, s.channels, s.command_ms, s.waits);
}

std::unique_ptr<SshShell> SshShell::connect(const SshEndpoint& endpoint,
                                            const SshOptions& options) {
  static const int initialized = libssh2_init(0);
  (void)initialized;
  auto impl = std::make_unique<Impl>();
  impl->endpoint = endpoint;
  impl->options = options;
  const auto started = std::chrono::steady_clock::now();
  impl->connect_and_handshake();
  impl->check_host_key();
  const std::int64_t connect_ms = ms_since(started);
  const int connect_waits = impl->waits;
  impl->login();
  spdlog::debug("ssh {}: logged in as {} with {}", impl->where(), endpoint.user, impl->auth_method);
  spdlog::trace("ssh {}: connected in {} ms ({} waits for the server), logged in in {} ms ({})",
                impl->where(), connect_ms, connect_waits, ms_since(started) - connect_ms,
                impl->waits - connect_waits);
  return std::unique_ptr<SshShell>(new SshShell(std::move(impl)));
}

std::string SshShell::host() const {
  return m_impl->endpoint.alias.empty() ? m_impl->endpoint.host : m_impl->endpoint.alias;
}

std::string SshShell::auth_method() const {
  return m_impl->auth_method;
}

std::string SshShell::fingerprint() const {
  return m_impl->fingerprint;
}

void SshShell::abandon() {
  if (m_impl->session) account("handed over");
  // The child owns the protocol state now: close this copy of the socket first, so freeing the
  // session here cannot send anything on the connection.
  if (m_impl->socket >= 0) ::close(m_impl->socket);
  m_impl->socket = -1;
  m_impl->proxy_pid = -1;  // the ProxyCommand carries the child's connection now
  if (m_impl->conversation) m_impl->conversation->forget();
  m_impl->conversation.reset();
  free_quietly(m_impl->session);
}

ShellResult SshShell::run(const std::string& script, const ShellStreams& streams) {
  Impl& s = *m_impl;
  if (!s.session) throw Error("ssh " + s.where() + ": the connection was handed over");
  const auto started = std::chrono::steady_clock::now();
  const int waits_before = s.waits;
  if (!s.conversation || !s.conversation->usable()) {
    s.conversation.reset();
    const std::string marker = new_frame_marker();
    s.conversation = std::make_unique<Conversation>(
        open_shell_pipe(s.link(), conversation_command(marker)), s.where(), marker);
    ++s.channels;
  }
  bool stopped = false;
  ++s.commands;
  ShellResult result = s.conversation->step(script, streams, stopped);
  const std::int64_t took = ms_since(started);
  s.command_ms += took;
  if (stopped) s.conversation.reset();  // its channel closes; the next command opens one
  spdlog::trace("ssh {}: exit {} after {} ms, {} waits for the server: {}", s.where(),
                result.exit_code, took, s.waits - waits_before,
                script.substr(0, std::min<std::size_t>(script.find('\n'), 60)));
  return result;
}

int SshShell::run_joined(const std::string& script, bool pty) {
  Impl& s = *m_impl;
  if (!s.session) throw Error("ssh " + s.where() + ": the connection was handed over");
  ++s.channels;
  return run_joined_channel(s.link(), "exec /bin/sh -c " + shell_quote(script), pty);
}

void SshShell::forward(const std::vector<ForwardPort>& ports,
                       const std::function<bool()>& keep_going) {
  Impl& s = *m_impl;
  if (!s.session) throw Error("ssh " + s.where() + ": the connection was handed over");
  forward_channels(s.link(), ports, keep_going);
}

}  // namespace mlw
