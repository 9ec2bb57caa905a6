#include "mlw/util/settings.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>

#include "mlw/util/error.hpp"

namespace mlw {
namespace {

/// Sets an environment variable for the length of a test.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (value) {
      ::setenv(name.c_str(), value, 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(Settings, UnsetOrEmptyGivesTheDefault) {
  ScopedEnv unset("MLW_SLURM_RETRY", nullptr);
  EXPECT_EQ(setting("MLW_SLURM_RETRY"), 300);
  ScopedEnv empty("MLW_ENGINE_RETRY", "");
  EXPECT_EQ(setting("MLW_ENGINE_RETRY"), 60);
}

TEST(Settings, AWholeNumberIsTaken) {
  ScopedEnv value("MLW_HISTORY_LOCK_TIMEOUT_MS", "0");
  EXPECT_EQ(setting("MLW_HISTORY_LOCK_TIMEOUT_MS"), 0);
  ScopedEnv seconds("MLW_SSH_CONNECT_TIMEOUT", "3");
  EXPECT_EQ(setting("MLW_SSH_CONNECT_TIMEOUT"), 3);
}

TEST(Settings, AnythingElseIsAnErrorNamingTheVariable) {
  for (const char* bad : {"abc", "5s", "-1", "1.5", " 7", "99999999999"}) {
    ScopedEnv value("MLW_RECONNECT_TIMEOUT", bad);
    try {
      setting("MLW_RECONNECT_TIMEOUT");
      FAIL() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("MLW_RECONNECT_TIMEOUT must be a whole number of "
                                           "seconds (at least 0), not \"" +
                                           std::string(bad) + "\""),
                std::string::npos)
          << e.what();
    }
  }
  ScopedEnv zero("MLW_ENGINE_RETRY", "0");
  EXPECT_THROW(setting("MLW_ENGINE_RETRY"), Error);  // below its minimum of 1
  EXPECT_THROW(check_settings(), Error);
}

TEST(Settings, TheKeptConnectionsOlderNameIsReadToo) {
  ScopedEnv unset("MLW_SSH_KEPT", nullptr);
  ScopedEnv old("MLW_SSH_LINGER", "0");
  EXPECT_EQ(setting("MLW_SSH_KEPT"), 0);
  ScopedEnv now("MLW_SSH_KEPT", "7");
  EXPECT_EQ(setting("MLW_SSH_KEPT"), 7);  // the new name wins
  ScopedEnv bad("MLW_SSH_KEPT", nullptr);
  ScopedEnv bad_old("MLW_SSH_LINGER", "soon");
  try {
    setting("MLW_SSH_KEPT");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("MLW_SSH_LINGER must be", 0), 0U) << e.what();
  }
}

TEST(Settings, DocsCliMdListsEachWithItsDefault) {
  std::ifstream file(std::string(MLW_TEST_DATA_DIR) + "/../../docs/cli.md");
  std::stringstream text;
  text << file.rdbuf();
  ASSERT_FALSE(text.str().empty());
  for (const Setting& row : settings()) {
    const std::string expected = "| `" + std::string(row.name) + "` | `" +
                                 std::to_string(row.default_value) + "` (" + std::string(row.unit) +
                                 ") | " + std::string(row.meaning);
    EXPECT_NE(text.str().find(expected), std::string::npos) << expected;
  }
}

}  // namespace
}  // namespace mlw
