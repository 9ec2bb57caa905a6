#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mlw/context.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"

// The record transitions of a run, in its supervisor: the same for a script on this machine
// (exec/local) and for a run on a target (exec/run_session), each saved to the history at once.

namespace mlw {

/// How a run ended, as its driver read it from the target: typed, so nothing is parsed later.
struct RunEnding {
  std::string status;                 ///< Completed, Failed, Canceled or Lost
  std::optional<int> exit_code;       ///< the script's (128+N for signal N); none: unknown
  bool oom = false;                   ///< it was killed for memory
  std::string lost_reason;            ///< lost_reason::… when Lost
  std::string lost_problem;           ///< what to tell the user about that
  std::vector<std::string> problems;  ///< other things to tell the user, in order
  std::vector<std::optional<int>> node_exit_codes;  ///< by rank (multi-node batch jobs)
};

/// The file of a run folder, next to `cancel_requested`, that says why a sweep's early-stopping
/// rule stopped the run: a canceled run with it is recorded as Stopped, with that reason.
inline constexpr const char* k_stop_reason_file = "stop_reason";

/// The end of a run whose script exited with `code` on this machine.
RunEnding local_ending(int code, bool cancel_requested);

/// A run's record in its supervisor, and the transitions it goes through: canceled before its
/// start, claimed by this process, Running, failed around its script, ended.
class RunRecorder {
 public:
  /// Starts from the record the submit wrote (Queued).
  RunRecorder(Context& ctx, const RunPlan& plan);

  Context& ctx;
  RunRecord record;

  /// True once `experiment cancel` asked for the run to stop, or, in the supervisor the process
  /// of RunPlan::ends_with_pid forked, once that process is gone (the cancel is then asked for,
  /// saying why).
  bool canceled() const;
  /// Saves the record (final: the run has ended); a failure is told in supervisor.log only.
  void save(bool final_save);
  /// Names this process as the run's owner (what reconcile_lost checks).
  void claim();
  /// The run is under way: recorded as Running by this supervisor.
  void mark_running();
  /// Canceled before it started: recorded as Canceled, ended.
  void cancel_before_start();
  /// The run could not start or failed around its script: recorded with `code` and `problem`.
  void fail(int code, const std::string& problem);
  /// Records how the run ended (a Lost run keeps its typed reason).
  void apply(const RunEnding& ending);
  /// The outputs (when `outputs`: from the run folder's snapshot) and the last metric values.
  void collect_results(bool outputs);
  /// The end: the time, no owner any more, saved as final.
  void end();

 private:
  /// Canceled by a sweep's early stopping (k_stop_reason_file), or a trial that stopped itself
  /// at a rung (a "stopped" decision in its metrics): Stopped, the reason a problem.
  void apply_early_stop();
  /// A TPE trial whose point was proposed on its target (python/mlw/propose.py): the point's
  /// arguments after the record's own, as the script was given them (a rerun gives them again).
  void take_proposal();
  std::filesystem::path m_run_dir;      // the run's folder here
  std::filesystem::path m_history_dir;  // the project's .mlw
  std::optional<HistoryStore> m_store;
  int m_ends_with_pid = 0;  // RunPlan::ends_with_pid
};

}  // namespace mlw
