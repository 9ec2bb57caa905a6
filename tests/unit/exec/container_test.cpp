#include "mlw/exec/container.hpp"
#include "mlw/exec/build_output.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/shell_quote.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plans.hpp"
#include "temp_dir.hpp"
#include "yaml_bomb.hpp"

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

namespace {

RunPlan container_plan(const fs::path& root) {
  RunPlan plan = test::demo_plan(root);
  plan.run_config.environment_variables = {{"SECRET_TOKEN", "s3cr3t value"}};
  plan.arguments = {"--lr", "0.1"};
  return plan;
}

bool has(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

}  // namespace

TEST(Container, RunWordsMountTheRunAndPassEnvironmentByNameOnly) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  const auto words = docker_run_words(plan, {"/home/u/.mlw/runs/r", "/home/u/.mlw/share", ""}, {},
                                      "mlw_env:abc", "1000:1000");
  EXPECT_EQ(words[0], "docker");
  EXPECT_EQ(words[1], "create");
  EXPECT_TRUE(has(words, "--cidfile"));
  EXPECT_FALSE(has(words, "-d"));
  EXPECT_TRUE(has(words, "/home/u/.mlw/runs/r:/mlw/run"));
  EXPECT_TRUE(has(words, "/home/u/.mlw/share:/mlw/share"));
  EXPECT_TRUE(has(words, "mlw.run=demo_1700000000000"));
  EXPECT_TRUE(has(words, "SECRET_TOKEN"));
  for (const auto& word : words) EXPECT_EQ(word.find("s3cr3t"), std::string::npos);
  EXPECT_FALSE(has(words, "--gpus"));
  const std::vector<std::string> tail(words.end() - 5, words.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"mlw_env:abc", "python3", "train.py", "--lr", "0.1"}));
}

TEST(Container, GpusUseTheRuntimeOrNvidiaDockerOrFailClearly) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  plan.compute.nvidia_docker = true;
  plan.compute.gpus = "device=0,1";
  TargetFacts runtime;
  runtime.nvidia_runtime = true;
  const auto words = docker_run_words(plan, {"/r", "/s", ""}, runtime, "img", "");
  const auto at = std::find(words.begin(), words.end(), "--gpus");
  ASSERT_NE(at, words.end());
  EXPECT_EQ(*(at + 1), "\"device=0,1\"");
  TargetFacts wrapper;
  wrapper.nvidia_docker_binary = true;
  EXPECT_EQ(docker_words(plan.compute, wrapper), std::vector<std::string>{"nvidia-docker"});
  try {
    // The kind's check rows, as submit runs them: the daemon answers, no NVIDIA runtime.
    TargetFacts no_runtime;
    no_runtime.docker_ok = true;
    std::vector<CheckRow> rows;
    kind_of(plan.compute.type).checks({plan.compute, no_runtime, "gpu-vm", "t"}, rows);
    refuse_first(rows);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
    EXPECT_NE(std::string(e.what()).find("gpu-vm"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("nvidia-container-toolkit"), std::string::npos);
  }
  plan.compute.use_sudo = true;
  EXPECT_EQ(docker_words(plan.compute, runtime),
            (std::vector<std::string>{"sudo", "-n", "docker"}));
}

TEST(Container, CopiedVolumesCreateTheContainerWithoutMountingTheRun) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  plan.compute.shared_volumes = false;
  const auto words = docker_run_words(plan, {"/r", "/s", ""}, {}, "img", "1:1");
  EXPECT_EQ(words[1], "create");
  EXPECT_FALSE(has(words, "/r:/mlw/run"));
  EXPECT_FALSE(has(words, "--user"));
}

TEST(Container, EnvironmentHashFollowsBaseImageDependenciesAndWheels) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  make_directories(dir.path() / "aml_config");
  atomic_write_file(dir.path() / "aml_config/conda_dependencies.yml",
                    "dependencies:\n  - python=3.11\n  - numpy\n  - pip:\n    - --no-index\n"
                    "    - --find-links=wheels\n    - demo\n");
  plan.manifest.entries = {{"wheels/demo-1.0-py3-none-any.whl", 10, 0644, "aa", ""},
                           {"train.py", 5, 0644, "bb", ""}};
  const EnvironmentSpec first = environment_spec(plan);
  EXPECT_EQ(first.tag, "mlw_env:" + first.hash);
  EXPECT_EQ(first.requirements, "--no-index\n--find-links=wheels\ndemo\n");
  EXPECT_EQ(first.conda_packages, std::vector<std::string>{"numpy"});
  ASSERT_EQ(first.local_files.size(), 1u);
  EXPECT_EQ(first.local_files[0].path, "wheels/demo-1.0-py3-none-any.whl");
  EXPECT_NE(first.dockerfile.find("FROM pytorch/pytorch:latest"), std::string::npos);
  EXPECT_EQ(environment_spec(plan).hash, first.hash);
  plan.manifest.entries[0].sha256 = "cc";
  EXPECT_NE(environment_spec(plan).hash, first.hash);
  plan.manifest.entries[0].sha256 = "aa";
  plan.compute.base_docker_image = "python:3.11";
  EXPECT_NE(environment_spec(plan).hash, first.hash);
}

TEST(Container, MalformedDependencyFileNamesItsLine) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  make_directories(dir.path() / "aml_config");
  atomic_write_file(dir.path() / "aml_config/conda_dependencies.yml",
                    "dependencies:\n  - pip: oops\n");
  try {
    environment_spec(plan);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conda_dependencies.yml:2"), std::string::npos);
  }
}

TEST(Container, AYamlAliasBombAsTheCondaFileIsRefusedInOneLine) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  make_directories(dir.path() / "aml_config");
  atomic_write_file(dir.path() / "aml_config/conda_dependencies.yml",
                    test::yaml_alias_bomb("dependencies: [python=3.11]\n"));
  try {
    environment_spec(plan);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("aml_config/conda_dependencies.yml: too large", 0), 0u);
    EXPECT_EQ(e.code(), exit_code::k_cannot_start);
  }
}

TEST(Container, APipEntryThatIsNotALineIsAnErrorNotACrash) {
  // Found by fuzz_config (tests/fuzz/corpus/config/regression-pip-mapping).
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  make_directories(dir.path() / "aml_config");
  atomic_write_file(dir.path() / "aml_config/conda_dependencies.yml",
                    "dependencies:\n  - pip:\n    - ./a.whl\n    - --find-lt: my_deels\n");
  try {
    environment_spec(plan);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conda_dependencies.yml:4: each pip entry must be one "
                                         "requirement line (got a mapping)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Container, EngineBodyDescribesTheSameContainerAsTheRunWords) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  plan.arguments = {"it's", "$(id)"};
  const auto body = nlohmann::json::parse(engine_create_body(
      plan, {"/home/u/.mlw/runs/r", "/home/u/.mlw/share", ""}, {}, "mlw_env:abc", "1000:1000"));
  EXPECT_EQ(body["Image"], "mlw_env:abc");
  EXPECT_EQ(body["Cmd"], nlohmann::json({"python3", "train.py", "it's", "$(id)"}));
  EXPECT_EQ(body["User"], "1000:1000");
  EXPECT_EQ(body["WorkingDir"], "/mlw/run/snapshot");
  EXPECT_EQ(body["Labels"]["mlw.run"], "demo_1700000000000");
  EXPECT_EQ(body["HostConfig"]["Init"], true);
  EXPECT_EQ(body["HostConfig"]["Binds"],
            nlohmann::json({"/home/u/.mlw/runs/r:/mlw/run", "/home/u/.mlw/share:/mlw/share"}));
  const auto& env = body["Env"];
  EXPECT_NE(std::find(env.begin(), env.end(), "SECRET_TOKEN=s3cr3t value"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "MLW_RUN_ID=demo_1700000000000"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HOME=/tmp"), env.end());
  EXPECT_FALSE(body["HostConfig"].contains("DeviceRequests"));
}

TEST(Container, EngineBodyAsksForGpusAsTheGpusKeySays) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  plan.compute.nvidia_docker = true;
  TargetFacts facts;
  facts.nvidia_runtime = true;
  auto request = [&](const std::string& gpus) {
    plan.compute.gpus = gpus;
    return nlohmann::json::parse(engine_create_body(plan, {"/r", "/s", ""}, facts, "i",
                                                    ""))["HostConfig"]["DeviceRequests"][0];
  };
  EXPECT_EQ(request("all")["Count"], -1);
  EXPECT_EQ(request("all")["Capabilities"], nlohmann::json({{"gpu"}}));
  EXPECT_EQ(request("2")["Count"], 2);
  EXPECT_EQ(request("device=0,3")["DeviceIDs"], nlohmann::json({"0", "3"}));
  plan.compute.gpus = "many";
  EXPECT_THROW(engine_create_body(plan, {"/r", "/s", ""}, facts, "i", ""), Error);
}

TEST(Container, BuildFailureReasonIsTheInstallScriptsMarkedLine) {
  EXPECT_EQ(build_failure_reason("Step 3/4 : RUN x\nmlw-error[125]: no conda: a, b; fix it\n"
                                 "The command returned a non-zero code: 1\n")
                .message,
            "no conda: a, b; fix it");
  EXPECT_EQ(build_failure_reason("#7 0.31 mlw-error[127]: no spark-submit\n").exit_code, 127);
  EXPECT_EQ(build_failure_reason("echo mlw-error[125]: inside a word\n").exit_code, 125);
  EXPECT_EQ(build_failure_reason("xmlw-error[125]: not at a line start\n").exit_code, 0);
  EXPECT_EQ(build_failure_reason("mlw-error[abc]: no code\n").exit_code, 0);
  EXPECT_EQ(build_failure_reason("mlw-error[99999]: too long\n").exit_code, 0);
  EXPECT_EQ(build_failure_reason("mlw-error[0]: a target's lie\n").exit_code, 0);
  EXPECT_EQ(build_failure_reason("plain failure\n").exit_code, 0);
}

// Issue 33: a failed build says pip's own reason, and its last lines read as text.
TEST(Container, BuildErrorLineIsPipsLastErrorWithoutColours) {
  const std::string pip =
      "DEPRECATED: The legacy builder is deprecated and will be removed in a future release.\n"
      "            Install the buildx component to build images with BuildKit:\n"
      "            https://docs.docker.com/go/buildx/\n"
      "Step 3/4 : RUN x\n"
      "\x1b[91mWARNING: Retrying after 'Temporary failure in name resolution'\n"
      "\x1b[0m\x1b[91mERROR: Could not find a version that satisfies the requirement a==1\n"
      "\x1b[0m\x1b[91mERROR: No matching distribution found for a==1\r\n"
      "\x1b[0mThe command '/bin/sh' returned a non-zero code: 1\n";
  EXPECT_EQ(build_error_line(pip),
            "ERROR: No matching distribution found for a==1 (the build could not reach the "
            "network from the target)");
  const std::string tail = build_output_tail(pip, 3);
  EXPECT_EQ(tail,
            "ERROR: Could not find a version that satisfies the requirement a==1\n"
            "ERROR: No matching distribution found for a==1\n"
            "The command '/bin/sh' returned a non-zero code: 1\n");
  EXPECT_EQ(build_output_tail(pip, 100).find("DEPRECATED"), std::string::npos);
  EXPECT_EQ(build_output_tail(pip, 100).find('\x1b'), std::string::npos);
  EXPECT_EQ(build_error_line("ERROR: x.whl is not a supported wheel on this platform.\n"),
            "ERROR: x.whl is not a supported wheel on this platform.");
  EXPECT_EQ(build_error_line("just a failure\n"), "");
}

// Issue 33: a base image the target lacks gets an mlw sentence, not Docker's registry error
// (the outputs as Debian's docker.io 20.10 prints them).
// Issue 45: a build that succeeds reads as one, on the terminal of `experiment prepare`.
TEST(Container, ABuildThatSucceedsShowsNoNoticeAndNoInstallMessages) {
  EXPECT_EQ(build_line_for_terminal("DEPRECATED: The legacy builder is deprecated and will be "
                                    "removed in a future release."),
            "");
  EXPECT_EQ(build_line_for_terminal("            Install the buildx component to build images "
                                    "with BuildKit:"),
            "");
  EXPECT_EQ(build_line_for_terminal("Step 3/4 : RUN [\"/bin/sh\",\"/mlw/env/install.sh\",\"\","
                                    "\"the base image x has no conda, so …\"]"),
            "Step 3/4 : RUN /bin/sh /mlw/env/install.sh (mlw's install script)");
  EXPECT_EQ(build_line_for_terminal("Step 2/4 : COPY . /mlw/env/"), "Step 2/4 : COPY . /mlw/env/");
  EXPECT_EQ(build_line_for_terminal(""), "");
}

TEST(Container, BaseImageProblemIsSaidInMlwsWords) {
  const std::string image = "microsoft/mmlspark:plus-gpu-0.7.9";
  const std::string offline =
      "Sending build context to Docker daemon  6.144kB\nStep 1/4 : FROM " + image +
      "\nGet \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on "
      "10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable\n";
  const std::string said = base_image_problem(offline, image, "gpu-vm");
  // The way to bring it there is a command ssh takes (issue 45: not `ssh HOST:PORT`).
  EXPECT_NE(base_image_problem(offline, image, "127.0.0.1:52487", "me")
                .find("(docker save " + image + " | ssh -p 52487 me@127.0.0.1 docker load)"),
            std::string::npos);
  EXPECT_EQ(ssh_command_for("gpu-vm", ""), "ssh gpu-vm");
  EXPECT_EQ(ssh_command_for("gpu-vm:22", "me"), "ssh me@gpu-vm");
  EXPECT_EQ(ssh_command_for("[::1]:2222", "me"), "ssh -p 2222 me@::1");
  EXPECT_NE(said.find("the base image " + image +
                      " is not on gpu-vm (not found locally) and "
                      "the registry is not reachable from there"),
            std::string::npos)
      << said;
  const std::string missing = "Step 1/4 : FROM " + image + "\nmanifest for " + image +
                              " not found: manifest unknown: manifest unknown\n";
  EXPECT_NE(base_image_problem(missing, image, "gpu-vm")
                .find("the base image " + image + " does not exist in its registry"),
            std::string::npos);
  const std::string denied =
      "Step 1/4 : FROM a/b:c\npull access denied for a/b, repository does "
      "not exist or may require 'docker login'\n";
  EXPECT_NE(base_image_problem(denied, "a/b:c", "h").find("does not exist in its registry"),
            std::string::npos);
  // A failure after the FROM step is not the base image's.
  EXPECT_EQ(base_image_problem("Step 1/4 : FROM a\n ---> 1\nStep 2/4 : COPY\nERROR: x\n", "a", "h"),
            "");
}

TEST(Container, TheShareIsPerProjectAndTargetWithThe2017TrailingSlash) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  EXPECT_EQ(share_folder("/home/u/.azureml/share/", plan), "/home/u/.azureml/share/demo/gpu");
  EXPECT_EQ(share_folder("/", plan), "/demo/gpu");
  EXPECT_EQ(share_variable("/mlw/share"), "/mlw/share/");
  const auto env = run_environment(plan, "/mlw/run", "/mlw/share");
  EXPECT_EQ(env.at("AZUREML_NATIVE_SHARE_DIRECTORY"), "/mlw/share/");
  EXPECT_EQ(env.at("MLW_SHARE_DIR"), "/mlw/share/");
}

TEST(Container, GpuRunsPrintTheGpusTheContainerSeesFirst) {
  test::TempDir dir("mlw-remote");
  RunPlan plan = container_plan(dir.path());
  EXPECT_EQ(container_command(plan), script_command(plan));
  plan.compute.nvidia_docker = true;
  const auto words = container_command(plan);
  ASSERT_GT(words.size(), 4u);
  EXPECT_NE(words[2].find("nvidia-smi --query-gpu="), std::string::npos);
  EXPECT_EQ(std::vector<std::string>(words.begin() + 4, words.end()), script_command(plan));
}

TEST(Container, NamesAreValidForDockerWhateverTheProjectFolderIsCalled) {
  EXPECT_EQ(container_name("Demo_1700000000000"), "mlw-demo_1700000000000");
  const std::string spaced = container_name("my project_17");
  EXPECT_TRUE(spaced.starts_with("mlw-my-project_17-")) << spaced;
  EXPECT_NE(spaced, container_name("my-project_17"));
  const std::string accented = container_name("r\xc3\xa9sum\xc3\xa9_17");
  EXPECT_EQ(accented.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.-"),
            std::string::npos)
      << accented;
}

}  // namespace mlw
