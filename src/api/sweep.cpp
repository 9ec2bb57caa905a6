// `mlw experiment sweep`: a sweep's record and its points' runs, its supervisor, following it.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "mlw/api/experiment.hpp"
#include "mlw/api/history.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"
#include "submit_output.hpp"
#include "sweep_internal.hpp"

namespace mlw::api {

namespace {

/// `SweepId: S` where submit prints `RunId: X` (stdout on a table, else stderr).
void live_stream_sweep(Context& ctx, const std::string& sweep_id) {
  live_stream(ctx) << "SweepId: " << sweep_id << "\n" << std::flush;
}

/// How many of its runs a target takes at once: twice its GPUs over gpusPerRun, else
/// maxConcurrentRuns, else any number for a batch scheduler (it queues), else one.
int target_capacity(Context& ctx, const RunPlan& plan, Executor& executor) {
  const ComputeConfig& compute = plan.compute;
  if (compute.gpus_per_run != "all") {
    const int per_run = std::stoi(compute.gpus_per_run);
    const int gpus = executor.gpus_seen(ctx);
    // As many again wait in the target's lease queue, so that a GPU passes to the next point
    // as soon as it is free (the lease's hand-off), not a launch later.
    if (gpus >= per_run && per_run > 0) return 2 * (gpus / per_run);
  }
  if (compute.max_concurrent_runs > 0) return compute.max_concurrent_runs;
  if (kind_of(compute.type).runner.batch) return 1 << 20;
  return 1;
}

/// Plans a run on each target (one probe each); a target that does not answer is left out with
/// a warning, and none answering is the first one's error.
std::vector<SweepTarget> plan_targets(Context& ctx, const SweepRequest& request,
                                      const std::string& script,
                                      const std::vector<std::string>& fixed) {
  std::vector<SweepTarget> targets;
  std::optional<Error> first_error;
  for (const auto& run_config : request.run_configs) {
    // A name that is not the project's is a mistake to fix, not a target that does not answer.
    load_run_config(ctx.project(), run_config);
  }
  for (const auto& run_config : request.run_configs) {
    SubmitRequest one;
    one.run_config = run_config;
    one.env = request.env;
    one.script = script;
    one.arguments = fixed;
    try {
      std::unique_ptr<Executor> executor;
      SweepTarget target;
      target.plan = plan_run(ctx, one, executor);
      if (!target.plan.record.data.empty()) {
        throw Error(
            fmt::format("aml_config/{}.runconfig mounts data sets (data:), which sweeps do "
                        "not take yet; submit the points one by one, or remove data:",
                        one.run_config));
      }
      target.capacity = target_capacity(ctx, target.plan, *executor);
      targets.push_back(std::move(target));
    } catch (const Error& e) {
      if (request.run_configs.size() == 1) throw;
      spdlog::warn("target {}: {}; its points go to the other targets", run_config, e.what());
      if (!first_error) first_error = e;
    }
  }
  if (targets.empty()) throw *first_error;
  return targets;
}

/// The targets' run configurations, in order (what sweep.json's `targets` holds).
std::vector<std::string> run_config_names(const std::vector<SweepTarget>& targets) {
  std::vector<std::string> names;
  for (const auto& target : targets) names.push_back(target.plan.record.run_config);
  return names;
}

/// A point's run record, Queued and owned by no process until the supervisor launches it; its
/// snapshot is the one every point shares (share_snapshot).
RunRecord point_record(Context& ctx, const SweepRecord& sweep, const SweepTarget& first,
                       const std::vector<SweepTarget>& targets, std::size_t index) {
  RunRecord record;
  record.project = sweep.project;
  record.script = sweep.script;
  record.arguments = sweep.arguments;
  for (auto& word : point_arguments(sweep.points[index].params)) record.arguments.push_back(word);
  record.run_config = first.plan.record.run_config;
  record.target =
      targets.size() == 1 ? first.plan.target_name : join(run_config_names(targets), ",");
  record.target_type = first.plan.compute.type;
  record.status = status::k_queued;
  record.created_ms = ctx.clock->now_ms();
  record.user = sweep.user;
  record.host = sweep.host;
  record.boot_id = sweep.boot_id;
  record.snapshot_hash = first.plan.record.snapshot_hash;
  record.snapshot_files = first.plan.record.snapshot_files;
  record.snapshot_bytes = first.plan.record.snapshot_bytes;
  record.command = expand_argument_vector(first.plan.run_config, record.script, record.arguments);
  record.params = params_from_arguments(record.arguments);
  record.sweep_id = sweep.sweep_id;
  record.point = static_cast<int>(index);
  return record;
}

/// Forks the sweep's supervisor; it names itself the sweep's owner. Returns its pid once it has.
pid_t start_sweep_supervisor(Context& ctx, SweepWork& work) {
  RunPlan where;
  where.run_dir = sweep_dir(work.state_dir, work.sweep_id);
  const RunHandle handle = start_supervisor(where, [&ctx, &work](int live_fd) {
    ::close(live_fd);
    SweepRecord sweep = load_sweep(work.state_dir, work.sweep_id);
    sweep.pid = ::getpid();
    sweep.pid_start = process_start_time(::getpid()).value_or(0);
    save_sweep(work.state_dir, sweep);
    return supervise_sweep(ctx, work);
  });
  ::close(handle.output_fd);
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + seconds(10);
  while (steady_clock::now() < deadline) {
    if (load_sweep(work.state_dir, work.sweep_id).pid == handle.supervisor) break;
    int code = 0;
    if (::waitpid(handle.supervisor, &code, WNOHANG) == handle.supervisor) {
      throw Error(fmt::format("the supervisor of sweep {} ended at once (see {}/supervisor.log)",
                              work.sweep_id, sweep_dir(work.state_dir, work.sweep_id).string()));
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  return handle.supervisor;
}

/// --metric, --search and the scheduler's options over the file's; a scheduler's trials get
/// `--RESOURCE MAX`.
void apply_scheduler_options(const SweepRequest& request, SweepSpec& spec,
                             std::vector<std::string>& fixed) {
  if (request.metric) {
    const auto colon = request.metric->rfind(':');
    const std::string goal = colon == std::string::npos ? "" : request.metric->substr(colon + 1);
    if (goal == "max" || goal == "min") {
      spec.metric = request.metric->substr(0, colon);
      spec.maximize = goal == "max";
    } else {
      spec.metric = *request.metric;
    }
    if (spec.metric.empty()) throw UsageError("--metric needs a name: --metric loss or acc:max");
  }
  if (request.search) {
    if (*request.search != "grid" && *request.search != "random" && *request.search != "tpe") {
      throw UsageError(
          fmt::format("--search must be grid, random or tpe (got {})", *request.search));
    }
    spec.method = *request.search;
  }
  if (request.count) spec.count = *request.count;
  if (request.startup) spec.startup = *request.startup;
  if (request.seed) spec.seed = *request.seed;
  if (spec.startup < 1) throw UsageError("--startup must be 1 or more");
  SchedulerSpec& scheduler = spec.scheduler;
  if (request.scheduler) scheduler.kind = *request.scheduler;
  const bool tuned = request.resource || request.min_budget || request.max_budget || request.eta;
  if (scheduler.kind.empty()) {
    if (tuned)
      throw UsageError("--resource, --min, --max and --eta need --scheduler asha or hyperband");
    return;
  }
  if (scheduler.kind != "asha" && scheduler.kind != "hyperband") {
    throw UsageError(fmt::format("--scheduler must be asha or hyperband (got {})", scheduler.kind));
  }
  if (request.resource) scheduler.resource = *request.resource;
  if (request.min_budget) scheduler.min = *request.min_budget;
  if (request.max_budget) scheduler.max = *request.max_budget;
  if (request.eta) scheduler.eta = *request.eta;
  if (scheduler.resource.empty()) return;  // check_sweep_spec says what is missing
  const std::string flag = "--" + scheduler.resource;
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    if (fixed[i] == flag || fixed[i].rfind(flag + "=", 0) == 0) {
      throw UsageError(
          fmt::format("{} after the script: the {} scheduler gives each trial {} {} (--max) itself",
                      fixed[i], scheduler.kind, flag, scheduler.max));
    }
  }
  for (const auto& parameter : spec.parameters) {
    if (parameter.name == scheduler.resource) {
      throw UsageError(fmt::format("{} is the scheduler's resource, and cannot be swept too",
                                   scheduler.resource));
    }
  }
  fixed.push_back(flag);
  fixed.push_back(std::to_string(scheduler.max));
}

/// A new sweep's definition: the file's, then the lists after the script; expanded and checked.
SweepSpec new_spec(Context& ctx, const SweepRequest& request, std::vector<std::string>& fixed) {
  SweepSpec spec;
  if (request.file) {
    const fs::path path = fs::path(*request.file).is_absolute() ? fs::path(*request.file)
                                                                : ctx.working_dir / *request.file;
    if (!fs::exists(path)) {
      throw UsageError(fmt::format("-f {}: no such sweep file", *request.file));
    }
    spec = load_sweep_file(path, *request.file);
  }
  sweep_lists_from_arguments(request.arguments, spec, fixed);
  apply_scheduler_options(request, spec, fixed);
  if (request.max_concurrent < 0) throw UsageError("--max-concurrent must be 1 or more");
  if (request.max_concurrent > 0) spec.max_concurrent = request.max_concurrent;
  if (spec.early_stop.metric.empty()) spec.early_stop.metric = spec.metric;
  check_sweep_spec(spec);
  if (spec.method != "grid" && spec.seed == 0) {
    spec.seed =
        static_cast<std::uint64_t>(ctx.clock->now_ms()) ^ static_cast<std::uint64_t>(::getpid());
  }
  const std::uint64_t size = sweep_size(spec);
  if (size > request.max_runs) {
    throw UsageError(
        fmt::format("the sweep has {} points, more than {}; give --max-runs {} to run them all",
                    size == UINT64_MAX ? std::string("over 18e18") : std::to_string(size),
                    request.max_runs, size));
  }
  return spec;
}

/// Records the sweep and its points' runs (all or none).
SweepRecord record_sweep(Context& ctx, SweepWork& work, const std::string& script,
                         const std::vector<std::string>& fixed,
                         const std::vector<nlohmann::ordered_json>& points) {
  const Project& project = ctx.project();
  SweepRecord sweep;
  sweep.project = project.name;
  sweep.script = script;
  sweep.arguments = fixed;
  sweep.targets = run_config_names(work.targets);
  sweep.spec = work.spec.to_json();
  sweep.created_ms = ctx.clock->now_ms();
  sweep.user = user_name();
  sweep.host = host_name();
  sweep.pid = ::getpid();  // the owner until the supervisor takes over
  sweep.pid_start = process_start_time(::getpid()).value_or(0);
  sweep.boot_id = boot_id();
  for (std::int64_t ms = sweep.created_ms;; ++ms) {
    sweep.sweep_id = fmt::format("{}_sweep_{}", project.name, ms);
    std::error_code ec;
    if (fs::create_directories(sweep_dir(work.state_dir, sweep.sweep_id), ec)) break;
    if (ec)
      throw Error(fmt::format("cannot create {}: {}",
                              sweep_dir(work.state_dir, sweep.sweep_id).string(), ec.message()));
  }
  work.sweep_id = sweep.sweep_id;
  for (const auto& point : points) sweep.points.push_back({point, "", {}});
  save_sweep(work.state_dir, sweep);
  std::vector<RunRecord> records;
  records.reserve(points.size());
  const SweepTarget& first = work.targets.front();
  for (std::size_t i = 0; i < points.size(); ++i) {
    records.push_back(point_record(ctx, sweep, first, work.targets, i));
  }
  HistoryStore store(work.state_dir);
  store.create_many(records, sweep.created_ms);
  for (std::size_t i = 0; i < points.size(); ++i) sweep.points[i].run_id = records[i].run_id;
  save_sweep(work.state_dir, sweep);
  return sweep;
}

}  // namespace

namespace {

/// Takes the snapshot once for every target and point; the python helper too.
void share_snapshot(Context& ctx, SweepWork& work) {
  const Project& project = ctx.project();
  Manifest manifest = work.targets.front().plan.manifest;
  if (manifest.entries.empty()) manifest = take_snapshot(ctx, project);
  for (const auto& warning : manifest.warnings) spdlog::warn("{}", warning);
  const fs::path helper = ensure_python_helper(project);
  const std::string hash = manifest.hash();
  for (auto& target : work.targets) {
    target.plan.manifest = manifest;
    target.plan.helper_dir = helper;
    target.plan.record.snapshot_hash = hash;
    target.plan.record.snapshot_files = manifest.entries.size();
    target.plan.record.snapshot_bytes = manifest.total_bytes();
  }
}

/// The rows of the runs that hold the sweep's points now (not those a resume replaced).
std::vector<RunSummary> current_runs(std::vector<RunSummary> rows, const SweepRecord& sweep) {
  const std::map<std::string, int> current = sweep.current_runs();
  std::erase_if(rows, [&](const RunSummary& row) { return !current.contains(row.run_id); });
  return rows;
}

/// Prints each run of the sweep as it ends, until all have; Ctrl-C detaches (false).
bool follow_sweep(Context& ctx, const fs::path& state_dir, const std::string& sweep_id,
                  pid_t supervisor) {
  std::optional<InterruptWatch> interrupt(std::in_place);
  std::set<std::string> told;
  RunQuery query;
  query.sweep_id = sweep_id;
  const SweepRecord sweep = load_sweep(state_dir, sweep_id);
  const SweepSpec spec = SweepSpec::from_json(sweep.spec);
  if (!spec.metric.empty()) query.columns.push_back({"metric", spec.metric});
  bool done = false;
  while (!done && !interrupt->fired()) {
    int code = 0;
    ::waitpid(supervisor, &code, WNOHANG);
    HistoryStore store(state_dir);
    const auto rows = current_runs(store.list(query), sweep);
    done = true;
    for (const auto& row : rows) {
      if (!status::is_final(row.status)) {
        done = false;
        continue;
      }
      if (!told.insert(row.run_id).second) continue;
      const std::string metric =
          spec.metric.empty() || row.values.empty() || row.values[0].is_null()
              ? ""
              : fmt::format(" {}={}", spec.metric, param_text(row.values[0]));
      *ctx.err << fmt::format("[{}/{}] {} {}{}\n", told.size(), rows.size(), row.run_id, row.status,
                              metric)
               << std::flush;
    }
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  interrupt.reset();
  if (!done) {
    *ctx.err << fmt::format(
        "\nDetached from sweep {}; it goes on.\n  Follow it: mlw history list --sweep {}\n  "
        "Cancel it: mlw experiment cancel -r {}\n",
        sweep_id, sweep_id, sweep_id);
  }
  return done;
}

/// Waits for the sweep's supervisor (this process's child) to end once every run has, so that
/// its last lines (each run's end, its decisions) are in decisions.log when the command returns;
/// bounded (30 s), after which it goes on alone.
void wait_supervisor_end(pid_t supervisor) {
  for (int i = 0; i < 300; ++i) {
    int code = 0;
    const pid_t ended = ::waitpid(supervisor, &code, WNOHANG);
    if (ended == supervisor || (ended < 0 && errno == ECHILD)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  spdlog::warn("the sweep's supervisor (pid {}) has not ended 30 s after its last run", supervisor);
}

/// The points to run again on --resume: every point whose run did not complete (or stop early)
/// and is not live gets a new run.
std::vector<std::size_t> points_to_rerun(HistoryStore& store, const SweepRecord& sweep) {
  std::vector<std::size_t> rerun;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const std::string& run_id = sweep.points[i].run_id;
    if (run_id.empty()) {
      rerun.push_back(i);
      continue;
    }
    RunRecord record;
    try {
      record = store.load(run_id);
    } catch (const Error&) {
      rerun.push_back(i);
      continue;
    }
    const bool kept = record.status == status::k_completed || record.status == status::k_stopped ||
                      !status::is_final(record.status);
    if (!kept) rerun.push_back(i);
  }
  return rerun;
}

int finish_sweep(Context& ctx, SweepWork& work, const SweepRecord& sweep, pid_t supervisor,
                 bool async, std::size_t queued) {
  if (!ctx.quiet) {
    *ctx.err << fmt::format(
        "{} point{} queued on {} ({}).\n  Follow it: mlw history list --sweep {}\n  Compare: "
        "mlw history compare --sweep {}\n  Cancel it: mlw experiment cancel -r {}\n",
        queued, queued == 1 ? "" : "s", join(sweep.targets, ", "),
        work.spec.max_concurrent > 0 ? fmt::format("at most {} at once", work.spec.max_concurrent)
                                     : std::string("as the targets have room"),
        sweep.sweep_id, sweep.sweep_id, sweep.sweep_id);
  }
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const auto& point : sweep.points) runs.push_back(point.run_id);
  const nlohmann::ordered_json object = {
      {"sweep_id", sweep.sweep_id}, {"points", sweep.points.size()}, {"runs", runs}};
  if (async) {
    if (ctx.output().structured()) ctx.output().print_object(object);
    return 0;
  }
  if (!follow_sweep(ctx, work.state_dir, sweep.sweep_id, supervisor)) return 130;
  wait_supervisor_end(supervisor);
  if (ctx.output().structured()) {
    ctx.output().print_object(object);
  } else {
    compare_sweep(ctx, sweep.sweep_id, std::nullopt);
  }
  HistoryStore store(work.state_dir);
  RunQuery query;
  query.sweep_id = sweep.sweep_id;
  std::size_t bad = 0;
  for (const auto& row : current_runs(store.list(query), sweep)) {
    bad += row.status != status::k_completed && row.status != status::k_stopped;
  }
  if (bad == 0) return 0;
  throw Error(
      fmt::format("{} of {} points of sweep {} did not complete; run them again with: mlw "
                  "experiment sweep --resume {}",
                  bad, sweep.points.size(), sweep.sweep_id, sweep.sweep_id));
}

int resume_sweep(Context& ctx, const SweepRequest& request) {
  const Project& project = ctx.project();
  SweepWork work;
  work.state_dir = project.state_dir();
  SweepRecord sweep = load_sweep(work.state_dir, *request.resume);
  if (sweep_owner_alive(sweep)) {
    throw Error(fmt::format(
        "sweep {} is still running (its supervisor is pid {}); wait for it, or cancel it with: "
        "mlw experiment cancel -r {}",
        sweep.sweep_id, sweep.pid, sweep.sweep_id));
  }
  work.sweep_id = sweep.sweep_id;
  work.spec = SweepSpec::from_json(sweep.spec);
  if (request.max_concurrent > 0) work.spec.max_concurrent = request.max_concurrent;
  // Closed before the supervisor is forked (a SQLite connection must not cross a fork: the
  // supervisor's own then failed with "disk I/O error" and the resumed points were left Lost).
  std::optional<HistoryStore> store(std::in_place, work.state_dir);
  store->reconcile_lost(host_name());
  const auto rerun = points_to_rerun(*store, sweep);
  SweepRequest targets_request = request;
  if (targets_request.run_configs.empty()) targets_request.run_configs = sweep.targets;
  work.targets = plan_targets(ctx, targets_request, sweep.script, sweep.arguments);
  share_snapshot(ctx, work);
  sweep.targets = run_config_names(work.targets);
  sweep.pid = ::getpid();
  sweep.pid_start = process_start_time(::getpid()).value_or(0);
  sweep.boot_id = boot_id();
  sweep.host = host_name();
  save_sweep(work.state_dir, sweep);
  std::vector<RunRecord> records;
  for (const std::size_t i : rerun) {
    records.push_back(point_record(ctx, sweep, work.targets.front(), work.targets, i));
  }
  store->create_many(records, ctx.clock->now_ms());
  store.reset();
  for (std::size_t k = 0; k < rerun.size(); ++k) {
    SweepPoint& point = sweep.points[rerun[k]];
    if (!point.run_id.empty()) point.earlier_runs.push_back(point.run_id);
    point.run_id = records[k].run_id;
  }
  save_sweep(work.state_dir, sweep);
  live_stream_sweep(ctx, sweep.sweep_id);
  const pid_t supervisor = start_sweep_supervisor(ctx, work);
  return finish_sweep(ctx, work, sweep, supervisor, request.async, rerun.size());
}

}  // namespace

std::string scheduler_variable(const SweepWork& work, std::int64_t point, int bracket) {
  const SchedulerSpec& scheduler = work.spec.scheduler;
  const nlohmann::ordered_json spec = {{"type", scheduler.kind},
                                       {"resource", scheduler.resource},
                                       {"min", scheduler.min},
                                       {"max", scheduler.max},
                                       {"eta", scheduler.eta},
                                       {"metric", work.spec.metric},
                                       {"goal", work.spec.maximize ? "max" : "min"},
                                       {"sweep", work.sweep_id},
                                       {"point", point},
                                       {"bracket", bracket}};
  return spec.dump();
}

std::string propose_variable(const SweepWork& work, std::int64_t point) {
  nlohmann::ordered_json spec = work.spec.to_json();  // its seed, startup, metric, parameters
  spec["sweep"] = work.sweep_id;
  spec["point"] = point;
  return spec.dump();
}

void cancel_unstarted_point(HistoryStore& store, RunRecord& record, std::int64_t now_ms) {
  record.mark_failed(143, "the sweep was canceled before this point started", now_ms, true);
  store.save(record);
}

void cancel_sweep(Context& ctx, const std::string& sweep_id) {
  const fs::path state = ctx.project().state_dir();
  const SweepRecord sweep = load_sweep(state, sweep_id);
  atomic_write_file(sweep_dir(state, sweep_id) / k_sweep_cancel_file, "");
  const bool supervised = sweep_owner_alive(sweep);
  RunQuery query;
  query.sweep_id = sweep_id;
  using namespace std::chrono;
  const auto start = steady_clock::now();
  bool signalled = false;
  bool killed = false;
  std::vector<RunSummary> rows;
  while (true) {
    HistoryStore store(state);
    rows = store.list(query);
    std::vector<RunRecord> live;
    for (const auto& row : rows) {
      if (!status::is_final(row.status)) live.push_back(store.load(row.run_id));
    }
    if (live.empty() || steady_clock::now() > start + seconds(30)) break;
    const bool kill = signalled && !killed && steady_clock::now() > start + seconds(10);
    for (auto& record : live) {
      if (!supervised && record.pid == 0) {
        cancel_unstarted_point(store, record, ctx.clock->now_ms());
        continue;
      }
      if (!signalled) request_cancel(store, record.run_id);
      if ((!signalled || kill) && record.process_group > 0) {
        ctx.executor(record.target_type)->stop(ctx, record, kill);
      }
    }
    killed = killed || kill;
    signalled = true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::map<std::string, int> counts;
  int live = 0;
  for (const auto& row : rows) {
    ++counts[row.status];
    live += !status::is_final(row.status);
  }
  nlohmann::ordered_json statuses = nlohmann::ordered_json::object();
  for (const auto& [name, count] : counts) statuses[name] = count;
  if (!ctx.quiet && !ctx.output().structured()) {
    *ctx.err << fmt::format("Sweep {}: {} runs canceled or ended\n", sweep_id, rows.size() - live);
  }
  ctx.output().print_object(
      {{"sweep_id", sweep_id}, {"runs", rows.size()}, {"statuses", statuses}});
  if (live > 0) {
    throw Error(fmt::format("{} runs of sweep {} were asked to stop but have not ended yet", live,
                            sweep_id));
  }
}

int sweep(Context& ctx, const SweepRequest& request) {
  ctx.codes = CommandCodes::Submit;
  if (request.resume) return resume_sweep(ctx, request);
  const Project& project = ctx.project();
  SweepWork work;
  work.state_dir = project.state_dir();
  std::vector<std::string> fixed;
  work.spec = new_spec(ctx, request, fixed);
  const auto points = expand_sweep(work.spec);
  if (points.empty()) throw UsageError("the sweep has no points");
  if (request.run_configs.empty()) throw UsageError("give the targets: -c NAME[,NAME…]");
  work.targets = plan_targets(ctx, request, request.script, fixed);
  share_snapshot(ctx, work);
  const SweepRecord sweep =
      record_sweep(ctx, work, work.targets.front().plan.script, fixed, points);
  live_stream_sweep(ctx, sweep.sweep_id);
  const pid_t supervisor = start_sweep_supervisor(ctx, work);
  return finish_sweep(ctx, work, sweep, supervisor, request.async, points.size());
}

}  // namespace mlw::api
