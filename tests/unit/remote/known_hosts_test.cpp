#include "mlw/remote/known_hosts.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include "mlw/util/fs.hpp"

namespace mlw {

namespace {

std::string b64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

/// An SSH wire-format public key of `type` whose key bytes are `fill`.
std::string blob(const std::string& type, char fill) {
  std::string out;
  auto put = [&](const std::string& s) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((s.size() >> shift) & 0xff));
    out += s;
  };
  put(type);
  if (type.starts_with("ecdsa-")) put("nistp256");
  put(std::string(32, fill));
  return out;
}

std::string line(const std::string& hosts, const std::string& type, char fill) {
  return hosts + " " + type + " " + b64(blob(type, fill));
}

std::string hashed(const std::string& name, const std::string& salt) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
       reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest, &size);
  return "|1|" + b64(salt) + "|" + b64(std::string(reinterpret_cast<char*>(digest), size));
}

const std::string k_ed = "ssh-ed25519";
const std::string k_ec = "ecdsa-sha2-nistp256";

}  // namespace

TEST(KnownHosts, ABadLineNeverHidesTheLinesAfterIt) {
  KnownHosts known;
  const std::string text = "\r\n" + std::string(70000, 'x') + "\n" +
                           "[h]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI\n" +  // cut key
                           "[h]:2222 ssh-ed25519 !!!notbase64\n" + "@nonsense h " + k_ed +
                           " AAAA\n" + "# a comment\n\n" + line("[h]:2222", k_ed, 'a') + "\r\n";
  known.add(text, "kh");
  ASSERT_EQ(known.entries.size(), 1u);
  EXPECT_EQ(known.entries[0].line, 8);
  EXPECT_EQ(known.skipped.size(), 4u);  // the lone \r is a blank line, as for OpenSSH
  EXPECT_EQ(known.skipped[0], "kh:2: a line over 64 KiB; skipped");
  // The changed key is seen as changed, not as unknown.
  const auto check = check_known_host(known, "h", 2222, blob(k_ed, 'b'));
  EXPECT_EQ(check.verdict, HostKeyVerdict::Changed);
  EXPECT_EQ(check.entry->line, 8);
  EXPECT_EQ(check_known_host(known, "h", 2222, blob(k_ed, 'a')).verdict, HostKeyVerdict::Known);
}

TEST(KnownHosts, RevokedKeysAreRefusedAndCertAuthoritiesAreNotHostKeys) {
  KnownHosts known;
  known.add("@revoked * " + k_ed + " " + b64(blob(k_ed, 'r')) + "\n" + line("h", k_ed, 'r') +
                "\n@cert-authority h " + k_ed + " " + b64(blob(k_ed, 'c')) + "\n",
            "kh");
  EXPECT_EQ(check_known_host(known, "h", 22, blob(k_ed, 'r')).verdict, HostKeyVerdict::Revoked);
  EXPECT_EQ(check_known_host(known, "h", 22, blob(k_ed, 'c')).verdict, HostKeyVerdict::Changed);
  KnownHosts only_ca;
  only_ca.add("@cert-authority h " + k_ed + " " + b64(blob(k_ed, 'c')) + "\n", "kh");
  EXPECT_EQ(check_known_host(only_ca, "h", 22, blob(k_ed, 'c')).verdict, HostKeyVerdict::Unknown);
}

TEST(KnownHosts, PatternsNegationPortsAndHashedNamesMatchAsOpenSshDoes) {
  EXPECT_TRUE(known_host_matches("a,h,b", "h", 22));
  EXPECT_TRUE(known_host_matches("*.example.com", "GPU.example.com", 22));
  EXPECT_FALSE(known_host_matches("*.example.com,!gpu.example.com", "gpu.example.com", 22));
  EXPECT_TRUE(known_host_matches("[h]:2222", "h", 2222));
  EXPECT_FALSE(known_host_matches("h", "h", 2222));
  EXPECT_FALSE(known_host_matches("[h]:2222", "h", 22));
  EXPECT_TRUE(known_host_matches("[10.0.0.?]:*", "10.0.0.5", 2200));
  EXPECT_FALSE(known_host_matches("[h]:2222", "h:2222", 22));  // brackets are literal
  EXPECT_TRUE(known_host_matches("*a*a*a*a*a*a*a*a*b", std::string(200, 'a') + "b", 22));
  EXPECT_TRUE(known_host_matches(hashed("[h]:2222", "0123456789abcdefghij"), "h", 2222));
  EXPECT_FALSE(known_host_matches(hashed("[h]:2222", "0123456789abcdefghij"), "g", 2222));
  EXPECT_FALSE(known_host_matches("|1|x|y", "h", 22));
}

TEST(KnownHosts, TheKeyTypesKnownForAHostComeFirstInFileOrder) {
  KnownHosts known;
  known.add(line("other", k_ed, 'o') + "\n" + line("[h]:2222", k_ec, 'e') + "\n" +
                line("[h]:2222", k_ed, 'd') + "\n" + line("[h]:2222", k_ec, 'f') + "\n",
            "kh");
  EXPECT_EQ(known_key_types(known, "h", 2222), (std::vector<std::string>{k_ec, k_ed}));
  EXPECT_TRUE(known_key_types(known, "h", 22).empty());
}

TEST(KnownHosts, TheUserFileAndTheGlobalOneAreBothRead) {
  const test::TempDir dir("kh");
  atomic_write_file(dir.path() / "user", line("u", k_ed, 'u') + "\n");
  atomic_write_file(dir.path() / "global", line("g", k_ed, 'g') + "\n");
  const KnownHosts known =
      KnownHosts::read({dir.path() / "user", dir.path() / "missing", dir.path() / "global"});
  EXPECT_EQ(check_known_host(known, "g", 22, blob(k_ed, 'g')).verdict, HostKeyVerdict::Known);
  EXPECT_EQ(check_known_host(known, "u", 22, blob(k_ed, 'u')).verdict, HostKeyVerdict::Known);
}

TEST(KnownHosts, AppendingKeepsTheModeAndWritesThroughASymlink) {
  const test::TempDir dir("kh");
  const fs::path real = dir.path() / "dotfiles" / "known_hosts";
  fs::create_directories(real.parent_path());
  atomic_write_file(real, "first no newline");
  ::chmod(real.c_str(), 0600);
  fs::create_directories(dir.path() / "ssh");
  fs::create_symlink(real, dir.path() / "ssh" / "known_hosts");
  append_known_host(dir.path() / "ssh" / "known_hosts", "h ssh-ed25519 AAAA\n");
  EXPECT_TRUE(fs::is_symlink(dir.path() / "ssh" / "known_hosts"));
  EXPECT_EQ(read_file_if_exists(real), "first no newline\nh ssh-ed25519 AAAA\n");
  struct stat st {};
  ::stat(real.c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  append_known_host(dir.path() / "new" / "known_hosts", "x\n");
  EXPECT_EQ(read_file_if_exists(dir.path() / "new" / "known_hosts"), "x\n");
}

}  // namespace mlw
