// The sweep page's view of a scheduler (docs/sweeps.md "ASHA and Hyperband"): the rungs each
// trial reached and what was decided there (the sweep's decisions.log, whoever decided), the
// budget spent against every trial given the whole of it, and the best value so far over time.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "dashboard.hpp"
#include "mlw/history/series.hpp"
#include "mlw/history/store.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/clock.hpp"

namespace mlw::ui {

namespace {

using Json = nlohmann::ordered_json;

/// A decisions.log line's rung decision: its run, its verdict, the rung and its bracket.
struct RungLine {
  std::string run_id;
  std::string verdict;  ///< goes on, promoted or stopped
  int rung = 0;
  int bracket = 0;
};

/// "TIME run ID (point P): TEXT" where TEXT is a rung decision (reached …: goes on; promoted at
/// …; stopped by ASHA|Hyperband at …), else nullopt.
std::optional<RungLine> parse_rung_line(std::string_view line) {
  const auto run = line.find(" run ");
  const auto point = line.find(" (point ");
  const auto colon = line.find("): ");
  if (run == std::string_view::npos || point == std::string_view::npos ||
      colon == std::string_view::npos || !(run < point && point < colon))
    return std::nullopt;
  RungLine out;
  out.run_id = std::string(line.substr(run + 5, point - run - 5));
  std::string_view text = line.substr(colon + 3);
  const std::pair<std::string_view, const char*> kinds[] = {
      {"reached ", "goes on"},
      {"promoted at ", "promoted"},
      {"stopped by ASHA at ", "stopped"},
      {"stopped by Hyperband at ", "stopped"}};
  bool found = false;
  for (const auto& [prefix, verdict] : kinds) {
    if (!text.starts_with(prefix)) continue;
    text.remove_prefix(prefix.size());
    out.verdict = verdict;
    found = true;
    break;
  }
  const auto space = text.find(' ');  // after the resource's name
  if (!found || space == std::string_view::npos) return std::nullopt;
  const std::string rest(text.substr(space + 1, 40));
  char* end = nullptr;
  out.rung = static_cast<int>(std::strtol(rest.c_str(), &end, 10));
  if (end == rest.c_str()) return std::nullopt;
  const std::string_view after(end);
  if (after.starts_with(", bracket ")) out.bracket = std::atoi(end + 10);
  return out;
}

/// What a run held: its seconds × its GPUs (at least 1).
double gpu_seconds(const RunRecord& run, std::int64_t now) {
  if (!run.start_ms) return 0;
  const std::int64_t end = run.end_ms ? run.end_ms : now;
  return static_cast<double>(std::max<std::int64_t>(0, end - run.start_ms)) / 1000.0 *
         static_cast<double>(std::max<std::size_t>(1, run.gpus.size()));
}

/// The rungs' tallies in order, and each run's decision lines, from decisions.log (its first
/// 100,000 lines).
Json rung_tallies(const std::filesystem::path& log, std::map<std::string, Json>& by_run) {
  std::map<std::pair<int, int>, std::map<std::string, int>> tally;  // (bracket, rung)
  std::ifstream in(log);
  std::string line;
  for (int n = 0; n < 100000 && std::getline(in, line); ++n) {
    const auto parsed = parse_rung_line(line);
    if (!parsed) continue;
    auto& counts = tally[{parsed->bracket, parsed->rung}];
    ++counts["reached"];
    ++counts[parsed->verdict];
    by_run[parsed->run_id].push_back(line.substr(line.find("): ") + 3));
  }
  Json out = Json::array();
  for (auto& [at, counts] : tally) {
    out.push_back({{"bracket", at.first},
                   {"rung", at.second},
                   {"reached", counts["reached"]},
                   {"goes_on", counts["goes on"]},
                   {"promoted", counts["promoted"]},
                   {"stopped", counts["stopped"]}});
  }
  return out;
}

}  // namespace

void add_schedule(Dashboard& board, const SweepRecord& sweep, const SweepSpec& spec,
                  const std::vector<SweepRow>& rows, Json& page) {
  HistoryStore store(board.state_dir);
  const std::int64_t now = board.ctx.clock->now_ms();
  // The best value so far of the sweep's metric over its time: each completed trial's last
  // value, at its end (a stopped trial's value is at a smaller budget: not comparable).
  Json best = Json::array();
  std::vector<const SweepRow*> ended;
  for (const auto& row : rows) {
    if (row.run.status != status::k_completed || spec.metric.empty() || !row.run.end_ms) continue;
    const auto value = row.metrics.find(spec.metric);
    if (value != row.metrics.end() && value->is_number()) ended.push_back(&row);
  }
  std::sort(ended.begin(), ended.end(),
            [](const SweepRow* a, const SweepRow* b) { return a->run.end_ms < b->run.end_ms; });
  std::optional<double> so_far;
  for (const SweepRow* row : ended) {
    const double v = row->metrics[spec.metric].get<double>();
    if (!so_far || (spec.maximize ? v > *so_far : v < *so_far)) so_far = v;
    best.push_back({{"t_s", static_cast<double>(row->run.end_ms - sweep.created_ms) / 1000.0},
                    {"value", *so_far},
                    {"run_id", row->run.run_id}});
  }
  page["best_so_far"] = best;
  const SchedulerSpec& scheduler = spec.scheduler;
  if (scheduler.kind.empty()) {
    page["scheduler"] = nullptr;
    return;
  }
  page["scheduler"] = {{"type", scheduler.kind},
                       {"resource", scheduler.resource},
                       {"min", scheduler.min},
                       {"max", scheduler.max},
                       {"eta", scheduler.eta}};
  std::map<std::string, Json> decisions;
  page["rungs"] =
      rung_tallies(sweep_dir(board.state_dir, sweep.sweep_id) / "decisions.log", decisions);
  // Each trial's budget reached (the furthest step it logged its metric at) and what it held.
  double spent = 0, held = 0;
  std::vector<double> full_runs;
  for (auto& run : page["runs"]) {
    const std::string id = run["run_id"].get<std::string>();
    const RunRecord record = store.load(id);
    const double reached = furthest_step(store.run_dir(id) / "metrics.jsonl", spec.metric,
                                         status::is_final(record.status));
    const double seconds = gpu_seconds(record, now);
    run["reached"] = reached;
    run["gpu_seconds"] = seconds;
    run["decisions"] = decisions.contains(id) ? decisions[id] : Json::array();
    spent += reached;
    held += seconds;
    if (record.status == status::k_completed) full_runs.push_back(seconds);
  }
  // Against every trial given the whole budget: in the resource's units, and in GPU-seconds as
  // the median completed trial held them (null until one completed).
  std::sort(full_runs.begin(), full_runs.end());
  const double trials = static_cast<double>(page["runs"].size());
  page["budget"] = {{"unit", scheduler.resource},
                    {"spent", spent},
                    {"full", trials * scheduler.max},
                    {"gpu_seconds", held},
                    {"full_gpu_seconds",
                     full_runs.empty() ? Json() : Json(trials * full_runs[full_runs.size() / 2])}};
}

}  // namespace mlw::ui
