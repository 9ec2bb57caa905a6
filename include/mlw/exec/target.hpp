#pragma once

#include <memory>
#include <string>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/docker_engine.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"

namespace mlw {

/// The executor of a kind's Place and Runner (every kind but local): one connection (SSH, or
/// this machine's shell) serves the whole submit; the Place stages the run folder (the snapshot
/// shipped to the target's content store), the environment image is built once where the
/// Runner uses one, and a supervisor here follows the run through the Runner's driver (or the
/// Place's Docker engine API), reconnecting when the connection drops.
class TargetExecutor : public Executor {
 public:
  /// The executor of `kind` (its place and runner).
  explicit TargetExecutor(const TargetKind& kind);
  /// The executor of `kind`'s runner at another place (the conformance suite's recording one).
  TargetExecutor(const TargetKind& kind, const Place& place);
  void open(Context& ctx, const std::string& target_name, const ComputeConfig& compute) override;
  void validate(Context& ctx, const RunPlan& plan) override;
  int gpus_seen(Context& ctx) const override;
  RunHandle start(Context& ctx, RunPlan& plan) override;
  /// Nothing to do here: the run's supervisor stops it when it sees the cancel marker that
  /// `experiment cancel` writes (the driver's stop, then SIGKILL after 10 s, on the target).
  void stop(Context& ctx, const RunRecord& record, bool force) override;
  void reattach(Context& ctx, RunPlan& plan) override;
  PrepareResult prepare(Context& ctx, RunPlan& plan, const OutputSink& on_output) override;
  std::vector<std::string> clean(Context& ctx, const std::string& target_name,
                                 const ComputeConfig& compute, const CleanScope& scope) override;
  /// The place's shell (no probe); run folders under ~/.mlw/runs unless the place shares them.
  DataStore data_store(Context& ctx, const std::string& target_name,
                       const ComputeConfig& compute) override;
  /// `docker exec` into the run's container, or the script's variables and folder, through
  /// exec/enter.sh on a login of its own (join.cpp); batch runners' runs are refused.
  int join(Context& ctx, const JoinRequest& request) override;
  /// direct-tcpip to the machine's port, or a relay inside the run's container (forward.cpp).
  void forward(Context& ctx, ForwardRequest& request) override;

 private:
  /// Connects and probes; with `ship`, the probe also ships (experiment prepare).
  void connect(Context& ctx, const std::string& target_name, const ComputeConfig& compute,
               const std::string& image_tag = "", ProbeShip* ship = nullptr);
  /// The supervisor's work (in the forked process): a RunSession over this connection and the
  /// run's driver (the Engine API's, else the kind's); a new run with `env` (image kinds), or
  /// with `resume` one whose supervisor is gone.
  int supervise(Context& ctx, RunPlan& plan, const TargetRunPaths& paths, int live_fd,
                bool in_engine, const EnvironmentSpec* env, bool resume);
  const TargetKind& m_kind;
  const Place& m_place;
  std::unique_ptr<Shell> m_shell;
  std::unique_ptr<DockerEngine> m_engine;  ///< the local docker target's Engine API, when usable
  TargetFacts m_facts;
  ShipAnswer m_ship;  ///< what the probe's ship said (validate, with a snapshot taken)
};

}  // namespace mlw
