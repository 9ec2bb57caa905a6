#include "mlw/config/compute_file.hpp"

#include "kinds/slurm/slurm.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "yaml_bomb.hpp"

namespace mlw {

namespace {
ComputeConfig parse(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  ConfigDocument doc = parse_config_text(text, "aml_config/x.compute");
  ComputeConfig config = parse_compute(doc);
  if (warnings) *warnings = doc.warnings;
  return config;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(ComputeFile, LoadsWorkbench2017FilesUnchanged) {
  const fs::path data = fs::path(MLW_TEST_DATA_DIR) / "workbench2017";
  ConfigDocument docker_doc = load_config_file(data / "docker.compute", "docker.compute");
  const ComputeConfig docker = parse_compute(docker_doc);
  EXPECT_EQ(docker.type, "docker");  // localdocker is an alias
  EXPECT_EQ(docker.base_docker_image, "microsoft/mmlspark:plus-0.7.91");
  EXPECT_TRUE(docker.shared_volumes);
  EXPECT_TRUE(docker_doc.warnings.empty());

  ConfigDocument vm_doc = load_config_file(data / "my_dsvm.compute", "my_dsvm.compute");
  const ComputeConfig vm = parse_compute(vm_doc);
  EXPECT_EQ(vm.type, "remotedocker");
  EXPECT_TRUE(vm.nvidia_docker);
  EXPECT_EQ(vm.address, "my-dsvm.eastus2.cloudapp.azure.com");
  EXPECT_EQ(vm.password.rfind("AzureMlSecret=", 0), 0u);

  ConfigDocument local_doc = load_config_file(data / "local.compute", "local.compute");
  EXPECT_EQ(parse_compute(local_doc).python_location, "python");
}

TEST(ComputeFile, WrongTypeNamesFileLineAndColumn) {
  EXPECT_EQ(error_of("type: docker\nbaseDockerImage: x\n\nnvidiaDocker: maybe\n"),
            "aml_config/x.compute:4:15: nvidiaDocker must be true or false");
  EXPECT_EQ(error_of("type: local\nnodes: many\n"),
            "aml_config/x.compute:2:8: nodes must be a whole number");
}

TEST(ComputeFile, GpusTakesWhatDockerRunGpusTakes) {
  for (const char* good : {"all", "2", "device=0", "device=1,3", "device=GPU-3a23c669-1f69"}) {
    EXPECT_EQ(error_of(std::string("type: docker\nbaseDockerImage: x\ngpus: \"") + good + "\"\n"),
              "no error")
        << good;
  }
  EXPECT_EQ(error_of("type: docker\nbaseDockerImage: x\ngpus: none\n"),
            "aml_config/x.compute:3:7: gpus must be all, a count (1 or more) or device=0,1 (as "
            "docker run --gpus), not \"none\"");
  for (const char* bad : {"0", "device=", "device=1,,2", "-1", "all,1"}) {
    EXPECT_NE(error_of(std::string("type: docker\nbaseDockerImage: x\ngpus: \"") + bad + "\"\n"),
              "no error")
        << bad;
  }
}

TEST(ComputeFile, UnknownTypeSuggestsTheNearest) {
  EXPECT_EQ(
      error_of("type: remotedoker\n"),
      "aml_config/x.compute:1:7: type must be one of local, docker, localdocker, remotedocker, "
      "remote, slurm, sge (got \"remotedoker\") (did you mean \"remotedocker\"?)");
}

TEST(ComputeFile, MissingTypeIsAnError) {
  EXPECT_NE(error_of("address: x\n").find("\"type\" is missing"), std::string::npos);
}

TEST(ComputeFile, MalformedYamlIsAnErrorWithPosition) {
  EXPECT_EQ(error_of("type: local\n  bad: [\n").rfind("aml_config/x.compute:", 0), 0u);
  EXPECT_NE(error_of("type: local\n  bad: [\n").find("malformed YAML"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("expected a mapping"), std::string::npos);
}

TEST(ComputeFile, AYamlAliasBombIsRefusedInOneLineNotWalked) {
  const std::string bomb = test::yaml_alias_bomb("type: local\n");
  EXPECT_LT(bomb.size(), 1100u);
  EXPECT_EQ(error_of(bomb),
            "aml_config/x.compute: too large to read: more than 200000 values or 64 levels of "
            "nesting (each use of a YAML alias counts again)");
  // Nesting deeper than any configuration file has is refused the same way.
  EXPECT_NE(error_of("type: local\nx: " + std::string(80, '[') + std::string(80, ']') + "\n")
                .find("too large to read"),
            std::string::npos);
  // Aliases a file really uses are fine.
  EXPECT_EQ(error_of("type: local\nbaseDockerImage: &i img\nx: *i\n").find("too large"),
            std::string::npos);
}

// Issue 45 (point 16): a whole-number key with trailing junk is an error at its place, not the
// number it starts with.
TEST(ComputeFile, AWholeNumberWithTrailingJunkIsRefused) {
  EXPECT_EQ(error_of("type: slurm\naddress: h\nnodes: 2x\n"),
            "aml_config/x.compute:3:8: nodes must be a whole number");
  EXPECT_EQ(error_of("type: local\nmaxConcurrentRuns: 3 runs\n"),
            "aml_config/x.compute:2:20: maxConcurrentRuns must be a whole number");
  EXPECT_EQ(error_of("type: slurm\naddress: h\nnodes: 2\n"), "no error");
}

TEST(ComputeFile, AGpuCountIsWrittenAsANumberIs) {
  EXPECT_NE(error_of("type: local\ngpusPerRun: 01\n").find("gpusPerRun must be all or a count"),
            std::string::npos);
  EXPECT_EQ(parse("type: local\ngpusPerRun: 2\n").gpus_per_run, "2");
}

TEST(ComputeFile, UnknownKeyWarnsWithLineAndSuggestion) {
  std::vector<std::string> warnings;
  parse("type: docker\nnvidiaDoker: true\n", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "aml_config/x.compute:2: unknown key \"nvidiaDoker\" (did you mean \"nvidiaDocker\"?)");
}

TEST(ComputeFile, RenderedFileParsesBackToTheSameValues) {
  ComputeConfig config;
  config.type = "remotedocker";
  config.address = "[::1]:2222";
  config.username = "me $HOME \\x";  // YAML escapes, in a name OpenSSH accepts
  config.docker_run_args = {"--shm-size=8g", "--ulimit", "memlock=-1"};
  config.nvidia_docker = true;
  const std::string text = render_compute(config, "vm");
  EXPECT_NE(text.find("# SSH endpoint"), std::string::npos);  // comments explain keys
  EXPECT_EQ(text.find("pythonLocation"), std::string::npos);  // only keys of this type
  const ComputeConfig back = parse(text);
  EXPECT_EQ(back.address, config.address);
  EXPECT_EQ(back.username, config.username);
  EXPECT_EQ(back.docker_run_args, config.docker_run_args);
  EXPECT_TRUE(back.nvidia_docker);
}

// Issue 33: a cloned project's address or username that OpenSSH would refuse is refused with
// its place in the file, before any ProxyCommand can see it.
TEST(ComputeFile, NamesOpenSshRefusesAreRefusedWithTheirPlace) {
  try {
    parse("type: remote\naddress: \"127.0.0.1;touch${IFS}X;\"\n");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aml_config/x.compute:2:10: address"), std::string::npos)
        << e.what();
  }
  try {
    parse("type: remote\naddress: gpu\nusername: \"m$(touch X)\"\n");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aml_config/x.compute:3:11: username"), std::string::npos)
        << e.what();
  }
}

TEST(ComputeFile, SlurmTimeLimitAndRuntimeAreChecked) {
  const ComputeConfig ok =
      parse("type: slurm\naddress: login\ntimeLimit: \"1-02:00:00\"\ncontainerRuntime: pyxis\n");
  EXPECT_EQ(ok.section.at("timeLimit"), "1-02:00:00");
  EXPECT_EQ(ok.section.at("containerRuntime"), "pyxis");
  for (const char* good : {"90", "30:00", "02:00:00", "2-12"}) {
    EXPECT_TRUE(is_slurm_time(good)) << good;
  }
  for (const char* bad : {"2h", "1:2:3:4", "", "-5", "01:00:00 "}) {
    EXPECT_FALSE(is_slurm_time(bad)) << bad;
  }
  EXPECT_NE(error_of("type: slurm\ntimeLimit: two hours\n").find("x.compute:2:"),
            std::string::npos);
  EXPECT_NE(error_of("type: slurm\ntimeLimit: two hours\n").find("timeLimit must be HH:MM:SS"),
            std::string::npos);
  EXPECT_NE(error_of("type: slurm\ncontainerRuntime: podman\n").find("containerRuntime"),
            std::string::npos);
}

// The 2017 GPU guide: "add nvidiaDocker: true right under baseDockerImage". In a file that holds
// nvidiaDocker: false further down (as mlw wrote them before, and 2017 docker.compute files do),
// the later line must not win in silence.
TEST(ComputeFile, GuideEditAddingNvidiaDockerTwiceIsAnErrorNamingBothLines) {
  const std::string text =
      "type: \"remotedocker\"\n"
      "baseDockerImage: \"microsoft/mmlspark:plus-gpu-0.7.91\"\n"
      "nvidiaDocker: true\n"
      "address: \"gpu-vm.example.com\"\n"
      "sharedVolumes: true\n"
      "nvidiaDocker: false\n";
  EXPECT_EQ(error_of(text),
            "aml_config/x.compute:6:1: the key \"nvidiaDocker\" is given twice (first at "
            "aml_config/x.compute:3:1); keep one of the two lines");
}

// The files mlw writes leave nvidiaDocker as a comment while it is false: the guide's added line
// is then the only one, and it holds.
TEST(ComputeFile, GuideEditOnAFileMlwWroteTurnsTheGpusOn) {
  ComputeConfig written;
  written.type = "remotedocker";
  written.address = "gpu-vm.example.com";
  written.username = "me";
  written.base_docker_image = "python:3.11-slim";
  std::string text = render_compute(written, "my_dsvm");
  EXPECT_NE(text.find("\n# nvidiaDocker: false\n"), std::string::npos) << text;
  const auto at = text.find("baseDockerImage: \"python:3.11-slim\"\n");
  ASSERT_NE(at, std::string::npos);
  text.insert(text.find('\n', at) + 1, "nvidiaDocker: true\n");
  EXPECT_TRUE(parse(text).nvidia_docker);
  written.nvidia_docker = true;
  EXPECT_NE(render_compute(written, "my_dsvm").find("\nnvidiaDocker: true\n"), std::string::npos);
}

TEST(ComputeFile, DuplicateKeysInNestedMappingsAndJsonAreRefused) {
  EXPECT_NE(error_of("type: local\ntype: docker\n").find("x.compute:2:1: the key \"type\""),
            std::string::npos);
  EXPECT_NE(error_of("{\"type\": \"local\", \"type\": \"docker\"}").find("given twice"),
            std::string::npos);
  EXPECT_EQ(error_of("type: local\npythonLocation: python3\n"), "no error");
}

TEST(ComputeFile, UpdateRewritesOnlyTheChangedKeysInPlace) {
  const std::string text =
      "# my GPU box\n"
      "type: \"remotedocker\"\n"
      "baseDockerImage: \"microsoft/mmlspark:plus-gpu-0.7.91\"  # the guide's image\n"
      "address: \"old.example.com\"\n"
      "nvidiaDocker: true\n"
      "yarnDeployMode: \"cluster\"\n";
  ConfigDocument doc = parse_config_text(text, "x.compute");
  const ComputeConfig before = parse_compute(doc);
  ComputeConfig after = before;
  after.address = "new.example.com:2222";
  after.password = "MlwSecret=x#me#1";
  const std::string updated = update_compute_text(text, "x.compute", before, after, "x");
  EXPECT_EQ(updated,
            "# my GPU box\n"
            "type: \"remotedocker\"\n"
            "baseDockerImage: \"microsoft/mmlspark:plus-gpu-0.7.91\"  # the guide's image\n"
            "address: \"new.example.com:2222\"\n"
            "nvidiaDocker: true\n"
            "yarnDeployMode: \"cluster\"\n"
            "# A reference into your secret store (never the password itself).\n"
            "password: \"MlwSecret=x#me#1\"\n");
  EXPECT_EQ(update_compute_text(text, "x.compute", before, before, "x"), text);
  // A flow-style file cannot be edited line by line: it is written anew.
  const std::string flow = "{type: local, pythonLocation: python3}";
  ConfigDocument flow_doc = parse_config_text(flow, "f.compute");
  ComputeConfig flow_after = parse_compute(flow_doc);
  flow_after.python_location = "python3.11";
  EXPECT_NE(update_compute_text(flow, "f.compute", parse_compute(flow_doc), flow_after, "f")
                .find("pythonLocation: \"python3.11\""),
            std::string::npos);
}

TEST(ComputeFile, The2017LocalFileKeysAreKnown) {
  std::vector<std::string> warnings;
  const ComputeConfig config = parse(
      "type: \"local\"\npythonLocation: \"python\"\nsparkSubmitLocation: \"/opt/spark/bin/"
      "spark-submit\"\nnativeSharedDirectory: \"~/.azureml/share/\"\n",
      &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(config.spark_submit_location, "/opt/spark/bin/spark-submit");
  warnings.clear();
  parse("type: \"remote\"\nyarnDeployMode: \"cluster\"\n", &warnings);
  EXPECT_TRUE(warnings.empty());
}

TEST(ComputeFile, ARestartPolicyIsReadAndEachMistakeNamedAtItsPlace) {
  const ComputeConfig codes =
      parse("type: remote\naddress: h\nrestart:\n  onExitCodes: [75, 137]\n  maxRestarts: 5\n");
  EXPECT_TRUE(codes.restart.set);
  EXPECT_EQ(codes.restart.on_exit_codes, (std::vector<int>{75, 137}));
  EXPECT_EQ(codes.restart.max_restarts, 5);
  EXPECT_EQ(codes.restart.backoff_seconds, 10);
  const ComputeConfig any =
      parse("type: remotedocker\naddress: h\nrestart: {onFailure: true, backoffSeconds: 0}\n");
  EXPECT_TRUE(any.restart.on_failure);
  EXPECT_EQ(any.restart.backoff_seconds, 0);
  EXPECT_FALSE(parse("type: remote\naddress: h\n").restart.set);
  EXPECT_FALSE(any.restart.after_reboot);
  EXPECT_TRUE(parse("type: remote\naddress: h\nrestart: {onFailure: true, restartAfterReboot: "
                    "true}\n")
                  .restart.after_reboot);
  const std::vector<std::pair<const char*, const char*>> wrong = {
      {"type: local\nrestart: {onFailure: true}\n", "x.compute:2:10: restart applies to remote"},
      {"type: remote\nrestart: {}\n", "restart needs onExitCodes"},
      {"type: remote\nrestart: {onFailure: true, onExitCodes: [1]}\n", "not both"},
      {"type: remote\nrestart: {onExitCodes: [0]}\n", "from 1 to 255, not \"0\""},
      {"type: remote\nrestart: {onExitCodes: []}\n", "at least one"},
      {"type: remote\nrestart: {onFailure: true, maxRestart: 2}\n",
       "unknown key \"maxRestart\" (did you mean \"maxRestarts\"?)"},
      {"type: remote\nrestart: {onFailure: true, maxRestarts: -1}\n", "from 0 to 1000"},
      {"type: docker\nrestart: {onFailure: true, restartAfterReboot: true}\n",
       "x.compute:2:48: restart: restartAfterReboot applies to remote and remotedocker"},
      {"type: remote\nrestart: {onFailure: true, restartAfterReboot: 2}\n",
       "restartAfterReboot must be true or false"},
      {"type: remote\nrestart: 3\n", "restart must be a mapping"},
  };
  for (const auto& [text, message] : wrong) {
    EXPECT_NE(error_of(text).find(message), std::string::npos) << text << " -> " << error_of(text);
  }
}

}  // namespace mlw
