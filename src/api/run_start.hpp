#pragma once

// What `experiment submit` and `experiment sweep` share (private to src/api/).

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>

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
