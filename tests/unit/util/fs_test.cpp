#include "mlw/util/fs.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include "temp_dir.hpp"

#include <cstdlib>

#include "mlw/util/error.hpp"

namespace mlw {

TEST(AtomicWriteFile, ReplacesContentAndSetsMode) {
  const test::TempDir temp("fs");
  const fs::path& dir = temp.path();
  atomic_write_file(dir / "a", "one", 0600);
  atomic_write_file(dir / "a", "two", 0600);
  EXPECT_EQ(read_file(dir / "a"), "two");
  struct stat info {};
  ASSERT_EQ(::stat((dir / "a").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  // No temporary files are left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(AtomicWriteFile, FailureLeavesTheOldFileAndSaysWhere) {
  const test::TempDir temp("fs");
  const fs::path& dir = temp.path();
  atomic_write_file(dir / "a", "old");
  try {
    atomic_write_file(dir / "missing" / "a", "new");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/a"), std::string::npos);
  }
  EXPECT_EQ(read_file(dir / "a"), "old");
}

TEST(UserConfigDirectory, FollowsXdgConfigHome) {
  ::setenv("XDG_CONFIG_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(user_config_directory(), fs::path("/tmp/xdg-test/mlw"));
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(user_config_directory(), home_directory() / ".config" / "mlw");
}

TEST(FindExecutable, SearchesPath) {
  EXPECT_TRUE(find_executable("sh"));
  EXPECT_FALSE(find_executable("definitely-not-a-program-mlw"));
  EXPECT_FALSE(find_executable(""));
}

}  // namespace mlw
