#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlw {

/// CRC-32 (IEEE 802.3, as zip and gzip use) of `data`, continuing from `crc` (0 to start).
std::uint32_t crc32(std::string_view data, std::uint32_t crc = 0);

/// A zip archive made in memory: stored entries (no compression, so that a search of the file
/// finds what is in it), each under 4 GiB, at most 65,535 of them (no zip64).
class ZipWriter {
 public:
  /// Adds a file `name` ('/'-separated, relative) with `content`, dated `unix_time` (UTC).
  void add(const std::string& name, std::string_view content, std::int64_t unix_time);
  /// The whole archive: the entries, their central directory and its end record.
  std::string finish() const;

 private:
  struct Entry {
    std::string name;
    std::uint32_t crc = 0;
    std::uint32_t size = 0;
    std::uint32_t offset = 0;
    std::uint16_t time = 0;
    std::uint16_t date = 0;
  };
  std::string m_data;
  std::vector<Entry> m_entries;
};

}  // namespace mlw
