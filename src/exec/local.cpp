#include "mlw/exec/local.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"

#include "mlw/exec/container.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <future>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

std::string interpreter_name(const RunPlan& plan) {
  return plan.run_config.framework == "PySpark" ? plan.compute.spark_submit_location
                                                : plan.compute.python_location;
}

/// Drains the script's output into driver_log.txt and the live output until the script has
/// exited and its output is closed. Returns the script's exit code.
int pump_output(pid_t script, int script_fd, int log_fd, RunSession& session) {
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
          session.record.problems.push_back(fmt::format(
              "driver_log.txt could not be written after {} bytes: {}; the rest of the output "
              "was not saved",
              logged + (written > 0 ? written : 0), errno_text(written < 0 ? errno : ENOSPC)));
        } else {
          logged += static_cast<std::uint64_t>(n);
        }
      }
      session.say(std::string_view(buffer, static_cast<std::size_t>(n)));
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

/// The local Runner: the script as a process of its own session on this machine, its output
/// pumped into driver_log.txt and the live output by the supervisor (the RunSession's process).
class ProcessDriver : public RunDriver {
 public:
  explicit ProcessDriver(ProcessSpec spec) : m_spec(std::move(spec)) {}
  ProcessDriver(const ProcessDriver&) = delete;
  ProcessDriver& operator=(const ProcessDriver&) = delete;

  ~ProcessDriver() override {
    if (m_helper.joinable()) m_helper.join();
    for (const int fd : {m_output, m_log}) {
      if (fd >= 0) ::close(fd);
    }
  }

  bool start(RunSession& session, const std::string&) override {
    const RunPlan& plan = session.plan;
    m_reserve = plan.run_dir / ".reserve";
    {
      // Room for the final record even when the disk fills up during the run.
      const int fd = ::open(m_reserve.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::posix_fallocate(fd, 0, 256 * 1024);
        ::close(fd);
      }
    }
    if (!take_lease(session)) {
      ::unlink(m_reserve.c_str());
      return false;
    }
    hold_data(plan);
    int script_pipe[2];
    if (::pipe2(script_pipe, O_CLOEXEC) != 0) {
      return not_started(session, "cannot create a pipe: " + errno_text(errno));
    }
    m_output = script_pipe[0];
    m_log = ::open((plan.run_dir / "driver_log.txt").c_str(),
                   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    try {
      // The lease's descriptor and the data sets' marker go with the script: they last as long
      // as the script's processes even where this supervisor is killed.
      std::vector<int> keep;
      if (m_lease) keep.push_back(m_lease->holder());
      if (m_data_hold >= 0) keep.push_back(m_data_hold);
      m_script = spawn(m_spec, {.stdout_fd = script_pipe[1],
                                .stderr_fd = script_pipe[1],
                                .new_session = true,
                                .keep_fds = std::move(keep)});
    } catch (const Error& e) {
      ::close(script_pipe[1]);
      return not_started(session, e.what());
    }
    ::close(script_pipe[1]);
    session.record.process_group = m_script;
    session.mark_running();  // the run goes on even when this cannot be saved
    // Its GPUs' sampler, once it runs (docs/gpus.md): idleGpu stops the script's group.
    if (m_lease) {
      m_sampler = std::make_unique<LocalSampler>(
          plan, gpu_list(session.record.gpus), m_lease->ticket(), m_script,
          std::vector<std::string>{"kill", "-s", "TERM", "--", "-" + std::to_string(m_script)});
    }
    // Beside the output pump: the git state, then the tree the next run of this snapshot adopts.
    m_helper = std::thread([this, &session, &plan] {
      // A rerun's files are a stored snapshot: its git state is its source run's.
      if (plan.record.rerun_of.empty()) {
        record_git_state(session.ctx, plan.project.root, m_git);
      } else {
        m_git.git_commit = plan.record.git_commit;
        m_git.git_dirty = plan.record.git_dirty;
      }
      m_git_done.set_value();
      prepare_tree(plan.manifest, plan.record.snapshot_hash, plan.project.state_dir() / "trees",
                   plan.project.state_dir() / "objects", plan.project.root);
    });
    return true;
  }

  /// A local run ends with its supervisor (LocalExecutor::reattach refuses first).
  bool resume(RunSession&) override { return false; }

  void follow(RunSession& session) override {
    m_code = pump_output(m_script, m_output, m_log, session);
  }

  /// Nothing here: `experiment cancel` signals the script's process group (LocalExecutor::stop).
  void stop(RunSession&) override {}

  RunEnding ending(RunSession& session) override {
    if (m_sampler) m_sampler->end();
    if (m_lease) m_lease->end();  // the script has ended: the next run waiting for its GPUs starts
    if (m_data_hold >= 0) ::close(m_data_hold), m_data_hold = -1;
    m_git_done.get_future().wait();
    session.record.git_commit = m_git.git_commit;
    session.record.git_dirty = m_git.git_dirty;
    ::unlink(m_reserve.c_str());
    RunEnding ending = local_ending(m_code, session.record.cancel_requested);
    apply_gpu_files(session.plan.run_dir, ending);
    return ending;
  }

  /// The submitting mlw is done; the tree may still be building.
  void after_finish(RunSession& session) override {
    session.close_live();
    if (m_helper.joinable()) m_helper.join();
  }

 private:
  /// The run's lease (gpusPerRun, maxConcurrentRuns), held by this supervisor: waits for it
  /// (Queued), then shows the script its GPUs. False when the run will not start (recorded).
  bool take_lease(RunSession& session) {
    if (!take_local_lease(session, m_lease)) return false;
    const std::vector<int>& gpus = session.record.gpus;
    if (gpus.empty()) return true;
    const std::string list = gpu_list(gpus);
    m_spec.env["CUDA_VISIBLE_DEVICES"] = list;
    m_spec.env["NVIDIA_VISIBLE_DEVICES"] = list;
    // The run header (spec §6) before the script: the GPUs it was given.
    std::vector<std::string> argv = {"/bin/sh",  "-c",     script_body("src/exec/gpus.sh"),
                                     "mlw-gpus", "--only", list};
    argv.insert(argv.end(), m_spec.argv.begin(), m_spec.argv.end());
    m_spec.argv = std::move(argv);
    return true;
  }

  /// The data store's marker of the data sets the run mounts, held by a shared lock for the
  /// run's life (the script keeps it too, through a supervisor killed), as a remote run's
  /// monitor holds it; `data.held` in the run's folder says so to the store's rm and gc
  /// (data/data.sh mlw_data_live). Without the marker, the folder alone counts.
  void hold_data(const RunPlan& plan) {
    if (plan.record.data.empty()) return;
    const fs::path marker = expand_user(plan.compute.data_store) / "uses" / plan.record.run_id;
    m_data_hold = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_data_hold < 0) return;
    if (::flock(m_data_hold, LOCK_SH) != 0) {
      ::close(m_data_hold);
      m_data_hold = -1;
      return;
    }
    const int held =
        ::open((plan.run_dir / "data.held").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (held >= 0) ::close(held);
  }

  bool not_started(RunSession& session, const std::string& problem) {
    ::unlink(m_reserve.c_str());
    session.fail(exit_code::k_cannot_start, problem);
    return false;
  }

  ProcessSpec m_spec;
  std::unique_ptr<LocalLease> m_lease;
  std::unique_ptr<LocalSampler> m_sampler;  ///< the GPUs' sampler of a run that leases them
  fs::path m_reserve;
  pid_t m_script = -1;
  int m_data_hold = -1;  ///< the data store's marker of the run, flock(LOCK_SH)ed
  int m_output = -1;
  int m_log = -1;
  int m_code = 0;
  RunRecord m_git;  ///< the git state, from the helper thread
  std::promise<void> m_git_done;
  std::thread m_helper;
};

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

std::vector<GpuInfo> this_machine_gpus(Context& ctx) {
  std::string lines;
  ProcessSpec smi{
      {"nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"},
      {},
      {}};
  if (const auto listed = ctx.processes->run(smi); listed && listed->exit_code == 0) {
    for (const auto& line : split(trim(listed->output), '\n')) lines += "gpu=" + line + "\n";
  }
  return parse_probe(lines).gpus;
}

int LocalExecutor::gpus_seen(Context& ctx) const {
  return static_cast<int>(this_machine_gpus(ctx).size());
}

void LocalExecutor::validate(Context& ctx, const RunPlan& plan) {
  if (plan.compute.gpus_per_run != "all") {
    TargetFacts facts;
    facts.gpus = this_machine_gpus(ctx);
    std::vector<CheckRow> rows;
    gpu_rows({plan.compute, facts, "this machine", plan.target_name}, rows, false);
    refuse_first(rows);
  }
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
  return start_supervisor(plan, [&](int live_fd) {
    // One life cycle for every kind: a RunSession on this machine with the process Runner.
    TargetRunPaths paths;
    paths.run_dir = plan.run_dir.string();
    paths.share_dir = spec.env.at("MLW_SHARE_DIR");
    RunSession session(ctx, plan, nullptr, TargetFacts{}, paths, live_fd, false, this_machine(),
                       nullptr);
    ProcessDriver driver(spec);
    return session.run(driver, nullptr);
  });
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
                                              const ComputeConfig&, const CleanScope&) {
  std::vector<std::string> others;
  for (const TargetKind* kind : target_kinds()) {
    // Those with a store and run folders of their own, or images.
    if (!kind->place->shares_run_folder() || kind->runner.image) others.emplace_back(kind->name);
  }
  const std::string last = others.back();
  others.pop_back();
  throw Error(
      fmt::format("target {} is local: only {} and {} targets keep mlw's images and "
                  "snapshots",
                  target_name, mlw::join(others, ", "), last));
}

DataStore LocalExecutor::data_store(Context&, const std::string&, const ComputeConfig& compute) {
  DataStore store;
  store.owned = std::make_unique<LocalShell>();
  store.shell = store.owned.get();
  store.store = compute.data_store;
  return store;
}

}  // namespace mlw
