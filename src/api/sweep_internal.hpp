#pragma once

// `experiment sweep`'s parts (private to src/api/): the targets a sweep spreads its points
// over, and its supervisor, the process that launches the points and stops trials early.

#include <filesystem>
#include <string>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"
#include "mlw/sweep/sweep.hpp"

namespace mlw::api {

/// A target of a sweep: the plan every point on it starts from, and how many of its runs may
/// be live at once.
struct SweepTarget {
  RunPlan plan;
  int capacity = 1;
};

/// What the sweep's supervisor works from.
struct SweepWork {
  std::filesystem::path state_dir;
  std::string sweep_id;
  SweepSpec spec;
  std::vector<SweepTarget> targets;
};

/// The supervisor's loop (in its own process): launches the sweep's Queued points in order as
/// the targets have room, stops trials by the early-stopping rule, and ends when every point's
/// run has ended. Returns its exit code.
int supervise_sweep(Context& ctx, SweepWork& work);

/// `experiment cancel -r S`: the sweep's points not started are canceled and its live runs
/// stopped (by its supervisor, or here when it is gone); prints what each run became.
void cancel_sweep(Context& ctx, const std::string& sweep_id);

/// A point its sweep never started, canceled with the sweep: Canceled (143), saying so.
void cancel_unstarted_point(HistoryStore& store, RunRecord& record, std::int64_t now_ms);

/// What a trial is given to judge itself by at its rungs on its target ($MLW_SCHEDULER, read by
/// python/mlw/rungs.py): the scheduler, the metric, the sweep, the point and its bracket.
std::string scheduler_variable(const SweepWork& work, std::int64_t point, int bracket);

/// What a TPE trial is given to propose its point by on its target ($MLW_PROPOSE, read by
/// python/mlw/propose.py): the sweep's spec as sweep.json records it (SweepSpec::to_json: the
/// seed, the startup count, the metric, the parameters by name), its id and the point.
std::string propose_variable(const SweepWork& work, std::int64_t point);

/// The marker file of a sweep whose cancel was asked for.
inline constexpr const char* k_sweep_cancel_file = "cancel_requested";

}  // namespace mlw::api
