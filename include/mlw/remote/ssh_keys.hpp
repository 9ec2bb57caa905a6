#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mlw {

/// Standard base64 of `size` bytes; `pad` adds the trailing `=` (OpenSSH fingerprints omit it).
std::string encode_base64(const unsigned char* data, std::size_t size, bool pad);

/// Decodes standard base64 (padding optional); nullopt for any other character.
std::optional<std::string> decode_base64(std::string_view text);

/// The SHA256 fingerprint of a host key blob as OpenSSH shows it ("SHA256:…", no padding).
std::string ssh_fingerprint(const std::string& key_blob);

/// Creates an ed25519 key pair: the private key in OpenSSH format (unencrypted) and the public
/// key line ("ssh-ed25519 AAAA… comment").
std::pair<std::string, std::string> generate_ed25519_key(const std::string& comment);

/// Whether a private key file is RSA (PEM "RSA PRIVATE KEY", or an `ssh-rsa` .pub beside it).
bool is_rsa_key_file(const std::filesystem::path& file);

}  // namespace mlw
