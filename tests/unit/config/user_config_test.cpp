#include "mlw/config/user_config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

std::string error_of(const fs::path& path, const std::string& text) {
  atomic_write_file(path, text);
  try {
    read_user_config(path, "config.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(UserConfig, AMissingFileIsEmptyAndWrittenValuesComeBack) {
  test::TempDir dir("userconfig");
  const fs::path file = dir.path() / "mlw" / "config.yaml";
  EXPECT_TRUE(read_user_config(file, "config.yaml").empty());
  write_user_config(file, {{"defaults.target", "my_dsvm"}, {"core.no_color", "true"}});
  const auto values = read_user_config(file, "config.yaml");
  EXPECT_EQ(values.at("defaults.target"), "my_dsvm");
  EXPECT_EQ(values.at("core.no_color"), "true");
  write_user_config(file, {});
  EXPECT_FALSE(fs::exists(file));
}

TEST(UserConfig, ABrokenFileSaysWhereAndWhat) {
  test::TempDir dir("userconfig");
  const fs::path file = dir.path() / "config.yaml";
  EXPECT_EQ(error_of(file, "defaults:\n  targt: x\n"),
            "config.yaml:2:3: unknown config key \"defaults.targt\" (did you mean "
            "\"defaults.target\"?)");
  EXPECT_EQ(error_of(file, "core:\n  no_color: maybe\n"),
            "config.yaml:2:13: core.no_color must be true or false (got \"maybe\")");
  EXPECT_NE(error_of(file, "defaults:\n  target: [x\n").find("config.yaml:3:1: malformed YAML"),
            std::string::npos);
  EXPECT_NE(error_of(file, "defaults: 3\n").find("config.yaml:1:1: \"defaults\" must hold keys"),
            std::string::npos);
  EXPECT_NE(error_of(file, "defaults:\n  output: xml\n").find("config.yaml:2:11:"),
            std::string::npos);
}

TEST(UserConfig, ValuesAreCheckedByKey) {
  EXPECT_EQ(check_user_value(find_user_key("core.no_color"), "yes", "x"), "true");
  EXPECT_EQ(check_user_value(find_user_key("core.no_color"), "0", "x"), "false");
  EXPECT_THROW(check_user_value(find_user_key("defaults.output"), "xml", "x"), UsageError);
  EXPECT_THROW(check_user_value(find_user_key("defaults.target"), "../x", "x"), UsageError);
  EXPECT_THROW(find_user_key("defaults.targt"), UsageError);
}

TEST(UserConfig, TheEnvironmentIsOverTheProjectWhichIsOverTheUser) {
  test::TempDir dir("userconfig");
  const fs::path user = dir.path() / "user.yaml";
  const fs::path project = dir.path() / "project.yaml";
  write_user_config(
      user, {{"defaults.target", "a"}, {"defaults.output", "yaml"}, {"core.no_color", "true"}});
  write_user_config(project, {{"defaults.target", "b"}, {"defaults.output", "tsv"}});
  ::setenv("MLW_OUTPUT", "json", 1);
  ::unsetenv("MLW_DEFAULT_TARGET");
  ::unsetenv("MLW_NO_COLOR");
  const auto values = effective_config(user, project, ".mlw/config.yaml");
  ::unsetenv("MLW_OUTPUT");
  EXPECT_EQ(values.at("defaults.output").value, "json");
  EXPECT_EQ(values.at("defaults.output").origin, "env: MLW_OUTPUT");
  EXPECT_EQ(values.at("defaults.target").value, "b");
  EXPECT_EQ(values.at("defaults.target").origin, "project: .mlw/config.yaml");
  EXPECT_EQ(values.at("core.no_color").origin, "user: " + user.string());
  EXPECT_EQ(values.count("core.only_show_errors"), 0u);
}

}  // namespace mlw
