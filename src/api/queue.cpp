// `mlw experiment queue`: the runs that hold or wait for leases on the project's targets, read
// from each target's lease folder (exec/lease.sh), so that runs from other laptops show too.

#include <fmt/format.h>

#include <filesystem>

#include "mlw/api/experiment.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/history/store.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace fs = std::filesystem;

namespace mlw::api {

namespace {

/// The most of a target's answer that is read.
constexpr std::size_t k_queue_bound = 1 << 20;

/// What a ticket wants, as a user reads it: {"gpus": N} or {"run_slots": M}.
nlohmann::ordered_json wants_of(const std::string& want) {
  const auto colon = want.find(':');
  const std::string kind = want.substr(0, colon);
  const auto count =
      parse_integer(colon == std::string::npos ? "" : want.substr(colon + 1), 1, 1 << 20);
  if (!count) return printable(want);
  return {{kind == "gpu" ? "gpus" : "run_slots", *count}};
}

std::vector<int> indexes(const std::string& list) {
  std::vector<int> out;
  for (const auto& item : split(list, ',')) {
    if (const auto index = parse_integer(item, 0, 1023)) out.push_back(static_cast<int>(*index));
  }
  return out;
}

/// Whether this project's history holds the run `id` (a name from the target, checked first).
bool known_run(const HistoryStore& store, const std::string& id) {
  if (id.empty() ||
      id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789_.-") != std::string::npos ||
      id[0] == '.') {
    return false;
  }
  std::error_code ec;
  return fs::exists(store.run_dir(id) / "run.json", ec);
}

/// One target's queue: its running and its waiting runs, in order.
nlohmann::ordered_json target_queue(Context& ctx, HistoryStore& store, const std::string& name,
                                    const ComputeConfig& compute) {
  nlohmann::ordered_json result = {{"target", name},
                                   {"running", nlohmann::ordered_json::array()},
                                   {"waiting", nlohmann::ordered_json::array()}};
  const TargetKind& kind = kind_of(compute.type);
  std::unique_ptr<Shell> shell = kind.place->open(ctx, name, compute);
  result["host"] = shell->host();
  const ShellResult read = shell->run(queue_script(lease_folder()));
  if (read.exit_code != 0) {
    throw Error(fmt::format("cannot read the leases on {}: {}", shell->host(),
                            printable(trim(read.errors))));
  }
  int position = 0;
  for (const auto& line : split(read.output.substr(0, k_queue_bound), '\n')) {
    const std::vector<std::string> f = split(line, '\t');
    if (f.size() < 11 || f[0] != "ticket") continue;
    nlohmann::ordered_json run = {{"run_id", printable(f[4])}, {"user", printable(f[5])}};
    run["wants"] = wants_of(f[6]);
    // Another user's ticket never passes for this project's run, whatever it says.
    run["in_history"] = f[10] == "1" && known_run(store, f[4]);
    run["target_user"] = printable(f[9]);
    if (f[2] != "-") {
      const auto since = parse_integer(f[3], 0, 1LL << 40);
      run["gpus"] = starts_with(f[6], "gpu:") ? nlohmann::ordered_json(indexes(f[2]))
                                              : nlohmann::ordered_json::array();
      run["started"] = since ? utc_or_null(*since * 1000) : nlohmann::ordered_json();
      result["running"].push_back(run);
    } else {
      const auto since = parse_integer(f[7], 0, 1LL << 40);
      run["position"] = ++position;
      run["queued"] = since ? utc_or_null(*since * 1000) : nlohmann::ordered_json();
      run["foreign_use"] = indexes(f[8]);
      result["waiting"].push_back(run);
    }
  }
  return result;
}

/// A table row per run of a target's queue.
void add_rows(const nlohmann::ordered_json& queue, nlohmann::ordered_json& rows) {
  for (const char* part : {"running", "waiting"}) {
    for (const auto& run : queue[part]) {
      std::string wants = run["wants"].dump();
      if (run["wants"].contains("gpus")) {
        wants = fmt::format("{} GPU{}", run["wants"]["gpus"].get<int>(),
                            run["wants"]["gpus"].get<int>() == 1 ? "" : "s");
      } else if (run["wants"].contains("run_slots")) {
        wants = "a run slot";
      }
      nlohmann::ordered_json row = {
          {"target", queue["target"]},
          {"run", run["in_history"].get<bool>() ? run["run_id"].get<std::string>()
                                                : run["run_id"].get<std::string>() + " (" +
                                                      run["user"].get<std::string>() + ")"},
          {"state", std::string(part) == "running" ? "running" : "waiting"},
          {"position", run.contains("position") ? run["position"].dump() : ""},
          {"gpus", run.contains("gpus") ? gpu_list(run["gpus"].get<std::vector<int>>()) : ""},
          {"wants", wants},
          {"user", run["user"]},
          {"since", run.contains("started") ? run["started"] : run["queued"]}};
      if (run.contains("foreign_use") && !run["foreign_use"].empty()) {
        row["wants"] = wants + " (GPU " + gpu_list(run["foreign_use"].get<std::vector<int>>()) +
                       " in use by a process without a lease)";
      }
      rows.push_back(row);
    }
  }
}

}  // namespace

void queue(Context& ctx, const std::optional<std::string>& name) {
  const Project& project = ctx.project();
  std::vector<std::pair<std::string, ComputeConfig>> targets;
  if (name) {
    const std::string target = target_of_name(project, *name);
    targets.emplace_back(target, load_compute(project, target));
  } else {
    for (const auto& each : project.compute_names()) {
      ComputeConfig compute = load_compute(project, each);
      if (compute.gpus_per_run != "all" || compute.max_concurrent_runs > 0) {
        targets.emplace_back(each, std::move(compute));
      }
    }
    if (targets.empty()) {
      throw Error(
          "no target of this project leases GPUs or run slots (gpusPerRun, maxConcurrentRuns); "
          "name one with: mlw experiment queue -c NAME");
    }
  }
  HistoryStore store(project.state_dir());
  nlohmann::ordered_json queues = nlohmann::ordered_json::array();
  for (const auto& [target, compute] : targets) {
    if (!kind_of(compute.type).has_key("gpusPerRun")) {
      throw Error(
          fmt::format("target {} is {}: its scheduler keeps its queue (mlw leases on "
                      "local, docker, remotedocker and remote targets)",
                      target, compute.type));
    }
    queues.push_back(target_queue(ctx, store, target, compute));
  }
  if (ctx.output().structured()) {
    ctx.output().print_object(queues);
    return;
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& each : queues) add_rows(each, rows);
  ctx.output().print_list(rows, {{"target", "TARGET"},
                                 {"run", "RUN"},
                                 {"state", "STATE"},
                                 {"position", "POSITION"},
                                 {"gpus", "GPUS"},
                                 {"wants", "WANTS"},
                                 {"user", "USER"},
                                 {"since", "SINCE (UTC)"}});
}

}  // namespace mlw::api
