#pragma once

// The fakes of the unit tests, in one place: shells (this machine's /bin/sh as a target, or
// scripted answers), a clock, a connector, Docker engines (a scripted one here, a real stand-in
// process in fake_engine.hpp), and a fake kind of target whose executor plays scripted runs.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fake_engine.hpp"
#include "mlw/context.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/history/record.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"

namespace mlw::test {

/// This machine's /bin/sh as a target named `host`: with `home`, its HOME; with `path`, that
/// folder first on its PATH. Counts the steps it runs.
class LocalTargetShell : public Shell {
 public:
  explicit LocalTargetShell(std::string host = "here", std::string home = "",
                            std::filesystem::path path = {})
      : m_host(std::move(host)), m_home(std::move(home)), m_path(std::move(path)) {}
  int steps = 0;
  std::string host() const override { return m_host; }
  ShellResult run(const std::string& script, const ShellStreams& streams) override {
    ++steps;
    std::string prefix;
    if (!m_home.empty()) prefix += "HOME=" + shell_quote(m_home) + "\nexport HOME\n";
    if (!m_path.empty()) prefix += "PATH=" + shell_quote(m_path.string()) + ":$PATH\n";
    return m_shell.run(prefix + script, streams);
  }

 private:
  std::string m_host;
  std::string m_home;
  std::filesystem::path m_path;
  LocalShell m_shell;
};

/// A target named `host` whose every step is answered by `answer` (a lying one, a recorded
/// one): nothing runs.
class AnsweringShell : public Shell {
 public:
  using Answer = std::function<ShellResult(const std::string& script, const ShellStreams&)>;
  AnsweringShell(std::string host, Answer answer, bool kept = false)
      : m_host(std::move(host)), m_answer(std::move(answer)), m_kept(kept) {}
  std::string host() const override { return m_host; }
  ShellResult run(const std::string& script, const ShellStreams& streams) override {
    return m_answer(script, streams);
  }
  bool kept() const override { return m_kept; }

 private:
  std::string m_host;
  Answer m_answer;
  bool m_kept;
};

/// A clock that always says 2023-11-14T22:13:20Z.
class FixedClock : public Clock {
 public:
  std::int64_t now_ms() const override { return 1'700'000'000'000; }
};

/// Records what mlw asked for; SSH logins are refused, there is no Docker engine socket (so a
/// probe goes through the shell), and the local shell has `bin` first on its PATH.
class RecordingConnector : public Connector {
 public:
  explicit RecordingConnector(std::filesystem::path bin) : m_bin(std::move(bin)) {}
  std::vector<std::string> asked;

  std::unique_ptr<Shell> connect(Context&, const std::string& target, const ComputeConfig&,
                                 const ConnectRequest&) override {
    asked.push_back("ssh " + target);
    throw Error("no SSH in this test");
  }
  std::unique_ptr<Shell> local_shell() override {
    asked.push_back("local shell");
    return std::make_unique<LocalTargetShell>("this machine", "", m_bin);
  }
  std::unique_ptr<DockerEngine> local_engine() override {
    asked.push_back("local engine");
    return nullptr;
  }

 private:
  std::filesystem::path m_bin;
};

/// An engine whose container printed `lines`; stream call k (0-based) breaks after
/// `break_after[k]` bytes when given, pings fail `failing_pings` times after each break.
class BreakingEngine : public DockerEngine {
 public:
  std::string log;
  std::vector<std::size_t> break_after;
  int failing_pings = 0;
  bool forget_after_break = false;
  bool never_back = false;
  std::string wait_body = R"({"StatusCode":3})";
  int streams = 0, pings = 0, stops = 0;

  std::string where() const override { return "unix:///fake.sock"; }

  EngineResponse request(const std::string& method, const std::string& path,
                         const std::string& = "") override {
    if (path == "/_ping") {
      ++pings;
      if (never_back || m_pings_left-- > 0) throw Error("cannot reach the Docker engine");
      return {200, "OK"};
    }
    if (method == "POST" && path.find("/stop") != std::string::npos) {
      ++stops;
      return {204, ""};
    }
    if (path.find("/wait") != std::string::npos) {
      if (m_forgotten) return {404, R"({"message":"No such container"})"};
      return {200, wait_body};
    }
    return {404, ""};
  }

  int stream(const std::string&, const std::string&,
             const std::function<void(std::string_view)>& on_body,
             const std::function<void()>& on_idle) override {
    const std::size_t call = static_cast<std::size_t>(streams++);
    if (m_forgotten) return 404;
    if (on_idle) on_idle();
    const std::size_t limit = call < break_after.size() ? break_after[call] : log.size();
    // Delivered in small pieces, as a socket would.
    for (std::size_t at = 0; at < limit; at += 5) {
      on_body(std::string_view(log).substr(at, std::min<std::size_t>(5, limit - at)));
    }
    if (limit < log.size()) {
      m_pings_left = failing_pings;
      m_forgotten = forget_after_break;
      throw Error("the Docker engine closed the connection mid-answer");
    }
    return 200;
  }

 private:
  int m_pings_left = 0;
  bool m_forgotten = false;
};

/// What the fake kind's run does.
struct FakeRun {
  std::optional<Error> refuse;  ///< validate throws this (nothing is recorded)
  std::string output = "hello\n";
  /// Ended before the script started: recorded with this problem and 125.
  std::string fail_before_start;
  bool hold = false;  ///< runs until canceled (at most 20 s)
  std::string status = status::k_completed;
  int exit_code = 0;
};

/// What the submitting side saw of the fake executor.
struct FakeCalls {
  int validated = 0;
  int started = 0;
  int stopped = 0;
};

class FakeExecutor : public Executor {
 public:
  FakeExecutor(FakeRun run, std::shared_ptr<FakeCalls> calls)
      : m_run(std::move(run)), m_calls(std::move(calls)) {}

  void validate(Context&, const RunPlan&) override {
    ++m_calls->validated;
    if (m_run.refuse) throw *m_run.refuse;
  }

  RunHandle start(Context& ctx, RunPlan& plan) override {
    ++m_calls->started;
    return start_supervisor(plan, [&](int live_fd) { return supervise(ctx, plan, live_fd); });
  }

  void stop(Context&, const RunRecord&, bool) override { ++m_calls->stopped; }
  void reattach(Context&, RunPlan&) override { throw Error("the fake kind cannot reattach"); }
  PrepareResult prepare(Context&, RunPlan&, const OutputSink&) override { return {}; }
  std::vector<std::string> clean(Context&, const std::string&, const ComputeConfig&,
                                 const CleanScope&) override {
    return {};
  }

 private:
  int supervise(Context& ctx, const RunPlan& plan, int live_fd) {
    RunRecorder run(ctx, plan);
    run.claim();
    if (!m_run.fail_before_start.empty()) {
      run.fail(exit_code::k_cannot_start, m_run.fail_before_start);
      ::close(live_fd);
      return 0;
    }
    run.record.process_group = ::getpid();
    run.mark_running();
    std::ofstream(plan.run_dir / "driver_log.txt") << m_run.output;
    if (::write(live_fd, m_run.output.data(), m_run.output.size()) < 0) ::close(live_fd);
    RunEnding ending;
    ending.status = m_run.status;
    ending.exit_code = m_run.exit_code;
    if (m_run.hold) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!run.canceled() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (run.canceled()) {
        ending.status = status::k_canceled;
        ending.exit_code = 143;
      }
    }
    run.record.cancel_requested = run.canceled();
    run.apply(ending);
    run.end();
    ::close(live_fd);
    return 0;
  }

  FakeRun m_run;
  std::shared_ptr<FakeCalls> m_calls;
};

/// The fake kind's executors: every type gets a FakeExecutor playing `run`.
class FakeKind : public ExecutorSource {
 public:
  FakeRun run;
  std::shared_ptr<FakeCalls> calls = std::make_shared<FakeCalls>();
  std::unique_ptr<Executor> make(const std::string&) override {
    return std::make_unique<FakeExecutor>(run, calls);
  }
};

/// A Runner that plays a scripted run: start marks it Running (or fails it with `refuse`), follow
/// appends `log`, ending returns `end`; it counts what it was asked.
class ScriptedRunner : public RunDriver {
 public:
  std::string log;
  RunEnding end = completed();
  std::string refuse;  ///< non-empty: start fails the run with this problem
  int started = 0, followed = 0, stopped = 0, finished = 0;

  /// A run that completed with exit code 0.
  static RunEnding completed() {
    RunEnding ending;
    ending.status = status::k_completed;
    ending.exit_code = 0;
    return ending;
  }

  bool start(RunSession& session, const std::string&) override {
    ++started;
    if (!refuse.empty()) {
      session.fail(exit_code::k_cannot_start, refuse);
      return false;
    }
    session.mark_running();
    return true;
  }
  bool resume(RunSession&) override { return true; }
  void follow(RunSession& session) override {
    ++followed;
    session.append_log(log);
  }
  void stop(RunSession&) override { ++stopped; }
  RunEnding ending(RunSession&) override { return end; }
  void after_finish(RunSession&) override { ++finished; }
};

// A fake Place for the conformance suite (tests/unit/kinds/conformance_test.cpp).

/// A connection that drops once, in the middle of the run's output: the step that prints the
/// script's first line is cut a few bytes into it (the run goes on at the place, as after a
/// dropped SSH connection), and the supervisor must reconnect and lose no byte.
struct Drop {
  bool armed = false;
  bool done = false;  ///< per process: the supervisor's copy drops once
};

/// The place's shell: this machine's /bin/sh with the place's HOME and stand-ins, no Docker
/// engine socket (DOCKER_HOST names none); a step its reader stops still runs for 300 ms.
class StandInShell : public Shell {
 public:
  StandInShell(std::string prefix, Drop& drop) : m_prefix(std::move(prefix)), m_drop(drop) {}
  std::string host() const override { return "fake-host"; }
  ShellResult run(const std::string& script, const ShellStreams& streams) override {
    if (!m_drop.armed || m_drop.done) {
      // As over SSH, a step that was sent runs on for a moment even when its reader stops at
      // once: what it starts in that time (a monitor) has started.
      ShellStreams sent = streams;
      const auto begun = std::chrono::steady_clock::now();
      sent.should_stop = [&streams, begun] {
        return std::chrono::steady_clock::now() - begun > std::chrono::milliseconds(300) &&
               streams.should_stop && streams.should_stop();
      };
      return m_shell.run(m_prefix + script, sent);
    }
    ShellStreams cut = streams;
    std::string seen;
    bool cutting = false;
    cut.on_output = [&](std::string_view chunk) {
      if (cutting) return;
      const std::size_t before = seen.size();
      seen.append(chunk);
      const auto at = seen.find("mlw-conformance: ");
      std::string_view kept = chunk;
      if (at != std::string::npos) {
        cutting = true;
        kept = chunk.substr(0, at + 5 - before);
      }
      if (!kept.empty() && streams.on_output)
        streams.on_output(kept);
      else if (!kept.empty() && !streams.on_output)
        m_out.append(kept);
    };
    cut.should_stop = [&] { return cutting || (streams.should_stop && streams.should_stop()); };
    ShellResult result = m_shell.run(m_prefix + script, cut);
    if (!cutting) {
      result.output = m_out + result.output;
      m_out.clear();
      return result;
    }
    m_drop.done = true;
    throw Error("fake-host: the connection dropped (the conformance suite's Drop)");
  }

 private:
  std::string m_prefix;
  Drop& m_drop;
  std::string m_out;
  LocalShell m_shell;
};

/// A Place that plays `real` (this machine or an SSH host) on this machine and records what the
/// executor asked of it, one line each in `record` (the supervisor is a forked process).
class RecordingPlace : public Place {
 public:
  RecordingPlace(const Place& real, std::string prefix, fs::path record)
      : m_real(real), m_prefix(std::move(prefix)), m_record(std::move(record)) {}
  mutable Drop drop;

  bool connects() const override { return m_real.connects(); }
  std::unique_ptr<Shell> open(Context&, const std::string&, const ComputeConfig&) const override {
    ask("open");
    return shell();
  }
  std::unique_ptr<Shell> reach(Context& ctx, const std::string& name, const ComputeConfig& compute,
                               const DoctorRow&) const override {
    return open(ctx, name, compute);
  }
  std::unique_ptr<DockerEngine> engine(Context&) const override { return nullptr; }
  std::optional<ProbeShip> probe_ship(const RunPlan& plan, const Shell& shell) const override {
    return m_real.probe_ship(plan, shell);
  }
  TargetRunPaths run_paths(const RunPlan& plan, const TargetFacts& facts) const override {
    return m_real.run_paths(plan, facts);
  }
  bool shares_run_folder() const override { return m_real.shares_run_folder(); }
  void stage(Context& ctx, Shell& shell, const RunPlan& plan, const EnvironmentSpec& env,
             const ShipAnswer& ship, TargetRunPaths& paths, Staging how) const override {
    static const char* const names[] = {"not asked", "holds", "lacks", "unclear"};
    ask("stage: the store " + std::string(names[static_cast<int>(ship.state)]) +
        (ship.state == ShipAnswer::State::Lacks ? " " + std::to_string(ship.lacking.size())
                                                : std::string()));
    m_real.stage(ctx, shell, plan, env, ship, paths, how);
  }
  void after_prepare(Shell& shell, const TargetRunPaths& paths, bool built) const override {
    m_real.after_prepare(shell, paths, built);
  }
  std::function<std::unique_ptr<Shell>(bool)> reconnect(Context&, const RunPlan&) const override {
    if (!m_real.connects()) return nullptr;
    return [this](bool) -> std::unique_ptr<Shell> {
      ask("reconnect");
      return shell();
    };
  }
  std::string lock_folder(const RunPlan& plan, const TargetFacts& facts) const override {
    return m_real.lock_folder(plan, facts);
  }
  std::vector<std::string> clean(Shell& shell, const TargetFacts& facts,
                                 const CleanScope& scope) const override {
    return m_real.clean(shell, facts, scope);
  }

  /// What was asked, in order.
  std::string asked() const { return read_file_if_exists(m_record).value_or(""); }

 private:
  void ask(const std::string& what) const {
    std::ofstream(m_record, std::ios::app) << what << "\n";
  }
  std::unique_ptr<Shell> shell() const { return std::make_unique<StandInShell>(m_prefix, drop); }
  const Place& m_real;
  std::string m_prefix;
  fs::path m_record;
};

/// The kind's executors, with its Runner at the recording place.
class RecordingKinds : public ExecutorSource {
 public:
  explicit RecordingKinds(const RecordingPlace& place) : m_place(place) {}
  std::unique_ptr<Executor> make(const std::string& type) override {
    const TargetKind& kind = kind_of(type);
    if (kind.make_executor) return kind.make_executor();
    return std::make_unique<TargetExecutor>(kind, m_place);
  }

 private:
  const RecordingPlace& m_place;
};

}  // namespace mlw::test
