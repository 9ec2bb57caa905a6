#pragma once

// A fake kind of target for unit tests of api:: (submit, cancel): its executor starts a real
// supervisor process (start_supervisor) that plays a scripted run — output, an end, a hold until
// canceled — through the same RunRecorder transitions as every kind, so that plan, start,
// follow, detach, cancel and every exit code are tested without a target.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "mlw/context.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/history/record.hpp"

namespace mlw::test {

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
  std::vector<std::string> clean(Context&, const std::string&, const ComputeConfig&) override {
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

}  // namespace mlw::test
