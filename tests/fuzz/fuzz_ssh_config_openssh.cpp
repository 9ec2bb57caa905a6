// ~/.ssh/config read by mlw and by OpenSSH's own `ssh -G`, over configs generated from the input
// (issue 33): Host and Match blocks, HostName with %h, Port, User, ProxyCommand with quotes and
// %-tokens, UserKnownHostsFile with %-tokens, StrictHostKeyChecking, IdentitiesOnly. Any value
// where the two differ is a finding. Include is left out (the unit test covers it with files).
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "mlw/remote/ssh_config.hpp"
#include "mlw/remote/ssh_endpoint.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace {

const std::vector<std::vector<std::string>>& grammar() {
  static const std::vector<std::vector<std::string>> lines = {
      {"Host gpu", "Host g*", "Host * !gpu", "Host *", "Host ?pu cpu", "Host gpu.example.com"},
      {"Match host gpu", "Match originalhost g*", "Match all", "Match host !cpu,gpu*",
       "Match host real.example.com"},
      {"  HostName %h.example.com", "  HostName real.example.com", "  HostName 10.0.0.5",
       "  HostName=%h", "HostName \"quoted.example.com\""},
      {"  Port 2200", "  Port 22", "  Port=2022", "Port 1"},
      {"  User me", "  User \"a b\"", "  User a$b", "User=other"},
      {"  ProxyCommand nc %h %p", "  ProxyCommand sh -c \"exec nc %h %p\" 'x  y'",
       "  ProxyCommand ssh -W %h:%p jump", "  ProxyCommand none", "ProxyCommand=nc %%h %r %n",
       "  ProxyJump none"},
      {"  UserKnownHostsFile ~/.ssh/kh_%h", "  UserKnownHostsFile %d/kh %C",
       "  UserKnownHostsFile /tmp/kh_%r_%p_%n_%u_%l_%L_%k_%i", "  UserKnownHostsFile none"},
      {"  StrictHostKeyChecking accept-new", "  StrictHostKeyChecking yes",
       "  StrictHostKeyChecking no", "StrictHostKeyChecking off", "  IdentitiesOnly yes",
       "  IdentitiesOnly no"},
      {"# a comment", "", "   "},
  };
  return lines;
}

/// `ssh -G -F FILE ALIAS` as key → first value; empty when ssh refused the config.
std::map<std::string, std::string> openssh(const std::string& file, const std::string& alias) {
  const std::string command = "ssh -G -F " + mlw::shell_quote(file) + " " +
                              mlw::shell_quote(alias) + " 2>/dev/null </dev/null";
  std::map<std::string, std::string> out;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  std::string text;
  char buffer[8192];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  if (::pclose(pipe) != 0) return {};
  for (const auto& line : mlw::split(text, '\n')) {
    const auto space = line.find(' ');
    if (space != std::string::npos)
      out.emplace(mlw::lower_ascii(line.substr(0, space)), line.substr(space + 1));
  }
  return out;
}

void differ(const std::string& config, const std::string& alias, const std::string& key,
            const std::string& ours, const std::string& theirs) {
  if (ours == theirs) return;
  std::fprintf(stderr, "ssh_config differs from ssh -G for %s, %s: mlw [%s], ssh [%s]\n%s\n",
               alias.c_str(), key.c_str(), ours.c_str(), theirs.c_str(), config.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64) return 0;  // up to 32 lines
  std::string config;
  for (std::size_t i = 0; i + 1 < size; i += 2) {
    const auto& group = grammar()[data[i] % grammar().size()];
    config += group[data[i + 1] % group.size()] + "\n";
  }
  static const passwd* me = ::getpwuid(::getuid());
  static const std::string home = me ? me->pw_dir : "/root";
  static const std::string user = me ? me->pw_name : "root";
  const std::string file = (mlw::fuzz::scratch() / "config").string();
  mlw::atomic_write_file(file, config);
  const mlw::SshConfigContext context{mlw::fuzz::scratch(), home, user};
  for (const std::string alias : {"gpu", "cpu", "gpu.example.com"}) {
    const auto ssh = openssh(file, alias);
    if (ssh.empty()) continue;  // ssh refused the config: nothing to compare
    const mlw::SshConfigEntry ours = mlw::read_ssh_config(config, alias, context, file);
    differ(config, alias, "hostname", ours.host_name.value_or(mlw::lower_ascii(alias)),
           ssh.at("hostname"));
    differ(config, alias, "port", std::to_string(ours.port.value_or(22)), ssh.at("port"));
    differ(config, alias, "user", ours.user.value_or(user), ssh.at("user"));
    const std::string proxy = ours.proxy_command.value_or("");
    differ(config, alias, "proxycommand", proxy == "none" ? "" : proxy,
           ssh.count("proxycommand") ? ssh.at("proxycommand") : "");
    const std::string strict = ours.strict_host_key_checking.value_or("ask");
    differ(config, alias, "stricthostkeychecking",
           strict == "yes"  ? "true"
           : strict == "no" ? "false"
                            : strict,
           ssh.at("stricthostkeychecking"));
    differ(config, alias, "identitiesonly", ours.identities_only.value_or(false) ? "yes" : "no",
           ssh.at("identitiesonly"));
    // UserKnownHostsFile with its tokens expanded, as ssh -G prints it.
    if (!ours.user_known_hosts_files.empty() && ours.user_known_hosts_files.front() != "none") {
      try {
        const mlw::SshEndpoint endpoint =
            mlw::resolve_endpoint(alias, "", "", config, home, &context);
        std::string files;
        for (const auto& path : endpoint.known_hosts_files) {
          files += (files.empty() ? "" : " ") + path.string();
        }
        differ(config, alias, "userknownhostsfile", files, ssh.at("userknownhostsfile"));
      } catch (const mlw::Error& e) {
        differ(config, alias, "userknownhostsfile", std::string("error: ") + e.what(),
               ssh.at("userknownhostsfile"));
      }
    }
  }
  return 0;
}
