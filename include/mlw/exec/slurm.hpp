#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/probe.hpp"

namespace mlw {

/// What each node runs for a slurm run: extra `srun` options (pyxis's `--container-image=…`)
/// and the command: the script with python, or with `container` inside the image through
/// docker or apptainer, the run folder mounted at /mlw/run.
struct SlurmNodeCommand {
  std::vector<std::string> srun_options;
  std::vector<std::string> command;
};

/// The node command of `plan` (its compute's container and containerRuntime).
SlurmNodeCommand slurm_node_command(const RunPlan& plan, const TargetRunPaths& paths);

/// The sbatch script of a run (spec §8): `--job-name=mlw-<run>`, nodes, one task per node, GPUs
/// per node, time, account, partition, output into the run folder's driver_log.txt; the run's
/// variables (values in the script, never on a command line), MLW_NUM_NODES, MLW_GPUS_PER_NODE,
/// MASTER_ADDR (the first node) and MASTER_PORT, then `srun` runs slurm_node_command on every
/// node with MLW_NODE_RANK set, and the script's exit code is written to `exit_code.job`.
std::string sbatch_script(const RunPlan& plan, const TargetRunPaths& paths);

/// The monitor of a slurm run on the login node: polls the job (squeue) until it leaves the
/// queue, touching `started` when it runs, then writes its final Slurm state and ExitCode
/// (`slurm_state`, `slurm_exit`, from scontrol or else sacct). A controller that does not answer
/// for `retry_seconds` makes the state LOST.
std::string slurm_monitor_script(const TargetRunPaths& paths, const std::string& job_id,
                                 int retry_seconds);

/// Whether a node of the probed partition reports GPUs (a `gpu` gres).
bool partition_has_gpus(const TargetFacts& facts);

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
