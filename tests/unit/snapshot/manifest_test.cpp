#include "mlw/snapshot/manifest.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h>
#include "temp_dir.hpp"

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/sha256.hpp"

namespace mlw {

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_base = m_temp.path();
    m_root = m_base / "proj";
    make_directories(m_root / "aml_config");
    write("train.py", "print('hi')\n", 0755);
    write("aml_config/local.compute", "type: local\n");
    write("data/big.csv", "1,2,3\n");
    write("data/keep.csv", "4\n");
    write(".mlw/history.db", "x");
    write("outputs/old.txt", "x");
    write(".git/HEAD", "ref: refs/heads/main\n");
    write("sub/outputs/kept.txt", "nested outputs are project files\n");
    write(".amlignore", "*.csv\n!keep.csv\n");
  }
  void write(const std::string& path, const std::string& text, mode_t mode = 0644) {
    make_directories((m_root / path).parent_path());
    atomic_write_file(m_root / path, text, mode);
  }
  Manifest build() { return build_snapshot(m_root, m_base / "objects", m_base / "hashes.tsv"); }
  std::vector<std::string> paths(const Manifest& m) {
    std::vector<std::string> out;
    for (const auto& e : m.entries) out.push_back(e.path);
    return out;
  }
  test::TempDir m_temp{"snap"};
  fs::path m_base, m_root;
};

TEST_F(ManifestTest, ExcludesAmlignoreGitMlwAndTopLevelOutputs) {
  const Manifest m = build();
  EXPECT_EQ(paths(m),
            (std::vector<std::string>{".amlignore", "aml_config/local.compute", "data/keep.csv",
                                      "sub/outputs/kept.txt", "train.py"}));
  for (const auto& e : m.entries) {
    EXPECT_EQ(e.sha256, sha256_file(m_root / e.path)) << e.path;
  }
  EXPECT_EQ(m.entries.back().mode, 0755u);
}

TEST_F(ManifestTest, AFolderOfDownloadedRunFilesIsLeftOut) {
  write("results/model.bin", "weights");
  write("results/.mlw-download", "# mlw\n");
  write("sub/results/x.txt", "kept: no marker\n");
  const auto p = paths(build());
  EXPECT_EQ(std::count_if(p.begin(), p.end(),
                          [](const std::string& path) { return path.rfind("results/", 0) == 0; }),
            0);
  EXPECT_NE(std::find(p.begin(), p.end(), "sub/results/x.txt"), p.end());
}

TEST_F(ManifestTest, HashChangesWithContentAndIsStableOtherwise) {
  const std::string first = build().hash();
  EXPECT_EQ(build().hash(), first);
  write("train.py", "print('changed')\n", 0755);
  EXPECT_NE(build().hash(), first);
}

TEST_F(ManifestTest, SymlinksLeavingTheProjectAreSkippedWithAWarning) {
  ASSERT_EQ(::symlink("/etc/passwd", (m_root / "passwd").c_str()), 0);
  ASSERT_EQ(::symlink("train.py", (m_root / "alias.py").c_str()), 0);
  const Manifest m = build();
  const auto p = paths(m);
  EXPECT_EQ(std::count(p.begin(), p.end(), "passwd"), 0);
  EXPECT_EQ(std::count(p.begin(), p.end(), "alias.py"), 1);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("passwd"), std::string::npos);
}

TEST_F(ManifestTest, MaterializedTreeHasTheSameFilesAndModes) {
  ASSERT_EQ(::symlink("train.py", (m_root / "alias.py").c_str()), 0);
  const Manifest m = build();
  materialize_snapshot(m, m_base / "objects", m_root, m_base / "run");
  EXPECT_EQ(read_file(m_base / "run" / "data/keep.csv"), "4\n");
  EXPECT_EQ(read_file(m_base / "run" / "alias.py"), "print('hi')\n");
  EXPECT_EQ(::access((m_base / "run" / "train.py").c_str(), X_OK), 0);
  EXPECT_FALSE(fs::exists(m_base / "run" / "data/big.csv"));
}

TEST_F(ManifestTest, AStoreObjectModifiedThroughARunIsReplaced) {
  const Manifest m = build();
  materialize_snapshot(m, m_base / "objects", m_root, m_base / "run1");
  // A script that rewrites a snapshot file in place (possible as root) must not poison later runs.
  ::chmod((m_base / "run1" / "data/keep.csv").c_str(), 0644);
  {
    FILE* f = std::fopen((m_base / "run1" / "data/keep.csv").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("poisoned\n", f);
    std::fclose(f);
  }
  const Manifest again = build();
  materialize_snapshot(again, m_base / "objects", m_root, m_base / "run2");
  EXPECT_EQ(read_file(m_base / "run2" / "data/keep.csv"), "4\n");
}

namespace {
void overwrite(const fs::path& path, const char* text) {
  ::chmod(path.c_str(), 0644);
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(text, f);
  std::fclose(f);
}
}  // namespace

TEST_F(ManifestTest, PreparedTreeIsAdoptedOnceAndMatchesTheSnapshot) {
  const Manifest m = build();
  prepare_tree(m, m.hash(), m_base / "trees", m_base / "objects", m_root);
  EXPECT_TRUE(fs::is_directory(m_base / "trees" / m.hash()));
  EXPECT_TRUE(adopt_prepared_tree(m, m.hash(), m_base / "trees", m_base / "objects", m_root,
                                  m_base / "run1"));
  EXPECT_EQ(read_file(m_base / "run1" / "train.py"), "print('hi')\n");
  EXPECT_FALSE(adopt_prepared_tree(m, m.hash(), m_base / "trees", m_base / "objects", m_root,
                                   m_base / "run2"));
}

TEST_F(ManifestTest, APreparedTreeWrittenThroughByARunIsRepaired) {
  const Manifest m = build();
  prepare_tree(m, m.hash(), m_base / "trees", m_base / "objects", m_root);
  materialize_snapshot(m, m_base / "objects", m_root, m_base / "run1");
  overwrite(m_base / "run1" / "train.py", "import os; os.system('evil')\n");  // shares the inode
  ASSERT_TRUE(adopt_prepared_tree(m, m.hash(), m_base / "trees", m_base / "objects", m_root,
                                  m_base / "run2"));
  EXPECT_EQ(read_file(m_base / "run2" / "train.py"), "print('hi')\n");
  EXPECT_EQ(::access((m_base / "run2" / "train.py").c_str(), X_OK), 0);
}

TEST_F(ManifestTest, PreparingATreeRemovesTreesOfOtherSnapshots) {
  const Manifest first = build();
  prepare_tree(first, first.hash(), m_base / "trees", m_base / "objects", m_root);
  write("train.py", "print('v2')\n", 0755);
  const Manifest second = build();
  prepare_tree(second, second.hash(), m_base / "trees", m_base / "objects", m_root);
  EXPECT_FALSE(fs::exists(m_base / "trees" / first.hash()));
  EXPECT_TRUE(fs::exists(m_base / "trees" / second.hash()));
}

TEST_F(ManifestTest, ManyNewFilesAreHashedInParallelEachUnderItsOwnHashWithProgress) {
  for (int i = 0; i < 200; ++i) {
    write("many/f" + std::to_string(i) + ".txt", std::string(1000 + i * 97, 'a' + i % 26));
  }
  std::size_t calls = 0, last_files = 0;
  std::uint64_t last_bytes = 0;
  const Manifest m =
      build_snapshot(m_root, m_base / "objects", m_base / "hashes.tsv",
                     [&](std::size_t files, std::uint64_t bytes) {
                       ++calls;
                       EXPECT_EQ(files, last_files + 1);  // one call at a time, in order
                       EXPECT_GT(bytes, last_bytes);
                       last_files = files;
                       last_bytes = bytes;
                     });
  EXPECT_EQ(m.entries.size(), 205u);
  for (const auto& e : m.entries) {
    ASSERT_EQ(e.sha256, sha256_file(m_root / e.path)) << e.path;
    const fs::path object = object_path(m_base / "objects", e.sha256, is_executable(e.mode));
    ASSERT_EQ(sha256_file(object), e.sha256) << e.path;
  }
  EXPECT_EQ(calls, 205u);
  EXPECT_EQ(last_bytes, m.total_bytes());
}

TEST_F(ManifestTest, AStoreThatCannotBeWrittenFailsTheSnapshotWithOneError) {
  for (int i = 0; i < 20; ++i) write("many/f" + std::to_string(i), std::to_string(i));
  atomic_write_file(m_base / "not-a-folder", "x");
  try {
    build_snapshot(m_root, m_base / "not-a-folder" / "objects", m_base / "hashes.tsv");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not-a-folder"), std::string::npos) << e.what();
  }
}

TEST_F(ManifestTest, AManifestReadBackIsTheSameSnapshot) {
  const Manifest m = build();
  const Manifest back = manifest_from_json(nlohmann::ordered_json::parse(m.to_json().dump()));
  EXPECT_EQ(back.hash(), m.hash());
  EXPECT_EQ(paths(back), paths(m));
}

TEST_F(ManifestTest, AManifestThatClimbsOutOrIsMalformedIsRefused) {
  const std::string sha(64, 'a');
  for (const char* text :
       {R"({"path":"x"})", R"([{"path":"../x","size":1,"mode":"0644","sha256":"SHA"}])",
        R"([{"path":"a/../../x","size":1,"mode":"0644","sha256":"SHA"}])",
        R"([{"path":"/etc/x","size":1,"mode":"0644","sha256":"SHA"}])",
        R"([{"path":"x","size":-1,"mode":"0644","sha256":"SHA"}])",
        R"([{"path":"x","size":1,"mode":"9","sha256":"SHA"}])",
        R"([{"path":"x","size":1,"mode":"0644","sha256":"short"}])",
        // A mode too long for any number (the fuzzer's find), a digest that names a path.
        R"([{"path":"x","size":1,"mode":"0644444444444444444444444","sha256":"SHA"}])",
        R"([{"path":"x","size":1,"mode":"0644","sha256":"CLIMB"}])"}) {
    std::string json = text;
    if (const auto at = json.find("SHA"); at != std::string::npos) json.replace(at, 3, sha);
    const std::string climb = "../../../../../../../../../../../../../../../../../../../../etc/";
    if (const auto at = json.find("CLIMB"); at != std::string::npos) json.replace(at, 5, climb);
    EXPECT_THROW(manifest_from_json(nlohmann::ordered_json::parse(json)), Error) << json;
  }
}

// A hand-made manifest (issue 45): a link entry, then a file "under" it. Restored in order, the
// file would be written through the link, outside the tree being made.
TEST_F(ManifestTest, AnEntryUnderALinkEntryIsRefusedAndNothingIsWrittenOutside) {
  const Manifest m = build();
  const std::string sha = m.entries.front().sha256;
  make_directories(m_base / "outside");
  for (const std::string order : {"link first", "file first"}) {
    const std::string link = R"({"path":"out","size":0,"mode":"0777","link":")" +
                             (m_base / "outside").string() + R"("})";
    const std::string file =
        R"({"path":"out/pwned.py","size":12,"mode":"0644","sha256":")" + sha + R"("})";
    const std::string json =
        "[" + (order == "link first" ? link + "," + file : file + "," + link) + "]";
    EXPECT_THROW(manifest_from_json(nlohmann::ordered_json::parse(json)), Error) << order;
  }
  // And the restore itself checks each path against the links it restored, whatever built the
  // manifest.
  Manifest forged;
  ManifestEntry link;
  link.path = "a/out";
  link.mode = 0777;
  link.link_target = (m_base / "outside").string();
  ManifestEntry file = m.entries.front();
  file.path = "a/out/sub/pwned.py";
  forged.entries = {link, file};
  EXPECT_THROW(materialize_snapshot(forged, m_base / "objects", m_root, m_base / "tree"), Error);
  EXPECT_FALSE(fs::exists(m_base / "outside" / "sub"));
  // "a/outside" is not under "a/out": a name that only starts the same is no link's child.
  file.path = "a/outside.py";
  forged.entries = {link, file};
  EXPECT_NO_THROW(materialize_snapshot(forged, m_base / "objects", m_root, m_base / "tree2"));
}

TEST_F(ManifestTest, AStoreThatLostAnObjectIsRestoredFromARunFolderWithTheRightContent) {
  const Manifest m = build();
  materialize_snapshot(m, m_base / "objects", m_root, m_base / "run1");
  fs::remove_all(m_base / "objects");
  EXPECT_TRUE(restore_snapshot_objects(m, m_base / "objects", m_base / "run1").empty());
  materialize_snapshot(m, m_base / "objects", m_base / "nowhere", m_base / "run2");
  EXPECT_EQ(read_file(m_base / "run2" / "train.py"), "print('hi')\n");
  // A copy that a run wrote to is not the snapshot's content: the file is named as missing.
  fs::remove_all(m_base / "objects");
  overwrite(m_base / "run1" / "train.py", "print('no')\n");
  EXPECT_EQ(restore_snapshot_objects(m, m_base / "objects", m_base / "run1"),
            std::vector<std::string>{"train.py"});
}

}  // namespace mlw
