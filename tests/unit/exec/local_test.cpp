#include "mlw/exec/local.hpp"

#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <cstdlib>

#include "mlw/util/fs.hpp"

namespace mlw {

namespace {
RunPlan plan_for(const std::string& script, std::vector<std::string> args) {
  RunPlan plan;
  plan.project = {"/p/demo", "demo"};
  plan.target_name = "local";
  plan.run_config = default_run_config("local");
  plan.run_config.environment_variables = {{"FROM_RUNCONFIG", "1"}, {"MLW_RUN_ID", "spoofed"}};
  plan.script = script;
  plan.arguments = std::move(args);
  plan.extra_env = {{"FROM_CLI", "two words"}};
  plan.run_dir = "/p/demo/.mlw/runs/demo_1";
  plan.helper_dir = "/p/demo/.mlw/python/abc";
  plan.record.run_id = "demo_1";
  plan.compute.native_shared_directory = "/share";
  return plan;
}
}  // namespace

TEST(BuildLocalCommand, InterpreterScriptThenArgumentsUnchanged) {
  const auto spec = build_local_command(plan_for("train.py", {"--x", "", "a b", "$(id)"}),
                                        "/usr/bin/python3", {{"PATH", "/bin"}});
  EXPECT_EQ(spec.argv,
            (std::vector<std::string>{"/usr/bin/python3", "train.py", "--x", "", "a b", "$(id)"}));
  EXPECT_EQ(spec.cwd, std::filesystem::path("/p/demo/.mlw/runs/demo_1/snapshot"));
}

TEST(BuildLocalCommand, SetsRunVariablesOverUserOnes) {
  const auto spec = build_local_command(plan_for("t.py", {}), "python3",
                                        {{"PATH", "/bin"}, {"PYTHONPATH", "/mine"}});
  EXPECT_EQ(spec.env.at("PATH"), "/bin");
  EXPECT_EQ(spec.env.at("FROM_RUNCONFIG"), "1");
  EXPECT_EQ(spec.env.at("FROM_CLI"), "two words");
  EXPECT_EQ(spec.env.at("MLW_RUN_ID"), "demo_1");
  EXPECT_EQ(spec.env.at("MLW_TARGET"), "local");
  EXPECT_EQ(spec.env.at("MLW_PROJECT"), "demo");
  EXPECT_EQ(spec.env.at("MLW_OUTPUTS_DIR"), "/p/demo/.mlw/runs/demo_1/snapshot/outputs");
  EXPECT_EQ(spec.env.at("MLW_METRICS_FILE"), "/p/demo/.mlw/runs/demo_1/metrics.jsonl");
  EXPECT_EQ(spec.env.at("MLW_SHARE_DIR"),
            "/share/demo/local/");  // per project and target, 2017 slash
  EXPECT_EQ(spec.env.at("AZUREML_NATIVE_SHARE_DIRECTORY"), "/share/demo/local/");
  EXPECT_EQ(spec.env.at("PYTHONUNBUFFERED"), "1");
  EXPECT_EQ(spec.env.at("PYTHONPATH"), "/p/demo/.mlw/python/abc:/mine");
}

TEST(BuildLocalCommand, ArgumentVectorWithExtraWords) {
  RunPlan plan = plan_for("t.py", {"1"});
  plan.run_config.argument_vector = {"-X", "dev", "$file", "fixed"};
  const auto spec = build_local_command(plan, "python3", {});
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"python3", "-X", "dev", "t.py", "fixed", "1"}));
}

TEST(ResolveInterpreter, WorkbenchPythonFallsBackToPython3) {
  const test::TempDir temp("path");
  const std::filesystem::path& dir = temp.path();
  atomic_write_file(dir / "python3", "#!/bin/sh\n", 0755);
  const std::string old_path = std::getenv("PATH");
  ::setenv("PATH", dir.c_str(), 1);
  EXPECT_EQ(resolve_interpreter("python"), dir / "python3");
  EXPECT_EQ(resolve_interpreter("python3"), dir / "python3");
  EXPECT_FALSE(resolve_interpreter("python2"));
  atomic_write_file(dir / "python", "#!/bin/sh\n", 0755);
  EXPECT_EQ(resolve_interpreter("python"), dir / "python");  // a real `python` wins
  ::setenv("PATH", old_path.c_str(), 1);
}

}  // namespace mlw
