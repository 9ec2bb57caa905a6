#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// A sweep's definition (docs/sweeps.md): its parameters, how points are drawn from them, the
// metric that ranks its runs, and the early-stopping rule; read from `sweep --lr 0.1,0.01` or a
// sweep file, and expanded into points.

namespace mlw {

/// One swept parameter: a list of values, or bounds to draw from (method: random).
struct SweepParameter {
  std::string name;
  std::string kind =
      "values";  ///< values (a list or a range with a step), uniform, loguniform, int
  std::vector<nlohmann::ordered_json> values;  ///< for "values"
  double low = 0;                              ///< bounds of uniform, loguniform and int
  double high = 0;
};

/// When a sweep's trials are stopped early (docs/sweeps.md "Early stopping").
struct EarlyStopSpec {
  std::string rule;       ///< empty (none), median or asha
  std::string metric;     ///< default: the sweep's metric
  bool maximize = false;  ///< goal: max
  int min_steps = 1;      ///< no decision before this step (asha: the first rung)
  int min_completed = 3;  ///< median: completed trials needed before any stop
  int eta = 3;            ///< asha: the reduction factor (top 1/eta go on at each rung)
};

/// A sweep's trial scheduler (docs/sweeps.md "ASHA and Hyperband"): trials are judged at rungs of
/// a resource they log as the step of the sweep's metric, and go on or end Stopped.
struct SchedulerSpec {
  std::string kind;      ///< empty (none), asha or hyperband
  std::string resource;  ///< the budget's name: each trial gets `--RESOURCE MAX`; its metric's step
  int min = 1;           ///< the first rung's budget
  int max = 0;           ///< the most a trial is given (its last rung)
  int eta = 3;           ///< the reduction factor: the top 1/eta of a rung go on
};

/// A sweep's definition.
struct SweepSpec {
  std::string method = "grid";  ///< grid, random or tpe
  int count = 0;                ///< random, tpe: how many points
  int startup = 10;             ///< tpe: the random points before its first proposal
  std::uint64_t seed = 0;       ///< random: the seed (recorded, so a sweep is reproducible)
  int max_concurrent = 0;       ///< 0: as many as the targets take
  std::string metric;           ///< ranks the runs (compare --sweep); empty: none
  bool maximize = false;        ///< goal: max
  std::vector<SweepParameter> parameters;
  EarlyStopSpec early_stop;
  SchedulerSpec scheduler;

  /// The definition as recorded in the sweep's record.
  nlohmann::ordered_json to_json() const;
  /// Reads a recorded definition (a damaged one gives defaults).
  static SweepSpec from_json(const nlohmann::ordered_json& json);

 private:
  static SweepSpec read_spec(const nlohmann::ordered_json& json);
};

/// Splits a sweep's words after the script: `--name a,b,c` (a value with a comma) is a swept
/// parameter added to `spec`; every other word is kept in `fixed` (the arguments all points
/// share). Throws mlw::UsageError for an empty list item (`--lr 0.1,,0.2`).
void sweep_lists_from_arguments(const std::vector<std::string>& words, SweepSpec& spec,
                                std::vector<std::string>& fixed);

/// Reads a sweep file (YAML): a key that is not known, a wrong type, a range with step 0 fail
/// with `file:line:column` and a "did you mean".
SweepSpec load_sweep_file(const std::filesystem::path& path, const std::string& display_path);

/// Checks a complete definition (parameters given, count for random, maxConcurrent >= 1 when
/// set, early stopping's metric); throws mlw::UsageError with one clear line.
void check_sweep_spec(const SweepSpec& spec);

/// The most points one sweep holds, whatever --max-runs says (each is a run record).
inline constexpr std::uint64_t k_sweep_points_bound = 1000000;

/// How many points the definition gives (a grid's product; saturates at UINT64_MAX).
std::uint64_t sweep_size(const SweepSpec& spec);

/// The points in order (a grid with its first parameter varying slowest; a random search drawn
/// from the seed): each a JSON object name -> value.
std::vector<nlohmann::ordered_json> expand_sweep(const SweepSpec& spec);

/// The words a point adds to the fixed arguments: `--name value` for each parameter.
std::vector<std::string> point_arguments(const nlohmann::ordered_json& point);

/// The metric values of one trial by step, in the order logged (a step-less value's step is
/// its position).
struct TrialSeries {
  std::vector<double> steps;
  std::vector<double> values;
};

/// The early-stopping rule's verdict on a running trial: the reason to stop it, or nothing.
/// `completed`: the series of the sweep's trials that have completed; `rungs`: ASHA's record of
/// the values trials reached at each rung (updated with this trial's).
std::optional<std::string> early_stop_verdict(const EarlyStopSpec& rule,
                                              const std::vector<TrialSeries>& completed,
                                              const TrialSeries& trial,
                                              std::map<int, std::vector<double>>& rungs,
                                              std::map<int, bool>& trial_rungs_seen);

/// One ended trial of a sweep, as TPE learns from it.
struct TpeTrial {
  nlohmann::ordered_json point;  ///< its parameters
  std::optional<double> value;   ///< its metric's last value (a completed trial's)
  bool stopped = false;          ///< stopped early: among the bad, whatever its value
};

/// TPE's next point (docs/sweeps.md "Bayesian search (TPE)"), the sweep's point `index`: drawn
/// at random until `startup` trials have ended, then from the ended trials' Parzen densities;
/// the same seed, index and trials give the same point.
nlohmann::ordered_json tpe_propose(const SweepSpec& spec, const std::vector<TpeTrial>& trials,
                                   std::uint64_t index);

/// Hyperband's brackets for a scheduler (1 for ASHA): bracket b starts its trials at
/// min · eta^b, for every b with a rung below max.
int scheduler_brackets(const SchedulerSpec& scheduler);

/// A metric's value as the sweep's decisions show it (six significant digits).
std::string shown_value(double value);

/// The first rung's budget of a bracket: min · eta^bracket (at or past max: it judges nothing).
double scheduler_first_rung(const SchedulerSpec& scheduler, int bracket);

/// What a trial's own record of its rungs holds: which it has been judged at.
struct TrialRungs {
  int bracket = 0;             ///< Hyperband's bracket of the trial (point index mod brackets)
  std::map<int, bool> judged;  ///< the rungs' budgets it has been judged at
};

/// The scheduler's verdict on a running trial (its metric series stepped by the resource): the
/// reason to stop it, or nothing. `rungs`: the values trials reached at each bracket's rungs so
/// far (this trial's added when it first reaches one); `notes`: lines to log (a value that is
/// NaN or infinite, ranked last).
std::optional<std::string> scheduler_verdict(
    const SchedulerSpec& scheduler, bool maximize, const std::string& metric,
    const TrialSeries& trial, std::map<std::pair<int, int>, std::vector<double>>& rungs,
    TrialRungs& mine, std::vector<std::string>& notes);

}  // namespace mlw
