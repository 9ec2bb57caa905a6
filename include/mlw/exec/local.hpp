#pragma once

#include <filesystem>
#include <optional>

#include "mlw/exec/executor.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/process.hpp"

namespace mlw {

/// The argv, environment and working folder of a run on this machine: `pythonLocation` (or
/// spark-submit for PySpark) with the ArgumentVector, MLW_* variables and the helper on
/// PYTHONPATH. Pure: unit-tested without starting anything.
ProcessSpec build_local_command(const RunPlan& plan, const std::string& interpreter,
                                const std::map<std::string, std::string>& base_env);

/// The interpreter to run for `pythonLocation` (a path, `~/…`, or a name on PATH). Workbench
/// files say `python`, which Debian 12 does not have: `python` falls back to `python3`.
std::optional<std::filesystem::path> resolve_interpreter(const std::string& python_location);

/// This machine's GPUs as nvidia-smi lists them (none without it): what a lease can take here.
std::vector<GpuInfo> this_machine_gpus(Context& ctx);

/// The `local` target: the script runs here, in a per-run copy of the snapshot, as a process of
/// its own session under a supervisor that records its end.
class LocalExecutor : public Executor {
 public:
  void validate(Context& ctx, const RunPlan& plan) override;
  int gpus_seen(Context& ctx) const override;
  RunHandle start(Context& ctx, RunPlan& plan) override;
  void stop(Context& ctx, const RunRecord& record, bool force) override;
  /// A local run ends with its supervisor: there is nothing to follow again (throws).
  void reattach(Context& ctx, RunPlan& plan) override;
  /// Local targets use no environment image (throws).
  PrepareResult prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) override;
  /// Local targets keep nothing of mlw's but the project's history (throws).
  /// This machine's store (its shell); a run's folder is in the project's history.
  DataStore data_store(Context& ctx, const std::string& target_name,
                       const ComputeConfig& compute) override;
  /// The run's script's variables and folder, through exec/enter.sh (join.cpp).
  int join(Context& ctx, const JoinRequest& request) override;
  /// The run's ports are this machine's (forward.cpp).
  void forward(Context& ctx, ForwardRequest& request) override;
  std::vector<std::string> clean(Context& ctx, const std::string& target_name,
                                 const ComputeConfig& compute, const CleanScope& scope) override;
};

}  // namespace mlw
