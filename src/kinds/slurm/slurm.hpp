#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/probe.hpp"

// The slurm kind: a run as a Slurm batch job, submitted with sbatch on a login node reached over
// SSH, on one or more nodes (optionally in a container). Its row is in slurm.cpp, the sbatch
// script, monitor and end mapping in batch.cpp, the driver in driver.cpp.

namespace mlw {

/// The slurm kind's own keys of a .compute file, typed.
struct SlurmConfig {
  std::string partition;                     ///< empty: the cluster's default
  int nodes = 1;                             ///< --nodes, one task per node
  int gpus_per_node = 0;                     ///< --gpus-per-node (0: not asked)
  std::string time_limit;                    ///< --time
  std::string account;                       ///< --account
  std::string container;                     ///< the image every node runs the script in
  std::string container_runtime = "docker";  ///< docker, pyxis or apptainer
};

/// The own keys of `compute` (a file the reader has checked, or attach's settings).
SlurmConfig slurm_config(const ComputeConfig& compute);

/// Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
bool is_slurm_time(const std::string& text);

/// A Slurm time limit in seconds (0: none, as `--time=0`); nothing for another format.
std::optional<long> slurm_time_seconds(const std::string& text);

/// One node of a Slurm partition as sinfo reports it.
struct SlurmNode {
  std::string name;   ///< e.g. "gpu-017"
  std::string state;  ///< idle, mixed, allocated, down, drained, …
  std::string gres;   ///< e.g. "gpu:a100:4"; empty when the node has none
};

/// What the probe's slurm lines say.
struct SlurmFacts {
  std::vector<std::string> missing;  ///< Slurm commands the login node lacks
  std::string error;                 ///< why the Slurm controller did not answer, when it did not
  std::string partition;         ///< the partition (the compute file's, or the default) if found
  std::vector<SlurmNode> nodes;  ///< its nodes
};

/// Reads the probe's slurm lines out of `facts`.
SlurmFacts slurm_facts(const TargetFacts& facts);

/// The driver of a Slurm job (driver.cpp).
std::unique_ptr<RunDriver> slurm_driver();

/// What each node runs for a slurm run: extra `srun` options (pyxis's `--container-image=…`)
/// and the command: the script with python, or with `container` inside the image through
/// docker or apptainer, the run folder mounted at /mlw/run.
struct SlurmNodeCommand {
  std::vector<std::string> srun_options;
  std::vector<std::string> command;
};

/// The node command of `plan` (its compute's container and containerRuntime).
SlurmNodeCommand slurm_node_command(const RunPlan& plan, const TargetRunPaths& paths);

/// sbatch's options for a run (spec §8): `--job-name=mlw-<run>`, nodes, one task per node, GPUs
/// per node, partition, time, account (each only when set), output appended to the run folder's
/// driver_log.txt.
std::vector<std::string> sbatch_options(const RunPlan& plan);

/// run.env, which job.sh sources: the run's variables exported (values in the file, never on a
/// command line), the host's share folder, node count and GPUs, and the arrays srun_options and
/// command (slurm_node_command; `@MLW_USER@` becomes the job's uid:gid there).
std::string slurm_run_env(const RunPlan& plan, const TargetRunPaths& paths);

/// Whether a node of the probed partition reports GPUs (a `gpu` gres).
bool partition_has_gpus(const SlurmFacts& facts);

/// How a finished Slurm job goes into history.
struct SlurmEnd {
  std::string status;   ///< Completed, Failed or Canceled (Lost when the controller went away)
  int exit_code = 0;    ///< the script's; 137 for OUT_OF_MEMORY; 128+N for a signal
  std::string problem;  ///< what to say about it, empty for a plain end
};

/// Maps the job's final state (PENDING→… are not final), its ExitCode field ("code:signal") and
/// the script's own exit code (when the job script got to write it) to history.
SlurmEnd slurm_end(const std::string& state, const std::string& exit_field,
                   std::optional<int> script_code);

}  // namespace mlw
