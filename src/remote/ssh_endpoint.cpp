#include "mlw/remote/ssh_endpoint.hpp"

#include <fmt/format.h>

#include "mlw/config/names.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

SshEndpoint resolve_endpoint(const std::string& address, const std::string& username,
                             const std::string& private_key_file, const std::string& ssh_config,
                             const std::filesystem::path& home, const SshConfigContext* context) {
  const Address parsed = parse_address(address);
  const std::string& host = parsed.host;
  auto expand = [&](const std::string& path) -> std::filesystem::path {
    if (path == "~") return home;
    if (starts_with(path, "~/")) return home / path.substr(2);
    return path;
  };
  SshEndpoint endpoint;
  endpoint.alias = address;
  const SshConfigEntry entry =
      context ? read_ssh_config(ssh_config, host, *context) : read_ssh_config(ssh_config, host);
  endpoint.host = entry.host_name.value_or(host);
  endpoint.port = parsed.port_given ? parsed.port : entry.port.value_or(parsed.port);
  endpoint.user = !username.empty() ? username : entry.user.value_or("");
  if (!private_key_file.empty()) endpoint.identity_files.push_back(expand(private_key_file));
  for (const auto& file : entry.identity_files) endpoint.identity_files.push_back(expand(file));
  for (const auto& file : entry.user_known_hosts_files) {
    if (file != "none") endpoint.known_hosts_files.push_back(expand(file));
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
    std::string command;
    const std::string& text = *entry.proxy_command;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 1 < text.size()) {
        const char token = text[++i];
        command += token == 'h'   ? endpoint.host
                   : token == 'p' ? std::to_string(endpoint.port)
                   : token == 'r' ? endpoint.user
                   : token == 'n' ? host
                   : token == '%' ? std::string("%")
                                  : std::string("%") + token;
      } else {
        command += text[i];
      }
    }
    endpoint.proxy_command = command;
  }
  return endpoint;
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
