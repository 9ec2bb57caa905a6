// ~/.ssh/config resolution compared with OpenSSH's own (`ssh -G -F FILE HOST`) over a set of
// configs: Host patterns and negation, first value wins, Include (relative, glob, inside a
// block, a folder named by Include is skipped), Match host/originalhost/user/all, proxies,
// known_hosts files, host key checking.
#include "mlw/remote/ssh_config.hpp"

#include "mlw/config/names.hpp"
#include "mlw/remote/ssh_endpoint.hpp"
#include "mlw/util/error.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "run_command.hpp"
#include "temp_dir.hpp"

#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// `ssh -G` for `alias` with `config` and HOME at `home`: key → values (a key may repeat).
std::multimap<std::string, std::string> openssh_resolves(const fs::path& home,
                                                         const fs::path& config,
                                                         const std::string& alias) {
  const std::string command = "HOME=" + shell_quote(home.string()) + " ssh -G -F " +
                              shell_quote(config.string()) + " " + shell_quote(alias) +
                              " 2>/dev/null";
  std::multimap<std::string, std::string> out;
  const std::string text = test::run_command(command).output;
  for (const auto& line : split(text, '\n')) {
    const auto space = line.find(' ');
    if (space != std::string::npos)
      out.emplace(lower_ascii(line.substr(0, space)), line.substr(space + 1));
  }
  return out;
}

std::string first(const std::multimap<std::string, std::string>& values, const std::string& key) {
  const auto it = values.find(key);
  return it == values.end() ? "" : it->second;
}

std::vector<std::string> all(const std::multimap<std::string, std::string>& values,
                             const std::string& key) {
  std::vector<std::string> out;
  for (auto [it, end] = values.equal_range(key); it != end; ++it) out.push_back(it->second);
  return out;
}

struct Case {
  std::string config;
  std::vector<std::string> aliases;
};

}  // namespace

TEST(SshConfigAgainstOpenSsh, ResolvesAsSshDashGDoes) {
  const test::TempDir temp("sshcfg");
  const fs::path home = temp.path();
  fs::create_directories(home / ".ssh" / "conf.d");
  atomic_write_file(home / ".ssh" / "conf.d" / "10-gpu.conf",
                    "Host gpu\n  HostName included.example.com\n  Port 2201\n");
  atomic_write_file(home / ".ssh" / "conf.d" / "20-all.conf", "User from-include\n");
  atomic_write_file(home / ".ssh" / "jumps", "ProxyJump admin@bastion:2222\n");
  const std::vector<Case> cases = {
      {"Host gpu\n  HostName %h.example.com\n  Port 2222\n  User me\nHost *\n  User other\n"
       "  Port 22\n",
       {"gpu", "other", "GPU"}},
      {"Host *.example.com !bad.example.com\n  User ex\nHost bad.*\n  User bad\n",
       {"a.example.com", "bad.example.com", "x"}},
      {"Host a b,c\n  Port 1000\nHost ?x\n  Port 1001\nHost [q]\n  Port 1002\n",
       {"a", "b", "c", "zx", "q"}},
      {"Include conf.d/*.conf\nHost gpu\n  HostName late.example.com\n", {"gpu", "cpu"}},
      {"Host gpu\n  Include jumps\nHost *\n  ProxyCommand nc %h %p\n", {"gpu", "cpu"}},
      {"Include ~/.ssh/ conf.d\nHost gpu\n  Port 2444\n", {"gpu"}},
      {"Host gpu\n  HostName real.example.com\nMatch host real.example.com\n  User matched\n"
       "Match originalhost gpu\n  Port 2345\nMatch all\n  IdentitiesOnly yes\n",
       {"gpu", "real.example.com", "x"}},
      {"Host *\n  User alice\nMatch user alice\n  Port 3333\nMatch user !alice\n  Port 4444\n"
       "Match localuser !nobody-here\n  IdentitiesOnly yes\n",
       {"h"}},
      {"Host gpu\n  IdentityFile ~/.ssh/id_gpu\n  IdentityFile ~/.ssh/id_other\n"
       "  UserKnownHostsFile ~/.ssh/kh_gpu /tmp/kh_shared\n  StrictHostKeyChecking accept-new\n"
       "Host *\n  StrictHostKeyChecking yes\n  IdentityFile ~/.ssh/id_all\n",
       {"gpu", "cpu"}},
      {"Host=gpu\n  Port=2022\n  User = \"quoted user\"\n  StrictHostKeyChecking no\n", {"gpu"}},
      {"Host gpu\n  ProxyJump none\n  ProxyCommand ssh -W %h:%p jump\nHost *\n  ProxyJump "
       "j1,u@j2:22\n",
       {"gpu", "cpu"}},
  };
  const passwd* me = ::getpwuid(::getuid());
  const std::string local_user = me ? me->pw_name : "";
  int compared = 0;
  for (const auto& test_case : cases) {
    const fs::path config = home / ".ssh" / "config";
    atomic_write_file(config, test_case.config);
    for (const auto& alias : test_case.aliases) {
      const auto ssh = openssh_resolves(home, config, alias);
      ASSERT_FALSE(ssh.empty()) << "ssh -G gave nothing (is openssh-client installed?)";
      const SshConfigContext context{home / ".ssh", home, local_user};
      const SshConfigEntry ours =
          read_ssh_config(test_case.config, alias, context, config.string());
      const std::string where = "config:\n" + test_case.config + "alias: " + alias;
      EXPECT_EQ(ours.host_name.value_or(lower_ascii(alias)), first(ssh, "hostname")) << where;
      EXPECT_EQ(std::to_string(ours.port.value_or(22)), first(ssh, "port")) << where;
      if (ours.user || first(ssh, "user") != local_user) {
        EXPECT_EQ(ours.user.value_or(""), first(ssh, "user")) << where;
      }
      if (!ours.identity_files.empty()) {
        EXPECT_EQ(ours.identity_files, all(ssh, "identityfile")) << where;
      }
      const std::string jump = ours.proxy_jump.value_or("");
      EXPECT_EQ(jump == "none" ? "" : jump, first(ssh, "proxyjump")) << where;
      EXPECT_EQ(ours.proxy_command.value_or(""), first(ssh, "proxycommand")) << where;
      if (!ours.user_known_hosts_files.empty() && me) {
        std::string expanded;
        for (const auto& file : ours.user_known_hosts_files) {
          expanded +=
              (expanded.empty() ? "" : " ") +
              (starts_with(file, "~/") ? fs::path(me->pw_dir) / file.substr(2) : fs::path(file))
                  .string();
        }
        EXPECT_EQ(expanded, first(ssh, "userknownhostsfile")) << where;
      }
      const std::string strict = ours.strict_host_key_checking.value_or("ask");
      EXPECT_EQ(strict == "yes"  ? "true"
                : strict == "no" ? "false"
                                 : strict,
                first(ssh, "stricthostkeychecking"))
          << where;
      EXPECT_EQ(ours.identities_only.value_or(false) ? "yes" : "no", first(ssh, "identitiesonly"))
          << where;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 25);
}

TEST(SshConfig, KeysMlwDoesNotUseAreNamedOnceWithTheirPlace) {
  const SshConfigEntry entry = read_ssh_config(
      "Host gpu\n  ForwardAgent yes\n  ForwardAgent no\n  Compression yes\nHost other\n"
      "  LocalForward 1 x:2\nMatch exec \"true\"\n  Port 1\n",
      "gpu");
  EXPECT_EQ(entry.unsupported,
            (std::vector<std::string>{"config:2: forwardagent", "config:4: compression",
                                      "config:7: Match exec"}));
  EXPECT_FALSE(entry.port.has_value());
}

}  // namespace mlw

namespace mlw {

namespace {

/// True when `ssh -G` accepts the command line's words (it refuses bad names before anything).
bool openssh_accepts(const std::vector<std::string>& words) {
  const std::string command = "ssh -G -F /dev/null " + shell_join(words) + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

}  // namespace

// CVE-2023-51385: a cloned project's address or username reaches a ProxyCommand's %h/%r. mlw
// refuses exactly the names OpenSSH refuses, or more (never fewer), over every ASCII character
// in three positions.
TEST(SshNamesAgainstOpenSsh, RefusedWhereSshDashGRefusesThem) {
  int compared = 0;
  for (int c = 1; c < 128; ++c) {
    const std::string ch(1, static_cast<char>(c));
    if (ch == "@" || ch == "/" || ch == ":" || ch == "[" || ch == "]") continue;  // address syntax
    for (const std::string& name : {"a" + ch + "b", ch + "ab", "ab" + ch}) {
      const bool ssh_host = openssh_accepts({"--", name});
      const bool ssh_user = openssh_accepts({"-l", name, "host"});
      EXPECT_TRUE(ssh_host || !is_ssh_host_name(name)) << "host [" << name << "] ssh refuses it";
      EXPECT_TRUE(ssh_user || !is_ssh_user_name(name)) << "user [" << name << "] ssh refuses it";
      // Not more strictly than OpenSSH for printable names either.
      if (c >= ' ' && c < 0x7f) {
        EXPECT_EQ(is_ssh_host_name(name), ssh_host) << "host [" << name << "]";
        EXPECT_EQ(is_ssh_user_name(name), ssh_user) << "user [" << name << "]";
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 3 * 122);
}

TEST(SshEndpoint, AddressesAndUsersOpenSshRefusesAreRefusedBeforeAnyConfigIsRead) {
  const std::string config = "Host *\n  ProxyCommand nc %h %p\n";
  EXPECT_THROW(resolve_endpoint("127.0.0.1;touch${IFS}X;", "", "", config, "/home/me"), UsageError);
  EXPECT_THROW(resolve_endpoint("gpu", "m$(touch X)", "", config, "/home/me"), UsageError);
  EXPECT_THROW(resolve_endpoint("-oProxyCommand=x", "", "", config, "/home/me"), UsageError);
}

// A name OpenSSH lets through ($ and \ in a user name) still goes to /bin/sh as one word.
TEST(SshEndpoint, ProxyCommandTokensAreQuotedForTheShellUnlessPlainWords) {
  const std::string config = "Host *\n  ProxyCommand nc %h %p # %r %n %%\n";
  const SshEndpoint plain = resolve_endpoint("gpu.example.com:2200", "me", "", config, "/h");
  EXPECT_EQ(plain.proxy_command, "nc gpu.example.com 2200 # me gpu.example.com %");
  const SshEndpoint odd = resolve_endpoint("gpu", "m$HOME\\x y", "", config, "/h");
  EXPECT_EQ(odd.proxy_command, "nc gpu 22 # 'm$HOME\\x y' gpu %");
}

// OpenSSH passes ProxyCommand's rest of the line to the shell as written, quotes included.
TEST(SshConfigAgainstOpenSsh, ProxyCommandKeepsItsQuotes) {
  const test::TempDir temp("sshq");
  const fs::path config = temp.path() / "config";
  const std::string text =
      "Host gpu\n  ProxyCommand sh -c \"exec nc %h %p\"  'a  b'\nHost x\n  ProxyCommand=\"q\"\n";
  atomic_write_file(config, text);
  for (const std::string alias : {"gpu", "x"}) {
    const auto ssh = openssh_resolves(temp.path(), config, alias);
    const SshConfigContext context{temp.path() / ".ssh", temp.path(), "me"};
    EXPECT_EQ(read_ssh_config(text, alias, context).proxy_command.value_or(""),
              first(ssh, "proxycommand"));
  }
}

// UserKnownHostsFile's tokens as `ssh -G` expands them; IdentityFile takes the same tokens.
TEST(SshConfigAgainstOpenSsh, FileTokensExpandAsSshDashG) {
  const test::TempDir temp("sshtok");
  const fs::path home = temp.path();
  fs::create_directories(home / ".ssh");
  const fs::path config = home / ".ssh" / "config";
  const std::string text =
      "Host gpu\n  HostName real.example\n  Port 2200\n  User bob\n"
      "  UserKnownHostsFile %C %d/%h-%r-%u-%n-%p-%i-%l-%L-%k-%%\n"
      "  IdentityFile ~/.ssh/id_%h_%r\n";
  atomic_write_file(config, text);
  const passwd* me = ::getpwuid(::getuid());
  ASSERT_NE(me, nullptr);
  const SshConfigContext context{home / ".ssh", me->pw_dir, me->pw_name};
  const SshEndpoint ours = resolve_endpoint("gpu", "", "", text, me->pw_dir, &context);
  std::string files;
  for (const auto& file : ours.known_hosts_files)
    files += (files.empty() ? "" : " ") + file.string();
  EXPECT_EQ(files, first(openssh_resolves(home, config, "gpu"), "userknownhostsfile"));
  ASSERT_EQ(ours.identity_files.size(), 1u);
  EXPECT_EQ(ours.identity_files[0], fs::path(me->pw_dir) / ".ssh/id_real.example_bob");
  EXPECT_THROW(resolve_endpoint("gpu", "", "", "Host *\n  IdentityFile ~/%j\n", "/h", &context),
               UsageError);
}

}  // namespace mlw
