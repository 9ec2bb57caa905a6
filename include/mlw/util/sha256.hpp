#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace mlw {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
 public:
  Sha256();
  /// Adds bytes to the message.
  void update(std::string_view data);
  /// Finishes the message and returns the digest as 64 lowercase hex digits.
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> m_state;
  std::array<std::uint8_t, 64> m_buffer{};
  std::size_t m_buffered = 0;
  std::uint64_t m_length = 0;
};

/// SHA-256 of `data` as hex.
std::string sha256_hex(std::string_view data);

/// SHA-256 of a file's contents as hex; throws mlw::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace mlw
