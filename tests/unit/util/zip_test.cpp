#include "mlw/util/zip.hpp"

#include "mlw/util/error.hpp"

#include <gtest/gtest.h>

namespace mlw {
namespace {

std::uint32_t le32(const std::string& data, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(data[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 3])) << 24;
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);  // the CRC-32/ISO-HDLC check value
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("6789", crc32("12345")), 0xCBF43926u);
}

TEST(ZipWriter, StoresEntriesUncompressedWithADirectoryThatFindsThem) {
  ZipWriter zip;
  zip.add("run/a.txt", "hello", 1764115200);
  zip.add("run/b.json", "{}", 1764115200);
  const std::string data = zip.finish();
  EXPECT_EQ(le32(data, 0), 0x04034b50u);
  EXPECT_NE(data.find("hello"), std::string::npos);  // stored: a search finds the content
  const std::size_t end = data.size() - 22;
  ASSERT_EQ(le32(data, end), 0x06054b50u);
  EXPECT_EQ(data[end + 10], 2);  // entries
  const std::uint32_t directory = le32(data, end + 16);
  EXPECT_EQ(le32(data, directory), 0x02014b50u);
  EXPECT_EQ(le32(data, directory + 16), crc32("hello"));
  EXPECT_EQ(data.substr(directory + 46, 9), "run/a.txt");
}

TEST(ZipWriter, ANameThatWouldLeaveTheFolderIsRefused) {
  ZipWriter zip;
  for (const char* name : {"../x", "run/../../x", "/etc/x", "run/..", "..", "a\\..\\x", ""}) {
    EXPECT_THROW(zip.add(name, "x", 0), Error) << name;
  }
  EXPECT_NO_THROW(zip.add("run/..x/a..b", "x", 0));
}

}  // namespace
}  // namespace mlw
