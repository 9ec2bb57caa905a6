// DataPull (issue 46): the contents of objects read from another machine's store while a push
// sends them on; this machine's /bin/sh plays that store (the same data.sh step runs over SSH).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "temp_dir.hpp"

#include "mlw/exec/data_store.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/sha256.hpp"

namespace mlw {

namespace {

/// A store with objects named by their content's hash; `names` in the order they were made.
struct OtherStore {
  test::TempDir dir{"mlw-pull"};
  DataStore store;
  std::vector<std::string> names;
  std::string contents;

  OtherStore() {
    store.owned = std::make_unique<LocalShell>();
    store.shell = store.owned.get();
    store.store = (dir.path() / "store").string();
    make_directories(dir.path() / "store" / "objects");
    for (int i = 0; i < 5; ++i) {
      // Large enough that the 8 MiB between the two sides fills and the step waits for the push.
      const std::string content(3'000'000 + i, static_cast<char>('a' + i));
      const std::string name = sha256_hex(content);
      atomic_write_file(dir.path() / "store" / "objects" / name, content);
      names.push_back(name);
      contents += content;
    }
  }
};

std::string read_all(DataPull& pull, std::size_t total) {
  std::string out;
  char buffer[70000];
  while (out.size() < total) out.append(buffer, pull.read(buffer, sizeof buffer));
  return out;
}

}  // namespace

TEST(DataPull, ReadsTheObjectsContentsInOrder) {
  OtherStore other;
  DataPull pull(other.store, other.names, other.contents.size());
  EXPECT_EQ(read_all(pull, other.contents.size()), other.contents);
}

TEST(DataPull, AnObjectTheStoreLacksIsAnErrorNamingIt) {
  OtherStore other;
  std::vector<std::string> names = other.names;
  names.push_back(std::string(64, 'f'));
  DataPull pull(other.store, names, other.contents.size() + 10);
  try {
    read_all(pull, other.contents.size() + 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("this store lacks " + std::string(64, 'f')),
              std::string::npos)
        << e.what();
  }
}

TEST(DataPull, LessThanAskedForIsAnError) {
  OtherStore other;
  DataPull pull(other.store, {other.names[0]}, 3'000'000 + 1);
  EXPECT_THROW(read_all(pull, 3'000'001), Error);
}

TEST(DataPull, StoppedHalfWayItEndsWithoutWaitingForTheRest) {
  OtherStore other;
  {
    DataPull pull(other.store, other.names, other.contents.size());
    char buffer[1000];
    EXPECT_GT(pull.read(buffer, sizeof buffer), 0U);
  }  // the destructor stops the step where it is and joins its thread
  SUCCEED();
}

}  // namespace mlw
