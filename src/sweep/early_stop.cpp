// Early stopping of a sweep's trials, decided from mlw's own metrics (docs/sweeps.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mlw/sweep/sweep.hpp"

namespace mlw {

namespace {

/// The trial's best value at steps up to `step` (nullopt: none yet).
std::optional<double> best_until(const TrialSeries& series, double step, bool maximize) {
  std::optional<double> best;
  for (std::size_t i = 0; i < series.steps.size() && i < series.values.size(); ++i) {
    if (series.steps[i] > step || !std::isfinite(series.values[i])) continue;
    const double v = series.values[i];
    if (!best || (maximize ? v > *best : v < *best)) best = v;
  }
  return best;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::optional<std::string> median_verdict(const EarlyStopSpec& rule,
                                          const std::vector<TrialSeries>& completed,
                                          const TrialSeries& trial, const std::string& metric) {
  if (trial.steps.empty()) return std::nullopt;
  const double step = trial.steps.back();
  if (step < rule.min_steps) return std::nullopt;
  const auto mine = best_until(trial, step, rule.maximize);
  if (!mine) return std::nullopt;
  std::vector<double> others;
  for (const auto& done : completed) {
    if (const auto value = best_until(done, step, rule.maximize)) others.push_back(*value);
  }
  if (others.size() < static_cast<std::size_t>(rule.min_completed)) return std::nullopt;
  const double middle = median(others);
  const bool worse = rule.maximize ? *mine < middle : *mine > middle;
  if (!worse) return std::nullopt;
  return fmt::format(
      "stopped early by the median rule at step {}: best {} {} is {} than the median {} of {} "
      "completed trials at that step",
      shown_value(step), metric, shown_value(*mine), rule.maximize ? "lower" : "higher",
      shown_value(middle), others.size());
}

std::optional<std::string> asha_verdict(const EarlyStopSpec& rule, const TrialSeries& trial,
                                        const std::string& metric,
                                        std::map<int, std::vector<double>>& rungs,
                                        std::map<int, bool>& seen) {
  if (trial.steps.empty()) return std::nullopt;
  const double step = trial.steps.back();
  // Rungs at minSteps · eta^k; each is judged once, when the trial first reaches it.
  for (double rung = rule.min_steps; rung <= step && rung < 1e12; rung *= rule.eta) {
    const int key = static_cast<int>(rung);
    if (seen[key]) continue;
    seen[key] = true;
    const auto mine = best_until(trial, rung, rule.maximize);
    if (!mine) continue;
    std::vector<double>& values = rungs[key];
    values.push_back(*mine);
    if (values.size() < static_cast<std::size_t>(rule.eta)) continue;  // too few to judge
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    if (rule.maximize) std::reverse(sorted.begin(), sorted.end());
    const std::size_t keep =
        std::max<std::size_t>(1, sorted.size() / static_cast<std::size_t>(rule.eta));
    const double cutoff = sorted[keep - 1];
    const bool promoted = rule.maximize ? *mine >= cutoff : *mine <= cutoff;
    if (promoted) continue;
    return fmt::format(
        "stopped early by ASHA at rung step {}: best {} {} is not in the top 1/{} ({} of {} "
        "trials at that rung; cutoff {})",
        key, metric, shown_value(*mine), rule.eta, keep, values.size(), shown_value(cutoff));
  }
  return std::nullopt;
}

}  // namespace

std::string shown_value(double value) {
  return fmt::format("{:.6g}", value);
}

std::optional<std::string> early_stop_verdict(const EarlyStopSpec& rule,
                                              const std::vector<TrialSeries>& completed,
                                              const TrialSeries& trial,
                                              std::map<int, std::vector<double>>& rungs,
                                              std::map<int, bool>& trial_rungs_seen) {
  if (rule.rule == "median") return median_verdict(rule, completed, trial, rule.metric);
  if (rule.rule == "asha") return asha_verdict(rule, trial, rule.metric, rungs, trial_rungs_seen);
  return std::nullopt;
}

}  // namespace mlw
