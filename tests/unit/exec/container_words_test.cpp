// The programs that run inside a container before the script (src/exec/words.sh, gpus.sh,
// spark.sh), run here by /bin/sh with the words mlw gives docker; stand-ins for nvidia-smi and
// spark-submit first on PATH.
#include <gtest/gtest.h>

#include "mlw/exec/container.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "plans.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

using Ran = test::CommandResult;

/// Runs `words` (no shell reads them but the programs themselves) with `path` first on PATH.
Ran run_words(const std::vector<std::string>& words, const std::string& path = "/nonexistent") {
  return test::run_command("PATH=" + shell_quote(path) + ":/usr/bin:/bin exec " +
                           shell_join(words) + " 2>&1");
}

void stand_in(const fs::path& dir, const std::string& name, const std::string& body) {
  make_directories(dir);
  atomic_write_file(dir / name, "#!/bin/sh\n" + body);
  fs::permissions(dir / name, fs::perms::owner_all);
}

}  // namespace

// Words and values that are not UTF-8 reach the command byte for byte, trailing newlines kept.
TEST(ContainerWords, BytesThatAreNotUtf8ReachTheCommandIntact) {
  test::TempDir dir("mlw-words");
  RunPlan plan = test::demo_plan(dir.path());
  plan.run_config.environment_variables = {{"ODD", "v\xe9\n"}, {"FINE", "plain"}};
  const std::vector<std::string> command = {
      "/bin/sh",
      "-c",
      "printf '<%s>' \"$@\"; printf '[%s][%s]' \"$ODD\" \"${FINE-unset}\"",
      "x",
      "caf\xe9",
      "two\nlines\n",
      "%s 'q' $HOME \\"};
  const auto words = utf8_command(plan, command);
  for (const auto& word : words) EXPECT_TRUE(passes_docker(word)) << word;
  EXPECT_EQ(words.at(3), "mlw-words");
  const Ran ran = run_words(words);
  EXPECT_EQ(ran.status, 0) << ran.output;
  // FINE passes through docker by name (-e FINE), not through words.sh.
  EXPECT_EQ(ran.output, "<caf\xe9><two\nlines\n><%s 'q' $HOME \\>[v\xe9\n][unset]");
  // All UTF-8: the words as they were.
  plan.run_config.environment_variables = {{"FINE", "plain"}};
  EXPECT_EQ(utf8_command(plan, {"python3", "train.py", "héllo"}),
            (std::vector<std::string>{"python3", "train.py", "héllo"}));
}

TEST(ContainerWords, GpuRunsPrintTheGpusNvidiaSmiListsThenRunTheScript) {
  test::TempDir dir("mlw-words");
  RunPlan plan = test::demo_plan(dir.path());
  plan.compute.nvidia_docker = true;
  plan.run_config.framework = "Python";
  auto words = container_command(plan);
  ASSERT_EQ(std::vector<std::string>(words.begin() + 4, words.end()), script_command(plan));
  words.resize(4);
  words.insert(words.end(), {"echo", "the script", "ran"});
  const fs::path bin = dir.path() / "bin";
  stand_in(bin, "nvidia-smi", "printf '0, NVIDIA H100, 81559 MiB, 00000000:01:00.0\\n'\n");
  EXPECT_EQ(run_words(words, bin.string()).output,
            "mlw: GPUs seen by this run:\nmlw:   GPU 0, NVIDIA H100, 81559 MiB, "
            "00000000:01:00.0\nthe script ran\n");
  stand_in(bin, "nvidia-smi", "exit 9\n");
  EXPECT_EQ(run_words(words, bin.string()).output,
            "mlw: GPUs seen by this run: none (nvidia-smi lists no GPU in the container)\nthe "
            "script ran\n");
}

TEST(ContainerWords, PySparkWithoutSparkSubmitIsExplainedWithExit127) {
  test::TempDir dir("mlw-words");
  RunPlan plan = test::demo_plan(dir.path());
  plan.record.run_config = "my_dsvm";
  plan.run_config.framework = "PySpark";
  const auto words = script_command(plan);
  const Ran missing = run_words(words);
  EXPECT_EQ(missing.status, 127);
  EXPECT_TRUE(starts_with(missing.output, "mlw: error: Framework is PySpark")) << missing.output;
  EXPECT_NE(missing.output.find("set Framework: Python in aml_config/my_dsvm.runconfig"),
            std::string::npos)
      << missing.output;
  const fs::path bin = dir.path() / "bin";
  stand_in(bin, "spark-submit", "echo \"spark-submit $*\"\nexit 4\n");
  const Ran ran = run_words(words, bin.string());
  EXPECT_EQ(ran.status, 4);
  EXPECT_EQ(ran.output, "spark-submit train.py\n");
  plan.run_config.framework = "Python";
  EXPECT_EQ(script_command(plan), (std::vector<std::string>{"python3", "train.py"}));
  // A TPE trial whose point is proposed there: the script under mlw.propose (Python only).
  plan.propose_on_target = true;
  EXPECT_EQ(script_command(plan),
            (std::vector<std::string>{"python3", "-m", "mlw.propose", "train.py"}));
  plan.run_config.framework = "PySpark";
  EXPECT_EQ(script_command(plan)[0], "/bin/sh");
  EXPECT_EQ(script_command(plan).size(), 5u);
}

}  // namespace mlw
