#include "mlw/util/zip.hpp"

#include <array>
#include <ctime>

#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

// The zip format as PKWARE's APPNOTE.TXT describes it: per entry a local file header and the
// bytes, then the central directory and its end record; every number little-endian.

namespace mlw {

namespace {

std::array<std::uint32_t, 256> crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t n = 0; n < 256; ++n) {
    std::uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

void put16(std::string& out, std::uint32_t value) {
  out.push_back(static_cast<char>(value & 0xff));
  out.push_back(static_cast<char>((value >> 8) & 0xff));
}

void put32(std::string& out, std::uint32_t value) {
  put16(out, value & 0xffff);
  put16(out, value >> 16);
}

}  // namespace

std::uint32_t crc32(std::string_view data, std::uint32_t crc) {
  static const std::array<std::uint32_t, 256> table = crc_table();
  crc = ~crc;
  for (const char byte : data) {
    crc = table[(crc ^ static_cast<unsigned char>(byte)) & 0xff] ^ (crc >> 8);
  }
  return ~crc;
}

void ZipWriter::add(const std::string& name, std::string_view content, std::int64_t unix_time) {
  if (m_entries.size() >= 0xffff || content.size() >= 0xffffffffu ||
      m_data.size() + content.size() + name.size() + 64 >= 0xffffffffu || name.size() > 0xffff) {
    throw Error("a zip without zip64 cannot hold " + name);
  }
  // A name that an unzip would place outside its folder (zip slip) is never written.
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos ||
      name.find('\0') != std::string::npos ||
      ("/" + name + "/").find("/../") != std::string::npos) {
    throw Error("a zip entry cannot be named \"" + printable(name) + "\"");
  }
  Entry entry;
  entry.name = name;
  entry.crc = crc32(content);
  entry.size = static_cast<std::uint32_t>(content.size());
  entry.offset = static_cast<std::uint32_t>(m_data.size());
  // MS-DOS time and date (local to no zone: the UTC time given), from 1980 on.
  const std::time_t when = static_cast<std::time_t>(unix_time);
  std::tm utc{};
  ::gmtime_r(&when, &utc);
  if (utc.tm_year < 80) utc = std::tm{0, 0, 0, 1, 0, 80, 0, 0, 0, 0, nullptr};
  entry.time =
      static_cast<std::uint16_t>((utc.tm_hour << 11) | (utc.tm_min << 5) | (utc.tm_sec / 2));
  entry.date =
      static_cast<std::uint16_t>(((utc.tm_year - 80) << 9) | ((utc.tm_mon + 1) << 5) | utc.tm_mday);
  put32(m_data, 0x04034b50);
  put16(m_data, 10);       // version needed: 1.0 (stored)
  put16(m_data, 1 << 11);  // flags: the name is UTF-8
  put16(m_data, 0);        // method: stored
  put16(m_data, entry.time);
  put16(m_data, entry.date);
  put32(m_data, entry.crc);
  put32(m_data, entry.size);
  put32(m_data, entry.size);
  put16(m_data, static_cast<std::uint32_t>(name.size()));
  put16(m_data, 0);  // no extra field
  m_data += name;
  m_data += content;
  m_entries.push_back(std::move(entry));
}

std::string ZipWriter::finish() const {
  std::string out = m_data;
  const auto directory = static_cast<std::uint32_t>(out.size());
  for (const Entry& entry : m_entries) {
    put32(out, 0x02014b50);
    put16(out, (3 << 8) | 20);  // made by: Unix, 2.0
    put16(out, 10);
    put16(out, 1 << 11);
    put16(out, 0);
    put16(out, entry.time);
    put16(out, entry.date);
    put32(out, entry.crc);
    put32(out, entry.size);
    put32(out, entry.size);
    put16(out, static_cast<std::uint32_t>(entry.name.size()));
    put16(out, 0);               // extra
    put16(out, 0);               // comment
    put16(out, 0);               // disk
    put16(out, 0);               // internal attributes
    put32(out, 0100644u << 16);  // external: a regular file, rw-r--r--
    put32(out, entry.offset);
    out += entry.name;
  }
  const auto size = static_cast<std::uint32_t>(out.size() - directory);
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<std::uint32_t>(m_entries.size()));
  put16(out, static_cast<std::uint32_t>(m_entries.size()));
  put32(out, size);
  put32(out, directory);
  put16(out, 0);  // no comment
  return out;
}

}  // namespace mlw
