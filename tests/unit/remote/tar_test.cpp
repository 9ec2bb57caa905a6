#include "mlw/remote/tar.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

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

/// A raw header as a hostile target could send it: any name, type, size field text; the
/// checksum right unless `bad_checksum`.
std::string raw_header(const std::string& name, char type, const std::string& size_field,
                       bool bad_checksum = false) {
  std::string h(512, '\0');
  std::copy_n(name.data(), std::min<std::size_t>(name.size(), 100), h.data());
  std::copy_n("0000644", 7, h.data() + 100);
  std::copy_n(size_field.data(), std::min<std::size_t>(size_field.size(), 12), h.data() + 124);
  h[156] = type;
  std::copy_n("ustar  ", 8, h.data() + 257);
  std::fill_n(h.data() + 148, 8, ' ');
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  if (bad_checksum) sum += 1;
  const std::string check = fmt::format("{:06o}", sum);
  std::copy_n(check.data(), 6, h.data() + 148);
  h[154] = '\0';
  return h;
}

std::string octal_size(std::uint64_t size) {
  return fmt::format("{:011o}", size);
}

std::string pad(std::string data) {
  data.resize((data.size() + 511) / 512 * 512, '\0');
  return data;
}

/// A stream with one good file, then `rest`.
std::string after_good_file(const std::string& rest) {
  return raw_header("outputs/good.txt", '0', octal_size(3)) + pad("ok\n") + rest;
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

TEST(Tar, AStreamedFileIsTheSameEntryAsItsContentHeld) {
  // data push takes objects from another machine's store through add_stream.
  const std::string content(70000, 's');
  TarWriter held;
  held.add_data("obj", content, 0444);
  std::size_t offset = 0;
  TarWriter streamed;
  streamed.add_stream("obj", content.size(), 0444, [&](char* buffer, std::size_t size) {
    const std::size_t n = std::min<std::size_t>({size, content.size() - offset, 999});
    std::copy_n(content.data() + offset, n, buffer);
    offset += n;
    return n;
  });
  EXPECT_EQ(streamed.size(), held.size());
  EXPECT_EQ(drain(streamed), drain(held));
}

TEST(Tar, AStreamedFileThatEndsEarlyIsAnError) {
  TarWriter tar;
  bool once = false;
  tar.add_stream("obj", 5000, 0444, [&](char* buffer, std::size_t) {
    if (once) return std::size_t{0};
    once = true;
    buffer[0] = 'x';
    return std::size_t{1};
  });
  EXPECT_THROW(drain(tar), Error);
}

TEST(Tar, APaxRecordOfLengthZeroEndsTheStreamInsteadOfLooping) {
  test::TempDir dir("mlw-remote");
  const std::string records = "0 path=x\n";
  SafeTarReader reader(dir.path() / "in");
  reader.feed(after_good_file(raw_header("pax", 'x', octal_size(records.size())) + pad(records) +
                              raw_header("outputs/next.txt", '0', octal_size(1)) + pad("n") +
                              std::string(1024, '\0')));
  EXPECT_TRUE(reader.failed());
  try {
    reader.finish();
    FAIL() << "a malformed pax record was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a malformed tar stream: a pax record whose length is wrong");
  }
  EXPECT_EQ(read_file_if_exists(dir.path() / "in/outputs/good.txt"), "ok\n");
  EXPECT_FALSE(fs::exists(dir.path() / "in/outputs/next.txt"));
}

TEST(Tar, PaxLengthsThatAreNotNumbersOrOverrunTheHeaderAreRefused) {
  for (const char* records : {"x path=a\n", "99999999999999999999999 path=a\n", "40 path=a\n",
                              "9 path=a\n\n", "-5 path=a\n", "12path=abcd\n"}) {
    test::TempDir dir("mlw-remote");
    SafeTarReader reader(dir.path() / "in");
    const std::string text = records;
    reader.feed(raw_header("pax", 'x', octal_size(text.size())) + pad(text));
    EXPECT_TRUE(reader.failed()) << records;
  }
  test::TempDir dir("mlw-remote");
  const std::string good = "22 path=outputs/p.txt\n";
  SafeTarReader reader(dir.path() / "in");
  reader.feed(raw_header("pax", 'x', octal_size(good.size())) + pad(good) +
              raw_header("short", '0', octal_size(2)) + pad("pp") + std::string(1024, '\0'));
  EXPECT_EQ(reader.finish(), std::vector<std::string>{"outputs/p.txt"});
}

TEST(Tar, AHugeLongNameIsRefusedAtItsHeaderWithoutReadingIt) {
  test::TempDir dir("mlw-remote");
  std::string size(12, '\0');
  size[0] = static_cast<char>(0x80);
  size[6] = 1;  // 2^40 in base-256
  SafeTarReader reader(dir.path() / "in");
  reader.feed(after_good_file(raw_header("././@LongLink", 'L', size)));
  reader.feed(std::string(1 << 20, 'a'));  // the rest is ignored, not kept
  EXPECT_TRUE(reader.failed());
  EXPECT_THROW(reader.finish(), Error);
  EXPECT_EQ(read_file_if_exists(dir.path() / "in/outputs/good.txt"), "ok\n");
  SafeTarReader limit(dir.path() / "in2");
  limit.feed(raw_header("././@LongLink", 'L', octal_size(4097)));
  EXPECT_TRUE(limit.failed());
  SafeTarReader pax(dir.path() / "in3");
  pax.feed(raw_header("pax", 'x', octal_size((1 << 20) + 1)));
  EXPECT_TRUE(pax.failed());
}

TEST(Tar, NumbersThatAreNotOctalAndWrongChecksumsAreMalformed) {
  for (const std::string& size :
       {std::string("12x"), std::string("99999999999"),
        std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")}) {
    test::TempDir dir("mlw-remote");
    SafeTarReader reader(dir.path() / "in");
    reader.feed(raw_header("outputs/a", '0', size));
    EXPECT_TRUE(reader.failed()) << size;
  }
  test::TempDir dir("mlw-remote");
  SafeTarReader reader(dir.path() / "in");
  reader.feed(after_good_file(raw_header("outputs/b", '0', octal_size(1), true) + pad("b")));
  try {
    reader.finish();
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "a malformed tar stream: a header whose checksum is wrong");
  }
  EXPECT_TRUE(fs::exists(dir.path() / "in/outputs/good.txt"));
  // Leading spaces and a space or NUL end are how real tars write numbers.
  SafeTarReader spaced(dir.path() / "in4");
  spaced.feed(raw_header("outputs/c", '0', "     3 ") + pad("ccc") + std::string(1024, '\0'));
  EXPECT_EQ(spaced.finish(), std::vector<std::string>{"outputs/c"});
}

TEST(Tar, AHardLinkToAFileAlreadyWrittenComesBackAsACopy) {
  test::TempDir dir("mlw-remote");
  TarWriter tar;
  tar.add_data("outputs/model.bin", "weights", 0644);
  tar.add_hard_link("outputs/best.bin", "outputs/model.bin");
  tar.add_hard_link("outputs/later.bin", "outputs/not-yet.bin");
  SafeTarReader reader(dir.path() / "in");
  reader.feed(drain(tar));
  EXPECT_EQ(reader.finish(), (std::vector<std::string>{"outputs/model.bin", "outputs/best.bin"}));
  EXPECT_EQ(read_file_if_exists(dir.path() / "in/outputs/best.bin"), "weights");
  ASSERT_EQ(reader.refused().size(), 1u);
  EXPECT_NE(reader.refused()[0].find("outputs/later.bin: a hard link"), std::string::npos);
}

}  // namespace mlw
