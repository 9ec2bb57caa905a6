#include "mlw/config/run_config.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

TEST(RunConfig, LoadsWorkbenchYamlWithIgnoredKeysNoted) {
  const fs::path data = fs::path(MLW_TEST_DATA_DIR) / "workbench2017";
  ConfigDocument doc = load_config_file(data / "docker.runconfig", "docker.runconfig");
  std::vector<std::string> ignored;
  const RunConfig config = parse_run_config(doc, &ignored);
  EXPECT_EQ(config.target, "docker");
  EXPECT_EQ(config.framework, "PySpark");
  EXPECT_EQ(config.environment_variables.at("EXAMPLE_ENV_VAR"), "Example Value");
  EXPECT_EQ(ignored, (std::vector<std::string>{"DataSourceSubstitutions", "UseSampling"}));
  EXPECT_TRUE(doc.warnings.empty());
}

TEST(RunConfig, LoadsThe2017JsonFormat) {
  const fs::path data = fs::path(MLW_TEST_DATA_DIR) / "workbench2017";
  ConfigDocument doc = load_config_file(data / "local.runconfig", "local.runconfig");
  const RunConfig config = parse_run_config(doc);
  EXPECT_EQ(config.argument_vector, std::vector<std::string>{"$file"});
  EXPECT_EQ(config.framework, "Python");
  EXPECT_FALSE(config.prepare_environment);
}

TEST(RunConfig, NullEnvironmentIsEmptyAndMissingFrameworkIsPySpark) {
  ConfigDocument doc = parse_config_text("Target: x\nEnvironmentVariables: null\n", "r");
  const RunConfig config = parse_run_config(doc);
  EXPECT_TRUE(config.environment_variables.empty());
  EXPECT_EQ(config.framework, "PySpark");  // Workbench's default
}

TEST(RunConfig, BadFrameworkIsAnErrorWithPosition) {
  ConfigDocument doc = parse_config_text("Target: x\nFramework: Pythn\n", "aml_config/l.runconfig");
  try {
    parse_run_config(doc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "aml_config/l.runconfig:2:12: Framework must be one of Python, PySpark (got \"Pythn\") "
        "(did you mean \"Python\"?)");
  }
}

TEST(RunConfig, ArgumentVectorReplacesFileThenAppendsArguments) {
  RunConfig config;
  config.argument_vector = {"-u", "$file", "--fixed"};
  EXPECT_EQ(expand_argument_vector(config, "train.py", {"--epochs", "3"}),
            (std::vector<std::string>{"-u", "train.py", "--fixed", "--epochs", "3"}));
}

TEST(RunConfig, DefaultForNewTargetsIsPythonAndRoundTrips) {
  const RunConfig config = default_run_config("gpu");
  ConfigDocument doc = parse_config_text(render_run_config(config, "gpu"), "r");
  const RunConfig back = parse_run_config(doc);
  EXPECT_EQ(back.target, "gpu");
  EXPECT_EQ(back.framework, "Python");
  EXPECT_TRUE(back.prepare_environment);
  EXPECT_TRUE(doc.warnings.empty());
}

TEST(RunConfig, AKeyGivenTwiceIsAnErrorNamingBothLines) {
  // The guide's edit: "Framework": "Python" added above the Framework line mlw wrote.
  const std::string text =
      render_run_config(default_run_config("my_dsvm"), "my_dsvm") + "\"Framework\": \"PySpark\"\n";
  try {
    parse_config_text(text, "aml_config/my_dsvm.runconfig");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("\"Framework\" is given twice (first at aml_config/my_dsvm.runconfig:"),
              std::string::npos)
        << message;
  }
  EXPECT_THROW(parse_config_text("EnvironmentVariables:\n  A: 1\n  A: 2\n", "r"), Error);
}

TEST(RunConfig, EnvironmentVariableNamesAreCheckedAsMinusEDoes) {
  for (const auto& [text, column] :
       std::vector<std::pair<std::string, std::string>>{{"  MY-VAR: 1\n", "3:3"},
                                                        {"  X=$(id -un > /tmp/f): 1\n", "3:3"},
                                                        {"  1ST: a\n", "3:3"},
                                                        {"  \"\": a\n", "3:3"}}) {
    ConfigDocument doc = parse_config_text("Target: x\nEnvironmentVariables:\n  OK_1: v\n" + text,
                                           "aml_config/x.runconfig");
    try {
      parse_run_config(doc);
      FAIL() << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("aml_config/x.runconfig:4:3: "), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot name an environment variable"),
                std::string::npos);
    }
  }
  ConfigDocument doc = parse_config_text("EnvironmentVariables:\n  _a9: \"$(x) ' end\"\n", "r");
  EXPECT_EQ(parse_run_config(doc).environment_variables.at("_a9"), "$(x) ' end");
}

}  // namespace mlw
