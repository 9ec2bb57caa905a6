// ASHA and Hyperband (docs/sweeps.md "ASHA and Hyperband"): a trial is judged when its metric,
// stepped by the resource, first reaches one of its bracket's rungs, against the values the
// trials of that bracket reached there so far; nothing waits for the others.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "mlw/sweep/sweep.hpp"

namespace mlw {

namespace {

/// The value the trial logged last at a step up to `rung` (nullopt: none).
std::optional<double> value_at(const TrialSeries& series, double rung) {
  std::optional<double> found;
  double found_step = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < series.steps.size() && i < series.values.size(); ++i) {
    if (series.steps[i] > rung || series.steps[i] < found_step) continue;
    found = series.values[i];
    found_step = series.steps[i];
  }
  return found;
}

/// The rungs' budgets of a bracket, below max (a trial that reaches max has its whole budget).
std::vector<int> rungs_of(const SchedulerSpec& scheduler, int bracket) {
  std::vector<int> out;
  for (double rung = scheduler_first_rung(scheduler, bracket); rung < scheduler.max;
       rung *= scheduler.eta)
    out.push_back(static_cast<int>(rung));
  return out;
}

}  // namespace

double scheduler_first_rung(const SchedulerSpec& scheduler, int bracket) {
  double rung = scheduler.min;
  for (int b = 0; b < bracket; ++b) rung *= scheduler.eta;
  return rung;
}

int scheduler_brackets(const SchedulerSpec& scheduler) {
  if (scheduler.kind != "hyperband") return 1;
  int brackets = 0;
  for (double rung = scheduler.min; rung <= scheduler.max && brackets < 64; rung *= scheduler.eta)
    ++brackets;
  return std::max(brackets, 1);
}

std::optional<std::string> scheduler_verdict(
    const SchedulerSpec& scheduler, bool maximize, const std::string& metric,
    const TrialSeries& trial, std::map<std::pair<int, int>, std::vector<double>>& rungs,
    TrialRungs& mine, std::vector<std::string>& notes) {
  if (trial.steps.empty()) return std::nullopt;
  const double step = trial.steps.back();
  const std::string& resource = scheduler.resource;
  if (step > scheduler.max) {
    return fmt::format("stopped at {} {}: past its budget of {} (--{} {} was given)", resource,
                       shown_value(step), scheduler.max, resource, scheduler.max);
  }
  const double worst =
      maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  const std::string where =
      scheduler.kind == "hyperband" ? fmt::format(", bracket {}", mine.bracket) : std::string();
  for (const int rung : rungs_of(scheduler, mine.bracket)) {
    if (rung > step) break;
    if (mine.judged[rung]) continue;
    mine.judged[rung] = true;
    const auto logged = value_at(trial, rung);
    if (!logged) continue;
    double value = *logged;
    if (!std::isfinite(value)) {
      notes.push_back(fmt::format("its {} at {} {} is {}: ranked last", metric, resource, rung,
                                  shown_value(value)));
      value = worst;
    }
    std::vector<double>& reached = rungs[{mine.bracket, rung}];
    reached.push_back(value);
    const std::size_t n = reached.size();
    const auto eta = static_cast<std::size_t>(scheduler.eta);
    if (n < eta) {
      notes.push_back(fmt::format("reached {} {}{} ({} {}): goes on, {} of the {} to judge by",
                                  resource, rung, where, metric, shown_value(*logged), n, eta));
      continue;
    }
    std::vector<double> sorted = reached;
    std::sort(sorted.begin(), sorted.end());
    if (maximize) std::reverse(sorted.begin(), sorted.end());
    const std::size_t keep = n / eta;
    const double cutoff = sorted[keep - 1];
    const bool promoted = maximize ? value >= cutoff : value <= cutoff;
    const std::string standing =
        fmt::format("{} {} {} the top 1/{} ({} of {} trials at that rung; cutoff {})", metric,
                    shown_value(*logged), promoted ? "is in" : "is not in", scheduler.eta, keep, n,
                    shown_value(cutoff));
    if (!promoted) {
      return fmt::format("stopped by {} at {} {}{}: {}",
                         scheduler.kind == "hyperband" ? "Hyperband" : "ASHA", resource, rung,
                         where, standing);
    }
    notes.push_back(fmt::format("promoted at {} {}{}: {}", resource, rung, where, standing));
  }
  return std::nullopt;
}

}  // namespace mlw
