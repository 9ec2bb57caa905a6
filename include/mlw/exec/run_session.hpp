#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/exec/run_recorder.hpp"
#include "mlw/history/store.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"

// The life cycle of a run on a target (every kind but local), in the supervisor process: one
// RunSession (record transitions, the connection, the log, results, the end) and one RunDriver
// per way of running (the Engine API, a detached monitor, or a kind's own, e.g. a batch job)
// that starts, resumes, stops and reads the end of the run (docs/architecture.md).

namespace mlw {

/// The end of a run from an exit code line and an `oom` line, as a monitor or the Docker engine
/// reports them (only 0-255 is an exit code; `bad-… TEXT` is a refused answer). `source` names
/// where it was read; `no_code` is the problem when there is no exit code at all.
RunEnding exit_code_ending(const std::string& text, bool cancel_requested,
                           const std::string& source, const std::string& no_code);

/// Builds mlw_env:<hash> unless it exists, under a lock on the target so that concurrent submits
/// build it once. The build's output goes to `on_output`.
/// `locks` is the place's lock folder.
ShellResult ensure_image(Shell& shell, const RunPlan& plan, const TargetFacts& facts,
                         const EnvironmentSpec& env, const TargetRunPaths& paths,
                         const std::string& locks,
                         const std::function<void(std::string_view)>& on_output);

/// Whether the environment image `tag` is on the target (PrepareEnvironment: false).
bool image_exists(Shell& shell, const ComputeConfig& compute, const TargetFacts& facts,
                  const std::string& tag);

class RunSession;
class ResultsFetch;

/// One way of running on a target: the Docker Engine API, a detached monitor on the target, or a
/// kind's own (a batch job). The session calls start (or resume), then follow, then ending.
class RunDriver {
 public:
  virtual ~RunDriver() = default;
  /// Starts the run (its environment is ready); false when it could not (recorded as Failed).
  virtual bool start(RunSession& session, const std::string& image) = 0;
  /// Picks up a run whose supervisor is gone; false when it could not (recorded).
  virtual bool resume(RunSession& session) = 0;
  /// Follows the run to its end, its log into driver_log.txt and the live output; a cancel
  /// request calls stop.
  virtual void follow(RunSession& session) = 0;
  /// Asks the target to stop the run.
  virtual void stop(RunSession& session) = 0;
  /// How the run ended (after follow).
  virtual RunEnding ending(RunSession& session) = 0;
  /// After the end is recorded (the engine removes the container).
  virtual void after_finish(RunSession&) {}
};

/// Opens a new connection to the target (after one dropped); true: a login of its own.
using Reconnect = std::function<std::unique_ptr<Shell>(bool own_login)>;

/// What a supervisor holds for one run: the plan, the connection, the record (its transitions
/// are RunRecorder's) and the log.
class RunSession : public RunRecorder {
 public:
  /// `copy_log`: the supervisor writes driver_log.txt (the run's log is elsewhere: on the target
  /// or in the engine). `place`: where the run is (its lock folder; whether its results are to
  /// be brought back). `reconnect`: nothing for a target on this machine.
  RunSession(Context& ctx, RunPlan& plan, std::unique_ptr<Shell> shell, TargetFacts facts,
             TargetRunPaths paths, int live_fd, bool copy_log, const Place& place,
             Reconnect reconnect);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  /// A new run: the environment image built (`env`, for image kinds), started by `driver`,
  /// followed, its end recorded. Returns the supervisor's exit code.
  int run(RunDriver& driver, const EnvironmentSpec* env);
  /// A run whose supervisor is gone: taken over (Running, under this process), its log picked
  /// up where the local copy ends, then followed and ended as usual.
  int resume(RunDriver& driver);

  RunPlan& plan;
  TargetFacts facts;
  TargetRunPaths paths;
  std::uint64_t offset = 0;  ///< bytes of the run's log received so far

  /// The connection (made again when it dropped).
  Shell& shell();
  /// The target's machine for messages.
  std::string host() const;
  /// Writes to the live output (the submitting process), while it listens.
  void say(std::string_view text);
  /// Writes mlw's own lines from before the script started to the live output, each marked
  /// with k_live_note (the submitting process prints them on stderr).
  void note(std::string_view text);
  /// Stops writing to the live output (the submitting process sees its end).
  void close_live();
  /// Appends to driver_log.txt (when this process writes it) and the live output.
  void append_log(std::string_view text);
  /// The run could not start or failed around its script: recorded with `code` and `problem`
  /// (the submitting process says it once, as its error line). Returns the supervisor's exit
  /// code (0).
  int fail(int code, const std::string& problem);
  /// Runs `script` on the target, reconnecting (bounded, MLW_RECONNECT_TIMEOUT) when the
  /// connection drops; `make_script` is asked again after each reconnect; with `input`, that is
  /// its stdin, from its start on every attempt.
  ShellResult run_reconnecting(const std::function<std::string()>& make_script,
                               const ShellStreams& streams = {},
                               std::optional<std::string_view> input = std::nullopt);
  /// The same, for a fixed script.
  ShellResult run_reconnecting(const std::string& script, const ShellStreams& streams = {});
  /// Gives the kept connection back for the next command: the steps after this one log in on
  /// their own (a detached run's follow, as long as the run). Nothing unless the shell is kept.
  void leave_kept();
  /// Shell text that sends the run's results (metrics.jsonl, outputs/), run in the target's run
  /// folder, for a driver's last step to end with; else the session asks in a step of its own.
  static std::string results_script();
  /// Starts taking the results from a step (again when the step is run again).
  void results_begin();
  /// Takes the next piece of what results_script printed.
  void results_feed(std::string_view chunk);
  /// True once what it printed was found malformed (stop reading).
  bool results_failed() const;
  /// The step that sent the results ended: the session does not ask for them again.
  void results_taken();

 private:
  int build_environment(const EnvironmentSpec& env);
  int build_failed(const EnvironmentSpec& env, int build_exit, const std::string& tail);
  int finish(RunDriver& driver);
  void fetch_results();

  std::unique_ptr<Shell> m_shell;
  const Place& m_place;
  Reconnect m_reconnect;
  bool m_own_login = false;  // reconnect with a login of its own (leave_kept)
  int m_live_fd;
  bool m_copy_log;
  int m_local_log = -1;
  std::unique_ptr<ResultsFetch> m_results;
  bool m_results_taken = false;
};

/// The driver of a run started through the local Docker engine's API.
std::unique_ptr<RunDriver> engine_driver(std::unique_ptr<DockerEngine> engine);
/// The driver of a run that a detached monitor on the target runs (a container through the
/// docker command, or the script).
std::unique_ptr<RunDriver> monitor_driver();

}  // namespace mlw
