#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include <functional>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

namespace {

struct ExecutorRow {
  const char* type;
  std::function<std::unique_ptr<Executor>()> make;
};

const std::vector<ExecutorRow>& executor_table() {
  static const std::vector<ExecutorRow> table = {
      {"local", [] { return std::make_unique<LocalExecutor>(); }},
      {"docker", [] { return std::make_unique<TargetExecutor>("docker"); }},
      {"remotedocker", [] { return std::make_unique<TargetExecutor>("remotedocker"); }},
      {"remote", [] { return std::make_unique<TargetExecutor>("remote"); }},
      {"slurm", [] { return std::make_unique<TargetExecutor>("slurm"); }},
  };
  return table;
}

}  // namespace

RunHandle start_supervisor(const RunPlan& plan, const std::function<int(int live_fd)>& supervise) {
  int live[2];
  if (::pipe2(live, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + errno_text(errno));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start the run: " + errno_text(errno));
  if (pid == 0) {
    ::close(live[0]);
    ::setsid();
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    ::signal(SIGPIPE, SIG_IGN);
    const int null_fd = ::open("/dev/null", O_RDWR);
    const int log =
        ::open((plan.run_dir / "supervisor.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(null_fd, 0);
    ::dup2(log >= 0 ? log : null_fd, 1);
    ::dup2(log >= 0 ? log : null_fd, 2);
    int code = 0;
    try {
      code = supervise(live[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mlw supervisor: %s\n", e.what());
      code = 1;
    }
    ::_exit(code);
  }
  ::close(live[1]);
  return {live[0], pid};
}

std::unique_ptr<Executor> make_executor(const std::string& type) {
  for (const auto& row : executor_table()) {
    if (row.type != type) continue;
    return row.make();
  }
  throw Error("unknown target type \"" + type + "\"");
}

}  // namespace mlw
