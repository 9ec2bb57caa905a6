#pragma once

#include <memory>
#include <string>

#include "mlw/exec/container.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/remote/docker_engine.hpp"
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
  /// Opens the SSH connection (host key, login) ahead of validate, which then uses it; nothing
  /// for the local docker target.
  void open(Context& ctx, const std::string& target_name, const ComputeConfig& compute);
  void validate(Context& ctx, const RunPlan& plan) override;
  RunHandle start(Context& ctx, RunPlan& plan) override;
  /// The supervisor stops the run when it sees the cancel marker; nothing to do here.
  void stop(Context& ctx, const RunRecord& record, bool force) override;

  /// Starts a new supervisor for a run whose supervisor is gone while the run goes on on the
  /// target (`plan` rebuilt from its record): it follows the log from where the local copy ends
  /// and records the end. Throws mlw::Error when the target cannot be reached.
  void reattach(Context& ctx, RunPlan& plan);
  /// `experiment prepare`: ships the project and builds the environment image.
  void prepare(Context& ctx, RunPlan& plan);
  /// `experiment clean`: removes mlw's images, content store and finished run folders from the
  /// target; returns what was removed, one line each.
  std::vector<std::string> clean(Context& ctx, const std::string& target_name,
                                 const ComputeConfig& compute);

 private:
  void connect(Context& ctx, const std::string& target_name, const ComputeConfig& compute,
               const std::string& image_tag = "");
  std::string m_type;
  std::unique_ptr<Shell> m_shell;
  std::unique_ptr<DockerEngine> m_engine;  ///< the local docker target's Engine API, when usable
  TargetFacts m_facts;
};

}  // namespace mlw
