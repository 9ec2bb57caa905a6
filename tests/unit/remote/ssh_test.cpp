#include "mlw/remote/ssh.hpp"

#include <gtest/gtest.h>

namespace mlw {

TEST(SshConfig, FirstMatchingValueWinsAndNegationExcludes) {
  const std::string config =
      "Host gpu\n  HostName gpu-vm.example.com\n  Port 2222\n  User alice\n"
      "  IdentityFile ~/.ssh/gpu_key\n"
      "Host * !bastion\n  User fallback\n  Port 22\n";
  const SshConfigEntry gpu = read_ssh_config(config, "gpu");
  EXPECT_EQ(gpu.host_name, "gpu-vm.example.com");
  EXPECT_EQ(gpu.port, 2222);
  EXPECT_EQ(gpu.user, "alice");
  EXPECT_EQ(gpu.identity_files, std::vector<std::string>{"~/.ssh/gpu_key"});
  const SshConfigEntry bastion = read_ssh_config(config, "bastion");
  EXPECT_FALSE(bastion.user.has_value());
  EXPECT_EQ(read_ssh_config(config, "other").user, "fallback");
}

TEST(SshConfig, EndpointTakesAliasValuesUnlessTheComputeFileSaysOtherwise) {
  const std::string config = "Host gpu\n  HostName 10.0.0.5\n  Port 2222\n  User alice\n";
  const SshEndpoint plain = resolve_endpoint("gpu", "", "", config, "/home/me");
  EXPECT_EQ(plain.host, "10.0.0.5");
  EXPECT_EQ(plain.port, 2222);
  EXPECT_EQ(plain.user, "alice");
  const SshEndpoint given = resolve_endpoint("gpu:2300", "bob", "~/k", config, "/home/me");
  EXPECT_EQ(given.port, 2300);
  EXPECT_EQ(given.user, "bob");
  ASSERT_FALSE(given.identity_files.empty());
  EXPECT_EQ(given.identity_files.front(), "/home/me/k");
}

TEST(SshKeys, GeneratedKeyIsInOpenSshFormatWithAMatchingPublicLine) {
  const auto [private_key, public_line] = generate_ed25519_key("mlw-test");
  EXPECT_EQ(private_key.rfind("-----BEGIN OPENSSH PRIVATE KEY-----\n", 0), 0u);
  EXPECT_NE(private_key.find("-----END OPENSSH PRIVATE KEY-----"), std::string::npos);
  EXPECT_EQ(public_line.rfind("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5", 0), 0u);
  EXPECT_NE(public_line.find(" mlw-test"), std::string::npos);
  EXPECT_NE(generate_ed25519_key("x").second, generate_ed25519_key("x").second);
}

TEST(SshKeys, FingerprintIsUnpaddedBase64OfSha256) {
  // sha256("") = e3b0c442…; base64 without padding, as OpenSSH prints it.
  EXPECT_EQ(ssh_fingerprint(""), "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
}

}  // namespace mlw
