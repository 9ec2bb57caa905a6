#pragma once

// What `experiment submit` and `experiment sweep` share (private to src/api/).

#include <signal.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlw/api/experiment.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"

namespace mlw::api {

/// Catches Ctrl-C while a submit or a sweep follows its runs (SIGINT only sets a flag); the
/// previous handler comes back when it goes out of scope.
class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
  /// True once Ctrl-C was pressed since the last take (and clears it).
  bool take();
  /// True once Ctrl-C was pressed (without clearing it).
  bool fired() const;

 private:
  struct sigaction m_previous {};
};

/// A running run of this user's as `experiment shell` and `forward` find it.
struct RunningRun {
  RunRecord record;
  ComputeConfig compute;          ///< its target's file, of the kind it ran on
  std::filesystem::path run_dir;  ///< its folder in this project's history
};
/// The run `run_id`, refused in one line unless it is this user's and Running, with what to do
/// instead (`command`: "shell", "forward", for the messages); shell.cpp.
RunningRun load_running(Context& ctx, const std::string& run_id, const std::string& command);

/// Ports listened on here for `experiment forward` and `submit --forward` (forward.cpp).
struct Forwards {
  std::vector<ForwardPort> ports;                   ///< bound on 127.0.0.1, to.port the run's
  nlohmann::json served = nlohmann::json::array();  ///< [{"port", "local", "url"}]
};
/// Binds 127.0.0.1:`port` (0: a free port), the port it got in `bound`, and listens there when
/// `listen` (else the port is only held: no connection is taken or queued until the forward
/// listens, and no other program, nor an outgoing connection, gets it): the socket, or -1 with
/// errno (EADDRINUSE: another program holds it).
int bind_loopback(int port, int& bound, bool listen);
/// Binds `pairs` on 127.0.0.1 (`here`: the run's ports are this machine's, so a port heard as
/// itself needs no listener); a port in use is an mlw::Error naming another.
Forwards listen_forwards(const std::vector<PortPair>& pairs, bool here);
/// Prints the URLs and serves `forwards` for `run` (load_running's) until it ends, Ctrl-C, or
/// `also` says no (when given); closes them. Returns 0. Not `announce`: no URLs printed or
/// shown on the dashboard (a notebook kernel's own ports).
int serve_forwards(Context& ctx, RunningRun run, Forwards& forwards,
                   const std::function<bool()>& also, bool announce = true);

/// `submit --forward`: a child process that serves the ports once the run's script runs, for as
/// long as the run and its submit last; stopped (Ctrl-C's signal) and reaped with the guard.
struct ForwarderGuard {
  pid_t pid = 0;
  bool announce = true;  ///< serve_forwards's
  ForwarderGuard() = default;
  ~ForwarderGuard();
  ForwarderGuard(const ForwarderGuard&) = delete;
  ForwarderGuard& operator=(const ForwarderGuard&) = delete;
  /// Forks the child for `run_id` (its record written); this process closes its copies.
  void start(Context& ctx, const std::string& run_id, Forwards& forwards);
  /// Stops the child (its next look, a second at most) and reaps it; nothing when none runs.
  void stop();
};

/// The user's login name (or uid).
std::string user_name();
/// The `mlw` and `azureml` Python packages, written once per version under .mlw/python/.
std::filesystem::path ensure_python_helper(const Project& project);
/// Marks the run for cancellation (its supervisor obeys the marker).
void request_cancel(HistoryStore& store, const std::string& run_id);
/// The project's snapshot, with a progress line on a terminal while new content is read.
Manifest take_snapshot(Context& ctx, const Project& project);
/// Everything that can be checked before anything is written: configuration, script, target
/// (one probe); `executor` gets the kind's executor.
RunPlan plan_run(Context& ctx, const SubmitRequest& request, std::unique_ptr<Executor>& executor);

/// The script as a path relative to the project; fails with 127 when it is missing, outside
/// the project, or excluded from the snapshot by .amlignore.
std::string resolve_script(const Context& ctx, const Project& project, const std::string& script);
/// `-e KEY=VALUE` words as a map (a usage error names a bad one).
std::map<std::string, std::string> parse_env(const std::vector<std::string>& items);
/// `--gpus N` over the target's file: gpusPerRun, or the key its scheduler reads.
void apply_gpus_option(ComputeConfig& compute, const std::string& target, const std::string& value);
/// Keeps a run's `-e` variables beside its record (RUN/env_vars.json, mode 0600: a value may be a
/// secret; never in run.json, the index or -o json), for `experiment rerun`.
void save_run_env(const std::filesystem::path& run_dir,
                  const std::map<std::string, std::string>& env);
/// A run's `-e` variables as save_run_env kept them (none when it kept none).
std::map<std::string, std::string> load_run_env(const std::filesystem::path& run_dir);

/// Keeps runs' files that mlw writes into `folder` out of the project's snapshots: where the
/// folder lies inside the project (not in its outputs/ or .mlw/, which no snapshot takes), it
/// gets the marker file k_download_marker, and a note says so; the project's own top folder is
/// warned about instead (its files would be shipped with the next run).
void keep_out_of_snapshots(const Project& project, const std::filesystem::path& folder);

/// A past run: its record and folder, in the project's history or its untracked one.
struct StoredRun {
  RunRecord record;
  std::filesystem::path dir;
};
/// The run `run_id` of the project (a NotFoundError naming it when there is none).
StoredRun find_stored_run(const Project& project, const std::string& run_id);
/// A run folder's manifest.json (none where it has none); mlw::Error naming the file when it is
/// malformed.
std::optional<Manifest> read_run_manifest(const std::filesystem::path& run_dir);
/// The project as a run's snapshot folder holds it (its files and configuration as they were),
/// its state still the project's.
Project run_files(const Project& project, const std::filesystem::path& run_dir);

/// Records the run, takes its snapshot and hands it to the executor (its live output not
/// followed: the caller reads handle.output_fd). A failure after the record exists marks it
/// Failed and throws mlw::Error with exit 125.
RunHandle start_run(Context& ctx, RunPlan& plan, Executor& executor);

/// The run variable that carries a notebook kernel's connection key to a kernel on another
/// machine (never a command line; never kept in the run's env_vars.json).
inline constexpr const char* k_kernel_key_variable = "MLW_KERNEL_KEY";

/// Records the planned run, starts it and follows it to its end (or, `async`, returns once it
/// has started or is queued): the exit code of spec §4.
int run_plan(Context& ctx, RunPlan& plan, Executor& executor, bool async, bool cancel_on_interrupt,
             const std::function<void()>& started = {});

}  // namespace mlw::api
