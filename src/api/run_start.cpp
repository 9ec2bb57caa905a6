// Starting a planned run and following it: what `experiment submit` and `experiment rerun`
// share (run_start.hpp).

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <cerrno>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "data_run.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/store.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"
#include "submit_output.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// How to follow or cancel a run that goes on without the submitting mlw.
std::string follow_hint(const RunPlan& plan) {
  const std::string& id = plan.record.run_id;
  if (plan.run_config.tracked_run) {
    return fmt::format(
        "  Follow it: mlw history logs -r {} -f\n  Cancel it: mlw experiment cancel -r {}\n", id,
        id);
  }
  return fmt::format(
      "  It is untracked (TrackedRun: false), so history commands do not know it; its output "
      "goes to {}\n",
      (plan.run_dir / "driver_log.txt").string());
}

/// Prints the run's live output until it ends; Ctrl-C detaches (130) or, when asked, cancels.
/// Returns the exit code of spec §4.
int follow_run(Context& ctx, const RunPlan& plan, RunHandle handle, Executor& executor,
               bool cancel_on_interrupt) {
  const std::string& run_id = plan.record.run_id;
  std::optional<InterruptWatch> interrupt(std::in_place);
  bool canceling = false;
  bool signalled = false;
  std::optional<HistoryStore> cancel_store;  // opened once, when Ctrl-C asks to cancel
  char buffer[65536];
  LiveWriter writer;
  while (true) {
    pollfd item{handle.output_fd, POLLIN, 0};
    const int ready = ::poll(&item, 1, 100);
    if (!canceling && interrupt->take()) {
      if (!cancel_on_interrupt) {
        ::close(handle.output_fd);
        *ctx.err << fmt::format("\nDetached from run {}; it goes on.\n", run_id)
                 << follow_hint(plan);
        return 130;
      }
      *ctx.err << fmt::format("\nCanceling run {}…\n", run_id);
      canceling = true;
      cancel_store.emplace(plan.history_dir);
      request_cancel(*cancel_store, run_id);
    }
    if (canceling && !signalled) {
      const RunRecord live = cancel_store->load(run_id);
      if (live.process_group > 0) {
        executor.stop(ctx, live, false);
        signalled = true;
      }
    }
    if (ready <= 0) continue;
    const ssize_t n = ::read(handle.output_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    writer.write(ctx, buffer, static_cast<std::size_t>(n));
  }
  interrupt.reset();
  ::close(handle.output_fd);
  // The supervisor may still be preparing the next run's tree; it is not waited for.
  int status_code = 0;
  ::waitpid(handle.supervisor, &status_code, WNOHANG);
  HistoryStore store(plan.history_dir);
  const RunRecord final_record = store.load(run_id);
  if (!status::is_final(final_record.status)) {
    throw Error(fmt::format(
        "run {} ended without its final record (see .mlw/runs/{}/supervisor.log)", run_id, run_id));
  }
  print_summary(ctx, final_record, plan.run_dir);
  // A run that failed before its script started failed as a command does: its reason is the
  // one `mlw: error:` line on stderr, after its summary (there too).
  if (failed_before_its_script(final_record)) {
    *ctx.err << "mlw: error: " << final_record.problems.front() << "\n";
  }
  return exit_code_of(final_record);
}

/// For -a: returns the run's status once the supervisor has recorded it as started, queued (a
/// batch job) or ended, so that the record never names the exiting submit process as the run's
/// owner.
std::string wait_until_started(const RunPlan& plan, const RunHandle& handle) {
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + seconds(30);
  HistoryStore store(plan.history_dir);
  while (steady_clock::now() < deadline) {
    const std::string now = store.load(plan.record.run_id).status;
    if (now != status::k_preparing) return now;
    int status_code = 0;
    if (::waitpid(handle.supervisor, &status_code, WNOHANG) == handle.supervisor) {
      return store.load(plan.record.run_id).status;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  throw Error(fmt::format("run {} did not start within 30 s (see .mlw/runs/{}/supervisor.log)",
                          plan.record.run_id, plan.record.run_id));
}

}  // namespace

RunHandle start_run(Context& ctx, RunPlan& plan, Executor& executor) {
  const Project& project = plan.project;
  std::optional<HistoryStore> store(std::in_place, plan.history_dir);
  RunRecord& record = plan.record;
  record.project = project.name;
  // `python -m MODULE` (a notebook's kernel) is recorded as the module's script.
  record.script =
      plan.script == "-m" && !plan.arguments.empty() ? "-m " + plan.arguments.front() : plan.script;
  record.arguments = plan.arguments;
  record.target = plan.target_name;
  record.target_type = plan.compute.type;
  record.status = status::k_preparing;
  record.created_ms = ctx.clock->now_ms();
  record.user = user_name();
  record.host = host_name();
  record.pid = ::getpid();
  record.pid_start = process_start_time(::getpid()).value_or(0);
  record.boot_id = boot_id();
  record.command = expand_argument_vector(plan.run_config, plan.script, plan.arguments);
  record.params = params_from_arguments(plan.arguments);
  store->create(record, record.created_ms);
  plan.run_dir = store->run_dir(record.run_id);
  live_stream(ctx) << "RunId: " << record.run_id << "\n" << std::flush;
  try {
    save_run_env(plan.run_dir, plan.extra_env);
    const fs::path objects = project.state_dir() / "objects";
    if (plan.manifest.entries.empty()) plan.manifest = take_snapshot(ctx, project);
    for (const auto& warning : plan.manifest.warnings) spdlog::warn("{}", warning);
    record.snapshot_hash = plan.manifest.hash();
    record.snapshot_files = plan.manifest.entries.size();
    record.snapshot_bytes = plan.manifest.total_bytes();
    spdlog::debug("snapshot: {} files, {} bytes, {} ms", record.snapshot_files,
                  record.snapshot_bytes, ctx.clock->now_ms() - record.created_ms);
    save_manifest(plan.manifest, record.snapshot_hash, project.state_dir() / "manifests",
                  plan.run_dir / "manifest.json");
    if (!adopt_prepared_tree(plan.manifest, record.snapshot_hash, project.state_dir() / "trees",
                             objects, project.root, plan.run_dir / "snapshot")) {
      materialize_snapshot(plan.manifest, objects, project.root, plan.run_dir / "snapshot");
    }
    plan.helper_dir = ensure_python_helper(project);
    place_run_data(ctx, executor, plan);
    store.reset();  // the supervisor opens its own connection; none may cross the fork
    RunHandle handle = executor.start(ctx, plan);
    spdlog::debug("run started: {} ms after submit", ctx.clock->now_ms() - record.created_ms);
    return handle;
  } catch (const Error& e) {
    if (!store) store.emplace(plan.history_dir);
    record.exit_code.reset();
    record.mark_failed(exit_code::k_cannot_start,
                       std::string("the run could not start: ") + e.what(), ctx.clock->now_ms());
    // Say what the history holds now, not what was meant (on a full disk the record may not
    // have been written: the run then reads as Lost).
    std::string recorded = "its record could not be written";
    try {
      store->save(record);
      recorded = "recorded as " + store->load(record.run_id).status;
    } catch (const Error& failure) {
      recorded += fmt::format(": {}", failure.what());
    }
    throw Error(std::string(e.what()) + " (run " + record.run_id + " " + recorded + ")",
                exit_code::k_cannot_start);
  }
}

void save_run_env(const fs::path& run_dir, const std::map<std::string, std::string>& env) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [key, value] : env) {
    // A notebook kernel's connection key lives as long as its kernel: never kept.
    if (key != k_kernel_key_variable) json[key] = json_safe_text(value);  // bytes as they are
  }
  if (json.empty()) return;
  atomic_write_file(run_dir / "env_vars.json", json.dump() + "\n", 0600);
}

std::map<std::string, std::string> load_run_env(const fs::path& run_dir) {
  std::map<std::string, std::string> env;
  const auto text = read_file_if_exists(run_dir / "env_vars.json");
  if (!text) return env;
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  if (!json.is_object()) {
    throw Error(fmt::format("{} is damaged: it must hold the run's -e variables as one JSON object",
                            (run_dir / "env_vars.json").string()));
  }
  for (const auto& [key, value] : json.items()) {
    if (value.is_string()) env[key] = text_from_json(value.get<std::string>());
  }
  return env;
}

void keep_out_of_snapshots(const Project& project, const fs::path& folder) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(project.root, ec);
  const fs::path relative = fs::weakly_canonical(folder, ec).lexically_relative(root);
  if (ec || relative.empty() || starts_with(relative.string(), "..")) return;  // outside
  const std::string first = relative.begin()->string();
  if (first == "outputs" || first == ".mlw" || first == ".git") return;  // never shipped
  if (relative == ".") {
    spdlog::warn(
        "the files are in the project's own folder: they go with the next run's snapshot unless "
        ".amlignore names them");
    return;
  }
  const fs::path marker = folder / k_download_marker;
  if (fs::exists(marker, ec)) return;
  atomic_write_file(
      marker, "# Written by mlw: this folder holds runs' files; no run's snapshot takes it.\n");
  spdlog::info("{} is inside the project: its {} keeps it out of runs' snapshots",
               project.display(folder), k_download_marker);
}

StoredRun find_stored_run(const Project& project, const std::string& run_id) {
  const fs::path untracked = project.state_dir() / "untracked";
  const bool hidden = fs::exists(untracked / "runs" / run_id / "run.json");
  HistoryStore store(hidden ? untracked : project.state_dir());
  RunRecord record = store.load(run_id);  // names the run when there is none
  return {std::move(record), store.run_dir(run_id)};
}

std::optional<Manifest> read_run_manifest(const fs::path& run_dir) {
  const fs::path file = run_dir / "manifest.json";
  const auto text = read_file_if_exists(file);
  if (!text) return std::nullopt;
  try {
    return manifest_from_json(nlohmann::ordered_json::parse(*text));
  } catch (const std::exception& e) {
    throw Error(file.string() + ": " + e.what());
  }
}

Project run_files(const Project& project, const fs::path& run_dir) {
  return {run_dir / "snapshot", project.name, project.state_dir()};
}

int run_plan(Context& ctx, RunPlan& plan, Executor& executor, bool async, bool cancel_on_interrupt,
             const std::function<void()>& started) {
  plan.detached = async;
  const RunHandle handle = start_run(ctx, plan, executor);
  if (started) started();
  if (!async) return follow_run(ctx, plan, handle, executor, cancel_on_interrupt);
  ::close(handle.output_fd);
  const std::string now = wait_until_started(plan, handle);
  if (!ctx.quiet) {
    *ctx.err << (now == status::k_queued ? fmt::format("Run {} is queued.\n", plan.record.run_id)
                                         : fmt::format("Run {} started.\n", plan.record.run_id))
             << follow_hint(plan);
  }
  if (ctx.output().structured()) {
    HistoryStore store(plan.history_dir);
    ctx.output().print_object(store.load(plan.record.run_id).to_public_json(plan.run_dir.string()));
  }
  return 0;
}

}  // namespace mlw::api
