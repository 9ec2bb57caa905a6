#include "mlw/remote/ssh_endpoint.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include "mlw/config/names.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The values of OpenSSH's %-tokens for one connection (ssh_config(5) "TOKENS").
struct Tokens {
  std::string host;            ///< %h: HostName
  std::string original;        ///< %n (and %k): the name as given
  int port = 22;               ///< %p
  std::string user;            ///< %r: the remote user
  std::string local_user;      ///< %u
  std::filesystem::path home;  ///< %d
  std::string local_host;      ///< %l and %L
};

std::string local_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

/// `text` with its %-tokens replaced; `allowed` lists the tokens the key takes (others are an
/// error, as OpenSSH's "unknown key"). `shell`: each value that is not a plain word is quoted
/// for /bin/sh (ProxyCommand runs through it).
std::string expand_tokens(const std::string& text, const Tokens& t, std::string_view allowed,
                          bool shell, std::string_view key) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const char token = i + 1 < text.size() ? text[++i] : '\0';
    if (token == '%') {
      out += '%';
      continue;
    }
    if (token == '\0' || allowed.find(token) == std::string_view::npos) {
      std::string tokens;
      for (const char c : allowed) tokens += fmt::format(" %{}", c);
      throw UsageError(
          fmt::format("~/.ssh/config: {} {}: unknown token %{} (as OpenSSH: {} takes %%{})", key,
                      text, token == '\0' ? std::string() : std::string(1, token), key, tokens));
    }
    std::string value;
    switch (token) {
      case 'h':
        value = t.host;
        break;
      case 'n':
      case 'k':
        value = t.original;
        break;
      case 'p':
        value = std::to_string(t.port);
        break;
      case 'r':
        value = t.user;
        break;
      case 'u':
        value = t.local_user;
        break;
      case 'd':
        value = t.home.string();
        break;
      case 'i':
        value = std::to_string(::getuid());
        break;
      case 'l':
        value = t.local_host;
        break;
      case 'L':
        value = t.local_host.substr(0, t.local_host.find('.'));
        break;
      case 'C':
        value = sha1_hex(t.local_host + t.host + std::to_string(t.port) + t.user);
        break;
      default:
        break;
    }
    out += shell ? shell_quote(value) : value;
  }
  return out;
}

constexpr std::string_view k_proxy_tokens = "hnpr";
constexpr std::string_view k_file_tokens = "CdhikLlnpru";

}  // namespace

SshEndpoint resolve_endpoint(const std::string& address, const std::string& username,
                             const std::string& private_key_file, const std::string& ssh_config,
                             const std::filesystem::path& home, const SshConfigContext* context) {
  const Address parsed = parse_address(address);  // refuses host names OpenSSH refuses
  const std::string& host = parsed.host;
  check_ssh_user(username);
  SshEndpoint endpoint;
  endpoint.alias = address;
  const SshConfigEntry entry =
      context ? read_ssh_config(ssh_config, host, *context) : read_ssh_config(ssh_config, host);
  endpoint.host = entry.host_name.value_or(host);
  endpoint.port = parsed.port_given ? parsed.port : entry.port.value_or(parsed.port);
  endpoint.user = !username.empty() ? username : entry.user.value_or("");
  const std::string local_user = context ? context->local_user : "";
  Tokens tokens{
      endpoint.host, host, endpoint.port,    endpoint.user.empty() ? local_user : endpoint.user,
      local_user,    home, local_host_name()};
  auto expand = [&](const std::string& path, std::string_view key) -> std::filesystem::path {
    const std::string text = expand_tokens(path, tokens, k_file_tokens, false, key);
    if (text == "~") return home;
    if (starts_with(text, "~/")) return home / text.substr(2);
    return text;
  };
  if (!private_key_file.empty()) {
    endpoint.identity_files.push_back(expand(private_key_file, "privateKeyFile"));
    endpoint.private_key_file_given = true;
  }
  for (const auto& file : entry.identity_files) {
    endpoint.identity_files.push_back(expand(file, "IdentityFile"));
  }
  for (const auto& file : entry.user_known_hosts_files) {
    if (file != "none") endpoint.known_hosts_files.push_back(expand(file, "UserKnownHostsFile"));
  }
  endpoint.strict_host_key_checking = entry.strict_host_key_checking.value_or("");
  endpoint.identities_only = entry.identities_only.value_or(false);
  endpoint.unsupported = entry.unsupported;
  if (entry.proxy_jump && *entry.proxy_jump != "none") {
    const auto config = context ? context->ssh_dir / "config" : std::filesystem::path();
    endpoint.proxy_command = proxy_jump_command(
        *entry.proxy_jump, endpoint.host, endpoint.port,
        !config.empty() && std::filesystem::exists(config) ? config : std::filesystem::path());
  } else if (entry.proxy_command && *entry.proxy_command != "none") {
    // Every value goes into /bin/sh -c quoted unless it is a plain word (a name OpenSSH accepts
    // may still hold $ or a backslash); the rest of the line is passed as written.
    endpoint.proxy_command =
        expand_tokens(*entry.proxy_command, tokens, k_proxy_tokens, true, "ProxyCommand");
  }
  return endpoint;
}

std::string endpoint_identity(const SshEndpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return fmt::format("{}@{}{}{}:{}", endpoint.user, v6 ? "[" : "", endpoint.host, v6 ? "]" : "",
                     endpoint.port);
}

std::string proxy_jump_command(const std::string& jump, const std::string& host, int port,
                               const std::filesystem::path& config) {
  const auto hops = split(jump, ',');
  std::vector<std::string> words = {"ssh"};
  // The hops are resolved with the same config file as mlw read (OpenSSH's ssh would read the
  // passwd entry's home, which may not be $HOME).
  if (!config.empty()) words.insert(words.end(), {"-F", config.string()});
  if (hops.size() > 1) {
    std::vector<std::string> first(hops.begin(), hops.end() - 1);
    words.insert(words.end(), {"-J", join(first, ",")});
  }
  std::string last = hops.back();
  if (const auto at = last.rfind('@'); at != std::string::npos) {
    words.insert(words.end(), {"-l", last.substr(0, at)});
    last = last.substr(at + 1);
  }
  const Address address = parse_address(last);
  if (address.port_given) words.insert(words.end(), {"-p", std::to_string(address.port)});
  words.insert(words.end(), {"-W", fmt::format("[{}]:{}", host, port), address.host});
  return shell_join(words);
}

}  // namespace mlw
