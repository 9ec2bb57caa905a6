#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mlw/exec/run_session.hpp"

namespace mlw {

/// One file of a step's standard input as a kind's submit.sh reads it: a line with its length
/// in bytes, then its bytes (`read -r n && head -c "$n" > FILE`).
std::string stdin_file(std::string_view text);

/// Runs and follows a run through a detached monitor on the target (monitor.sh in the run
/// folder): it runs the container or the script and writes driver_log.txt, then exit_code (and
/// `oom`). The supervisor starts it and follows the log with `tail --pid` in one step (one round
/// trip), and reads the end in the same step.
class MonitorDriver : public RunDriver {
 public:
  bool start(RunSession& session, const std::string& image) override;
  bool resume(RunSession& session) override;
  void follow(RunSession& session) override;
  void stop(RunSession& session) override;
  RunEnding ending(RunSession& session) override;

 protected:
  /// How follow() saw the run end.
  enum class Seen { Ended, BadAnswer, StopUnconfirmed };
  /// Starts the detached monitor (`monitor` as monitor.sh); false when it could not start (the
  /// run is recorded as failed).
  bool start_monitor(RunSession& session, const std::string& monitor);
  /// A batch kind's submit step, for start_batch_job.
  struct BatchSubmit {
    std::string_view submit;             ///< its submit.sh, sent first on stdin
    std::vector<std::string> arguments;  ///< the words after `sh ./submit.sh`
    std::string files;                   ///< the rest of stdin: stdin_file()s submit.sh reads
    std::string tool;                    ///< named when the job is refused ("qsub")
    std::string system;                  ///< named when it is queued ("Grid Engine")
    std::string monitor;                 ///< its monitor.sh
  };
  /// Runs submit.sh in the run folder (not retried on a dropped connection: the job may have
  /// been queued already), records the job id it printed (Queued), starts the monitor and waits
  /// until the job runs (Running). False when the job was refused or the monitor could not
  /// start (recorded as failed).
  bool start_batch_job(RunSession& session, const BatchSubmit& job);
  /// Picks up a batch job whose supervisor is gone: a monitor that gave up on a scheduler that
  /// did not answer is started again (`monitor` gives its text) once the end files `stale` are
  /// removed; then waits until the job runs. False when the monitor could not start.
  bool resume_batch_job(RunSession& session, const std::string& stale,
                        const std::function<std::string()>& monitor);
  /// Waits on the target until the monitor says the job runs (its `started` file) or has
  /// ended; a cancel while it waits (queued in a batch system) goes to stop(). False when the
  /// monitor ended and the job never ran (deleted while it waited).
  bool wait_until_started(RunSession& session);
  /// The script that prints the end once the monitor is gone (after `cd` into the run folder).
  virtual std::string end_script() const;

  /// Reads the launch's line ("mlw-pid=N" on stderr, after anything it printed) from the front of
  /// `state`; false while it has not all arrived. A good pid marks the run running.
  bool take_launch(RunSession& session, std::string& state);

  /// One follow step's stderr as it arrives: the launch's pid, the state lines, the results.
  struct StepErrors {
    std::string state;        ///< the state lines (bounded)
    bool launching = false;   ///< the launch's pid has not come yet
    bool in_results = false;  ///< past "mlw-results": the rest is the run's results
  };
  /// Takes the lease's answers ("mlw-lease=LINE") from the front of `state`: Queued, then
  /// Running once granted (or the run failed or canceled, recorded).
  void take_lease_lines(RunSession& session, std::string& state);
  /// Takes the next piece of a follow step's stderr.
  void take_errors(RunSession& session, StepErrors& step, std::string_view chunk);
  /// The follow step: the launch (the first time), the log, the end and the results;
  /// `handover`: the step ends once the run started or queued (follow.sh's mlw_handover).
  std::string follow_script(RunSession& session, bool launching, bool handover) const;

  std::string m_monitor_pid;
  bool m_lease_pending = false;  ///< it waits for its lease or its sweep's turn
  std::string m_launch;  ///< the launch's stdin (the tree, monitor.sh), until it has started it
  std::string m_launch_fail;  ///< why the monitor could not start, once that is known
  Seen m_seen = Seen::Ended;
  std::string m_end;  ///< what end_script printed, or the answer that was not understood
};

}  // namespace mlw
