#include "mlw/exec/local.hpp"
#include "mlw/kinds/kind.hpp"

#include "mlw/exec/container.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <future>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "mlw/exec/run_recorder.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

std::string interpreter_name(const RunPlan& plan) {
  return plan.run_config.framework == "PySpark" ? plan.compute.spark_submit_location
                                                : plan.compute.python_location;
}

/// Drains the script's output into driver_log.txt and the submitting terminal until the script
/// has exited and its output is closed. Returns the script's exit code.
int pump_output(pid_t script, int script_fd, int log_fd, int& live_fd, RunRecord& record) {
  bool log_failed = false;
  std::uint64_t logged = 0;
  std::optional<int> exit_code;
  char buffer[65536];
  while (true) {
    pollfd item{script_fd, POLLIN, 0};
    const int ready = ::poll(&item, 1, exit_code ? 100 : 250);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      const ssize_t n = ::read(script_fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (!log_failed) {
        const ssize_t written = ::write(log_fd, buffer, static_cast<std::size_t>(n));
        if (written != n) {
          log_failed = true;
          record.problems.push_back(fmt::format(
              "driver_log.txt could not be written after {} bytes: {}; the rest of the output "
              "was not saved",
              logged + (written > 0 ? written : 0), errno_text(written < 0 ? errno : ENOSPC)));
        } else {
          logged += static_cast<std::uint64_t>(n);
        }
      }
      if (live_fd >= 0) {
        const char* data = buffer;
        std::size_t left = static_cast<std::size_t>(n);
        while (left > 0) {
          const ssize_t w = ::write(live_fd, data, left);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            ::close(live_fd);
            live_fd = -1;
            break;
          }
          data += w;
          left -= static_cast<std::size_t>(w);
        }
      }
      continue;
    }
    if (!exit_code) {
      int status = 0;
      if (::waitpid(script, &status, WNOHANG) == script) {
        exit_code = exit_code_from_wait_status(status);
      }
    } else {
      break;  // exited, and nothing more arrived: children that keep the pipe open are not waited
              // for
    }
  }
  if (!exit_code) {
    int status = 0;
    while (::waitpid(script, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code = exit_code_from_wait_status(status);
  }
  return *exit_code;
}

void record_git_state(Context& ctx, const fs::path& root, RunRecord& record) {
  ProcessSpec head{{"git", "-C", root.string(), "rev-parse", "--verify", "-q", "HEAD"}, {}, {}};
  auto commit = ctx.processes->run(head);
  if (!commit || commit->exit_code != 0) return;
  record.git_commit = trim(commit->output);
  ProcessSpec dirty{{"git", "-C", root.string(), "status", "--porcelain"}, {}, {}};
  if (auto state = ctx.processes->run(dirty); state && state->exit_code == 0) {
    record.git_dirty = !trim(state->output).empty();
  }
}

/// The supervisor: runs in its own session, outlives the submitting mlw, and records the end.
int supervise(Context& ctx, const RunPlan& plan, const ProcessSpec& spec, int live_fd) {
  RunRecorder run(ctx, plan);
  const fs::path reserve = plan.run_dir / ".reserve";
  {
    // Room for the final record even when the disk fills up during the run.
    const int fd = ::open(reserve.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::posix_fallocate(fd, 0, 256 * 1024);
      ::close(fd);
    }
  }
  if (run.canceled()) {
    ::unlink(reserve.c_str());
    run.cancel_before_start();
    return 0;
  }
  auto not_started = [&](const std::string& problem) {
    ::unlink(reserve.c_str());
    run.fail(exit_code::k_cannot_start, problem);
    return 0;
  };
  int script_pipe[2];
  if (::pipe2(script_pipe, O_CLOEXEC) != 0) {
    return not_started("cannot create a pipe: " + errno_text(errno));
  }
  const int log_fd = ::open((plan.run_dir / "driver_log.txt").c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_t script = -1;
  try {
    script = spawn(spec,
                   {.stdout_fd = script_pipe[1], .stderr_fd = script_pipe[1], .new_session = true});
  } catch (const Error& e) {
    ::close(script_pipe[1]);
    return not_started(e.what());
  }
  ::close(script_pipe[1]);
  run.record.process_group = script;
  run.mark_running();  // the run goes on even when this cannot be saved

  // Beside the output pump: the git state, then the tree the next run of this snapshot adopts.
  RunRecord git_state;
  std::promise<void> git_done;
  std::thread helper([&] {
    record_git_state(ctx, plan.project.root, git_state);
    git_done.set_value();
    prepare_tree(plan.manifest, plan.record.snapshot_hash, plan.project.state_dir() / "trees",
                 plan.project.state_dir() / "objects", plan.project.root);
  });
  const int code = pump_output(script, script_pipe[0], log_fd, live_fd, run.record);
  git_done.get_future().wait();
  run.record.git_commit = git_state.git_commit;
  run.record.git_dirty = git_state.git_dirty;
  ::close(script_pipe[0]);
  if (log_fd >= 0) ::close(log_fd);

  run.record.cancel_requested = run.canceled();
  run.apply(local_ending(code, run.record.cancel_requested));
  run.collect_results(true);
  ::unlink(reserve.c_str());
  run.end();
  if (live_fd >= 0) ::close(live_fd);  // the submitting mlw is done; the tree may still be building
  helper.join();
  return 0;
}

}  // namespace

ProcessSpec build_local_command(const RunPlan& plan, const std::string& interpreter,
                                const std::map<std::string, std::string>& base_env) {
  ProcessSpec spec;
  spec.argv.push_back(interpreter);
  for (auto& word : expand_argument_vector(plan.run_config, plan.script, plan.arguments)) {
    spec.argv.push_back(std::move(word));
  }
  const fs::path snapshot = plan.run_dir / "snapshot";
  const std::string share =
      share_folder(expand_user(plan.compute.native_shared_directory).string(), plan);
  spec.env =
      run_environment(plan, plan.run_dir.string(), share, plan.helper_dir.string(), base_env);
  spec.cwd = snapshot;
  return spec;
}

std::optional<fs::path> resolve_interpreter(const std::string& python_location) {
  if (auto found = find_executable(expand_user(python_location).string())) return found;
  if (python_location == "python") return find_executable("python3");
  return std::nullopt;
}

void LocalExecutor::validate(Context&, const RunPlan& plan) {
  const std::string name = interpreter_name(plan);
  if (name.find('/') != std::string::npos && fs::is_regular_file(expand_user(name)) &&
      !find_executable(expand_user(name).string())) {
    throw Error(fmt::format("python interpreter \"{}\" (pythonLocation in aml_config/{}.compute) "
                            "is not executable; fix it with: chmod +x {}",
                            name, plan.target_name, name),
                exit_code::k_not_executable);
  }
  if (!resolve_interpreter(name)) {
    if (plan.run_config.framework == "PySpark") {
      throw Error(no_spark_submit_message(plan.record.run_config, "this machine (PATH)"),
                  exit_code::k_not_found);
    }
    throw Error(fmt::format("python interpreter \"{}\" not found (pythonLocation in "
                            "aml_config/{}.compute); install it or fix pythonLocation",
                            name, plan.target_name),
                exit_code::k_not_found);
  }
}

RunHandle LocalExecutor::start(Context& ctx, RunPlan& plan) {
  const auto interpreter = resolve_interpreter(interpreter_name(plan));
  if (!interpreter) validate(ctx, plan);
  const ProcessSpec spec =
      build_local_command(plan, fs::absolute(*interpreter).string(), current_environment());
  make_directories(spec.env.at("MLW_SHARE_DIR"));
  make_directories(spec.cwd / "outputs");
  return start_supervisor(plan, [&](int live_fd) { return supervise(ctx, plan, spec, live_fd); });
}

void LocalExecutor::stop(Context&, const RunRecord& record, bool force) {
  // A process group number means something only on the machine (and boot) that recorded it.
  if (record.host != host_name() || record.boot_id != boot_id()) {
    throw Error(fmt::format("run {} runs on host {}; cancel it there", record.run_id, record.host));
  }
  if (record.process_group > 0) ::kill(-record.process_group, force ? SIGKILL : SIGTERM);
}

void LocalExecutor::reattach(Context&, RunPlan& plan) {
  throw Error(
      fmt::format("run {} ran on this machine; its supervisor is gone, so its end is "
                  "unknown",
                  plan.record.run_id));
}

PrepareResult LocalExecutor::prepare(Context&, RunPlan& plan, const OutputSink&) {
  throw Error(fmt::format("target {} is local: it uses no environment image", plan.target_name));
}

std::vector<std::string> LocalExecutor::clean(Context&, const std::string& target_name,
                                              const ComputeConfig&) {
  std::vector<std::string> others;
  for (const TargetKind* kind : target_kinds()) {
    if (kind->uses_ssh || kind->uses_image) others.emplace_back(kind->name);
  }
  const std::string last = others.back();
  others.pop_back();
  throw Error(
      fmt::format("target {} is local: only {} and {} targets keep mlw's images and "
                  "snapshots",
                  target_name, join(others, ", "), last));
}

}  // namespace mlw
