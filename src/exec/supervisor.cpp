// The supervisor's fork: the process that outlives a submit and records its run's end.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include <functional>

#include "mlw/exec/executor.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

void Executor::open(Context&, const std::string&, const ComputeConfig&) {}

int Executor::gpus_seen(Context&) const {
  return -1;
}

DataStore Executor::data_store(Context&, const std::string& target_name,
                               const ComputeConfig& compute) {
  throw Error(fmt::format("target {} ({}) keeps no data store", target_name, compute.type));
}

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

}  // namespace mlw
