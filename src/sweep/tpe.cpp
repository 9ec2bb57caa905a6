// Tree-structured Parzen Estimator (Bergstra et al., NeurIPS 2011), the way docs/sweeps.md
// "Bayesian search (TPE)" says: after `startup` random points, the ended trials are split into
// the best quarter of the completed ones (good) and the rest with every stopped one (bad); each
// parameter gets a Parzen density over each group, on a unit scale, and of 24 candidates drawn
// from the good density the one with the highest good/bad ratio is the next point.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "mlw/sweep/sweep.hpp"

namespace mlw {

namespace {

constexpr int k_candidates = 24;
constexpr double k_gamma = 0.25;  ///< the good share of the completed trials

/// A parameter's value on the unit scale (a choice's index for a list); nullopt: not its value.
std::optional<double> unit_of(const SweepParameter& p, const nlohmann::ordered_json& value) {
  if (p.kind == "values") {
    for (std::size_t i = 0; i < p.values.size(); ++i) {
      if (p.values[i] == value) return static_cast<double>(i);
    }
    return std::nullopt;
  }
  if (!value.is_number()) return std::nullopt;
  const double x = value.get<double>();
  double u = 0;
  if (p.kind == "uniform") {
    u = (x - p.low) / (p.high - p.low);
  } else if (p.kind == "loguniform") {
    u = (std::log(x) - std::log(p.low)) / (std::log(p.high) - std::log(p.low));
  } else {  // int
    u = (x - p.low + 0.5) / (p.high - p.low + 1);
  }
  if (!std::isfinite(u)) return std::nullopt;
  return std::clamp(u, 0.0, 1.0);
}

/// The value at `u` on the unit scale (for a list: the choice of index u).
nlohmann::ordered_json value_of(const SweepParameter& p, double u) {
  if (p.kind == "values") return p.values[static_cast<std::size_t>(u)];
  if (p.kind == "uniform") return p.low + u * (p.high - p.low);
  if (p.kind == "loguniform")
    return std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)));
  const double top = p.high;
  return static_cast<std::int64_t>(std::min(top, std::floor(p.low + u * (p.high - p.low + 1))));
}

/// A Parzen density over one parameter's observed unit values, with a uniform prior as one more
/// component (so that no value has density 0).
struct Parzen {
  std::vector<double> points;
  std::size_t choices = 0;  ///< a list's size; 0: continuous

  double sigma() const {
    return std::max(0.02, 0.25 * std::pow(static_cast<double>(points.size() + 1), -0.2));
  }

  double density(double u) const {
    const double m = static_cast<double>(points.size());
    if (choices > 0) {
      const auto same = std::count(points.begin(), points.end(), u);
      return (1.0 + static_cast<double>(same)) / (static_cast<double>(choices) + m);
    }
    const double s = sigma();
    double sum = 1.0;  // the prior, uniform on [0, 1]
    for (const double o : points) {
      const double z = (u - o) / s;
      sum += std::exp(-0.5 * z * z) / (s * std::sqrt(2 * M_PI));
    }
    return sum / (m + 1);
  }

  double draw(std::mt19937_64& random) const {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (choices > 0) {
      // A choice drawn by its density: the prior's share, then the observed ones.
      double pick = unit(random);
      for (std::size_t k = 0; k < choices; ++k) {
        pick -= density(static_cast<double>(k));
        if (pick <= 0) return static_cast<double>(k);
      }
      return static_cast<double>(choices - 1);
    }
    const std::size_t j = std::uniform_int_distribution<std::size_t>(0, points.size())(random);
    if (j == points.size()) return unit(random);
    double u = points[j] + sigma() * std::normal_distribution<double>(0.0, 1.0)(random);
    while (u < 0 || u > 1) u = u < 0 ? -u : 2 - u;  // reflected into [0, 1]
    return u;
  }
};

/// A point drawn uniformly (the startup points): as method: random draws its points.
nlohmann::ordered_json random_point(const SweepSpec& spec, std::mt19937_64& random) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  nlohmann::ordered_json point = nlohmann::ordered_json::object();
  for (const auto& p : spec.parameters) {
    const double u = unit(random);
    point[p.name] =
        p.kind == "values"
            ? value_of(p, std::floor(std::min(u * static_cast<double>(p.values.size()),
                                              static_cast<double>(p.values.size() - 1))))
            : value_of(p, u);
  }
  return point;
}

}  // namespace

nlohmann::ordered_json tpe_propose(const SweepSpec& spec, const std::vector<TpeTrial>& trials,
                                   std::uint64_t index) {
  std::mt19937_64 random(spec.seed ^ ((index + 1) * 0x9E3779B97F4A7C15ULL));
  std::vector<const TpeTrial*> completed;
  std::vector<const TpeTrial*> stopped;
  for (const auto& trial : trials) {
    if (trial.stopped) {
      stopped.push_back(&trial);
    } else if (trial.value && std::isfinite(*trial.value)) {
      completed.push_back(&trial);
    }
  }
  if (completed.size() + stopped.size() < static_cast<std::size_t>(std::max(spec.startup, 1)) ||
      completed.empty()) {
    return random_point(spec, random);
  }
  std::stable_sort(completed.begin(), completed.end(), [&](const TpeTrial* a, const TpeTrial* b) {
    return spec.maximize ? *a->value > *b->value : *a->value < *b->value;
  });
  const auto good_count =
      static_cast<std::size_t>(std::ceil(k_gamma * static_cast<double>(completed.size())));
  std::vector<const TpeTrial*> good(completed.begin(), completed.begin() + good_count);
  std::vector<const TpeTrial*> bad(completed.begin() + good_count, completed.end());
  bad.insert(bad.end(), stopped.begin(), stopped.end());

  std::vector<Parzen> l(spec.parameters.size());
  std::vector<Parzen> g(spec.parameters.size());
  for (std::size_t k = 0; k < spec.parameters.size(); ++k) {
    const SweepParameter& p = spec.parameters[k];
    l[k].choices = g[k].choices = p.kind == "values" ? p.values.size() : 0;
    const auto add = [&](const std::vector<const TpeTrial*>& group, Parzen& into) {
      for (const TpeTrial* trial : group) {
        const auto found = trial->point.find(p.name);
        if (found == trial->point.end()) continue;
        if (const auto u = unit_of(p, *found)) into.points.push_back(*u);
      }
    };
    add(good, l[k]);
    add(bad, g[k]);
  }
  std::vector<double> best;
  double best_score = -INFINITY;
  for (int c = 0; c < k_candidates; ++c) {
    std::vector<double> candidate(spec.parameters.size());
    double score = 0;
    for (std::size_t k = 0; k < spec.parameters.size(); ++k) {
      candidate[k] = l[k].draw(random);
      score += std::log(l[k].density(candidate[k])) - std::log(g[k].density(candidate[k]));
    }
    if (score > best_score) {
      best_score = score;
      best = std::move(candidate);
    }
  }
  nlohmann::ordered_json point = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < spec.parameters.size(); ++k)
    point[spec.parameters[k].name] = value_of(spec.parameters[k], best[k]);
  return point;
}

}  // namespace mlw
