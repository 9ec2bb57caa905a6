// install.sh (src/exec/install.sh), run by /bin/sh with the words the Dockerfile gives it, in a
// folder laid out as /mlw/env is in the image; this machine's python3 and pip stand for the
// image's.
#include <gtest/gtest.h>

#include <algorithm>

#include "mlw/exec/build_output.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"
#include "plans.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

RunPlan install_plan(const fs::path& root, const std::string& conda_file) {
  RunPlan plan = test::demo_plan(root);
  make_directories(root / "aml_config");
  atomic_write_file(root / "aml_config/conda_dependencies.yml", conda_file);
  return plan;
}

using Ran = test::CommandResult;

/// Lays out env/ as the image has it (install.sh, the files it reads) and runs install.sh with the
/// words of the Dockerfile's RUN; `path` first on PATH (stand-ins for conda or spark-submit).
Ran run_install(const fs::path& root, const EnvironmentSpec& env,
                const std::vector<std::string>& words, const std::string& path = "") {
  const fs::path dir = root / "env";
  make_directories(dir / "files");
  atomic_write_file(dir / "install.sh", env.install_script);
  atomic_write_file(dir / "conda_dependencies.yml", env.conda_file);
  atomic_write_file(dir / "requirements.txt", env.requirements);
  const std::string command = "PATH=" + shell_quote(path + (path.empty() ? "" : ":")) +
                              "/usr/local/bin:/usr/bin:/bin /bin/sh " +
                              shell_quote((dir / "install.sh").string()) + " " + shell_join(words) +
                              " 2>&1";
  return test::run_command(command);
}

/// The words after install.sh on the Dockerfile's RUN line.
std::vector<std::string> dockerfile_words(const EnvironmentSpec& env) {
  const auto run = env.dockerfile.find("\nRUN ");
  const auto end = env.dockerfile.find('\n', run + 1);
  const auto array = nlohmann::json::parse(env.dockerfile.substr(run + 5, end - run - 5));
  std::vector<std::string> words = array.get<std::vector<std::string>>();
  EXPECT_EQ(words.at(0), "/bin/sh");
  EXPECT_EQ(words.at(1), "/mlw/env/install.sh");
  return {words.begin() + 2, words.end()};
}

}  // namespace

TEST(InstallScript, IsTheFileAndTheDockerfileGivesItsWords) {
  test::TempDir dir("mlw-install");
  const RunPlan plan = install_plan(dir.path(), "dependencies:\n  - python=3.5.2\n");
  const EnvironmentSpec env = environment_spec(plan);
  EXPECT_EQ(env.install_script.rfind("# shellcheck shell=sh\n# mlw install:", 0), 0u);
  EXPECT_EQ(dockerfile_words(env), install_arguments(plan, env));
}

// The 2017 GPU guide's file, on an image without conda: both problems, in mlw's words.
TEST(InstallScript, RefusesCondaPackagesAndAnotherPythonWithoutConda) {
  test::TempDir dir("mlw-install");
  const RunPlan plan = install_plan(dir.path(),
                                    "name: project_environment\ndependencies:\n  - python=3.5.2\n"
                                    "  - tensorflow-gpu\n");
  const EnvironmentSpec env = environment_spec(plan);
  EXPECT_EQ(env.python_pin, "3.5.2");
  EXPECT_EQ(env.conda_packages, std::vector<std::string>{"tensorflow-gpu"});
  const Ran ran = run_install(dir.path(), env, dockerfile_words(env));
  EXPECT_EQ(ran.status, 1) << ran.output;
  const BuildFailure said = build_failure_reason(ran.output);
  EXPECT_EQ(said.exit_code, 125) << ran.output;
  EXPECT_NE(said.message.find("the base image pytorch/pytorch:latest has no "
                              "conda, so the conda packages of "
                              "aml_config/conda_dependencies.yml cannot be installed: "
                              "tensorflow-gpu; use a base image with conda"),
            std::string::npos)
      << said.message;
  EXPECT_NE(said.message.find("asks for python=3.5.2 but the base image pytorch/pytorch:latest "
                              "has no conda to install it, and its python3 is 3."),
            std::string::npos)
      << said.message;
}

// conda, where the image has it, takes the whole file: none of the problems above is said.
TEST(InstallScript, CondaWhereTheImageHasItTakesTheWholeFile) {
  test::TempDir dir("mlw-install");
  const RunPlan plan =
      install_plan(dir.path(), "dependencies:\n  - python=3.5.2\n  - tensorflow-gpu\n");
  const EnvironmentSpec env = environment_spec(plan);
  make_directories(dir.path() / "bin");
  atomic_write_file(dir.path() / "bin/conda", "#!/bin/sh\necho \"conda $*\"\n");
  fs::permissions(dir.path() / "bin/conda", fs::perms::owner_all);
  const Ran ran =
      run_install(dir.path(), env, dockerfile_words(env), (dir.path() / "bin").string());
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(ran.output, "conda env update -n base -f " + (dir.path() / "env").string() +
                            "/conda_dependencies.yml\n");
}

// Issue 33: without conda, every problem of the file is said in one go, before pip starts.
TEST(InstallScript, SaysEveryProblemOfTheFileAtOnce) {
  test::TempDir dir("mlw-install");
  const RunPlan plan =
      install_plan(dir.path(),
                   "dependencies:\n  - python=3.5.2\n  - tensorflow-gpu\n  - pip:\n"
                   "    - wheels/old-1.0-cp35-cp35m-win_amd64.whl\n"
                   "    - wheels/fine-1.0-py3-none-any.whl\n");
  const EnvironmentSpec env = environment_spec(plan);
  const Ran ran = run_install(dir.path(), env, dockerfile_words(env));
  EXPECT_EQ(ran.status, 1);
  EXPECT_EQ(std::count(ran.output.begin(), ran.output.end(), '\n'), 1) << ran.output;
  EXPECT_EQ(build_failure_reason(ran.output).exit_code, 125) << ran.output;
  const std::string said = build_failure_reason(ran.output).message;
  EXPECT_NE(said.find("cannot be installed: tensorflow-gpu"), std::string::npos) << said;
  EXPECT_NE(said.find("; also: aml_config/conda_dependencies.yml asks for python=3.5.2"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("; also: wheels for another platform or Python than the image has"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("old-1.0-cp35-cp35m-win_amd64.whl (cp35-cp35m-win_amd64)"), std::string::npos)
      << said;
  EXPECT_EQ(said.find("fine-1.0"), std::string::npos) << said;
}

// A file with nothing to install: said, and the build goes on.
TEST(InstallScript, NothingToInstallIsSaid) {
  test::TempDir dir("mlw-install");
  const RunPlan plan = install_plan(dir.path(), "dependencies:\n  - pip:\n");
  const EnvironmentSpec env = environment_spec(plan);
  const Ran ran = run_install(dir.path(), env, dockerfile_words(env));
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(ran.output, "mlw: nothing to install\n");
}

TEST(InstallScript, PySparkWithoutSparkSubmitStopsTheBuild) {
  test::TempDir dir("mlw-install");
  RunPlan plan = install_plan(dir.path(), "dependencies:\n  - pip:\n");
  plan.record.run_config = "my_dsvm";
  plan.run_config.framework = "PySpark";
  const EnvironmentSpec env = environment_spec(plan);
  const Ran ran = run_install(dir.path(), env, dockerfile_words(env));
  EXPECT_EQ(ran.status, 1);
  const BuildFailure said = build_failure_reason(ran.output);
  EXPECT_EQ(said.exit_code, 127) << ran.output;
  EXPECT_NE(said.message.find("Framework is PySpark"), std::string::npos) << said.message;
  EXPECT_NE(said.message.find("set Framework: Python in aml_config/my_dsvm.runconfig"),
            std::string::npos)
      << said.message;
  // With spark-submit on PATH the build goes on.
  make_directories(dir.path() / "bin");
  atomic_write_file(dir.path() / "bin/spark-submit", "#!/bin/sh\n");
  fs::permissions(dir.path() / "bin/spark-submit", fs::perms::owner_all);
  EXPECT_EQ(
      run_install(dir.path(), env, dockerfile_words(env), (dir.path() / "bin").string()).status, 0);
}

// Issue 48: a notebook kernel's image is the run's plus ipykernel, added with what installed the
// rest where the image lacks it (here a python3 that has none: a stand-in before the real one).
namespace {

/// bin/python3 without ipykernel; `pip` answers `-m pip` when `with_pip`, echoing an install.
fs::path python_without_ipykernel(const fs::path& root, bool with_pip) {
  make_directories(root / "bin");
  atomic_write_file(
      root / "bin/python3",
      std::string("#!/bin/sh\ncase \"$1 $2\" in\n\"-c import ipykernel\") exit 1 ;;\n") +
          (with_pip ? "\"-m pip\") [ \"$3\" = --version ] || echo \"pip $*\"; exit 0 ;;\n"
                    : "\"-m pip\") exit 1 ;;\n") +
          "esac\nexec /usr/bin/python3 \"$@\"\n");
  fs::permissions(root / "bin/python3", fs::perms::owner_all);
  return root / "bin";
}

/// A notebook kernel's environment from `conda_file`, and install.sh run for it with `bin`
/// (python_without_ipykernel, perhaps a conda beside it) first on PATH.
Ran run_kernel_install(const fs::path& root, const std::string& conda_file, const fs::path& bin) {
  RunPlan plan = install_plan(root, conda_file);
  plan.notebook_kernel = true;
  const EnvironmentSpec env = environment_spec(plan);
  return run_install(root, env, dockerfile_words(env), bin.string());
}

}  // namespace

TEST(InstallScript, AKernelsImageGainsIpykernelThroughPipWhereItLacksIt) {
  test::TempDir dir("mlw-install");
  RunPlan plan = install_plan(dir.path(), "dependencies:\n  - pip:\n");
  const fs::path bin = python_without_ipykernel(dir.path(), true);
  const EnvironmentSpec run_env = environment_spec(plan);
  const Ran run = run_install(dir.path(), run_env, dockerfile_words(run_env), bin.string());
  EXPECT_EQ(run.output, "mlw: nothing to install\n") << "a run's image is left as it is";
  plan.notebook_kernel = true;
  const EnvironmentSpec env = environment_spec(plan);
  EXPECT_NE(env.tag, run_env.tag) << "a kernel's image is one of its own";
  const Ran ran = run_install(dir.path(), env, dockerfile_words(env), bin.string());
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(ran.output,
            "mlw: nothing to install\nmlw: adding ipykernel, for the notebook kernel\n"
            "pip -m pip install --no-cache-dir --disable-pip-version-check ipykernel\n");
  // An image that has it (this machine's python3, with Debian's python3-ipykernel): said only.
  const Ran has = run_install(dir.path(), env, dockerfile_words(env));
  EXPECT_EQ(has.output,
            "mlw: nothing to install\nmlw: ipykernel is there, for the notebook kernel\n");
}

TEST(InstallScript, AKernelsImageGainsIpykernelThroughConda) {
  test::TempDir dir("mlw-install");
  const fs::path bin = python_without_ipykernel(dir.path(), false);
  atomic_write_file(bin / "conda", "#!/bin/sh\necho \"conda $*\"\n");
  fs::permissions(bin / "conda", fs::perms::owner_all);
  const Ran ran = run_kernel_install(dir.path(), "dependencies:\n  - numpy\n", bin);
  EXPECT_EQ(ran.status, 0) << ran.output;
  EXPECT_EQ(ran.output, "conda env update -n base -f " + (dir.path() / "env").string() +
                            "/conda_dependencies.yml\nconda install -y -n base ipykernel\n");
}

TEST(InstallScript, AKernelsImageWithNeitherIpykernelNorAnInstallerStopsTheBuild) {
  test::TempDir dir("mlw-install");
  const Ran ran = run_kernel_install(dir.path(), "dependencies:\n  - pip:\n",
                                     python_without_ipykernel(dir.path(), false));
  EXPECT_EQ(ran.status, 1) << ran.output;
  const BuildFailure said = build_failure_reason(ran.output);
  EXPECT_EQ(said.exit_code, 125) << ran.output;
  EXPECT_EQ(said.message,
            "the base image pytorch/pytorch:latest has no ipykernel for the notebook kernel, and "
            "neither conda nor pip to install it; add ipykernel to the image, or use a base image "
            "with conda or pip");
}

}  // namespace mlw
