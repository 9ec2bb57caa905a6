// The conformance suite every kind of target must pass (docs/architecture.md): for each row of
// the kind table, `api::submit` runs real scripts through the kind's executor and Runner at a
// recording fake Place — this machine's /bin/sh playing the target, with the kind's stand-in
// tools (tests/data/standins/<kind>/: a fake docker, Grid Engine, Slurm) first on its PATH.
// Each run's record, log, outputs and metrics are checked as a user sees them. Adding a row to
// the table runs it here; a kind with no stand-ins named below fails until it has them.

#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "fakes.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/api/history.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

/// Each kind's stand-in tools (a folder of tests/data/standins) and what its .compute says
/// besides `type`. A new kind adds its line here.
struct KindSetup {
  std::string standins;    ///< "" when it needs none (a shell and python3 are the target's)
  std::string compute;     ///< the rest of aml_config/t.compute
  bool tells_oom = false;  ///< its place tells a kill for memory from another SIGKILL
};

const std::map<std::string, KindSetup>& setups() {
  static const std::map<std::string, KindSetup> table = {
      {"local", {"", "pythonLocation: python3\n"}},
      {"remote", {"", "address: fake-host\nusername: u\npythonLocation: python3\n"}},
      {"docker", {"docker", "baseDockerImage: python:3.11-slim\n", true}},
      {"remotedocker",
       {"docker", "address: fake-host\nusername: u\nbaseDockerImage: python:3.11-slim\n", true}},
      {"sge", {"sge", "address: fake-host\nusername: u\npythonLocation: python3\n"}},
      {"slurm", {"slurm", "address: fake-host\nusername: u\npythonLocation: python3\n", true}},
  };
  return table;
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto found = setups().find(GetParam());
    ASSERT_NE(found, setups().end())
        << "kind " << GetParam()
        << " has no stand-ins for the conformance suite: add them to tests/data/standins and "
           "its line to setups() in this file";
    const fs::path root = m_dir.path() / "proj";
    fs::create_directories(root / "aml_config");
    atomic_write_file(root / "aml_config/t.compute",
                      "type: " + GetParam() + "\n" + found->second.compute +
                          "nativeSharedDirectory: " + (m_dir.path() / "share").string() + "\n");
    atomic_write_file(root / "aml_config/t.runconfig",
                      "Target: t\nFramework: Python\nPrepareEnvironment: true\n");
    atomic_write_file(root / "run.py", k_script);
    fs::create_directories(m_dir.path() / "home");
    std::string prefix = "HOME=" + shell_quote((m_dir.path() / "home").string()) +
                         "\nexport HOME\nDOCKER_HOST=unix://" +
                         shell_quote((m_dir.path() / "no-engine.sock").string()) +
                         "\nexport DOCKER_HOST\n";
    if (!found->second.standins.empty()) {
      prefix +=
          "PATH=" +
          shell_quote(std::string(MLW_TEST_DATA_DIR) + "/standins/" + found->second.standins) +
          ":$PATH\n";
    }
    m_prefix = prefix;
    m_place = std::make_unique<test::RecordingPlace>(*kind_of(GetParam()).place, prefix,
                                                     m_dir.path() / "asked");
    m_ctx.working_dir = root;
    m_ctx.out = &m_out;
    m_ctx.err = &m_err;
    m_ctx.clock = std::make_shared<SystemClock>();
    m_ctx.processes = std::make_shared<SystemProcessRunner>();
    m_ctx.connector = std::make_shared<test::RecordingConnector>(m_dir.path() / "bin");
    m_ctx.executors = std::make_shared<test::RecordingKinds>(*m_place);
  }

  /// Submits run.py with `arguments` (its behaviour: see k_script).
  int submit(std::vector<std::string> arguments, bool async = false) {
    api::SubmitRequest request;
    request.run_config = "t";
    request.script = "run.py";
    request.arguments = std::move(arguments);
    request.async = async;
    return api::submit(m_ctx, request);
  }

  RunRecord last_run() {
    HistoryStore store(m_ctx.project().state_dir());
    return store.load(store.list({"", "", 1}).at(0).run_id);
  }

  /// The last run once it has ended (bounded: 90 s: a sanitizer build beside other suites is slow).
  RunRecord ended_run() {
    for (int i = 0; i < 900; ++i) {
      const RunRecord record = last_run();
      if (status::is_final(record.status)) return record;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return last_run();
  }

  /// What the run printed, from its history folder.
  std::string log_of(const RunRecord& record) {
    return read_file_if_exists(m_ctx.project().state_dir() / "runs" / record.run_id /
                               "driver_log.txt")
        .value_or("");
  }

  /// Waits until the run's log holds `text` (bounded: 90 s: a sanitizer build beside other suites
  /// is slow).
  bool wait_for_log(const std::string& text) {
    for (int i = 0; i < 900; ++i) {
      if (log_of(last_run()).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  /// The names of the files in the run's folder at the place (what its monitor left).
  std::string there_files(const std::string& run_id) const {
    std::string names;
    std::error_code ec;
    for (auto it = fs::directory_iterator(home() / ".mlw/runs" / run_id, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      names += it->path().filename().string() + " ";
    }
    return names;
  }

  /// What the script wrote into the run's share folder when it started (one line per run).
  std::string ran() const {
    return read_file_if_exists(m_dir.path() / "share/proj/t/ran").value_or("");
  }

  /// The place's HOME, where the stand-ins keep their state and read their knobs.
  fs::path home() const { return m_dir.path() / "home"; }

  /// The objects in the place's content store.
  std::size_t objects() const {
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = fs::directory_iterator(home() / ".mlw/objects", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  }

  /// Waits until `done` says so (bounded: 90 s: a sanitizer build beside other suites is slow).
  static bool wait_until(const std::function<bool()>& done) {
    for (int i = 0; i < 900; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  /// The script every scenario runs: `ok` prints two lines, writes an output and a metric;
  /// `exit N` exits N; `kill` kills itself with SIGKILL; `sleep` prints and waits; `slow` prints,
  /// waits a second and prints again.
  static constexpr const char* k_script =
      "import os, sys, time\n"
      "what = sys.argv[1]\n"
      "with open(os.path.join(os.environ['MLW_SHARE_DIR'], 'ran'), 'a') as f:\n"
      "    f.write(what + '\\n')\n"
      "print('mlw-conformance: ' + what, flush=True)\n"
      "if what == 'ok':\n"
      "    print('second line', flush=True)\n"
      "    with open(os.path.join(os.environ['MLW_OUTPUTS_DIR'], 'model.txt'), 'w') as f:\n"
      "        f.write('weights\\n')\n"
      "    import socket\n"  // a file tar warns about ("socket ignored") on its stderr
      "    socket.socket(socket.AF_UNIX).bind(os.path.join(os.environ['MLW_OUTPUTS_DIR'], 's'))\n"
      "    with open(os.environ['MLW_METRICS_FILE'], 'a') as f:\n"
      "        f.write('{\"name\": \"loss\", \"value\": 0.25, \"step\": 1}\\n')\n"
      "elif what == 'exit':\n"
      "    sys.exit(int(sys.argv[2]))\n"
      "elif what == 'kill':\n"
      "    os.kill(os.getpid(), 9)\n"
      "elif what == 'sleep':\n"
      "    time.sleep(60)\n"
      "elif what == 'slow':\n"
      "    time.sleep(1.5)\n"
      "    print('after the wait', flush=True)\n";

  test::TempDir m_dir{"conformance"};
  std::string m_prefix;  ///< the place's HOME, DOCKER_HOST and stand-ins, before each step
  std::unique_ptr<test::RecordingPlace> m_place;
  std::ostringstream m_out;
  std::ostringstream m_err;
  Context m_ctx;
};

}  // namespace

TEST_P(Conformance, TheProbeAndTheChecksPassWhereTheKindsToolsAreAndSayWhereTheyAreNot) {
  const ComputeConfig compute = load_compute(m_ctx.project(), "t");
  const TargetKind& kind = kind_of(GetParam());
  auto checks = [&](const std::string& path) {
    test::Drop no_drop;
    test::StandInShell shell(m_prefix + path, no_drop);
    const TargetFacts facts = probe_target(shell, compute, probe_ask(compute), "", nullptr, true);
    EXPECT_EQ(facts.home, (home()).string());
    std::vector<CheckRow> rows;
    kind.checks({compute, facts, shell.host(), "t"}, rows);
    return rows;
  };
  for (const CheckRow& row : checks("")) {
    EXPECT_NE(row.result, CheckResult::Fail) << row.name << ": " << row.detail;
  }
  if (setups().at(GetParam()).standins.empty()) return;
  // Without its tools (and Docker's): a row fails and submit refuses, naming what is missing.
  const fs::path bare = m_dir.path() / "bare";
  fs::create_directories(bare);
  for (const char* tool : {"sed", "awk", "df", "grep", "tail", "head", "sort", "cat", "tr"}) {
    if (const auto found = find_executable(tool)) fs::create_symlink(*found, bare / tool);
  }
  const std::vector<CheckRow> rows = checks("PATH=" + shell_quote(bare.string()) + "\n");
  std::string refusal;
  for (const CheckRow& row : rows) {
    if (refusal.empty()) refusal = row.refusal;
  }
  EXPECT_FALSE(refusal.empty()) << "no row refuses a place without the kind's tools";
}

TEST_P(Conformance, ACompletedRunHasItsLogOutputsAndMetrics) {
  EXPECT_EQ(submit({"ok"}), 0) << m_err.str();
  const RunRecord record = last_run();
  EXPECT_EQ(record.status, status::k_completed) << join(record.problems, "\n");
  EXPECT_EQ(record.exit_code, 0);
  EXPECT_NE(m_out.str().find("mlw-conformance: ok\nsecond line\n"), std::string::npos)
      << m_out.str() << m_err.str();
  EXPECT_NE(log_of(record).find("mlw-conformance: ok\nsecond line\n"), std::string::npos);
  EXPECT_EQ(ran(), "ok\n") << "the share folder is the run's MLW_SHARE_DIR";
  EXPECT_EQ(read_file_if_exists(m_ctx.project().state_dir() / "runs" / record.run_id /
                                "outputs/model.txt"),
            "weights\n");
  ASSERT_TRUE(record.metrics.count("loss")) << GetParam();
  // The socket in outputs/ (tar warns about it on its stderr) does not break the results' stream.
  EXPECT_EQ(join(record.problems, "\n").find("could not all be brought back"), std::string::npos)
      << join(record.problems, "\n");
  // Nor is it dropped silently: every kind says so, in the same words.
  EXPECT_NE(
      join(record.problems, "\n").find("outputs/s is not a regular file; it was not collected"),
      std::string::npos)
      << GetParam() << ": " << join(record.problems, "\n");
  EXPECT_EQ(m_place->asked().find("reconnect"), std::string::npos) << m_place->asked();
}

TEST_P(Conformance, TheScriptsExitCodeIsTheRunsAndSubmits) {
  EXPECT_EQ(submit({"exit", "3"}), 3) << m_err.str();
  const RunRecord record = last_run();
  EXPECT_EQ(record.status, status::k_failed);
  EXPECT_EQ(record.exit_code, 3);
}

TEST_P(Conformance, AScriptKilledBySignal9Ends137) {
  EXPECT_EQ(submit({"kill"}), 137) << m_err.str();
  EXPECT_EQ(last_run().exit_code, 137);
  EXPECT_EQ(last_run().status, status::k_failed);
}

TEST_P(Conformance, CancelAfterTheStartEndsTheRunCanceled143) {
  EXPECT_EQ(submit({"sleep"}, true), 0) << m_err.str();
  ASSERT_TRUE(wait_for_log("mlw-conformance: sleep")) << log_of(last_run()) << m_err.str();
  api::cancel(m_ctx, last_run().run_id);
  const RunRecord record = ended_run();
  EXPECT_EQ(record.status, status::k_canceled) << join(record.problems, "\n");
  EXPECT_EQ(record.exit_code, 143);
}

TEST_P(Conformance, ADroppedConnectionLosesNoByteAndTheRunEndsAsUsual) {
  if (!kind_of(GetParam()).place->connects()) {
    // Nothing to drop where it runs: no connection is made again.
    EXPECT_FALSE(kind_of(GetParam()).place->reconnect(m_ctx, RunPlan{}));
    return;
  }
  m_place->drop.armed = true;
  EXPECT_EQ(submit({"ok"}), 0) << m_err.str();
  const RunRecord record = last_run();
  EXPECT_EQ(record.status, status::k_completed) << join(record.problems, "\n");
  EXPECT_NE(m_place->asked().find("reconnect"), std::string::npos) << m_place->asked();
  EXPECT_EQ(log_of(record), "mlw-conformance: ok\nsecond line\n") << "no byte lost or twice";
}

TEST_P(Conformance, TheShipSendsAllThenNothingThenOneChange) {
  if (!kind_of(GetParam()).place->connects()) {
    // It runs where the project is: its run folder is the run's history folder, nothing shipped.
    EXPECT_EQ(submit({"exit", "0"}), 0) << m_err.str();
    EXPECT_TRUE(fs::is_regular_file(m_ctx.project().state_dir() / "runs" / last_run().run_id /
                                    "snapshot/run.py"));
    EXPECT_EQ(objects(), 0U);
    return;
  }
  EXPECT_EQ(submit({"exit", "0"}), 0) << m_err.str();
  const std::size_t all = objects();
  EXPECT_GE(all, 1U);
  EXPECT_NE(m_place->asked().find("stage: the store lacks " + std::to_string(all)),
            std::string::npos)
      << m_place->asked();
  EXPECT_EQ(submit({"exit", "0"}), 0) << m_err.str();
  EXPECT_EQ(objects(), all) << "nothing new, nothing shipped";
  atomic_write_file(m_ctx.working_dir / "data.txt", "one more file\n");
  EXPECT_EQ(submit({"exit", "0"}), 0) << m_err.str();
  EXPECT_EQ(objects(), all + 1) << "one change, one object";
  EXPECT_EQ(m_place->asked().find("unclear"), std::string::npos) << m_place->asked();
}

TEST_P(Conformance, ACancelBeforeTheStartEndsTheRunAndTheScriptNeverRuns) {
  const TargetKind& kind = kind_of(GetParam());
  if (!kind.runner.batch && !kind.runner.image) {
    // Its script starts at once: there is no time before the start to cancel in (-a returns
    // with the run Running; a cancel then is CancelAfterTheStart's).
    EXPECT_EQ(submit({"sleep"}, true), 0) << m_err.str();
    EXPECT_EQ(last_run().status, status::k_running);
    api::cancel(m_ctx, last_run().run_id);
    EXPECT_EQ(ended_run().status, status::k_canceled);
    return;
  }
  // The stand-ins hold the job queued, or the environment's build going, while `hold` exists.
  atomic_write_file(home() / "hold", "");
  // -a returns once the run is queued or has started: the build holds it, so submit waits.
  // What this thread reads while the submit runs beside it: the history, through its own
  // connection and a folder found before (the Context is the submit's).
  const fs::path state = m_ctx.project().state_dir();
  auto newest = [&state]() -> std::optional<RunRecord> {
    std::error_code ec;
    if (!fs::exists(state / "history.db", ec)) return std::nullopt;
    HistoryStore store(state);
    const auto rows = store.list({"", "", 1});
    if (rows.empty()) return std::nullopt;
    return store.load(rows[0].run_id);
  };
  // Another mlw cancels it (its own output).
  Context other = m_ctx;
  std::ostringstream out;
  std::ostringstream err;
  other.out = &out;
  other.err = &err;
  // The submit runs in a child process, not a thread: it forks the run's supervisor, and a fork
  // while another thread holds a lock (SQLite's, the allocator's under ASan) leaves the child
  // waiting on it forever.
  const pid_t submitter = ::fork();
  if (submitter == 0) {
    int code = 99;
    try {
      code = submit({"ok"}, true);
    } catch (...) {
    }
    std::_Exit(code);  // no test teardown in the child
  }
  ASSERT_GT(submitter, 0);
  std::string id;
  const bool held = wait_until([&] {
    const auto run = newest();
    if (!run) return false;
    id = run->run_id;
    return !run->job_id.empty() ||
           read_file_if_exists(state / "runs" / id / "build.log").value_or("").find("Step 1/3") !=
               std::string::npos;
  });
  // A build goes on once the cancel is asked for (the run must then not start); a queued job
  // stays queued until the cancel has ended it. A jthread: joined however this test ends.
  std::jthread release([&] {
    const auto run = newest();
    if (!held || !run || !run->job_id.empty()) return;
    const fs::path asked = state / "runs" / id / "cancel_requested";
    wait_until([&] { return fs::exists(asked); });
    fs::remove(home() / "hold");
  });
  if (held) api::cancel(other, id);
  release.join();
  fs::remove(home() / "hold");
  int wait_status = 0;
  ::waitpid(submitter, &wait_status, 0);  // bounded by the submit's own wait for the start (30 s)
  ASSERT_TRUE(held) << "neither queued nor building";
  EXPECT_TRUE(WIFEXITED(wait_status));
  EXPECT_EQ(WEXITSTATUS(wait_status), 0) << "the submit's exit code";
  const RunRecord record = ended_run();
  EXPECT_EQ(record.status, status::k_canceled) << join(record.problems, "\n");
  EXPECT_EQ(log_of(record).find("mlw-conformance"), std::string::npos) << log_of(record);
  EXPECT_EQ(ran(), "") << "the script started";
}

TEST_P(Conformance, ARunWhoseSupervisorDiedIsLostOrFollowedAgainToItsEnd) {
  EXPECT_EQ(submit({"slow"}, true), 0) << m_err.str();
  ASSERT_TRUE(wait_for_log("mlw-conformance: slow")) << m_err.str();
  const RunRecord running = last_run();
  ASSERT_GT(running.pid, 0);
  ::kill(running.pid, SIGKILL);
  ::waitpid(running.pid, nullptr, 0);  // this process forked it
  // `history logs -f`: a run that goes on at its place is followed again to its end.
  std::ostringstream logs;
  m_ctx.out = &logs;
  api::show_logs(m_ctx, running.run_id, true);
  m_ctx.out = &m_out;
  const RunRecord record = ended_run();
  if (!kind_of(GetParam()).runner.detached) {
    EXPECT_EQ(record.status, status::k_lost);
    return;
  }
  EXPECT_EQ(record.status, status::k_completed) << join(record.problems, "\n");
  EXPECT_NE(log_of(record).find("mlw-conformance: slow\nafter the wait\n"), std::string::npos)
      << log_of(record);
  EXPECT_NE(logs.str().find("after the wait"), std::string::npos) << logs.str();
}

TEST_P(Conformance, ARunKilledForMemoryIsSaidToBe) {
  atomic_write_file(home() / "oom", "");  // the stand-ins report a 137 as out of memory
  EXPECT_EQ(submit({"kill"}), 137) << m_err.str();
  const RunRecord record = last_run();
  EXPECT_EQ(record.status, status::k_failed);
  // Where the place cannot tell, a SIGKILL is not said to be for memory.
  EXPECT_EQ(join(record.problems, "\n").find("out of memory") != std::string::npos,
            setups().at(GetParam()).tells_oom)
      << join(record.problems, "\n");
}

// A run whose batch system or Docker engine stops answering for longer than its retry setting is
// Lost, with the reason; the job or container may go on (killed here at the end).
TEST_P(Conformance, ARunWhoseSystemOrEngineStopsAnsweringIsLost) {
  const TargetKind& kind = kind_of(GetParam());
  if (!kind.runner.batch && !kind.runner.image) return;  // nothing there to stop answering
  ::setenv("MLW_SLURM_RETRY", "1", 1);
  ::setenv("MLW_BATCH_RETRY", "1", 1);
  ::setenv("MLW_ENGINE_RETRY", "1", 1);
  EXPECT_EQ(submit({"sleep"}, true), 0) << m_err.str();
  ASSERT_TRUE(wait_for_log("mlw-conformance: sleep")) << m_err.str();
  atomic_write_file(home() / "down", "");  // the stand-ins' status tools stop answering
  const RunRecord record = ended_run();
  ::unsetenv("MLW_SLURM_RETRY");
  ::unsetenv("MLW_BATCH_RETRY");
  ::unsetenv("MLW_ENGINE_RETRY");
  // What goes on at the place: the jobs' process groups, the containers' processes.
  const auto kill_listed = [](const fs::path& folder, const std::string& name, bool group) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(folder, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename().string() != name && it->path().extension() != name) continue;
      const auto pid =
          parse_integer(trim(read_file_if_exists(it->path()).value_or("")), 2, 1LL << 31);
      if (pid) ::kill(group ? -static_cast<pid_t>(*pid) : static_cast<pid_t>(*pid), SIGKILL);
    }
  };
  kill_listed(home() / ".fake-sge", ".group", true);
  kill_listed(home() / ".fake-slurm", ".group", true);
  kill_listed(home() / ".fake-docker", "pid", false);
  EXPECT_EQ(record.status, status::k_lost) << join(record.problems, "\n") << "\nlog:\n"
                                           << log_of(record) << "\nthere:\n"
                                           << there_files(record.run_id);
  EXPECT_FALSE(record.lost_reason.empty()) << join(record.problems, "\n") << "\nthere:\n"
                                           << there_files(record.run_id);
  EXPECT_NE(record.lost_problem.find("did not answer"), std::string::npos) << record.lost_problem;
}

// A batch system or Docker engine that stops answering for a moment: the run ends as the script
// did; where the place's end may have been missed (a container's), the outage is said.
TEST_P(Conformance, ARunWhoseSystemOrEngineIsAwayForAMomentEndsAsTheScriptDid) {
  const TargetKind& kind = kind_of(GetParam());
  if (!kind.runner.batch && !kind.runner.image) return;  // nothing there to stop answering
  EXPECT_EQ(submit({"slow"}, true), 0) << m_err.str();
  ASSERT_TRUE(wait_for_log("mlw-conformance: slow")) << m_err.str();
  atomic_write_file(home() / "down", "");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the script ends meanwhile
  fs::remove(home() / "down");
  const RunRecord record = ended_run();
  EXPECT_EQ(record.status, status::k_completed) << join(record.problems, "\n");
  EXPECT_EQ(record.exit_code, 0);
  if (kind.runner.image) {
    EXPECT_NE(join(record.problems, "\n").find("stopped answering during the run"),
              std::string::npos)
        << join(record.problems, "\n");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, Conformance, ::testing::ValuesIn(kind_name_list()),
                         [](const auto& info) { return info.param; });

}  // namespace mlw
