#pragma once

#include <memory>
#include <string>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// The docker, remotedocker and remote targets: one connection (SSH, or this machine for
/// docker) serves the whole submit; the snapshot is shipped to the target's content store, the
/// environment image built once, and a detached monitor runs the container or script there
/// while a local supervisor follows its log (reconnecting when the connection drops).
class TargetExecutor : public Executor {
 public:
  /// An executor for `type` (docker, remotedocker or remote).
  explicit TargetExecutor(std::string type);
  void open(Context& ctx, const std::string& target_name, const ComputeConfig& compute) override;
  void validate(Context& ctx, const RunPlan& plan) override;
  RunHandle start(Context& ctx, RunPlan& plan) override;
  /// Nothing to do here: the run's supervisor stops it when it sees the cancel marker that
  /// `experiment cancel` writes (the driver's stop, then SIGKILL after 10 s, on the target).
  void stop(Context& ctx, const RunRecord& record, bool force) override;
  void reattach(Context& ctx, RunPlan& plan) override;
  PrepareResult prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) override;
  std::vector<std::string> clean(Context& ctx, const std::string& target_name,
                                 const ComputeConfig& compute) override;

 private:
  /// Connects and probes; with `ship`, the probe also ships (experiment prepare).
  void connect(Context& ctx, const std::string& target_name, const ComputeConfig& compute,
               const std::string& image_tag = "", const ProbeShip* ship = nullptr);
  /// Prepare's ship after the probe's: nothing more when the store holds it all (and no
  /// build needs the run folder), else what it said it lacks.
  void ship_after_probe(Context& ctx, const RunPlan& plan, const EnvironmentSpec& env,
                        const TargetRunPaths& paths, bool build);
  /// The supervisor's work (in the forked process): a RunSession over this connection and the
  /// run's driver (the Engine API's, else the kind's); a new run with `env` (image kinds), or
  /// with `resume` one whose supervisor is gone.
  int supervise(Context& ctx, RunPlan& plan, const TargetRunPaths& paths, int live_fd,
                bool in_engine, const EnvironmentSpec* env, bool resume);
  std::string m_type;
  std::unique_ptr<Shell> m_shell;
  std::unique_ptr<DockerEngine> m_engine;  ///< the local docker target's Engine API, when usable
  TargetFacts m_facts;
};

}  // namespace mlw
