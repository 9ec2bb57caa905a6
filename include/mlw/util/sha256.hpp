#pragma once

#include <filesystem>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace mlw {

/// Incremental SHA-256 (OpenSSL's libcrypto).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  /// Adds bytes to the message.
  void update(std::string_view data);
  /// Finishes the message and returns the digest as 64 lowercase hex digits (once).
  std::string hex_digest();

 private:
  evp_md_ctx_st* m_context;
};

/// SHA-256 of `data` as hex.
std::string sha256_hex(std::string_view data);

/// SHA-256 of a file's contents as hex; throws mlw::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

/// SHA-1 of `data` as hex (OpenSSH's %C token; not for integrity).
std::string sha1_hex(std::string_view data);

}  // namespace mlw
