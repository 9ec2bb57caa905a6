// The monitor a remote docker run leaves on its target, run here by /bin/sh against stand-in
// `docker` and `curl` commands (the real ones are driven by tests/integration/test_remote.sh).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>

#include "fake_engine.hpp"
#include "temp_dir.hpp"

#include "mlw/exec/container.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw {

namespace {

const std::string k_id = std::string(64, 'c');

/// A run folder, stand-ins for docker (records its calls; `start -a` prints a line) and curl
/// (answers the engine's create with `status`), and a real unix socket for DOCKER_HOST: bound
/// only (Perl cannot connect, curl is asked), or with `engine`, a stand-in engine listening.
struct MonitorFixture {
  test::TempDir dir{"mlw-monitor"};
  RunPlan plan;
  TargetRunPaths paths;
  TargetFacts facts;

  std::optional<test::FakeEngine> engine;

  explicit MonitorFixture(const std::string& status, const std::string& engine_body = "",
                          const std::vector<test::FakeRoute>& routes = {}) {
    const fs::path bin = dir.path() / "bin";
    make_directories(bin);
    make_directories(dir.path() / "run" / "snapshot");
    atomic_write_file(dir.path() / "state", "created\n");  // what `docker inspect` says
    const std::string calls = shell_quote((dir.path() / "calls").string());
    atomic_write_file(bin / "docker",
                      "#!/bin/sh\necho \"docker $*\" >> " + calls +
                          "\ncase \"$1\" in create) echo " + std::string(64, 'd') +
                          ";; start) echo 'hello from the run';; wait) echo 7;; inspect) cat " +
                          shell_quote((dir.path() / "state").string()) + " 2>/dev/null;; esac\n",
                      0755);
    atomic_write_file(bin / "curl",
                      "#!/bin/sh\necho \"curl $*\" >> " + calls +
                          "\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                          "printf '{\"Id\":\"" +
                          k_id + "\",\"Warnings\":[]}' > \"$out\"\nprintf %s " + status + "\n",
                      0755);
    if (!routes.empty()) {
      engine.emplace(dir.path() / "engine.sock", routes);
    } else if (engine_body.empty()) {
      LocalShell().run(
          "python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' " +
          shell_quote((dir.path() / "engine.sock").string()));
    } else {
      engine.emplace(dir.path() / "engine.sock", "201", engine_body);
    }
    plan.compute.type = "remotedocker";
    plan.project = {dir.path() / "proj", "proj"};
    plan.record.run_id = "proj_1";
    plan.script = "train.py";
    plan.run_config.framework = "Python";
    paths = {(dir.path() / "run").string(), (dir.path() / "share").string(), ""};
  }

  /// Runs the monitor with the stand-ins first on PATH.
  void run() {
    const std::string env =
        "PATH=" + shell_quote((dir.path() / "bin").string()) +
        ":$PATH\nDOCKER_HOST=" + shell_quote("unix://" + (dir.path() / "engine.sock").string()) +
        "\nexport DOCKER_HOST\n";
    LocalShell().run(env + monitor_script(plan, paths, facts, "mlw_env:abc"));
  }

  std::string calls() const { return read_file_if_exists(dir.path() / "calls").value_or(""); }
  std::string in_run(const std::string& name) const {
    return read_file_if_exists(dir.path() / "run" / name).value_or("");
  }
};

}  // namespace

TEST(MonitorScript, CreatesTheContainerThroughTheEngineSocketWithoutTheDockerCli) {
  MonitorFixture f("201");
  f.run();
  EXPECT_NE(f.calls().find("containers/create?name=mlw-proj_1"), std::string::npos) << f.calls();
  EXPECT_EQ(f.calls().find("docker create"), std::string::npos) << f.calls();
  EXPECT_NE(f.calls().find("docker start -a " + k_id), std::string::npos) << f.calls();
  EXPECT_EQ(f.in_run("container"), k_id + "\n");
  EXPECT_EQ(f.in_run("exit_code"), "0\n");
  EXPECT_EQ(f.in_run("driver_log.txt"), "hello from the run\n");
  const auto body = nlohmann::json::parse(f.in_run("create.json"));
  EXPECT_EQ(body["Image"], "mlw_env:abc");
  EXPECT_EQ(body["User"], LocalShell().run("printf %s \"$(id -u):$(id -g)\"").output);
  EXPECT_EQ(body["HostConfig"]["Binds"][0], f.paths.run_dir + ":/mlw/run");
}

TEST(MonitorScript, AnEngineThatListensIsAskedWithPerlAndCurlIsNotStarted) {
  const std::string id(64, 'e');
  MonitorFixture f("500", "{\"Id\":\"" + id + "\",\"Warnings\":[]}");
  f.run();
  EXPECT_EQ(f.in_run("container"), id + "\n");
  EXPECT_NE(f.calls().find("docker start -a " + id), std::string::npos) << f.calls();
  EXPECT_EQ(f.calls().find("curl"), std::string::npos) << f.calls();
  EXPECT_EQ(f.calls().find("docker create"), std::string::npos) << f.calls();
  const std::string body = f.in_run("create.json");
  const std::string head =
      "POST /containers/create?name=mlw-proj_1 HTTP/1.0\r\nHost: docker\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  EXPECT_EQ(f.engine->requests().substr(0, head.size() + body.size()), head + body)
      << f.engine->requests();
  EXPECT_EQ(f.in_run("exit_code"), "0\n");
}

/// A frame of the engine's multiplexed stream: stream 1 (stdout) or 2 (stderr), then its length.
std::string frame(char stream, const std::string& text) {
  const auto n = static_cast<std::uint32_t>(text.size());
  return std::string{stream,
                     0,
                     0,
                     0,
                     static_cast<char>(n >> 24),
                     static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8),
                     static_cast<char>(n)} +
         text;
}

/// The engine's answers to a run it creates, attaches, starts (`start`) and waits for (`wait`).
std::vector<test::FakeRoute> engine_run(const std::string& start, const std::string& wait) {
  const std::string big(70000, 'x');
  return {{"/containers/create", "201", "{\"Id\":\"" + std::string(64, 'e') + "\"}"},
          {"/attach?stream=1&stdout=1&stderr=1", "101",
           frame(1, "hello from the engine\n") + frame(2, "a warning\n") + frame(1, big + "\n")},
          {"/start", start, ""},
          {"/wait", "200", wait}};
}

TEST(MonitorScript, TheEngineAttachesStartsAndWaitsWithoutTheDockerCli) {
  MonitorFixture f("500", "", engine_run("204", "{\"Error\":null,\"StatusCode\":3}"));
  f.run();
  EXPECT_EQ(f.in_run("driver_log.txt"),
            "hello from the engine\na warning\n" + std::string(70000, 'x') + "\n");
  EXPECT_EQ(f.in_run("exit_code"), "3\n");
  EXPECT_EQ(f.calls(), "") << f.calls();
  const std::string asked = f.engine->requests();
  const auto attach = asked.find("POST /containers/" + std::string(64, 'e') +
                                 "/attach?stream=1&stdout=1&stderr=1 HTTP/1.1\r\n");
  const auto start = asked.find("/start HTTP/1.0");
  const auto wait = asked.find("/wait HTTP/1.0");
  EXPECT_NE(attach, std::string::npos) << asked;
  EXPECT_LT(attach, start) << asked;
  EXPECT_LT(start, wait) << asked;
}

TEST(MonitorScript, AContainerTheEngineDidNotStartIsStartedByTheDockerCli) {
  MonitorFixture f("500", "", engine_run("500", ""));
  f.run();
  EXPECT_NE(f.calls().find("docker start -a " + std::string(64, 'e')), std::string::npos)
      << f.calls();
  EXPECT_EQ(f.in_run("driver_log.txt"), "hello from the run\n");
  EXPECT_EQ(f.in_run("exit_code"), "0\n");
}

TEST(MonitorScript, AnEndTheEngineDidNotTellIsAskedOfTheDockerCli) {
  MonitorFixture f("500", "", engine_run("204", "{\"nonsense\":1}"));
  atomic_write_file(f.dir.path() / "state", "exited\n");
  f.run();
  EXPECT_EQ(f.calls(), "docker inspect -f {{.State.Status}} " + std::string(64, 'e') +
                           "\ndocker wait " + std::string(64, 'e') + "\n");
  EXPECT_EQ(f.in_run("exit_code"), "7\n");
}

TEST(MonitorScript, AnyOtherAnswerOfTheEngineLeavesTheCreateToTheDockerCli) {
  MonitorFixture f("500");
  f.run();
  EXPECT_NE(f.calls().find("docker create --name mlw-proj_1"), std::string::npos) << f.calls();
  EXPECT_NE(f.calls().find("docker start -a " + std::string(64, 'd')), std::string::npos)
      << f.calls();
  EXPECT_EQ(f.in_run("exit_code"), "0\n");
}

TEST(MonitorScript, ExtraDockerRunArgumentsGoThroughTheDockerCli) {
  MonitorFixture f("201");
  f.plan.compute.docker_run_args = {"--shm-size", "1g"};
  f.run();
  EXPECT_EQ(f.calls().find("curl"), std::string::npos) << f.calls();
  EXPECT_NE(f.calls().find("docker create --name mlw-proj_1"), std::string::npos) << f.calls();
}

TEST(MonitorScript, ASweepsPointWaitsForItsTurnThenStartsWithoutALease) {
  MonitorFixture f("201");
  const fs::path turns = f.dir.path() / "turns";
  make_directories(turns / "slot.0");
  f.plan.gate = SweepGate{turns.string(), 1};
  // Another point holds the sweep's only slot for two seconds (waited for: at most 10 s).
  const std::string slot = shell_quote((turns / "slot.0").string());
  LocalShell().run("(flock -x " + slot +
                   " sleep 2 </dev/null >/dev/null 2>&1 &) ; i=0; while flock -n " + slot +
                   " true && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done");
  f.run();
  const std::string lease = f.in_run("lease.log");
  EXPECT_EQ(lease.rfind("queued 1\ngranted 0 ", 0), 0u) << lease;
  EXPECT_EQ(f.in_run("exit_code"), "0\n");
  EXPECT_NE(f.calls().find("docker start -a " + k_id), std::string::npos) << f.calls();
}

}  // namespace mlw
