// api::submit against a fake kind (tests/unit/fake_kind.hpp): the plan, the start, the follow,
// -a, Ctrl-C (detach, or cancel with --cancel-on-interrupt) and the exit codes of docs/cli.md's
// table, with no target and no interpreter.

#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "fakes.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/fs.hpp"
#include "temp_dir.hpp"

namespace mlw {

namespace {

class SubmitTest : public ::testing::Test {
 protected:
  SubmitTest() {
    const fs::path root = m_dir.path() / "proj";
    fs::create_directories(root / "aml_config");
    std::ofstream(root / "aml_config/fake.compute") << "type: local\n";
    std::ofstream(root / "aml_config/fake.runconfig") << "Target: fake\nFramework: Python\n";
    std::ofstream(root / "train.py") << "print('hello')\n";
    m_ctx.working_dir = root;
    m_ctx.out = &m_out;
    m_ctx.err = &m_err;
    m_ctx.clock = std::make_shared<SystemClock>();
    m_ctx.processes = std::make_shared<SystemProcessRunner>();
    m_ctx.executors = m_kind;
  }

  int submit(bool async = false, bool cancel_on_interrupt = false) {
    api::SubmitRequest request;
    request.run_config = "fake";
    request.script = "train.py";
    request.async = async;
    request.cancel_on_interrupt = cancel_on_interrupt;
    return api::submit(m_ctx, request);
  }

  /// submit's exit code for an error it throws, as main maps it.
  int submit_error_code(std::string* message = nullptr) {
    try {
      submit();
    } catch (const Error& e) {
      if (message) *message = e.what();
      return exit_code_of(e.code(), m_ctx.codes);
    }
    return -1;
  }

  RunRecord last_run() {
    HistoryStore store(m_ctx.project().state_dir());
    const auto rows = store.list({"", "", 1});
    return store.load(rows.at(0).run_id);
  }

  /// Sends SIGINT to this process once the run has printed (its driver_log.txt has bytes).
  std::thread interrupt_when_running() {
    return std::thread([this] {
      const fs::path runs = m_dir.path() / "proj/.mlw/runs";
      for (int i = 0; i < 1000; ++i) {
        std::error_code ec;
        for (const auto& run : fs::directory_iterator(runs, ec)) {
          if (fs::file_size(run.path() / "driver_log.txt", ec) > 0 && !ec) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            ::kill(::getpid(), SIGINT);
            return;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  test::TempDir m_dir{"submit"};
  std::shared_ptr<test::FakeKind> m_kind = std::make_shared<test::FakeKind>();
  std::ostringstream m_out;
  std::ostringstream m_err;
  Context m_ctx;
};

}  // namespace

TEST_F(SubmitTest, ACompletedRunPrintsItsOutputAndExitsZero) {
  EXPECT_EQ(submit(), 0);
  EXPECT_NE(m_out.str().find("hello\n"), std::string::npos) << m_out.str();
  EXPECT_NE(m_out.str().find("Completed"), std::string::npos) << m_out.str();
  EXPECT_EQ(last_run().status, status::k_completed);
  EXPECT_EQ(m_kind->calls->validated, 1);
  EXPECT_EQ(m_kind->calls->started, 1);
}

TEST_F(SubmitTest, TheScriptsExitCodeIsSubmits) {
  m_kind->run.status = status::k_failed;
  for (const int code : {1, 3, 126, 127, 137, 255}) {
    m_kind->run.exit_code = code;
    EXPECT_EQ(submit(), code);
    EXPECT_EQ(last_run().exit_code, code);
  }
}

TEST_F(SubmitTest, ARefusalBeforeTheRunIsItsCodeAndRecordsNothing) {
  m_kind->run.refuse = Error("python interpreter \"python9\" not found", exit_code::k_not_found);
  std::string message;
  EXPECT_EQ(submit_error_code(&message), 127);
  EXPECT_EQ(message, "python interpreter \"python9\" not found");
  m_kind->run.refuse = Error("not executable", exit_code::k_not_executable);
  EXPECT_EQ(submit_error_code(), 126);
  m_kind->run.refuse = Error("the target does not answer");  // the command's default
  EXPECT_EQ(submit_error_code(), 125);
  m_kind->run.refuse = UsageError("-e needs KEY=VALUE");  // as docker run: 125
  EXPECT_EQ(submit_error_code(), 125);
  EXPECT_EQ(m_kind->calls->started, 0);
  EXPECT_FALSE(fs::exists(m_dir.path() / "proj/.mlw/runs"));
}

TEST_F(SubmitTest, AFailureBeforeTheScriptIs125WithItsReasonOnce) {
  m_kind->run.fail_before_start = "building the environment failed: no such package";
  EXPECT_EQ(submit(), 125);
  EXPECT_EQ(m_err.str().find("mlw: error: building the environment failed: no such package\n"),
            m_err.str().rfind("mlw: error: "))
      << m_err.str();
  EXPECT_EQ(last_run().status, status::k_failed);
}

TEST_F(SubmitTest, DetachedWithDashAItReturnsAtOnceAndCancelEndsIt) {
  m_kind->run.hold = true;
  EXPECT_EQ(submit(true), 0);
  EXPECT_NE(m_err.str().find(" started.\n"), std::string::npos) << m_err.str();
  const RunRecord running = last_run();
  EXPECT_EQ(running.status, status::k_running);
  api::cancel(m_ctx, running.run_id);
  EXPECT_EQ(last_run().status, status::k_canceled);
  EXPECT_EQ(last_run().exit_code, 143);
  EXPECT_GE(m_kind->calls->stopped, 1);
}

TEST_F(SubmitTest, CtrlCDetachesWith130AndTheRunGoesOn) {
  m_kind->run.hold = true;
  std::thread interrupt = interrupt_when_running();
  EXPECT_EQ(submit(), 130);
  interrupt.join();
  EXPECT_NE(m_err.str().find("Detached from run"), std::string::npos) << m_err.str();
  const RunRecord running = last_run();
  EXPECT_EQ(running.status, status::k_running);
  EXPECT_EQ(m_kind->calls->stopped, 0);
  api::cancel(m_ctx, running.run_id);  // the fake run ends
}

TEST_F(SubmitTest, CtrlCWithCancelOnInterruptCancelsTheRun) {
  m_kind->run.hold = true;
  std::thread interrupt = interrupt_when_running();
  EXPECT_EQ(submit(false, true), 143);
  interrupt.join();
  EXPECT_NE(m_err.str().find("Canceling run"), std::string::npos) << m_err.str();
  EXPECT_EQ(last_run().status, status::k_canceled);
  EXPECT_EQ(m_kind->calls->stopped, 1);
}

}  // namespace mlw
