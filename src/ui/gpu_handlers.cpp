// The dashboard's GPUs page: what `computetarget gpus` shows, for each target of the project
// that leases GPUs (docs/gpus.md).
#include <mutex>

#include "dashboard.hpp"
#include "mlw/api/computetarget.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/util/error.hpp"

namespace mlw::ui {

nlohmann::ordered_json gpus_json(Dashboard& board) {
  // One at a time: each reads its targets over the Context's connections.
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  const Project& project = board.ctx.project();
  for (const auto& name : project.compute_names()) {
    try {
      const ComputeConfig compute = load_compute(project, name);
      if (compute.gpus_per_run == "all") continue;
      out.push_back(api::gpus_of(board.ctx, name));
    } catch (const Error& e) {
      out.push_back({{"target", name}, {"error", e.what()}});
    }
  }
  return out;
}

}  // namespace mlw::ui
