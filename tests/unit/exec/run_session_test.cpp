// The run life cycle without sshd or dockerd: a RunSession and its drivers against a recording
// fake shell that answers each script as a target would (ninja's FakeCommandRunner is the model).

#include "mlw/exec/run_session.hpp"

#include "kinds/slurm/slurm.hpp"

#include <gtest/gtest.h>

#include <deque>

#include "fakes.hpp"
#include "temp_dir.hpp"

#include "mlw/history/store.hpp"
#include "mlw/remote/tar.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// What the fake target answers to one script.
struct Answer {
  Answer(std::string out, int code = 0, bool dropped = false, std::string err = {})
      : output(std::move(out)), exit_code(code), drop(dropped), errors(std::move(err)) {}
  std::string output;
  int exit_code = 0;
  bool drop = false;   ///< the connection drops after the output
  std::string errors;  ///< stderr (where the follow step says how the run ended)
};

/// Every script any fake shell was sent, in order, and the answers they get: the first rule
/// whose text is in the script answers it.
struct FakeTarget {
  std::vector<std::string> scripts;
  std::vector<std::pair<std::string, std::deque<Answer>>> rules;
  int connections = 0;

  void on(const std::string& text, std::vector<Answer> answers) {
    rules.emplace_back(text, std::deque<Answer>(answers.begin(), answers.end()));
  }

  ShellResult answer(const std::string& script, const ShellStreams& streams) {
    scripts.push_back(script);
    for (auto& [text, answers] : rules) {
      if (script.find(text) == std::string::npos || answers.empty()) continue;
      const Answer a = answers.front();
      if (answers.size() > 1) answers.pop_front();
      ShellResult result{a.exit_code, "", ""};
      if (streams.on_output && !a.output.empty()) {
        streams.on_output(a.output);
      } else {
        result.output = a.output;
      }
      if (streams.on_errors && !a.errors.empty()) {
        streams.on_errors(a.errors);
      } else {
        result.errors = a.errors;
      }
      if (a.drop) throw Error("ssh: the connection dropped");
      return result;
    }
    return ShellResult{0, "", ""};
  }

  /// The scripts that contain `text`.
  std::vector<std::string> sent(const std::string& text) const {
    std::vector<std::string> found;
    for (const auto& script : scripts) {
      if (script.find(text) != std::string::npos) found.push_back(script);
    }
    return found;
  }
};

/// A connection to the fake target (`kept`: through a kept connection).
std::unique_ptr<Shell> fake_shell(FakeTarget& target, bool kept = false) {
  ++target.connections;
  return std::make_unique<test::AnsweringShell>(
      "fake-host",
      [&target](const std::string& script, const ShellStreams& streams) {
        return target.answer(script, streams);
      },
      kept);
}

using test::FixedClock;

/// A run of a `type` target, recorded as Preparing in a fresh history.
struct Fixture {
  test::TempDir dir{"mlw-session"};
  Context ctx;
  RunPlan plan;
  FakeTarget target;
  std::vector<bool> own_logins;  // each reconnect's argument

  explicit Fixture(const std::string& type) {
    ctx.clock = std::make_shared<FixedClock>();
    plan.project = {dir.path() / "p", "p"};
    plan.target_name = "t";
    plan.compute.type = type;
    plan.compute.address = "fake-host";
    plan.history_dir = dir.path() / "p" / ".mlw";
    plan.record.run_id = "p_1";
    plan.record.status = status::k_preparing;
    plan.record.target_type = type;
    plan.run_dir = plan.history_dir / "runs" / "p_1";
    make_directories(plan.run_dir);
    HistoryStore(plan.history_dir).save(plan.record);
  }

  /// `kept`: its first connection, and any reconnect that may be, is the kept one.
  RunSession session(bool kept = false) {
    return RunSession(ctx, plan, fake_shell(target, kept), TargetFacts{},
                      {"/home/u/.mlw/runs/p_1", "/home/u/share", ""}, -1, true, ssh_host(),
                      [this, kept](bool own_login) {
                        own_logins.push_back(own_login);
                        return fake_shell(target, kept && !own_login);
                      });
  }

  RunRecord record() { return HistoryStore(plan.history_dir).load("p_1"); }
};

}  // namespace

TEST(RunSession, ARunnerIsStartedFollowedAndItsEndingIsTheRecords) {
  Fixture f("remote");
  test::ScriptedRunner runner;
  runner.log = "a line\n";
  runner.end.status = status::k_failed;
  runner.end.exit_code = 3;
  auto session = f.session();
  EXPECT_EQ(session.run(runner, nullptr), 0);
  EXPECT_EQ(runner.started, 1);
  EXPECT_EQ(runner.followed, 1);
  EXPECT_EQ(runner.finished, 1);
  EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "driver_log.txt").value_or(""), "a line\n");
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_failed);
  EXPECT_EQ(record.exit_code, 3);
  EXPECT_EQ(record.pid, 0) << "no owner once it ended";
}

TEST(RunSession, ARunCanceledBeforeItsStartNeverStartsTheRunner) {
  Fixture f("remote");
  atomic_write_file(f.plan.run_dir / "cancel_requested", "");
  test::ScriptedRunner runner;
  auto session = f.session();
  EXPECT_EQ(session.run(runner, nullptr), 0);
  EXPECT_EQ(runner.started, 0);
  EXPECT_EQ(f.record().status, status::k_canceled);
}

TEST(RunSession, ARunnerThatCannotStartLeavesTheRunFailedWithItsReasonAndNoFollow) {
  Fixture f("remote");
  test::ScriptedRunner runner;
  runner.refuse = "the batch system refused the job";
  auto session = f.session();
  EXPECT_EQ(session.run(runner, nullptr), 0);
  EXPECT_EQ(runner.followed, 0);
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_failed);
  EXPECT_EQ(record.exit_code, exit_code::k_cannot_start);
  EXPECT_EQ(join(record.problems, "\n"), "the batch system refused the job");
}

TEST(RunSession, AReconnectResumesTheLogAtTheByteReceived) {
  Fixture f("remote");
  // The first step starts the monitor (its pid on stderr) and follows it: it gets 6 bytes, then
  // the connection drops; the next must not start it again, and ask from byte 7.
  f.target.on("\nmlw_pid=\n", {{"hello ", 0, true, "mlw-pid=4242\n"}});
  f.target.on("\nmlw_offset=7\n", {{"world\n", 0, false, "mlw-state=ended\n0\n"}});
  const auto driver = monitor_driver();
  auto session = f.session();
  EXPECT_EQ(session.run(*driver, nullptr), 0);
  EXPECT_EQ(f.target.sent("\nmlw_offset=7\n").size(), 1U);
  EXPECT_EQ(f.target.sent("\nmlw_pid=\n").size(), 1U);
  EXPECT_NE(f.target.sent("\nmlw_offset=7\n")[0].find("\nmlw_pid=4242\n"), std::string::npos);
  EXPECT_EQ(f.target.connections, 2);
  EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "driver_log.txt").value_or(""), "hello world\n");
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_completed);
  EXPECT_EQ(record.exit_code, 0);
  EXPECT_EQ(record.process_group, 0);
  EXPECT_EQ(record.pid, 0);
}

TEST(RunSession, ADetachedRunGivesTheKeptConnectionBackOnceStartedAndFollowsOnItsOwnLogin) {
  for (const bool detached : {false, true}) {
    Fixture f("remote");
    f.plan.detached = detached;
    f.target.on("\nmlw_pid=\n", {{"", 0, false, "mlw-pid=4242\nmlw-state=running\n"}});
    f.target.on("\nmlw_pid=4242\n", {{"hello\n", 0, false, "mlw-state=ended\n0\n"}});
    const auto driver = monitor_driver();
    auto session = f.session(true);
    EXPECT_EQ(session.run(*driver, nullptr), 0);
    const auto launches = f.target.sent("\nmlw_pid=\n");
    ASSERT_EQ(launches.size(), 1U);
    EXPECT_EQ(launches[0].find("\nmlw_handover=1\n") != std::string::npos, detached);
    // Detached: the follow comes over a login of its own; else the same kept connection.
    EXPECT_EQ(f.own_logins, detached ? std::vector<bool>{true} : std::vector<bool>{});
    EXPECT_EQ(f.target.connections, detached ? 2 : 1);
    EXPECT_EQ(f.record().status, status::k_completed);
    EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "driver_log.txt").value_or(""), "hello\n");
  }
}

TEST(RunSession, TheResultsComeAfterTheEndInTheFollowStepItself) {
  Fixture f("remote");
  TarWriter outputs;
  outputs.add_directory("outputs");
  outputs.add_data("outputs/model.txt", "weights\n", 0644);
  std::string tar(outputs.size(), '\0');
  std::size_t filled = 0;
  while (const std::size_t n = outputs.read(tar.data() + filled, tar.size() - filled)) filled += n;
  const std::string metrics = "{\"name\": \"acc\", \"value\": 0.9}\n";
  f.target.on("\nmlw_pid=\n",
              {{"hi\n", 0, false,
                "mlw-pid=4242\nmlw-state=ended\n0\n\nmlw-results\n" +
                    std::to_string(metrics.size()) + "\n" + metrics + "0\n" + tar}});
  const auto driver = monitor_driver();
  auto session = f.session();
  EXPECT_EQ(session.run(*driver, nullptr), 0);
  EXPECT_EQ(f.target.scripts.size(), 1U) << "no step of their own for the results";
  EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "metrics.jsonl").value_or(""), metrics);
  EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "outputs" / "model.txt").value_or(""),
            "weights\n");
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_completed);
  EXPECT_TRUE(record.problems.empty()) << join(record.problems, "; ");
}

TEST(RunSession, AnEndWithoutTheResultsAsksForThemInAStepOfTheirOwn) {
  Fixture f("remote");
  f.target.on("\nmlw_pid=\n", {{"hi\n", 0, false, "mlw-pid=4242\nmlw-state=ended\n0\n"}});
  f.target.on("wc -c 2>/dev/null <metrics.jsonl", {{"3\nab\n", 0, false, ""}});
  const auto driver = monitor_driver();
  auto session = f.session();
  EXPECT_EQ(session.run(*driver, nullptr), 0);
  EXPECT_EQ(f.target.scripts.size(), 2U);
  EXPECT_EQ(read_file_if_exists(f.plan.run_dir / "metrics.jsonl").value_or(""), "ab\n");
}

TEST(RunSession, ACancelBeforeTheStartSendsNothingToTheTarget) {
  Fixture f("remote");
  atomic_write_file(f.plan.run_dir / "cancel_requested", "");
  const auto driver = monitor_driver();
  auto session = f.session();
  session.run(*driver, nullptr);
  EXPECT_TRUE(f.target.scripts.empty());
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_canceled);
  EXPECT_TRUE(record.cancel_requested);
}

TEST(RunSession, AMonitorThatVanishesWithoutAnExitCodeFailsTheRunSayingWhere) {
  Fixture f("remote");
  f.target.on("\nmlw_pid=\n", {{"", 0, false, "mlw-pid=4242\nmlw-state=ended\n"}});
  const auto driver = monitor_driver();
  auto session = f.session();
  session.run(*driver, nullptr);
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_failed);
  EXPECT_EQ(record.exit_code, exit_code::k_cannot_start);
  ASSERT_FALSE(record.problems.empty());
  EXPECT_NE(record.problems.back().find("ended without an exit code"), std::string::npos);
  EXPECT_NE(record.problems.back().find("/home/u/.mlw/runs/p_1/monitor.log"), std::string::npos);
}

TEST(RunSession, AMonitorThatCannotStartIsAFailedStartWithTheTargetsWords) {
  Fixture f("remote");
  // What the launch printed where the pid was expected comes back as the pid line.
  f.target.on("\nmlw_pid=\n", {{"", 0, false, "mlw-pid=Welcome to the cluster!\n"}});
  const auto driver = monitor_driver();
  auto session = f.session();
  session.run(*driver, nullptr);
  const RunRecord record = f.record();
  EXPECT_EQ(record.status, status::k_failed);
  EXPECT_EQ(record.exit_code, exit_code::k_cannot_start);
  EXPECT_EQ(f.target.scripts.size(), 1U) << "nothing more is asked of a run that did not start";
  ASSERT_FALSE(record.problems.empty());
  EXPECT_NE(record.problems.back().find("Welcome to the cluster!"), std::string::npos);
}

TEST(RunEnding, ExitCodesOomAndRefusedAnswersBecomeTheRightRecord) {
  const RunEnding ok = exit_code_ending("0\n", false, "h", "none");
  EXPECT_EQ(ok.status, status::k_completed);
  EXPECT_EQ(ok.exit_code, 0);
  const RunEnding failed = exit_code_ending("3\n", false, "h", "none");
  EXPECT_EQ(failed.status, status::k_failed);
  EXPECT_EQ(failed.exit_code, 3);
  const RunEnding canceled = exit_code_ending("143\n", true, "h", "none");
  EXPECT_EQ(canceled.status, status::k_canceled);
  EXPECT_EQ(canceled.exit_code, 143);
  const RunEnding oom = exit_code_ending("1\noom\n", false, "h", "none");
  EXPECT_TRUE(oom.oom);
  EXPECT_EQ(oom.exit_code, 137);
  EXPECT_EQ(oom.status, status::k_failed);
  ASSERT_EQ(oom.problems.size(), 1U);
  EXPECT_NE(oom.problems[0].find("out of memory"), std::string::npos);
  // "oom" only counts on its own line after the exit code, not anywhere in the answer.
  EXPECT_FALSE(exit_code_ending("0\nroom\n", false, "h", "none").oom);
  const RunEnding refused = exit_code_ending("999\n", false, "h", "none");
  EXPECT_EQ(refused.exit_code, exit_code::k_cannot_start);
  EXPECT_NE(refused.problems[0].find("h answered \"999\""), std::string::npos);
  const RunEnding none = exit_code_ending("", false, "h", "no code here");
  EXPECT_EQ(none.problems, std::vector<std::string>{"no code here"});
}

namespace {

/// A slurm run taken over by a new supervisor, whose job ended with Slurm's `state` and
/// `exit_field` (ExitCode), the job script's own code `job_code`.
RunRecord slurm_end_of(const std::string& state, const std::string& exit_field,
                       const std::string& job_code, bool lost_before = false) {
  Fixture f("slurm");
  f.plan.record.process_group = 4242;
  f.plan.record.job_id = "77";
  if (lost_before) {
    f.plan.record.mark_lost(lost_reason::k_slurm, "the Slurm controller did not answer");
  }
  f.target.on("then echo alive", {{"alive\n"}});
  f.target.on("\nmlw_pid=4242\n", {{"", 0, false,
                                    "mlw-state=ended\njob_code=" + job_code + "\nslurm_state=" +
                                        state + "\nslurm_exit=" + exit_field + "\n"}});
  const auto driver = slurm_driver();
  auto session = f.session();
  session.resume(*driver);
  return f.record();
}

}  // namespace

TEST(RunEnding, AScriptOnThisMachineEndsByItsExitCode) {
  EXPECT_EQ(local_ending(0, false).status, status::k_completed);
  EXPECT_EQ(local_ending(0, true).status, status::k_completed);  // it ended before the cancel
  EXPECT_EQ(local_ending(2, false).status, status::k_failed);
  EXPECT_EQ(local_ending(143, true).status, status::k_canceled);
  EXPECT_EQ(local_ending(143, true).exit_code, 143);
}

TEST(RunEnding, EachSlurmEndBecomesTheRightRecord) {
  const RunRecord timeout = slurm_end_of("TIMEOUT", "0:0", "");
  EXPECT_EQ(timeout.status, status::k_failed);
  EXPECT_EQ(timeout.exit_code, 143);
  EXPECT_NE(join(timeout.problems, "|").find("time limit"), std::string::npos);
  const RunRecord cancelled = slurm_end_of("CANCELLED", "0:15", "");
  EXPECT_EQ(cancelled.status, status::k_canceled);
  EXPECT_EQ(cancelled.exit_code, 143);
  const RunRecord oom = slurm_end_of("OUT_OF_MEMORY", "0:125", "");
  EXPECT_EQ(oom.status, status::k_failed);
  EXPECT_EQ(oom.exit_code, 137);
  const RunRecord completed = slurm_end_of("COMPLETED", "0:0", "0");
  EXPECT_EQ(completed.status, status::k_completed);
  EXPECT_EQ(completed.exit_code, 0);
  const RunRecord failed = slurm_end_of("FAILED", "2:0", "2");
  EXPECT_EQ(failed.status, status::k_failed);
  EXPECT_EQ(failed.exit_code, 2);
}

TEST(RunEnding, ALostRunCarriesATypedReasonThatATakeOverClears) {
  const RunRecord lost = slurm_end_of("LOST", "", "");
  EXPECT_EQ(lost.status, status::k_lost);
  EXPECT_EQ(lost.lost_reason, lost_reason::k_slurm);
  EXPECT_FALSE(lost.exit_code.has_value());
  EXPECT_EQ(std::count(lost.problems.begin(), lost.problems.end(), lost.lost_problem), 1);
  // Lost before, then taken over and ended: the old reason and its problem are gone.
  const RunRecord ended = slurm_end_of("COMPLETED", "0:0", "0", true);
  EXPECT_EQ(ended.status, status::k_completed);
  EXPECT_TRUE(ended.lost_reason.empty());
  EXPECT_TRUE(ended.problems.empty()) << join(ended.problems, "|");
}

}  // namespace mlw
