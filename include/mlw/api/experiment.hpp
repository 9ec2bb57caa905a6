#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw experiment submit -c NAME [-t TARGET] [-a] [-e K=V]... SCRIPT [ARGS...]`.
struct SubmitRequest {
  std::string run_config;
  std::optional<std::string> target;
  bool async = false;
  bool cancel_on_interrupt = false;
  std::vector<std::string> env;         ///< KEY=VALUE
  std::optional<std::string> gpus;      ///< --gpus N: overrides gpusPerRun (docs/gpus.md)
  bool requeue = false;                 ///< --requeue: the compute key requeue, for this run
  std::vector<std::string> data;        ///< --data NAME[@V][:MOUNT] (docs/data.md)
  std::optional<std::string> idle_gpu;  ///< --idle-gpu below=5,minutes=30,action=stop
  std::vector<std::string> forward;     ///< --forward PORT[:LOCAL]: for the run's life
  std::string script;
  std::vector<std::string> arguments;
  /// `python -m MODULE ARGUMENTS` instead of the script (a notebook's kernel, k_kernel_module).
  std::string python_module;
};

/// The helper's module that is a notebook's kernel (python/mlw/kernel.py): a run whose module
/// it is gets ipykernel in its image (RunPlan::notebook_kernel); its record's script is
/// "-m mlw.kernel".
inline constexpr const char* k_kernel_module = "mlw.kernel";

/// Runs a script on a target (spec §5); returns the exit code of spec §4.
int submit(Context& ctx, const SubmitRequest& request);

/// `mlw experiment rerun -r RUN [-c NAME] [-a] [-e K=V]... [-- ARGS...]` (docs/reproduce.md).
struct RerunRequest {
  std::string run_id;
  std::optional<std::string> where;  ///< -c: a target or run configuration of the project
  bool async = false;
  bool cancel_on_interrupt = false;
  std::vector<std::string> env;                       ///< -e KEY=VALUE, over the run's own
  std::optional<std::vector<std::string>> arguments;  ///< after `--`: replace the run's
};
/// Runs a past run again from its stored snapshot; returns the exit code of spec §4.
int rerun(Context& ctx, const RerunRequest& request);

/// `mlw experiment diagnostics -r RUN [--file FILE.zip]`: a zip of the run's record, logs,
/// configuration (secrets as ***), doctor's rows for its target now and mlw's version.
void diagnostics(Context& ctx, const std::string& run_id, const std::optional<std::string>& file);

/// `mlw experiment sweep -c NAME[,NAME…] [-f SWEEP.yml] SCRIPT [--p a,b …]` (docs/sweeps.md).
struct SweepRequest {
  std::vector<std::string> run_configs;  ///< the targets' run configurations, in order
  std::optional<std::string> file;       ///< -f: the sweep file
  std::optional<std::string> resume;     ///< --resume S: run the points of S not Completed
  bool async = false;                    ///< -a: return once the points are queued
  std::uint64_t max_runs = 10000;        ///< --max-runs: the most points accepted
  int max_concurrent = 0;                ///< --max-concurrent (0: the file's, else the targets')
  std::vector<std::string> env;          ///< -e KEY=VALUE
  std::optional<std::string> metric;     ///< --metric NAME[:max]: ranks the trials
  std::optional<std::string> search;     ///< --search grid|random|tpe (the file's method)
  std::optional<int> count;              ///< --count N: random and tpe's points
  std::optional<int> startup;            ///< --startup N: tpe's random points first
  std::optional<std::uint64_t> seed;     ///< --seed N
  std::optional<std::string> scheduler;  ///< --scheduler asha|hyperband
  std::optional<std::string> resource;   ///< --resource NAME: the budget its trials log as step
  std::optional<int> min_budget;         ///< --min N: the first rung
  std::optional<int> max_budget;         ///< --max N: a trial's whole budget
  std::optional<int> eta;                ///< --eta N: the top 1/N of a rung go on
  std::string script;
  std::vector<std::string> arguments;  ///< after the script: fixed ones and `--p a,b` lists
};

/// Runs a sweep; returns the exit code (0 when every point completed or was stopped early).
int sweep(Context& ctx, const SweepRequest& request);

/// `mlw experiment queue [-c NAME]`: the runs holding and waiting for leases on the target (or
/// on every target of the project that leases), read from the target's lease folder.
void queue(Context& ctx, const std::optional<std::string>& name);

/// Cancels a live run and records it as Canceled; a sweep's id cancels all its live runs.
void cancel(Context& ctx, const std::string& run_id);
/// `mlw experiment prepare -c NAME`: ships the project and builds the environment ahead.
void prepare(Context& ctx, const std::string& run_config);
/// `mlw experiment clean -c NAME [--all-projects]`: removes this project's images and finished
/// run folders from the target; with `all_projects`, every project's and the content store.
void clean(Context& ctx, const std::string& run_config, bool all_projects);

/// Whether `experiment shell` asks for a terminal on the target, as ssh decides (-t, -T).
enum class TtyChoice {
  Auto,   ///< a terminal for a shell, when stdin is one; none for a command
  Force,  ///< -t: a terminal for a command too (when stdin is one)
  Never,  ///< -T: never
};

/// `mlw experiment shell -r RUN [-- COMMAND...]`: a shell, or `command`, inside the running run
/// (its container, or its script's variables and folder) on its target, joined to this
/// terminal. Returns the command's exit code; a run it cannot enter (ended, queued, another
/// user's, a kind that cannot) is an mlw::Error (125, as submit's errors).
int shell(Context& ctx, const std::string& run_id, const std::vector<std::string>& command,
          TtyChoice tty);

/// A port of a run and the port here that reaches it (`experiment forward PORT[:LOCAL]`).
struct PortPair {
  int run = 0;    ///< the port in the run
  int local = 0;  ///< on 127.0.0.1 here; 0: any free port
};
/// Parses `PORT[:LOCAL]` words; UsageError (exit 2) for a bad or repeated one.
std::vector<PortPair> parse_ports(const std::vector<std::string>& texts);

/// `mlw experiment forward -r RUN PORT[:LOCAL]...`: listens on 127.0.0.1 here and carries each
/// connection to the run's port on its target (over SSH, through a relay in its container) until
/// the run ends or Ctrl-C; prints each URL on stdout. Returns 0; a run it cannot reach or a port
/// in use here is an mlw::Error.
int forward(Context& ctx, const std::string& run_id, const std::vector<PortPair>& ports);

/// The ports forwarded now by live `experiment forward` processes of the run whose history
/// folder is `run_dir`: [{"port", "local", "url"}], for the dashboard.
nlohmann::json live_forwards(const std::filesystem::path& run_dir);

}  // namespace mlw::api
