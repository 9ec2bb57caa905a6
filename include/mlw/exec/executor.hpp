#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlw/config/compute_file.hpp"
#include "mlw/config/run_config.hpp"
#include "mlw/context.hpp"
#include "mlw/exec/data_store.hpp"
#include "mlw/history/record.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/snapshot/manifest.hpp"

namespace mlw {

/// A run that is one element of a batch job array: a sweep's points on a batch system whose
/// runner takes arrays (Runner::arrays), submitted together by the last of them to join.
struct BatchArray {
  std::string id;  ///< the array's name (its sweep's id and a number): its folder on the target
  int index = 0;   ///< this run's element, from 0
  int size = 1;    ///< how many runs join it
  int limit = 0;   ///< at most this many elements at once (0: no limit)
};

/// A sweep's turn on its one target (docs/sweeps.md "The laptop may close"): its points wait
/// there ahead of their turn, each taking one of the sweep's slots before its lease, so that
/// the next one starts there as one ends, with nothing of this machine's.
struct SweepGate {
  std::string folder;  ///< the sweep's own slot folder on the target (~/ is the login's home)
  int slots = 1;       ///< how many of its points run at once there
};

/// What `experiment clean` removes: one project's (its runs' folders, the images built for it or
/// that its runs used), or, with `all_projects`, every project's and the shared content store.
struct CleanScope {
  std::string project;                  ///< the project whose leftovers go
  std::vector<std::string> image_tags;  ///< mlw_env:HASH images its recorded runs used there
  bool all_projects = false;            ///< every mlw image, run folder and the content store
};

/// Everything an executor needs to start one run; validated before any executor sees it.
struct RunPlan {
  Project project;
  std::string target_name;
  ComputeConfig compute;
  RunConfig run_config;
  std::string script;                            ///< relative to the project
  std::vector<std::string> arguments;            ///< after the script
  std::map<std::string, std::string> extra_env;  ///< -e KEY=VALUE
  std::filesystem::path history_dir;             ///< .mlw, or .mlw/untracked for TrackedRun: false
  std::filesystem::path run_dir;                 ///< <history_dir>/runs/<run_id>
  std::filesystem::path helper_dir;              ///< holds the `mlw` and `azureml` Python packages
  RunRecord record;                              ///< created, with its run id
  Manifest manifest;
  std::optional<BatchArray> array;  ///< set: the run is an element of a job array
  std::optional<SweepGate> gate;    ///< set: the run waits on its target for its sweep's turn
  /// A TPE sweep's trial whose point is proposed on its target as it starts (python/mlw/
  /// propose.py, given $MLW_PROPOSE): the script runs under `python -m mlw.propose`.
  bool propose_on_target = false;
  /// The folders of the data sets' versions it mounts on its target, by name (record.data).
  std::map<std::string, std::string> data_paths;
  bool detached = false;  ///< submitted with -a: nobody reads the live output
  /// A notebook kernel's run: its environment image gains ipykernel where the image lacks it.
  bool notebook_kernel = false;
  /// The process the run is for (a notebook kernel's `mlw`), whose end cancels it: killed with
  /// no time to cancel the run itself, it leaves no one to use it. 0: none.
  int ends_with_pid = 0;
};

/// A line of a run's live output that begins with this byte is mlw's own note from before the
/// script started (the environment's build): the submitting mlw prints it, without the byte, on
/// stderr, so that stdout holds the run's output only.
constexpr char k_live_note = '\x1d';

/// What `experiment shell` asks of a running run's executor.
struct JoinRequest {
  RunRecord record;                  ///< the run (Running)
  ComputeConfig compute;             ///< its target's file
  std::filesystem::path run_dir;     ///< its folder in this project's history
  std::vector<std::string> command;  ///< the words to run there; empty: a shell
  bool pty = false;                  ///< in a terminal there (this process's stdin is one)
};

/// What `experiment forward` asks of a running run's executor.
struct ForwardRequest {
  RunRecord record;               ///< the run (Running)
  ComputeConfig compute;          ///< its target's file
  std::filesystem::path run_dir;  ///< its folder in this project's history
  /// Listening here, each with the run's port in to.port; the executor says where it is.
  std::vector<ForwardPort> ports;
  std::function<bool()> keep_going;  ///< false once the run has ended or Ctrl-C was pressed
};

/// A started run as seen by the submitting process.
struct RunHandle {
  int output_fd = -1;  ///< live merged stdout/stderr of the run; EOF when the run is finished
  pid_t supervisor = 0;
};

/// What `experiment prepare` did (executors return data; api/ prints it).
struct PrepareResult {
  std::string image;   ///< the environment image, mlw_env:<hash>
  std::string host;    ///< where it is
  bool built = false;  ///< false: it was there already
};

/// Receives a build's output as it comes.
using OutputSink = std::function<void(std::string_view)>;

/// What runs a kind of compute target (spec §7): api/ reaches executors only through this
/// interface, made through Context::executor (the kind table's rows in src/kinds/, or a fake
/// kind's in unit tests). Executors return data and never print; a problem is an mlw::Error.
class Executor {
 public:
  virtual ~Executor() = default;
  /// Opens the connection ahead of validate (host key, login), so that other work can overlap
  /// it; nothing for targets on this machine.
  virtual void open(Context& ctx, const std::string& target_name, const ComputeConfig& compute);
  /// Checks what can be checked before anything is created (interpreter, daemon, …); throws
  /// mlw::Error with the exit code to use (e.g. 127 for a missing interpreter).
  virtual void validate(Context& ctx, const RunPlan& plan) = 0;
  /// How many GPUs `validate` found where runs go (-1: not known): how many leased runs a sweep
  /// can have there at once.
  virtual int gpus_seen(Context& ctx) const;
  /// Starts the run in the background; it goes on when mlw exits.
  virtual RunHandle start(Context& ctx, RunPlan& plan) = 0;
  /// Asks a live run to stop (the whole process group or container) and returns at once;
  /// `force` kills it outright.
  virtual void stop(Context& ctx, const RunRecord& record, bool force) = 0;
  /// Starts a new supervisor for a Lost run that goes on on its target (`plan` rebuilt from its
  /// record): it follows the log from where the local copy ends and records the end. Throws
  /// mlw::Error when the run cannot be followed from here.
  virtual void reattach(Context& ctx, RunPlan& plan) = 0;
  /// `experiment prepare`: ships the project and builds the environment image; the build's
  /// output goes to `on_output`.
  virtual PrepareResult prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) = 0;
  /// `experiment clean`: removes mlw's images and finished run folders of `scope` from the
  /// target (and the content store when it is every project's); returns one line per thing
  /// removed ("kept objects N": the shared content store that a project's clean leaves).
  virtual std::vector<std::string> clean(Context& ctx, const std::string& target_name,
                                         const ComputeConfig& compute, const CleanScope& scope) = 0;
  /// `mlw data` and the data of a submit: the target's data store, reached (its shell) but not
  /// probed. Kinds without one throw mlw::Error.
  virtual DataStore data_store(Context& ctx, const std::string& target_name,
                               const ComputeConfig& compute);
  /// `experiment shell`: joins this process's terminal to a command inside a running run, on a
  /// login of its own. Returns the command's exit code. Kinds that cannot throw mlw::Error.
  virtual int join(Context& ctx, const JoinRequest& request);
  /// `experiment forward`: carries request.ports to the run's ports until keep_going says no,
  /// on a login of its own. Kinds that cannot throw mlw::Error.
  virtual void forward(Context& ctx, ForwardRequest& request);
};

/// Forks the run's supervisor: its own session, SIGINT/SIGHUP/SIGPIPE ignored, stdin from
/// /dev/null, stdout and stderr into `<run_dir>/supervisor.log`; it calls `supervise` with the
/// write end of the live-output pipe and exits with its result (1, logged, if it throws).
/// Returns the read end and the supervisor's pid.
RunHandle start_supervisor(const RunPlan& plan, const std::function<int(int live_fd)>& supervise);

/// The kind table's executors (src/kinds/table.cpp), for Context::executors.
std::shared_ptr<ExecutorSource> kind_executors();

}  // namespace mlw
