// The dashboard's sweep routes: a sweep's runs with their parameters and metrics, and a metric's
// curves: each trial's own (its group, its status) and each group's mean at each step.
#include <httplib.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dashboard.hpp"
#include "mlw/history/store.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/error.hpp"

namespace mlw::ui {

namespace {

using Json = nlohmann::ordered_json;

/// The rows of the runs that hold the sweep's points now (`current`: SweepRecord::current_runs).
std::vector<SweepRow> current_rows(HistoryStore& store, const SweepRecord& sweep,
                                   const std::map<std::string, int>& current) {
  std::vector<SweepRow> rows = store.sweep_rows(sweep.sweep_id);
  std::erase_if(rows, [&](const SweepRow& row) { return !current.contains(row.run.run_id); });
  return rows;
}

}  // namespace

Json sweep_json(Dashboard& board, const std::string& id) {
  const SweepRecord sweep = load_sweep(board.state_dir, id);
  const SweepSpec spec = SweepSpec::from_json(sweep.spec);
  HistoryStore store(board.state_dir);
  const std::int64_t now = board.ctx.clock->now_ms();
  const std::map<std::string, int> point_of = sweep.current_runs();
  Json runs = Json::array();
  const std::vector<SweepRow> rows = current_rows(store, sweep, point_of);
  for (const auto& row : rows) {
    const RunSummary& r = row.run;
    const std::int64_t end = r.end_ms ? r.end_ms : now;
    runs.push_back({{"run_id", r.run_id},
                    {"run_number", r.run_number},
                    {"point", point_of.at(r.run_id)},
                    {"status", r.status},
                    {"target", r.target},
                    {"started", r.start_ms ? utc_or_null(r.start_ms) : Json()},
                    {"duration_s", r.start_ms ? Json((end - r.start_ms) / 1000.0) : Json()},
                    {"exit_code", r.exit_code ? Json(*r.exit_code) : Json()},
                    {"problem", row.problem.empty() ? Json() : Json(row.problem)},
                    {"params", row.params},
                    {"metrics", row.metrics}});
  }
  Json parameters = Json::array();
  for (const auto& p : spec.parameters) parameters.push_back(p.name);
  Json page = {{"sweep_id", sweep.sweep_id},
               {"script", sweep.script},
               {"arguments", sweep.arguments},
               {"targets", sweep.targets},
               {"created", utc_or_null(sweep.created_ms)},
               {"method", spec.method},
               {"metric", spec.metric},
               {"goal", spec.maximize ? "max" : "min"},
               {"early_stop", spec.early_stop.rule},
               {"parameters", parameters},
               {"points", sweep.points.size()},
               {"runs", runs}};
  add_schedule(board, sweep, spec, rows, page);
  return page;
}

Json sweep_curves(Dashboard& board, const std::string& id, const std::string& metric,
                  const std::string& group) {
  if (metric.empty()) throw UsageError("metric is required");
  const SweepRecord sweep = load_sweep(board.state_dir, id);
  HistoryStore store(board.state_dir);
  // group value (as text) -> step -> (sum, count, min, max)
  struct Cell {
    double sum = 0, min = INFINITY, max = -INFINITY;
    int count = 0;
  };
  std::map<std::string, std::map<double, Cell>> groups;
  std::map<std::string, int> runs_in;
  // Each trial's curve, at most k_trials of them (200 points each): a stopped trial is as visible
  // as one that completed; past the bound the page draws the groups only, and says so.
  constexpr std::size_t k_trials = 300;
  Json trials = Json::array();
  std::size_t trials_left_out = 0;
  for (const auto& row : current_rows(store, sweep, sweep.current_runs())) {
    const std::string key = group.empty()                ? std::string("all")
                            : row.params.contains(group) ? row.params[group].dump()
                                                         : std::string("(none)");
    MetricSeriesReader reader;
    reader.update(store.run_dir(row.run.run_id) / "metrics.jsonl",
                  status::is_final(row.run.status));
    const auto found = reader.series().find(metric);
    if (found == reader.series().end()) continue;
    ++runs_in[key];
    if (trials.size() < k_trials) {
      const MetricSeries own = downsample(found->second, -INFINITY, INFINITY, 200);
      trials.push_back({{"run_id", row.run.run_id},
                        {"status", row.run.status},
                        {"group", key},
                        {"x", own.x},
                        {"y", own.y}});
    } else {
      ++trials_left_out;
    }
    const MetricSeries shown = downsample(found->second, -INFINITY, INFINITY, 500);
    for (std::size_t i = 0; i < shown.x.size(); ++i) {
      Cell& cell = groups[key][shown.x[i]];
      cell.sum += shown.y[i];
      cell.count += 1;
      cell.min = std::min(cell.min, shown.y[i]);
      cell.max = std::max(cell.max, shown.y[i]);
    }
  }
  Json out = Json::array();
  for (const auto& [key, steps] : groups) {
    Json x = Json::array(), mean = Json::array(), low = Json::array(), high = Json::array();
    for (const auto& [step, cell] : steps) {
      x.push_back(step);
      mean.push_back(cell.sum / cell.count);
      low.push_back(cell.min);
      high.push_back(cell.max);
    }
    out.push_back({{"group", key},
                   {"runs", runs_in[key]},
                   {"x", x},
                   {"mean", mean},
                   {"min", low},
                   {"max", high}});
  }
  return {{"sweep_id", id}, {"metric", metric}, {"group", group},
          {"groups", out},  {"trials", trials}, {"trials_left_out", trials_left_out}};
}

}  // namespace mlw::ui
