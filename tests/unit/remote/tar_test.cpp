#include "mlw/remote/tar.hpp"

#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

namespace {

std::string drain(TarWriter& tar) {
  std::string out;
  char buffer[700];  // not a multiple of 512: pieces cross block edges
  while (std::size_t n = tar.read(buffer, sizeof buffer)) out.append(buffer, n);
  return out;
}

}  // namespace

TEST(Tar, FilesAndLongNamesRoundTripThroughTheSafeReader) {
  test::TempDir dir("mlw-remote");
  atomic_write_file(dir.path() / "source.bin", std::string(5000, 'x'));
  const std::string long_name = "outputs/" + std::string(150, 'n') + "/deep.txt";
  TarWriter tar;
  tar.add_directory("outputs");
  tar.add_file("outputs/big.bin", dir.path() / "source.bin", 5000, 0644);
  tar.add_data(long_name, "hello\n", 0644);
  const std::string stream = drain(tar);
  EXPECT_EQ(stream.size() % 512, 0u);

  SafeTarReader reader(dir.path() / "out");
  for (std::size_t i = 0; i < stream.size(); i += 333) reader.feed(stream.substr(i, 333));
  const auto written = reader.finish();
  EXPECT_EQ(written.size(), 2u);
  EXPECT_EQ(read_file_if_exists(dir.path() / "out" / "outputs/big.bin"), std::string(5000, 'x'));
  EXPECT_EQ(read_file_if_exists(dir.path() / "out" / long_name), "hello\n");
  EXPECT_TRUE(reader.refused().empty());
}

TEST(Tar, ReaderRefusesNamesAndLinksThatLeaveTheFolder) {
  test::TempDir dir("mlw-remote");
  TarWriter tar;
  tar.add_data("../escaped.txt", "bad", 0644);
  tar.add_data("/tmp/absolute.txt", "bad", 0644);
  tar.add_data("outputs/a/../../../up.txt", "bad", 0644);
  tar.add_symlink("outputs/passwd", "/etc/passwd");
  tar.add_hard_link("outputs/hard", "/etc/shadow");
  tar.add_data("outputs/ok.txt", "ok", 0644);
  SafeTarReader reader(dir.path() / "in");
  reader.feed(drain(tar));
  const auto written = reader.finish();
  ASSERT_EQ(written, std::vector<std::string>{"outputs/ok.txt"});
  EXPECT_EQ(reader.refused().size(), 5u);
  EXPECT_FALSE(fs::exists(dir.path() / "escaped.txt"));
  EXPECT_FALSE(fs::exists(dir.path() / "up.txt"));
  EXPECT_FALSE(fs::is_symlink(dir.path() / "in" / "outputs" / "passwd"));
  EXPECT_NE(reader.refused()[3].find("a symlink to /etc/passwd"), std::string::npos);
}

TEST(Tar, ATruncatedArchiveIsAnError) {
  test::TempDir dir("mlw-remote");
  TarWriter tar;
  tar.add_data("outputs/x.txt", std::string(2000, 'y'), 0644);
  const std::string stream = drain(tar);
  SafeTarReader reader(dir.path() / "in");
  reader.feed(stream.substr(0, 1000));
  EXPECT_THROW(reader.finish(), Error);
}

TEST(Tar, SizeIsKnownBeforeTheStreamIsRead) {
  test::TempDir dir("mlw-remote");
  atomic_write_file(dir.path() / "big.bin", std::string(70000, 'b'));
  TarWriter tar;
  tar.add_directory("d");
  tar.add_file("d/big.bin", dir.path() / "big.bin", 70000, 0444);
  tar.add_data("d/" + std::string(150, 'n'), "x", 0644);
  tar.add_hard_link("d/link", "/home/u/.mlw/objects/" + std::string(120, 'a'));
  const std::uint64_t announced = tar.size();
  EXPECT_EQ(drain(tar).size(), announced);
}

}  // namespace mlw
