#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/config/compute_file.hpp"
#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/kinds/kind.hpp"

// The sge kind: a run as a (Son of) Grid Engine job, submitted with qsub on a host reached over
// SSH. Its programs on the target are the files beside this one (submit.sh, job.sh,
// monitor.sh, end.sh, probe.sh); docs/targets.md says what a user sees.

namespace mlw::sge {

/// Why a run is Lost when the qmaster stopped answering.
inline constexpr const char* k_lost_qmaster = "sge";

/// The kind's own keys of a .compute file, typed.
struct Config {
  std::string queue;     ///< -q; empty: any queue the job fits
  std::string pe;        ///< -pe NAME; empty: one slot, no parallel environment
  int slots = 1;         ///< the slots asked of `pe`
  int gpus = 0;          ///< -l gpu=N (a consumable complex named gpu); 0: none asked
  bool rerun = false;    ///< requeue: -r y, a job the cluster reschedules runs again
  int time_limit_s = 0;  ///< timeLimit: -l h_rt (0: none)
  int lead_s = 120;      ///< checkpointLeadSeconds: with rerun, -l s_rt this much before h_rt
};

/// qsub's -l limits of `config`: "h_rt=S", and ",s_rt=S" (SIGUSR1, the checkpoint signal) where
/// the job is rerunnable and its lead is less than the limit; "" without a limit.
std::string limits(const Config& config);

/// The own keys of `compute` (a file the reader has checked).
Config config_of(const ComputeConfig& compute);

/// What the probe's sge lines say.
struct Facts {
  std::vector<std::string> missing;  ///< Grid Engine commands the host lacks
  std::string error;                 ///< why the qmaster did not answer, when it did not
  struct Queue {
    std::string name;
    int total = 0;      ///< its slots
    int available = 0;  ///< those free now
  };
  std::vector<Queue> queues;     ///< every cluster queue
  std::vector<std::string> pes;  ///< every parallel environment
};

/// Reads the probe's sge lines out of `facts`.
Facts facts_of(const TargetFacts& facts);

/// The kind's probe lines (probe.sh, given the queue and parallel environment).
std::string probe_section(const ComputeConfig& compute);

/// The kind's checks: commands, qmaster, queue, parallel environment, slots, python, disk.
void checks(const CheckInput& in, std::vector<CheckRow>& rows);

/// run.env: the run's variables exported and the command's words set (`set -- …`), each value
/// through shell_quote: job.sh sources it, so no value is on a command line.
std::string run_env(const RunPlan& plan, const TargetRunPaths& paths);

/// What end.sh printed, read: how the run ended.
struct End {
  std::optional<int> script_code;    ///< exit_code.job (job.sh wrote it)
  std::string state;                 ///< batch_state: "done", "LOST", or empty
  std::optional<int> exit_status;    ///< qacct's exit_status
  std::string failed;                ///< qacct's failed field ("0", "100", …)
  std::string error;                 ///< the reason of a job held in error (Eqw)
  int restarts = 0;                  ///< how many times the job started again (rescheduled)
  std::optional<int> stopped_after;  ///< seconds after the start when SIGUSR2 came (qdel, h_rt)
};

/// Reads end.sh's lines; a value that is not what it should be is a problem in `problems`.
End parse_end(const std::string& text, const std::string& host, std::vector<std::string>& problems);

/// How the run goes into history, from its end, whether a cancel was asked for, and the job's
/// time limit in seconds (0: none) to tell a stop at the limit from another's qdel.
RunEnding ending_of(const End& end, bool cancel_requested, int time_limit_s,
                    const std::string& job_id, const std::string& host);

/// The driver: submit.sh (qsub), the monitor, the log followed, qdel, the end.
std::unique_ptr<RunDriver> driver();

}  // namespace mlw::sge
