// Data sets (issue 46): the manifest's one written form and its reader, the folder's hashing with
// the stat cache and its racy window, versions in the catalog, and the names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "temp_dir.hpp"

#include "mlw/data/catalog.hpp"
#include "mlw/data/dataset.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/sha256.hpp"

namespace mlw {

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

DataManifest odd_manifest() {
  DataManifest m;
  m.entries.push_back({"a b%c.txt", 3, 0644, std::string(64, 'a'), ""});
  m.entries.push_back({std::string("caf\xe9\n\t.bin"), 5, 0755, std::string(64, 'b'), ""});
  m.entries.push_back({"d/link", 0, 0777, "", "../a b%c.txt"});
  m.entries.push_back({"d/\xc3\xa9t\xc3\xa9", 0, 0600, std::string(64, 'c'), ""});
  return m;
}

}  // namespace

TEST(DataManifest, ItsTextReadsBackByteForByte) {
  const DataManifest m = odd_manifest();
  const std::string text = m.text();
  EXPECT_NE(text.find("F " + std::string(64, 'a') + " 3 644 a%20b%25c.txt\n"), std::string::npos);
  EXPECT_NE(text.find("caf%E9%0A%09.bin"), std::string::npos) << "not UTF-8, a newline, a tab";
  EXPECT_NE(text.find("d/\xc3\xa9t\xc3\xa9"), std::string::npos) << "UTF-8 stays as it is";
  const DataManifest back = read_data_manifest(text, "m");
  ASSERT_EQ(back.entries.size(), m.entries.size());
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].path, m.entries[i].path);
    EXPECT_EQ(back.entries[i].mode, m.entries[i].mode);
    EXPECT_EQ(back.entries[i].sha256, m.entries[i].sha256);
    EXPECT_EQ(back.entries[i].link_target, m.entries[i].link_target);
  }
  EXPECT_EQ(back.id(), m.id());
  EXPECT_EQ(m.id(), sha256_hex(text));
  EXPECT_EQ(m.files(), 3U);
  EXPECT_EQ(m.bytes(), 8U);
}

TEST(DataManifest, TheReaderRefusesAnythingElse) {
  const std::string sha(64, 'a');
  const std::string head = "mlw-data 1\n";
  for (const std::string& bad : {
           std::string(),                                            // empty
           std::string("mlw-data 2\n"),                              // another format
           head + "F " + sha + " 1 644 a",                           // no final new line
           head + "F " + sha + " 1 644 b\nF " + sha + " 1 644 a\n",  // unsorted
           head + "F " + sha + " 1 644 a\nF " + sha + " 1 644 a\n",  // repeated
           head + "F " + sha + " 1 644 ../x\n",                      // leaves the folder
           head + "F " + sha + " 1 644 /etc/passwd\n",               // absolute
           head + "F " + sha + " 1 644 a//b\n",                      // an empty component
           head + "F " + sha.substr(1) + " 1 644 a\n",               // a short hash
           head + "F " + std::string(64, 'A') + " 1 644 a\n",        // upper case
           head + "F " + sha + " -1 644 a\n",                        // a negative size
           head + "F " + sha + " 01 644 a\n",                        // not its written form
           head + "F " + sha + " 1 0644 a\n",                        // a mode not as written
           head + "F " + sha + " 1 648 a\n",                         // not octal
           head + "F " + sha + " 1 644 %41\n",                       // "A" escaped
           head + "F " + sha + " 1 644 a%2\n",                       // a cut escape
           head + "F " + sha + " 1 644 a b\n",                       // a space not escaped
           head + "L /etc/passwd a\n",                               // an absolute link
           head + "X " + sha + " 1 644 a\n",                         // an unknown kind
           head + "F " + sha + " 1 644 a/\n",                        // a folder's path
           head + "F " + sha + " 1 644 a/./b\n",                     // a "." component
           head + "F " + sha + " 1 644 ./a\n",                       // … first
           head + "F " + sha + " 1 644 a/..\n",                      // a ".." component, last
           head + "F " + sha + " 1125899906842625 644 a\n",          // over 2^50 bytes
           head + "F " + sha + " 99999999999999999999999 644 a\n",   // over 64 bits
           head + "F " + sha + " +1 644 a\n",                        // a sign
           head + "F " + sha + " 1 1000 a\n",                        // over 0777
           head + "F " + sha + " 1 00 a\n",                          // "0" written twice
           head + "F " + sha + " 1  644 a\n",                        // two spaces
           head + "F " + sha + " 1 644 a\x7f\n",                     // a control byte
           head + "F " + sha + " 1 644 \n",                          // no path
           head + "F " + sha + "0 1 644 a\n",                        // a hash too long
       }) {
    EXPECT_THROW(read_data_manifest(bad, "m"), Error) << bad;
  }
  try {
    read_data_manifest(head + "F " + sha + " 1 644 ../x\n", ".mlw/data/ds/manifests/x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              ".mlw/data/ds/manifests/x:2: the path is not a relative path inside the folder");
  }
}

TEST(DataManifest, TheLimitsOfTheCommonLineAreTakenAsTheOtherLinesAre) {
  const std::string sha(64, 'f');
  const std::string head = "mlw-data 1\n";
  // The edges that the reader takes without copying a field: the largest size, mode 0, a
  // path of printable ASCII only, and one that needs an escape (read the other way).
  const std::string text = head + "F " + sha + " 1125899906842624 0 a/b~c\n" + "F " + sha +
                           " 0 755 a/b~d%20e\n" + "F " + sha + " 7 1 z\n";
  const DataManifest m = read_data_manifest(text, "m");
  ASSERT_EQ(m.entries.size(), 3U);
  EXPECT_EQ(m.entries[0].size, 1ULL << 50);
  EXPECT_EQ(m.entries[0].mode, 0U);
  EXPECT_EQ(m.entries[0].path, "a/b~c");
  EXPECT_EQ(m.entries[1].path, "a/b~d e");
  EXPECT_EQ(m.entries[1].mode, 0755U);
  EXPECT_EQ(m.entries[2].mode, 01U);
  EXPECT_EQ(m.entries[2].sha256, sha);
  EXPECT_EQ(m.text(), text);
}

TEST(DataManifest, DiffSaysAddedRemovedAndChanged) {
  DataManifest a;
  a.entries = {{"a", 1, 0644, std::string(64, '1'), ""},
               {"b", 1, 0644, std::string(64, '2'), ""},
               {"c", 1, 0644, std::string(64, '3'), ""}};
  DataManifest b;
  b.entries = {{"b", 1, 0644, std::string(64, '9'), ""},
               {"c", 1, 0755, std::string(64, '3'), ""},
               {"d", 1, 0644, std::string(64, '4'), ""}};
  const DataDiff diff = diff_data(a, b);
  EXPECT_EQ(diff.added, std::vector<std::string>{"d"});
  EXPECT_EQ(diff.removed, std::vector<std::string>{"a"});
  EXPECT_EQ(diff.changed, (std::vector<std::string>{"b", "c"}));
}

TEST(DataHash, HashesEveryFileAndSkipsLinksThatLeave) {
  test::TempDir dir("data-hash");
  const fs::path root = dir.path() / "ds";
  write(root / "x/one.txt", "one\n");
  write(root / "two.bin", std::string(300000, 'z'));
  fs::create_symlink("x/one.txt", root / "inside");
  fs::create_symlink("/etc/passwd", root / "outside");
  ASSERT_EQ(::mkfifo((root / "pipe").c_str(), 0600), 0);
  HashReport report;
  const DataManifest m = hash_folder(root, dir.path() / "cache", now_ns(), report);
  ASSERT_EQ(m.entries.size(), 3U);
  EXPECT_EQ(m.entries[0].path, "inside");
  EXPECT_EQ(m.entries[0].link_target, "x/one.txt");
  EXPECT_EQ(m.entries[1].path, "two.bin");
  EXPECT_EQ(m.entries[1].sha256, sha256_hex(std::string(300000, 'z')));
  EXPECT_EQ(m.entries[2].path, "x/one.txt");
  EXPECT_EQ(m.entries[2].sha256, sha256_hex("one\n"));
  EXPECT_EQ(report.files_read, 2U);
  ASSERT_EQ(report.warnings.size(), 2U);
  const std::string said = report.warnings[0] + "\n" + report.warnings[1];
  EXPECT_NE(said.find("skipped link outside: it points outside the folder"), std::string::npos);
  EXPECT_NE(said.find("skipped pipe: not a file, a folder or a link"), std::string::npos);
}

TEST(DataHash, AFirstAddRecordsEachFilesSizeAndModeAsALaterOneDoes) {
  // A first add (no stat cache) stats each file once it is open, not in the listing: the
  // manifest is the same as one whose listing stat'ed them.
  test::TempDir dir("data-first");
  const fs::path root = dir.path() / "ds";
  write(root / "run.sh", "#!/bin/sh\n");
  write(root / "d/empty", "");
  write(root / "d/big.bin", std::string(70000, 'q'));
  fs::permissions(root / "run.sh", fs::perms(0755));
  fs::permissions(root / "d/big.bin", fs::perms(0640));
  const fs::path cache = dir.path() / "cache";
  HashReport first;
  const DataManifest m = hash_folder(root, cache, now_ns(), first);
  ASSERT_EQ(m.entries.size(), 3U);
  EXPECT_EQ(m.entries[0].path, "d/big.bin");
  EXPECT_EQ(m.entries[0].size, 70000U);
  EXPECT_EQ(m.entries[0].mode, 0640U);
  EXPECT_EQ(m.entries[1].size, 0U);
  EXPECT_EQ(m.entries[1].sha256, sha256_hex(""));
  EXPECT_EQ(m.entries[2].mode, 0755U);
  EXPECT_EQ(m.entries[2].size, 10U);
  EXPECT_EQ(first.bytes_read, 70010U);
  ASSERT_TRUE(fs::exists(cache));
  HashReport again;
  const DataManifest cached = hash_folder(root, cache, now_ns(), again);
  EXPECT_EQ(cached.text(), m.text());
}

TEST(DataHash, TheStatCacheIsTrustedOnlyOutsideTheRacyWindow) {
  test::TempDir dir("data-racy");
  const fs::path root = dir.path() / "ds";
  const fs::path cache = dir.path() / "cache";
  write(root / "a.txt", "aaaa");
  write(root / "b.txt", "bbbb");
  HashReport first;
  hash_folder(root, cache, now_ns(), first);
  EXPECT_EQ(first.files_read, 2U);
  // Changed within 2 s of the hashing that cached it: it may have changed again since within
  // the clock's resolution, keeping its times, so it is read again.
  HashReport racy;
  hash_folder(root, cache, now_ns(), racy);
  EXPECT_EQ(racy.files_read, 2U);
  // Cached by a hashing that began well after the files last changed: trusted, not read.
  const std::int64_t later = now_ns() + 10'000'000'000LL;
  HashReport settle;
  hash_folder(root, cache, later, settle);
  HashReport trusted;
  const DataManifest m = hash_folder(root, cache, later + 1, trusted);
  EXPECT_EQ(trusted.files_read, 0U);
  EXPECT_EQ(m.entries[0].sha256, sha256_hex("aaaa"));
  // A file rewritten (same size: its times and inode tell) is read again.
  write(root / "b.txt", "BBBB");
  HashReport changed;
  const DataManifest after = hash_folder(root, cache, later + 2, changed);
  EXPECT_EQ(changed.files_read, 1U);
  EXPECT_EQ(after.entries[1].sha256, sha256_hex("BBBB"));
}

TEST(DataCatalog, VersionsAreNumberedAndNamedByTheirIds) {
  test::TempDir dir("data-catalog");
  DataCatalog catalog(dir.path());
  DataManifest one;
  one.entries = {{"a", 1, 0644, std::string(64, '1'), ""}};
  DataManifest two;
  two.entries = {{"a", 1, 0644, std::string(64, '2'), ""}};
  bool added = false;
  const DataVersion v1 = catalog.add("ds", one, "/src", "first", 1000, added);
  EXPECT_TRUE(added);
  EXPECT_EQ(v1.label(), "ds@1");
  EXPECT_EQ(catalog.add("ds", one, "/src", "again", 2000, added).number, 1);
  EXPECT_FALSE(added) << "an unchanged folder is no new version";
  const DataVersion v2 = catalog.add("ds", two, "/src", "second", 3000, added);
  EXPECT_EQ(v2.number, 2);
  EXPECT_EQ(catalog.resolve("ds").number, 2);
  EXPECT_EQ(catalog.resolve("ds@1").id, v1.id);
  EXPECT_EQ(catalog.resolve("ds@" + v2.id.substr(0, 7)).number, 2);
  EXPECT_THROW(catalog.resolve("ds@3"), Error);
  EXPECT_THROW(catalog.resolve("nope"), Error);
  // An id whose first digits are all decimal ones names it too (where no version has that number).
  DataManifest digits;
  int tries = 0;
  do {
    digits.entries = {{"n" + std::to_string(tries++), 1, 0644, std::string(64, '3'), ""}};
  } while (digits.id().find_first_not_of("0123456789") < 5 && tries < 10000);
  const DataVersion v3 = catalog.add("ds", digits, "/src", "third", 4000, added);
  EXPECT_EQ(catalog.resolve("ds@" + v3.id.substr(0, 5)).number, 3);
  EXPECT_EQ(catalog.resolve("ds@3").number, 3);
  EXPECT_EQ(catalog.manifest(v1).entries[0].sha256, std::string(64, '1'));
  // A manifest changed by hand is not the version any more.
  const fs::path file = dir.path() / "data/ds/manifests" / v1.id;
  fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
  write(file, two.text());
  EXPECT_THROW(catalog.manifest(v1), Error);
  catalog.forget(v1);
  EXPECT_THROW(catalog.resolve("ds@1"), Error);
  catalog.note_target(v2.id, "gpu", true);
  EXPECT_EQ(catalog.holders(v2.id), std::vector<std::string>{"gpu"});
  catalog.note_target(v2.id, "gpu", false);
  EXPECT_TRUE(catalog.holders(v2.id).empty());
}

TEST(DataNames, NamesVariablesAndRequests) {
  for (const std::string good : {"imagenet", "a_b-c.d", "_x", "A1"}) {
    EXPECT_NO_THROW(check_data_name(good)) << good;
  }
  for (const std::string& bad : std::vector<std::string>{"", "a/b", "a@b", "a b", "caf\xc3\xa9",
                                                         ".x", "-x", std::string(65, 'a'), "a:b"}) {
    EXPECT_THROW(check_data_name(bad), UsageError) << bad;
  }
  EXPECT_EQ(data_variable("image-net.v2"), "MLW_DATA_IMAGE_NET_V2");
  const DataRequest plain = parse_data_request("ds");
  EXPECT_EQ(plain.spec, "ds");
  EXPECT_EQ(plain.mount, "");
  const DataRequest full = parse_data_request("ds@3:/data/in");
  EXPECT_EQ(full.spec, "ds@3");
  EXPECT_EQ(full.mount, "/data/in");
  for (const std::string bad : {"ds:relative", "ds:/a/../b", "ds:/a,b", "ds:/", "ds:/a:b"}) {
    EXPECT_THROW(parse_data_request(bad), UsageError) << bad;
  }
}

}  // namespace mlw
