#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlw/context.hpp"

namespace mlw::api {

/// `mlw experiment submit -c NAME [-t TARGET] [-a] [-e K=V]... SCRIPT [ARGS...]`.
struct SubmitRequest {
  std::string run_config;
  std::optional<std::string> target;
  bool async = false;
  bool cancel_on_interrupt = false;
  std::vector<std::string> env;     ///< KEY=VALUE
  std::optional<std::string> gpus;  ///< --gpus N: overrides gpusPerRun (docs/gpus.md)
  std::string script;
  std::vector<std::string> arguments;
};

/// Runs a script on a target (spec §5); returns the exit code of spec §4.
int submit(Context& ctx, const SubmitRequest& request);

/// `mlw experiment queue [-c NAME]`: the runs holding and waiting for leases on the target (or
/// on every target of the project that leases), read from the target's lease folder.
void queue(Context& ctx, const std::optional<std::string>& name);

/// Cancels a live run and records it as Canceled.
void cancel(Context& ctx, const std::string& run_id);
/// `mlw experiment prepare -c NAME`: ships the project and builds the environment ahead.
void prepare(Context& ctx, const std::string& run_config);
/// `mlw experiment clean -c NAME`: removes mlw's images, snapshots and finished run folders
/// from the target.
void clean(Context& ctx, const std::string& run_config);

}  // namespace mlw::api
