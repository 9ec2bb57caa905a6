#pragma once

// What `experiment submit` and `experiment sweep` share (private to src/api/).

#include <filesystem>
#include <memory>
#include <string>

#include "mlw/api/experiment.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/history/store.hpp"

namespace mlw::api {

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

}  // namespace mlw::api
