#include "mlw/api/experiment.hpp"

#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <future>
#include <iostream>
#include <regex>
#include <set>
#include <thread>

#include "data_run.hpp"
#include "mlw/config/names.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/build_output.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/store.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/snapshot/ignore.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"
#include "submit_output.hpp"
#include "sweep_internal.hpp"

namespace mlw::api {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) {
  g_interrupted = 1;
}

}  // namespace

InterruptWatch::InterruptWatch() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &m_previous);
  g_interrupted = 0;
}

InterruptWatch::~InterruptWatch() {
  ::sigaction(SIGINT, &m_previous, nullptr);
}

bool InterruptWatch::take() {
  if (!g_interrupted) return false;
  g_interrupted = 0;
  return true;
}

bool InterruptWatch::fired() const {
  return g_interrupted != 0;
}

std::string user_name() {
  if (const passwd* entry = ::getpwuid(::getuid()); entry && entry->pw_name) return entry->pw_name;
  return std::to_string(::getuid());
}

/// The `mlw` and `azureml` Python packages, written once per version under .mlw/python/.
fs::path ensure_python_helper(const Project& project) {
  const fs::path dir = project.state_dir() / "python" / std::string(embedded_files_hash());
  if (fs::is_directory(dir)) return dir;
  const fs::path staging = dir.string() + ".tmp" + std::to_string(::getpid());
  for (const auto& file : embedded_files()) {
    if (!starts_with(file.path, "python/")) continue;
    const fs::path target = staging / std::string(file.path.substr(7));
    make_directories(target.parent_path());
    atomic_write_file(target, file.contents);
  }
  if (::rename(staging.c_str(), dir.c_str()) != 0) {
    std::error_code ec;
    fs::remove_all(staging, ec);  // another submit won the race; its copy is identical
  }
  return dir;
}

/// The script as a path relative to the project; fails with 127 when it is missing, outside
/// the project, or excluded from the snapshot by .amlignore.
std::string resolve_script(const Context& ctx, const Project& project, const std::string& script) {
  if (script.empty()) throw Error("no script given", exit_code::k_not_found);
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (fs::path(script).is_absolute()) {
    candidates.push_back(script);
  } else {
    candidates.push_back(ctx.working_dir / script);
    candidates.push_back(project.root / script);
  }
  for (const auto& candidate : candidates) {
    if (!fs::is_regular_file(candidate, ec)) continue;
    const fs::path relative = fs::weakly_canonical(candidate, ec).lexically_relative(project.root);
    if (relative.empty() || relative.native().starts_with("..")) {
      throw Error(fmt::format("script {} is outside the project {}; only project files are "
                              "shipped with a run",
                              script, project.root.string()),
                  exit_code::k_not_found);
    }
    IgnoreRules rules;
    if (auto text = read_file_if_exists(project.root / ".amlignore")) rules.add_text(*text);
    std::string prefix;
    const auto parts = split(relative.string(), '/');
    for (std::size_t i = 0; i < parts.size(); ++i) {
      prefix += (i ? "/" : "") + parts[i];
      const bool is_dir = i + 1 < parts.size();
      const bool builtin = i == 0 && (parts[0] == ".mlw" || parts[0] == "outputs");
      if (builtin || parts[i] == ".git" || rules.ignored(prefix, is_dir)) {
        throw Error(fmt::format("script {} is excluded from the snapshot (by .amlignore or as {}); "
                                "change .amlignore to ship it",
                                relative.string(), prefix),
                    exit_code::k_not_found);
      }
      if (is_dir) {
        if (auto text = read_file_if_exists(project.root / prefix / ".amlignore")) {
          rules.add_text(*text, prefix);
        }
      }
    }
    return relative.string();
  }
  throw Error(fmt::format("script {} not found in {}", script, project.root.string()),
              exit_code::k_not_found);
}

std::map<std::string, std::string> parse_env(const std::vector<std::string>& items) {
  std::map<std::string, std::string> env;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || !is_environment_name(key))
      throw UsageError("-e expects KEY=VALUE with KEY made of letters, digits and _ (got \"" +
                       item + "\")");
    env[key] = item.substr(eq + 1);
  }
  return env;
}

/// Marks the run for cancellation; a marker file, not a field of run.json, which the
/// supervisor may be rewriting at the same moment.
void request_cancel(HistoryStore& store, const std::string& run_id) {
  atomic_write_file(store.run_dir(run_id) / "cancel_requested", "");
}

namespace {

void note_ignored_keys(const Project& project, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    const fs::path marker = project.state_dir() / "notes" / key;
    if (fs::exists(marker)) continue;
    spdlog::info("{} in the run configuration is accepted for Workbench compatibility and ignored",
                 key);
    try {
      make_directories(marker.parent_path());
      atomic_write_file(marker, "");
    } catch (const Error&) {
    }
  }
}

}  // namespace

namespace {

/// A progress line on a terminal while a snapshot reads new content (at most ten updates a
/// second); nothing when stderr is not a terminal or with -q.
SnapshotProgress snapshot_progress(Context& ctx) {
  if (!ctx.stderr_is_terminal || ctx.quiet) return {};
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [&ctx, last](std::size_t files, std::uint64_t bytes) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(100)) return;
    *last = now;
    *ctx.err << fmt::format("\rSnapshot: {} files, {:.1f} MB read\x1b[K", files,
                            static_cast<double>(bytes) / 1e6)
             << std::flush;
  };
}

}  // namespace

/// The project's snapshot, with a progress line on a terminal while new content is read.
Manifest take_snapshot(Context& ctx, const Project& project) {
  Manifest manifest =
      build_snapshot(project.root, project.state_dir() / "objects",
                     project.state_dir() / "cache" / "hashes.tsv", snapshot_progress(ctx));
  if (ctx.stderr_is_terminal && !ctx.quiet) *ctx.err << "\r\x1b[K" << std::flush;
  return manifest;
}

/// `submit --gpus N` over the target's file: gpusPerRun where the kind leases GPUs, else the own
/// key its scheduler reads (Slurm's gpusPerNode, Grid Engine's gpus).
void apply_gpus_option(ComputeConfig& compute, const std::string& target,
                       const std::string& value) {
  if (const std::string problem = gpus_per_run_problem(value); !problem.empty()) {
    throw UsageError("--gpus " + problem);
  }
  const TargetKind& kind = kind_of(compute.type);
  if (kind.has_key("gpusPerRun")) {
    compute.gpus_per_run = value;
  } else if (!kind.gpu_key.empty() && value != "all") {
    compute.section[std::string(kind.gpu_key)] = value;
  } else {
    throw UsageError(fmt::format("--gpus {}: target {} ({}) takes a count of GPUs", value, target,
                                 compute.type));
  }
}

/// idleGpu of the run configuration (then submit --idle-gpu) over the target's; refused for a
/// kind that does not lease GPUs, warned about for a run that is not sampled (nothing watches it).
void apply_idle_gpu(RunPlan& plan, const std::optional<std::string>& option) {
  if (plan.run_config.idle_gpu.set) plan.compute.idle_gpu = plan.run_config.idle_gpu;
  if (option) plan.compute.idle_gpu = parse_idle_gpu_option(*option);
  if (!plan.compute.idle_gpu.set) return;
  if (!kind_of(plan.compute.type).has_key("gpusPerRun")) {
    throw UsageError(
        fmt::format("idleGpu: target {} ({}) does not lease GPUs; its jobs' GPUs "
                    "are its scheduler's",
                    plan.target_name, plan.compute.type));
  }
  if (!samples_gpus(plan)) {
    spdlog::warn(
        "idleGpu ({}) watches runs that lease GPUs or whose container is given them "
        "(nvidiaDocker): this run is neither (set gpusPerRun in aml_config/{}.compute, or "
        "submit --gpus N); it is not watched",
        plan.compute.idle_gpu.describe(), plan.target_name);
  }
}

/// `submit --requeue` over the target's file: its key requeue, where the kind has it.
void apply_requeue_option(ComputeConfig& compute, const std::string& target) {
  const ComputeKind* kind = find_compute_kind(compute.type);
  if (!kind || !find_own_key(*kind, "requeue")) {
    throw UsageError(
        fmt::format("--requeue: target {} ({}) is not a batch target; requeue "
                    "applies to slurm and sge targets",
                    target, compute.type));
  }
  compute.section["requeue"] = "true";
}

/// Everything that can be checked before anything is written: configuration, script, executor.
RunPlan plan_run(Context& ctx, const SubmitRequest& request, std::unique_ptr<Executor>& executor) {
  RunPlan plan;
  plan.project = ctx.project();
  std::vector<std::string> ignored;
  plan.run_config = load_run_config(plan.project, request.run_config, &ignored);
  plan.target_name = request.target.value_or(plan.run_config.target);
  if (plan.target_name.empty()) {
    throw Error(
        fmt::format("aml_config/{}.runconfig names no Target; add 'Target: NAME' or pass -t NAME",
                    request.run_config));
  }
  plan.compute = load_compute(plan.project, plan.target_name);
  if (request.gpus) apply_gpus_option(plan.compute, plan.target_name, *request.gpus);
  if (request.requeue) apply_requeue_option(plan.compute, plan.target_name);
  apply_idle_gpu(plan, request.idle_gpu);
  note_ignored_keys(plan.project, ignored);
  plan.extra_env = parse_env(request.env);
  executor = ctx.executor(plan.compute.type);
  if (request.python_module.empty()) {
    plan.script = resolve_script(ctx, plan.project, request.script);
    plan.arguments = request.arguments;
  } else {  // the helper's module, on the run's PYTHONPATH
    plan.script = "-m";
    plan.arguments = {request.python_module};
    plan.arguments.insert(plan.arguments.end(), request.arguments.begin(), request.arguments.end());
  }
  plan.notebook_kernel = request.python_module == k_kernel_module;
  plan.record.run_config = request.run_config;
  plan.record.data = plan_data(plan.project, plan.run_config.data, request.data);
  // TrackedRun: false keeps the run out of the project's history: same machinery, own store.
  plan.history_dir = plan.run_config.tracked_run ? plan.project.state_dir()
                                                 : plan.project.state_dir() / "untracked";
  if (!kind_of(plan.compute.type).place->shares_run_folder()) {
    // A place that keeps run folders of its own is shipped the snapshot. Taken before the probe,
    // which then asks the target's store about it in its own round trip (a ship step less); a
    // snapshot that fails here is taken again, and fails, once the run is recorded.
    try {
      plan.manifest = take_snapshot(ctx, plan.project);
    } catch (const Error& e) {
      spdlog::debug("snapshot before the probe: {}", e.what());
      plan.manifest = {};
    }
  }
  executor->validate(ctx, plan);
  return plan;
}

int submit(Context& ctx, const SubmitRequest& given) {
  ctx.codes = CommandCodes::Submit;
  SubmitRequest request = given;
  if (request.run_config.empty()) {
    const auto it = ctx.config.find("defaults.target");
    if (it == ctx.config.end()) {
      throw UsageError(
          "no run configuration: give -c NAME, or set a default with: mlw config set "
          "defaults.target NAME");
    }
    request.run_config = it->second.value;
    spdlog::info("using the default target {} (defaults.target, {})", request.run_config,
                 it->second.origin);
  }
  std::vector<PortPair> pairs;
  if (!request.forward.empty()) {
    if (request.async) {
      throw UsageError(
          "--forward serves the ports while submit follows the run: drop -a, or forward them "
          "later with: mlw experiment forward -r RUN PORT");
    }
    pairs = parse_ports(request.forward);
  }
  std::unique_ptr<Executor> executor;
  RunPlan plan = plan_run(ctx, request, executor);
  // Bound before the run starts: a port in use here fails the submit with nothing started.
  Forwards forwards = listen_forwards(pairs, plan.compute.type == "local");
  ForwarderGuard forwarder;
  return run_plan(ctx, plan, *executor, request.async, request.cancel_on_interrupt, [&] {
    if (!pairs.empty()) forwarder.start(ctx, plan.record.run_id, forwards);
  });
}

void cancel(Context& ctx, const std::string& run_id) {
  const Project& project = ctx.project();
  if (sweep_exists(project.state_dir(), run_id)) return cancel_sweep(ctx, run_id);
  HistoryStore store(project.state_dir());
  store.reconcile_lost(host_name());
  RunRecord record = store.load(run_id);
  if (status::is_final(record.status)) {
    throw Error(fmt::format("run {} has already ended ({})", run_id, record.status));
  }
  auto executor = ctx.executor(record.target_type);
  request_cancel(store, run_id);
  try {
    bool signalled = false;
    bool killed = false;
    using namespace std::chrono;
    const auto start = steady_clock::now();
    while (steady_clock::now() < start + seconds(20)) {
      record = store.load(run_id);
      if (status::is_final(record.status)) break;
      if (!signalled && record.process_group > 0) {
        executor->stop(ctx, record, false);
        signalled = true;
      } else if (signalled && !killed && steady_clock::now() > start + seconds(10)) {
        executor->stop(ctx, record, true);
        killed = true;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  } catch (const Error&) {
    // Not stopped here, so not canceled: the run must not end up recorded as Canceled.
    std::error_code ec;
    fs::remove(store.run_dir(run_id) / "cancel_requested", ec);
    throw;
  }
  if (!status::is_final(record.status)) {
    throw Error(fmt::format("run {} was sent the stop signal but has not ended yet", run_id));
  }
  if (!ctx.quiet && !ctx.output().structured()) {
    *ctx.err << fmt::format("Run {} is {}\n", run_id, record.status);
  }
  if (ctx.output().structured()) {
    ctx.output().print_object(record.to_public_json(store.run_dir(run_id).string()));
  } else {
    ctx.output().print_object(
        {{"run_id", run_id},
         {"status", record.status},
         {"exit_code", record.exit_code ? nlohmann::ordered_json(*record.exit_code)
                                        : nlohmann::ordered_json()}});
  }
}

namespace {

/// The target of a run configuration (its Target), for prepare and clean.
std::pair<std::string, ComputeConfig> target_of(Context& ctx, const std::string& run_config,
                                                RunConfig* loaded = nullptr) {
  const Project& project = ctx.project();
  RunConfig config = load_run_config(project, run_config);
  const std::string name = config.target.empty() ? run_config : config.target;
  ComputeConfig compute = load_compute(project, name);
  if (loaded) *loaded = config;
  return {name, compute};
}

}  // namespace

void prepare(Context& ctx, const std::string& run_config) {
  RunPlan plan;
  plan.project = ctx.project();
  std::tie(plan.target_name, plan.compute) = target_of(ctx, run_config, &plan.run_config);
  if (!kind_of(plan.compute.type).runner.image) {
    ctx.output().print_object(
        {{"target", plan.target_name},
         {"prepared", fmt::format("nothing to prepare: {} targets use no environment image",
                                  plan.compute.type)}});
    return;
  }
  const auto executor = ctx.executor(plan.compute.type);
  plan.record.run_id = fmt::format("prepare-{}-{}", ctx.clock->now_ms(), ::getpid());
  plan.record.run_config = run_config;
  // The snapshot is read while the connection is made (the probe needs both).
  const std::int64_t started_ms = ctx.clock->now_ms();
  auto snapshot = std::async(std::launch::async, [&plan] {
    return build_snapshot(plan.project.root, plan.project.state_dir() / "objects",
                          plan.project.state_dir() / "cache" / "hashes.tsv");
  });
  executor->open(ctx, plan.target_name, plan.compute);
  plan.manifest = snapshot.get();
  spdlog::debug("snapshot: {} files, {} bytes, {} ms", plan.manifest.entries.size(),
                plan.manifest.total_bytes(), ctx.clock->now_ms() - started_ms);
  plan.run_dir = plan.project.state_dir() / "prepare" / plan.record.run_id;
  make_directories(plan.run_dir / "snapshot");
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{plan.run_dir};
  executor->validate(ctx, plan);
  // The build's output line by line, as a person reads a build that succeeds (build_output.hpp).
  std::string pending;
  const auto show = [&ctx](const std::string& line) {
    const std::string shown = build_line_for_terminal(line);
    if (!ctx.quiet && (!shown.empty() || line.empty())) *ctx.err << shown << "\n";
  };
  const PrepareResult prepared = executor->prepare(ctx, plan, [&](std::string_view chunk) {
    pending.append(chunk);
    for (auto newline = pending.find('\n'); newline != std::string::npos;
         newline = pending.find('\n')) {
      show(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  });
  if (!pending.empty()) show(pending);
  ctx.err->flush();
  ctx.output().print_object({{"target", plan.target_name},
                             {"image", prepared.image},
                             {"host", prepared.host},
                             {"built", prepared.built}});
}

namespace {

/// The environment images that this project's recorded runs on `target` used (mlw_env:HASH only:
/// a record names no other image to remove).
std::vector<std::string> recorded_images(Context& ctx, const std::string& target) {
  static const std::regex k_tag("mlw_env:[0-9a-f]{24}");
  HistoryStore store(ctx.project().state_dir());
  std::set<std::string> tags;
  for (const auto& run : store.list(RunQuery(target))) {
    try {
      const std::string tag = store.load(run.run_id).image_tag;
      if (std::regex_match(tag, k_tag)) tags.insert(tag);
    } catch (const Error& e) {
      spdlog::debug("clean: run {} not read: {}", run.run_id, e.what());
    }
  }
  return {tags.begin(), tags.end()};
}

}  // namespace

void clean(Context& ctx, const std::string& run_config, bool all_projects) {
  const auto [name, compute] = target_of(ctx, run_config);
  CleanScope scope;
  scope.project = ctx.project().name;
  scope.all_projects = all_projects;
  if (!all_projects) scope.image_tags = recorded_images(ctx, name);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& line : ctx.executor(compute.type)->clean(ctx, name, compute, scope)) {
    if (starts_with(line, "kept objects ")) {
      if (!ctx.quiet) {
        *ctx.err << fmt::format(
            "mlw: the content store on {} ({} objects, shared by every project's runs there) is "
            "kept; --all-projects removes it with every project's images and run folders\n",
            name, line.substr(13));
      }
      continue;
    }
    list.push_back(line);
  }
  if (ctx.output().structured()) {
    ctx.output().print_object({{"target", name}, {"removed", list}});
    return;
  }
  // One line per thing removed: a long list stays readable and greppable.
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& line : list) rows.push_back({{"removed", line}});
  if (rows.empty()) rows.push_back({{"removed", "(nothing of this project's)"}});
  ctx.output().print_list(rows, {{"removed", "REMOVED FROM " + name}});
}

}  // namespace mlw::api
