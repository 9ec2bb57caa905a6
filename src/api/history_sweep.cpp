// `history list`'s fields and filters, and `history compare --sweep` (docs/sweeps.md).
#include <fmt/format.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cmath>
#include <set>

#include "mlw/api/history.hpp"
#include "mlw/history/params.hpp"
#include "mlw/history/series.hpp"
#include "mlw/history/sweep_record.hpp"
#include "mlw/sweep/sweep.hpp"
#include "mlw/util/clock.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"

namespace mlw::api {

RunField parse_run_field(const std::string& text) {
  const auto colon = text.find(':');
  // The GPU sampler's figures (sys/gpu_util, …) are metrics: no parameter has a slash.
  RunField field{starts_with(text, "sys/") ? "metric" : "param", text};
  if (colon != std::string::npos) {
    field.kind = text.substr(0, colon);
    field.name = text.substr(colon + 1);
    if (field.kind != "param" && field.kind != "metric") {
      throw UsageError(
          fmt::format("\"{}\": a field is param:NAME, metric:NAME or a parameter's NAME{}", text,
                      did_you_mean(field.kind, {"param", "metric"})));
    }
  }
  if (field.name.empty()) throw UsageError(fmt::format("\"{}\": the field has no name", text));
  return field;
}

RunCondition parse_run_condition(const std::string& text) {
  static const char* const operators[] = {"<=", ">=", "!=", "==", "<", ">", "="};
  std::size_t at = std::string::npos;
  std::string op;
  for (std::size_t i = 0; i < text.size() && at == std::string::npos; ++i) {
    for (const char* candidate : operators) {
      if (text.compare(i, std::char_traits<char>::length(candidate), candidate) == 0) {
        at = i;
        op = candidate;
        break;
      }
    }
  }
  if (at == std::string::npos || at == 0) {
    throw UsageError(fmt::format(
        "--where \"{}\": expected NAME OP VALUE with OP one of <, <=, >, >=, =, != (e.g. "
        "'lr<0.1', 'metric:loss<=0.2')",
        text));
  }
  RunCondition condition;
  condition.field = parse_run_field(std::string(trim(text.substr(0, at))));
  condition.op = op;
  const std::string value(trim(text.substr(at + op.size())));
  if (value.empty()) throw UsageError(fmt::format("--where \"{}\": no value after {}", text, op));
  condition.value = typed_value(value);
  if (condition.value.is_boolean()) condition.value = condition.value.get<bool>() ? 1 : 0;
  return condition;
}

namespace {

double saved_seconds(const std::vector<RunRecord>& runs) {
  std::vector<double> completed;
  for (const auto& run : runs) {
    if (run.status == status::k_completed && run.end_ms && run.start_ms) {
      completed.push_back(static_cast<double>(run.end_ms - run.start_ms) / 1000.0);
    }
  }
  if (completed.empty()) return 0;
  std::sort(completed.begin(), completed.end());
  const double typical = completed[completed.size() / 2];
  double saved = 0;
  for (const auto& run : runs) {
    if (run.status != status::k_stopped || !run.end_ms || !run.start_ms) continue;
    const double ran = static_cast<double>(run.end_ms - run.start_ms) / 1000.0;
    saved += std::max(0.0, typical - ran) *
             static_cast<double>(std::max<std::size_t>(1, run.gpus.size()));
  }
  return saved;
}

/// A sweep that names no metric (a grid from the command line) is ranked by the loss its runs
/// logged, lowest first, and says so; where they logged none named like a loss or an error it
/// says how to rank them instead.
void rank_by_logged_metric(Context& ctx, const std::vector<RunRecord>& runs, std::string& metric) {
  std::set<std::string> logged;
  for (const auto& run : runs) {
    for (const auto& [name, value] : run.metrics.items()) {
      if (value.is_number()) logged.insert(name);
    }
  }
  for (const char* word : {"loss", "error", "err"}) {
    for (const auto& name : logged) {
      if (lower_ascii(name) == word || (metric.empty() && lower_ascii(name).find(word) == 0)) {
        metric = name;
        break;
      }
    }
    if (!metric.empty()) break;
  }
  if (ctx.quiet) return;
  if (!metric.empty()) {
    spdlog::info(
        "ranked by the metric {} the runs logged, lowest first (--sort metric:NAME[:max] "
        "for another)",
        metric);
  } else if (!logged.empty()) {
    spdlog::info(
        "not ranked: the sweep names no metric; rank it with --sort metric:NAME[:max] "
        "(its runs logged: {})",
        join(std::vector<std::string>(logged.begin(), logged.end()), ", "));
  }
}

/// A scheduled sweep's budget: what its trials reached against each given the whole of it.
void say_budget(Context& ctx, const SchedulerSpec& scheduler, double spent, std::size_t trials) {
  if (ctx.quiet || ctx.output().structured() || trials == 0 || scheduler.max <= 0) return;
  const double full = static_cast<double>(trials) * scheduler.max;
  *ctx.err << fmt::format(
      "Budget ({}): {:.6g} of {:.6g} {} spent ({:.0f}%) against {} trials given --{} {} each\n",
      scheduler.kind, spent, full, scheduler.resource, 100 * spent / full, trials,
      scheduler.resource, scheduler.max);
}

}  // namespace

void compare_sweep(Context& ctx, const std::string& sweep_id,
                   const std::optional<std::string>& sort) {
  const fs::path state = ctx.project().state_dir();
  const SweepRecord sweep = load_sweep(state, sweep_id);
  const SweepSpec spec = SweepSpec::from_json(sweep.spec);
  std::string metric = spec.metric;
  bool maximize = spec.maximize;
  if (sort) {
    std::string text = *sort;
    maximize = false;
    if (text.ends_with(":desc") || text.ends_with(":max")) {
      maximize = true;
      text = text.substr(0, text.rfind(':'));
    } else if (text.ends_with(":asc") || text.ends_with(":min")) {
      text = text.substr(0, text.rfind(':'));
    }
    const RunField field = parse_run_field(text);
    if (field.kind != "metric")
      throw UsageError("compare --sweep sorts by a metric: --sort metric:NAME");
    metric = field.name;
  }
  HistoryStore store(state);
  store.reconcile_lost(host_name());
  std::vector<RunRecord> runs;
  for (const auto& point : sweep.points) {
    if (point.run_id.empty()) continue;
    try {
      runs.push_back(store.load(point.run_id));
    } catch (const Error&) {
    }
  }
  if (metric.empty()) rank_by_logged_metric(ctx, runs, metric);
  const auto value_of = [&](const RunRecord& run) -> std::optional<double> {
    if (metric.empty() || !run.metrics.contains(metric) || !run.metrics[metric].is_number()) {
      return std::nullopt;
    }
    return run.metrics[metric].get<double>();
  };
  std::stable_sort(runs.begin(), runs.end(), [&](const RunRecord& a, const RunRecord& b) {
    const auto x = value_of(a);
    const auto y = value_of(b);
    if (x.has_value() != y.has_value()) return x.has_value();
    if (!x) return a.point < b.point;
    return maximize ? *x > *y : *x < *y;
  });
  std::vector<std::string> names;
  for (const auto& parameter : spec.parameters) names.push_back(parameter.name);
  std::vector<Column> columns = {
      {"rank", "#"}, {"run_id", "RUN ID"}, {"point", "POINT"}, {"status", "STATUS"}};
  for (const auto& name : names) columns.push_back({"param:" + name, name});
  if (!metric.empty()) columns.push_back({"metric:" + metric, metric});
  const bool scheduled = !spec.scheduler.kind.empty();
  if (scheduled) columns.push_back({"reached", "REACHED"});
  double spent = 0;
  columns.push_back({"duration", "DURATION"});
  columns.push_back({"problem", "PROBLEM"});
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int rank = 0;
  // As data, the parameters and the metric nest as `history list` nests them (one schema); a
  // table has a column each.
  const bool nested = ctx.output().structured();
  for (const auto& run : runs) {
    nlohmann::ordered_json row = {
        {"rank", ++rank}, {"run_id", run.run_id}, {"point", run.point}, {"status", run.status}};
    nlohmann::ordered_json params = nlohmann::ordered_json::object();
    for (const auto& name : names) {
      params[name] = run.params.contains(name) ? run.params[name] : nlohmann::ordered_json();
      if (!nested) row["param:" + name] = params[name];
    }
    if (nested) row["params"] = params;
    if (!metric.empty()) {
      const auto value = value_of(run);
      const nlohmann::ordered_json shown = value ? nlohmann::ordered_json(*value) : nullptr;
      if (nested) {
        row["metrics"] = {{metric, shown}};
      } else {
        row["metric:" + metric] = shown;
      }
    }
    if (scheduled) {  // the budget it reached: how far the scheduler let it go
      const double reached =
          furthest_step(store.run_dir(run.run_id) / "metrics.jsonl", spec.metric);
      spent += reached;
      row["reached"] = reached;
    }
    row["duration"] = run.start_ms
                          ? nlohmann::ordered_json(format_duration(
                                (run.end_ms ? run.end_ms : ctx.clock->now_ms()) - run.start_ms))
                          : nlohmann::ordered_json();
    row["problem"] = run.problems.empty() ? nlohmann::ordered_json()
                                          : nlohmann::ordered_json(run.problems.back());
    rows.push_back(std::move(row));
  }
  ctx.output().print_list(rows, columns);
  if (scheduled) say_budget(ctx, spec.scheduler, spent, runs.size());
  const auto stopped = std::count_if(
      runs.begin(), runs.end(), [](const RunRecord& r) { return r.status == status::k_stopped; });
  if (stopped > 0 && !ctx.quiet && !ctx.output().structured()) {
    const std::string by = spec.scheduler.kind.empty() ? spec.early_stop.rule : spec.scheduler.kind;
    *ctx.err << fmt::format("Early stopping ({}): {} trial{} stopped, about {} of GPU time saved\n",
                            by, stopped, stopped == 1 ? "" : "s",
                            format_duration(static_cast<std::int64_t>(saved_seconds(runs) * 1000)));
  }
}

}  // namespace mlw::api
