#include "mlw/remote/probe.hpp"

#include <gtest/gtest.h>

#include "mlw/kinds/kind.hpp"

#include <fstream>
#include <optional>

#include "../fake_engine.hpp"
#include "../temp_dir.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw {
namespace {

/// A stand-in `docker` on PATH that records its arguments and answers as a daemon configured by
/// `mode` would: "up", "gpu" (nvidia runtime), "down" (no daemon), with `image` present or not.
class FakeDocker {
 public:
  FakeDocker(const std::string& mode, bool image) : m_dir("probe") {
    std::filesystem::create_directories(m_dir.path() / "bin");
    std::ofstream(m_dir.path() / "bin" / "docker")
        << "#!/bin/sh\necho \"$*\" >> " << shell_quote((m_dir.path() / "calls").string()) << "\n"
        << "case \"$1\" in\n"
        << "  image) " << (image ? "exit 0" : "echo 'No such image' >&2; exit 1") << ";;\n"
        << "  info) case " << shell_quote(mode) << " in\n"
        << "    down) echo ' null'; echo 'Cannot connect to the Docker daemon at x' >&2; exit 1;;\n"
        << "    gpu) echo '24.0.7 {\"nvidia\":{\"path\":\"nvidia-container-runtime\"}}';;\n"
        << "    *) echo '24.0.7 {\"runc\":{\"path\":\"runc\"}}';;\n"
        << "  esac;;\nesac\n";
    std::filesystem::permissions(m_dir.path() / "bin" / "docker",
                                 std::filesystem::perms::owner_all);
  }

  /// A stand-in `curl` that records its arguments and prints `status` as the engine's answer,
  /// and a real unix socket for DOCKER_HOST to name.
  void engine_answers(const std::string& status) {
    std::ofstream(m_dir.path() / "bin" / "curl")
        << "#!/bin/sh\necho \"curl $*\" >> " << shell_quote((m_dir.path() / "calls").string())
        << "\nprintf %s " << shell_quote(status) << "\n";
    std::filesystem::permissions(m_dir.path() / "bin" / "curl", std::filesystem::perms::owner_all);
    m_socket = (m_dir.path() / "engine.sock").string();
    LocalShell().run(
        "python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' " +
        shell_quote(m_socket));
  }

  /// A stand-in engine that listens on a unix socket and answers `status` (asked with Perl), and
  /// a stand-in `curl` that would answer `curl_status`.
  void engine_listens(const std::string& status, const std::string& curl_status) {
    engine_answers(curl_status);
    m_socket = (m_dir.path() / "listening.sock").string();
    m_engine.emplace(m_socket, status, "{}");
  }

  /// What the listening stand-in engine was asked.
  std::string requests() const { return m_engine ? m_engine->requests() : ""; }

  /// Runs the probe with the stand-ins first on PATH; DOCKER_HOST names the stand-in engine's
  /// socket, or one that does not exist (the CLI is then asked).
  TargetFacts probe(const ComputeConfig& compute, const std::string& tag,
                    const std::string& docker_host = "", ProbeShip* ship = nullptr) {
    LocalShell shell;
    const std::string host = !docker_host.empty() ? docker_host
                             : m_socket.empty() ? "unix://" + (m_dir.path() / "none.sock").string()
                                                : "unix://" + m_socket;
    const std::string path = "PATH=" + shell_quote((m_dir.path() / "bin").string()) +
                             ":$PATH\nDOCKER_HOST=" + shell_quote(host) + "\nexport DOCKER_HOST\n";
    const std::string script =
        path + probe_script(compute, probe_ask(compute), tag, ship ? ship->script : "");
    return parse_probe(
        (ship ? shell.run_with_input(script, ship->input) : shell.run(script)).output, ship);
  }

  std::string calls() const { return read_file_if_exists(m_dir.path() / "calls").value_or(""); }

 private:
  test::TempDir m_dir;
  std::string m_socket;
  std::optional<test::FakeEngine> m_engine;
};

ComputeConfig docker_target(bool gpus) {
  ComputeConfig compute;
  compute.type = "remotedocker";
  compute.nvidia_docker = gpus;
  return compute;
}

TEST(Probe, DockerIsCalledAsRunsCallItWithSudoWhenAsked) {
  ComputeConfig compute = docker_target(false);
  EXPECT_EQ(docker_words(compute), std::vector<std::string>{"docker"});
  compute.use_sudo = true;
  EXPECT_EQ(docker_words(compute), (std::vector<std::string>{"sudo", "-n", "docker"}));
  // The probe asks the engine through sudo: a stand-in sudo records what it was asked.
  test::TempDir dir("probe-sudo");
  fs::create_directories(dir.path() / "bin");
  const fs::path sudo = dir.path() / "bin/sudo";
  atomic_write_file(sudo, "#!/bin/sh\necho \"$*\" >> " +
                              shell_quote((dir.path() / "calls").string()) + "\nexit 1\n");
  fs::permissions(sudo, fs::perms::owner_all);
  atomic_write_file(dir.path() / "bin/docker", "#!/bin/sh\nexit 0\n");
  fs::permissions(dir.path() / "bin/docker", fs::perms::owner_all);
  LocalShell().run("PATH=" + shell_quote((dir.path() / "bin").string()) + ":$PATH\n" +
                   probe_script(compute, probe_ask(compute), ""));
  EXPECT_NE(read_file_if_exists(dir.path() / "calls").value_or("").find("-n docker info"),
            std::string::npos)
      << read_file_if_exists(dir.path() / "calls").value_or("");
}

TEST(Probe, AnExistingImageStandsForAWorkingDaemonWithoutAskingItMore) {
  FakeDocker docker("up", true);
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc");
  EXPECT_EQ(facts.image_present, "mlw_env:abc");
  EXPECT_TRUE(facts.docker_ok);
  EXPECT_FALSE(facts.home.empty());
  EXPECT_EQ(docker.calls(), "image inspect mlw_env:abc\n");
}

TEST(Probe, TheEngineOnItsSocketIsAskedForTheImageWithoutTheDockerCli) {
  FakeDocker docker("up", false);
  docker.engine_answers("200");
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc");
  EXPECT_EQ(facts.image_present, "mlw_env:abc");
  EXPECT_TRUE(facts.docker_ok);
  EXPECT_NE(docker.calls().find("/images/mlw_env:abc/json"), std::string::npos) << docker.calls();
  EXPECT_EQ(docker.calls().find("image inspect"), std::string::npos) << docker.calls();
}

TEST(Probe, AnEngineThatListensIsAskedWithPerlAndCurlIsNotStarted) {
  FakeDocker docker("up", false);
  docker.engine_listens("200", "404");
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc");
  EXPECT_EQ(facts.image_present, "mlw_env:abc");
  EXPECT_NE(docker.requests().find("GET /images/mlw_env:abc/json HTTP/1.0\r\nHost: docker\r\n"),
            std::string::npos)
      << docker.requests();
  EXPECT_EQ(docker.calls(), "") << docker.calls();
  FakeDocker absent("up", true);
  absent.engine_listens("404", "200");
  EXPECT_EQ(absent.probe(docker_target(false), "mlw_env:abc").image_present, "");
  EXPECT_EQ(absent.calls().find("image inspect"), std::string::npos) << absent.calls();
  EXPECT_EQ(absent.calls().find("curl"), std::string::npos) << absent.calls();
}

TEST(Probe, AnEngineThatAnswersNonsenseIsNotAskedAgainWithCurlButTheCliIs) {
  FakeDocker docker("up", false);
  docker.engine_listens("abc", "200");
  EXPECT_EQ(docker.probe(docker_target(false), "mlw_env:abc").image_present, "");
  EXPECT_NE(docker.requests().find("GET /images/mlw_env:abc/json"), std::string::npos);
  EXPECT_NE(docker.calls().find("image inspect mlw_env:abc\n"), std::string::npos)
      << docker.calls();
  EXPECT_EQ(docker.calls().find("curl"), std::string::npos) << docker.calls();
}

TEST(Probe, TheEnginesNoIsBelievedAndItsVersionAsked) {
  FakeDocker docker("up", true);
  docker.engine_answers("404");
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc");
  EXPECT_EQ(facts.image_present, "");
  EXPECT_EQ(facts.docker_detail, "24.0.7");
  EXPECT_EQ(docker.calls().find("image inspect"), std::string::npos) << docker.calls();
}

TEST(Probe, AnyOtherAnswerOrAnotherEngineFallsBackToTheCli) {
  FakeDocker odd("up", true);
  odd.engine_answers("500");
  EXPECT_EQ(odd.probe(docker_target(false), "mlw_env:abc").image_present, "mlw_env:abc");
  EXPECT_NE(odd.calls().find("image inspect mlw_env:abc"), std::string::npos) << odd.calls();
  FakeDocker tcp("up", true);
  tcp.engine_answers("404");
  EXPECT_EQ(tcp.probe(docker_target(false), "mlw_env:abc", "tcp://127.0.0.1:1").image_present,
            "mlw_env:abc");
  EXPECT_EQ(tcp.calls().find("curl"), std::string::npos) << tcp.calls();
  FakeDocker sudo("up", true);
  sudo.engine_answers("404");
  ComputeConfig with_sudo = docker_target(false);
  with_sudo.use_sudo = true;
  EXPECT_EQ(probe_script(with_sudo, probe_ask(with_sudo), "mlw_env:abc").find("curl"),
            std::string::npos);
}

TEST(Probe, AMissingImageAsksTheDaemonForItsVersion) {
  FakeDocker docker("up", false);
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc");
  EXPECT_EQ(facts.image_present, "");
  EXPECT_TRUE(facts.docker_ok);
  EXPECT_EQ(facts.docker_detail, "24.0.7");
  EXPECT_FALSE(facts.nvidia_runtime);
}

TEST(Probe, GpuRunsAlwaysLearnTheRuntimes) {
  FakeDocker docker("gpu", true);
  const TargetFacts facts = docker.probe(docker_target(true), "mlw_env:abc");
  EXPECT_TRUE(facts.nvidia_runtime);
  EXPECT_NE(docker.calls().find("info"), std::string::npos);
}

TEST(Probe, ADaemonThatDoesNotAnswerIsReportedWithItsError) {
  FakeDocker docker("down", false);
  const TargetFacts facts = docker.probe(docker_target(false), "");
  EXPECT_FALSE(facts.docker_ok);
  EXPECT_EQ(facts.docker_detail, "Cannot connect to the Docker daemon at x");
}

TEST(Probe, ReadsGpusAndDiskLines) {
  const TargetFacts facts =
      parse_probe("home=/home/me\ngpu=Tesla K80, 11441 MiB, 470.57.02\ndisk_free_kb=1024\n");
  ASSERT_EQ(facts.gpus.size(), 1u);
  EXPECT_EQ(facts.gpus[0].name, "Tesla K80");
  EXPECT_EQ(facts.gpus[0].memory, "11441 MiB");
  EXPECT_EQ(facts.gpus[0].driver, "470.57.02");
  EXPECT_EQ(facts.disk_free_kb, 1024u);
}

}  // namespace
}  // namespace mlw

namespace mlw {

TEST(Probe, AShipInTheProbeReadsTheStepsInputAndItsLinesComeBack) {
  ComputeConfig compute;
  compute.type = "remote";
  compute.python_location = "python3";
  LocalShell shell;
  ProbeShip ship{"while read -r l; do echo \"got $l\"; done; echo :missing; exit 3", "a\nb\n"};
  const TargetFacts facts = probe_target(shell, compute, probe_ask(compute), "", &ship);
  EXPECT_EQ(ship.heard, (std::vector<std::string>{"got a", "got b", ":missing"}));
  EXPECT_EQ(ship.ended, 3);
  EXPECT_TRUE(facts.python_ok) << "the rest of the probe ran: " << facts.python_detail;
  // Ship lines where no ship was asked for (a target that lies) are not taken as anything.
  const TargetFacts lied = parse_probe("home=/h\nship=end 0\nship=x\n");
  EXPECT_TRUE(lied.section.empty()) << "no ship, no ship lines";
}

TEST(Probe, TheEnginesAnswerAskedBesideTheShipIsReadAfterIt) {
  // The engine is asked first and its answer read once the ship (which takes the step's input)
  // is done: both come back, and the ship still reads every byte of its input.
  FakeDocker docker("up", false);
  docker.engine_answers("200");
  ProbeShip ship{"n=0; while read -r l; do n=$((n+1)); done; echo \"read $n\"", "a\nb\nc\n"};
  const TargetFacts facts = docker.probe(docker_target(false), "mlw_env:abc", "", &ship);
  EXPECT_EQ(ship.heard, (std::vector<std::string>{"read 3"}));
  EXPECT_EQ(ship.ended, 0);
  EXPECT_EQ(facts.image_present, "mlw_env:abc");
  EXPECT_TRUE(facts.docker_ok);
  EXPECT_EQ(docker.calls().find("image inspect"), std::string::npos) << docker.calls();
}

}  // namespace mlw

namespace mlw {

namespace {

/// The boot hook the probe finds with only the stand-ins in `tools` on PATH (each a script that
/// prints `answer` and exits 0), and `id`.
std::string reboot_hook_with(const std::vector<std::string>& tools, const std::string& answer,
                             bool wanted) {
  test::TempDir dir("probe-reboot");
  std::filesystem::create_directories(dir.path() / "bin");
  std::filesystem::create_symlink(*find_executable("id"), dir.path() / "bin" / "id");
  for (const auto& tool : tools) {
    std::ofstream(dir.path() / "bin" / tool) << "#!/bin/sh\necho " << shell_quote(answer) << "\n";
    std::filesystem::permissions(dir.path() / "bin" / tool, std::filesystem::perms::owner_all);
  }
  ComputeConfig compute;
  compute.type = "remote";
  compute.restart.set = wanted;
  compute.restart.after_reboot = wanted;
  const std::string script = "PATH=" + shell_quote((dir.path() / "bin").string()) + "\n" +
                             probe_script(compute, probe_ask(compute), "", "", false);
  return parse_probe(LocalShell().run(script).output).reboot_hook;
}

}  // namespace

TEST(Probe, TheBootHookIsAskedOnlyWhereWantedAndNamedAsTheMachineHasIt) {
  EXPECT_EQ(reboot_hook_with({"crontab"}, "", false), "");  // a submit that does not want it
  EXPECT_EQ(reboot_hook_with({"crontab", "systemctl", "loginctl"}, "yes", true), "crontab");
  EXPECT_EQ(reboot_hook_with({"systemctl", "loginctl"}, "yes", true), "systemd");
  EXPECT_EQ(reboot_hook_with({"systemctl", "loginctl"}, "no", true), "none");  // no linger
  EXPECT_EQ(reboot_hook_with({}, "", true), "none");
  EXPECT_EQ(parse_probe("reboot_hook=rm -rf /\n").reboot_hook, "");  // a target that lies
}

TEST(Probe, DoctorsBootHookRowRefusesOnlyARunThatWantsOne) {
  ComputeConfig compute;
  compute.type = "remote";
  compute.username = "me";
  TargetFacts facts;
  facts.reboot_hook = "none";
  std::vector<CheckRow> rows;
  reboot_row({compute, facts, "gpu-vm", "box"}, rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].result, CheckResult::NotNeeded);
  EXPECT_TRUE(rows[0].refusal.empty());
  compute.restart.set = compute.restart.after_reboot = true;
  rows.clear();
  reboot_row({compute, facts, "gpu-vm", "box"}, rows);
  EXPECT_EQ(rows[0].result, CheckResult::Fail);
  EXPECT_NE(rows[0].refusal.find("restartAfterReboot needs a boot hook on gpu-vm: install cron"),
            std::string::npos)
      << rows[0].refusal;
  EXPECT_NE(rows[0].refusal.find("aml_config/box.compute"), std::string::npos);
  facts.reboot_hook = "crontab";
  rows.clear();
  reboot_row({compute, facts, "gpu-vm", "box"}, rows);
  EXPECT_EQ(rows[0].result, CheckResult::Ok);
  facts.reboot_hook.clear();
  rows.clear();
  reboot_row({compute, facts, "gpu-vm", "box"}, rows);
  EXPECT_TRUE(rows.empty());
}

}  // namespace mlw
