// `mlw experiment rerun`: a new run from a past run's stored snapshot, run configuration,
// environment spec, arguments and -e variables (docs/reproduce.md).

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <random>

#include "mlw/api/experiment.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/snapshot/manifest.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// The run's manifest, checked against its snapshot hash.
Manifest stored_manifest(const StoredRun& source) {
  const std::string why = fmt::format("cannot rerun {}: ", source.record.run_id);
  std::optional<Manifest> manifest;
  try {
    manifest = read_run_manifest(source.dir);
  } catch (const Error& e) {
    throw Error(why + e.what(), exit_code::k_cannot_start);
  }
  if (!manifest || source.record.snapshot_hash.empty()) {
    throw Error(why + "it has no stored snapshot (its run folder has no manifest.json)",
                exit_code::k_cannot_start);
  }
  if (manifest->hash() != source.record.snapshot_hash) {
    throw Error(
        why + (source.dir / "manifest.json").string() + " does not match the run's snapshot hash",
        exit_code::k_cannot_start);
  }
  return *manifest;
}

/// The snapshot's files as a folder of their own (hard links into the store), made once per
/// snapshot under .mlw/reruns/: the rerun reads its run configuration, conda file and script
/// there, never in today's working tree. Fails, naming the files, where the store lost them.
fs::path snapshot_view(const Project& project, const StoredRun& source, const Manifest& manifest) {
  const fs::path objects = project.state_dir() / "objects";
  std::vector<std::string> missing =
      restore_snapshot_objects(manifest, objects, source.dir / "snapshot");
  if (!missing.empty()) {
    // The script first: the file a user looks for.
    std::stable_partition(missing.begin(), missing.end(), [&source](const std::string& path) {
      return path == source.record.script;
    });
    const std::size_t shown = std::min<std::size_t>(missing.size(), 5);
    throw Error(
        fmt::format("cannot rerun {}: the stored content of {} of its {} files is gone from "
                    ".mlw/objects and its run folder: {}{}",
                    source.record.run_id, missing.size(), manifest.entries.size(),
                    join(std::vector<std::string>(missing.begin(), missing.begin() + shown), ", "),
                    missing.size() > shown ? ", …" : ""),
        exit_code::k_cannot_start);
  }
  const fs::path dir = project.state_dir() / "reruns" / source.record.snapshot_hash;
  if (fs::is_directory(dir)) return dir;
  make_directories(dir.parent_path());
  std::random_device random;
  const fs::path building = dir.parent_path() / fmt::format(".in-{}-{}", ::getpid(), random());
  try {
    materialize_snapshot(manifest, objects, source.dir / "snapshot", building);
  } catch (const Error&) {
    std::error_code ec;
    fs::remove_all(building, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(building, dir, ec);
  if (ec) fs::remove_all(building, ec);  // another rerun made it first
  return dir;
}

/// The target a rerun goes to: the run's own, or -c NAME (a target of the project, else the
/// Target of its run configuration NAME).
std::string rerun_target(const Project& project, const StoredRun& source,
                         const std::optional<std::string>& where) {
  if (!where) return source.record.target;
  if (fs::exists(project.compute_path(*where))) return *where;
  if (fs::exists(project.run_config_path(*where))) {
    const std::string target = load_run_config(project, *where).target;
    if (!target.empty()) return target;
  }
  throw UsageError(fmt::format(
      "-c {}: no target or run configuration {} in aml_config/; see: mlw computetarget list",
      *where, *where));
}

/// A notebook's kernel or cell is no script to run again: one line saying where it reruns.
void refuse_notebook_run(const RunRecord& past) {
  if (!past.kernel.empty()) {
    throw Error(fmt::format("cannot rerun {}: it is cell [{}] of {} (kernel {}), not a script; run "
                            "the cell again in Jupyter (mlw notebook start)",
                            past.run_id, past.cell,
                            past.notebook.empty() ? "a notebook" : "notebook " + past.notebook,
                            past.kernel),
                exit_code::k_cannot_start);
  }
  if (past.script == std::string("-m ") + k_kernel_module) {
    throw Error(fmt::format("cannot rerun {}: it is a notebook kernel of {}, started by Jupyter; "
                            "open the notebook again (mlw notebook start) and choose \"{} {}\"",
                            past.run_id, past.run_config, past.project, past.run_config),
                exit_code::k_cannot_start);
  }
}

/// The rerun's plan: the stored snapshot as the project's files, the project's own history.
RunPlan plan_rerun(Context& ctx, const RerunRequest& request, const StoredRun& source,
                   std::unique_ptr<Executor>& executor) {
  const Project project = ctx.project();
  RunPlan plan;
  refuse_notebook_run(source.record);
  plan.manifest = stored_manifest(source);
  plan.project.root = snapshot_view(project, source, plan.manifest);
  plan.project.name = project.name;
  plan.project.state = project.state_dir();
  const RunRecord& past = source.record;
  plan.run_config = load_run_config(plan.project, past.run_config);
  plan.target_name = rerun_target(project, source, request.where);
  // The machine as the project knows it today (its address, keys, host key); the stored file
  // only where the project no longer has the target.
  const bool known = fs::exists(project.compute_path(plan.target_name));
  plan.compute = load_compute(known ? project : plan.project, plan.target_name);
  if (!known) {
    spdlog::warn("target {} is no longer in aml_config/: using its file as the run stored it",
                 plan.target_name);
  }
  if (!request.where && !past.gpus.empty() && plan.compute.gpus_per_run != "all") {
    apply_gpus_option(plan.compute, plan.target_name, std::to_string(past.gpus.size()));
  }
  plan.extra_env = load_run_env(source.dir);
  for (const auto& [key, value] : parse_env(request.env)) plan.extra_env[key] = value;
  executor = ctx.executor(plan.compute.type);
  // The script as the run named it, relative to the project: in the snapshot, by its manifest.
  const bool stored =
      std::any_of(plan.manifest.entries.begin(), plan.manifest.entries.end(),
                  [&past](const ManifestEntry& e) { return e.path == past.script; });
  if (!stored) {
    throw Error(fmt::format("cannot rerun {}: its script {} is not in its snapshot", past.run_id,
                            past.script),
                exit_code::k_not_found);
  }
  plan.script = past.script;
  plan.arguments = request.arguments.value_or(past.arguments);
  plan.record.run_config = past.run_config;
  plan.record.rerun_of = past.run_id;
  plan.record.data = past.data;  // the versions it saw, pushed to this target where it lacks them
  plan.record.git_commit = past.git_commit;
  plan.record.git_dirty = past.git_dirty;
  plan.history_dir =
      plan.run_config.tracked_run ? project.state_dir() : project.state_dir() / "untracked";
  executor->validate(ctx, plan);
  return plan;
}

}  // namespace

int rerun(Context& ctx, const RerunRequest& request) {
  ctx.codes = CommandCodes::Submit;
  const StoredRun source = find_stored_run(ctx.project(), request.run_id);
  std::unique_ptr<Executor> executor;
  RunPlan plan = plan_rerun(ctx, request, source, executor);
  spdlog::info("rerunning {}: its snapshot ({} files), run configuration {}, on {}",
               source.record.run_id, plan.manifest.entries.size(), plan.record.run_config,
               plan.target_name);
  return run_plan(ctx, plan, *executor, request.async, request.cancel_on_interrupt);
}

}  // namespace mlw::api
