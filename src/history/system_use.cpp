// A run's GPU sampler's series summed up for its record (docs/gpus.md).
#include "mlw/history/system_use.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "mlw/history/collect.hpp"

namespace mlw {

namespace {

struct Sample {
  double time = 0;
  double value = 0;
};

/// Each sample's weight: the time since the one before it (the first: the next one's, or 1).
std::vector<double> weights(const std::vector<Sample>& series) {
  std::vector<double> out(series.size(), 1);
  for (std::size_t i = 1; i < series.size(); ++i) {
    out[i] = std::max(0.0, series[i].time - series[i - 1].time);
  }
  if (series.size() > 1) out[0] = out[1];
  return out;
}

double weighted_mean(const std::vector<Sample>& series) {
  const auto w = weights(series);
  double sum = 0;
  double total = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    sum += series[i].value * w[i];
    total += w[i];
  }
  return total > 0 ? sum / total : 0;
}

/// The smallest value under which `share` of the weight lies.
double weighted_percentile(const std::vector<Sample>& series, double share) {
  const auto w = weights(series);
  std::vector<std::pair<double, double>> sorted;
  double total = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    sorted.emplace_back(series[i].value, w[i]);
    total += w[i];
  }
  std::sort(sorted.begin(), sorted.end());
  double seen = 0;
  for (const auto& [value, weight] : sorted) {
    seen += weight;
    if (seen >= share * total) return value;
  }
  return sorted.empty() ? 0 : sorted.back().first;
}

double rounded(double value) {
  return std::round(value * 10) / 10;
}

}  // namespace

SystemUse read_system_use(const std::filesystem::path& metrics_file) {
  std::map<std::string, std::vector<Sample>> series;
  for_each_metric_line(
      metrics_file,
      [&series](std::string_view line) {
        if (line.find("\"sys/") == std::string_view::npos) return;
        const auto json = parse_metric_object(line);
        // An object with a string "name" and a "value" (parse_metric_object); "time" may be
        // missing (a script's own sys/ metric): looked up, never indexed.
        if (!json || !json->at("value").is_number()) return;
        const std::string name = json->at("name").get<std::string>();
        if (name.rfind("sys/", 0) != 0) return;
        const auto time = json->find("time");
        const double at = time != json->end() && time->is_number() ? time->get<double>() : 0;
        const double value = json->at("value").get<double>();
        // A number too large for a double (1e999) reads as inf: never a sample (nor a sort key).
        if (!std::isfinite(at) || !std::isfinite(value)) return;
        series[name].push_back({at, value});
      },
      [] {});
  SystemUse use;
  for (const auto& [name, samples] : series) {
    int node = 0;
    int gpu = 0;
    char field[32] = {};
    // sys/gpuK/FIELD, or a Slurm job's other node's sys/nodeN/gpuK/FIELD.
    const bool named =
        std::sscanf(name.c_str(), "sys/gpu%d/%31s", &gpu, field) == 2 ||
        (std::sscanf(name.c_str(), "sys/node%d/gpu%d/%31s", &node, &gpu, field) == 3 && node > 0);
    if (!named || samples.empty()) continue;
    auto it = std::find_if(use.gpus.begin(), use.gpus.end(), [node, gpu](const GpuUse& one) {
      return one.node == node && one.gpu == gpu;
    });
    if (it == use.gpus.end()) {
      use.gpus.push_back({.node = node, .gpu = gpu});
      it = use.gpus.end() - 1;
    }
    const std::string what = field;
    if (what == "util") {
      it->samples = samples.size();
      it->util_mean = rounded(weighted_mean(samples));
      it->util_p95 = rounded(weighted_percentile(samples, 0.95));
      it->first_time = samples.front().time;
      it->last_time = samples.back().time;
    } else if (what == "mem_used") {
      for (const auto& s : samples) it->mem_peak_mib = std::max(it->mem_peak_mib, s.value);
    } else if (what == "mem_total") {
      it->mem_total_mib = samples.back().value;
    }
  }
  std::sort(use.gpus.begin(), use.gpus.end(), [](const GpuUse& a, const GpuUse& b) {
    return std::pair(a.node, a.gpu) < std::pair(b.node, b.gpu);
  });
  if (const auto cpu = series.find("sys/cpu"); cpu != series.end()) {
    use.cpu_mean = rounded(weighted_mean(cpu->second));
  }
  if (const auto rss = series.find("sys/rss_mb"); rss != series.end()) {
    for (const auto& s : rss->second) use.rss_peak_mb = std::max(use.rss_peak_mb, s.value);
  }
  return use;
}

nlohmann::ordered_json SystemUse::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (gpus.empty() && cpu_mean < 0 && rss_peak_mb < 0) return out;
  out["gpus"] = nlohmann::ordered_json::array();
  for (const auto& one : gpus) {
    nlohmann::ordered_json item = nlohmann::ordered_json::object();
    if (one.node > 0) item["node"] = one.node;
    item.update(nlohmann::ordered_json{{"gpu", one.gpu},
                                       {"samples", one.samples},
                                       {"util_mean", one.util_mean},
                                       {"util_p95", one.util_p95},
                                       {"mem_peak_mib", one.mem_peak_mib},
                                       {"mem_total_mib", one.mem_total_mib}});
    out["gpus"].push_back(std::move(item));
  }
  if (cpu_mean >= 0) out["cpu_mean"] = cpu_mean;
  if (rss_peak_mb >= 0) out["rss_peak_mb"] = rss_peak_mb;
  return out;
}

nlohmann::ordered_json system_summary_metrics(const SystemUse& use) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!use.gpus.empty()) {
    double mean = 0;
    double p95 = 0;
    double mem = 0;
    for (const auto& one : use.gpus) {
      mean += one.util_mean;
      p95 = std::max(p95, one.util_p95);
      mem = std::max(mem, one.mem_peak_mib);
    }
    out["sys/gpu_util"] = rounded(mean / static_cast<double>(use.gpus.size()));
    out["sys/gpu_util_p95"] = p95;
    out["sys/gpu_mem_peak"] = mem;
  }
  if (use.cpu_mean >= 0) out["sys/cpu_mean"] = use.cpu_mean;
  if (use.rss_peak_mb >= 0) out["sys/rss_peak"] = use.rss_peak_mb;
  return out;
}

std::vector<std::string> describe_system_use(const nlohmann::ordered_json& system) {
  std::vector<std::string> lines;
  if (!system.is_object()) return lines;
  const auto number = [](const nlohmann::ordered_json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<double>() : -1.0;
  };
  if (const auto gpus = system.find("gpus"); gpus != system.end() && gpus->is_array()) {
    for (const auto& one : *gpus) {
      if (!one.is_object()) continue;
      const double total = number(one, "mem_total_mib");
      const double node = number(one, "node");
      lines.push_back(fmt::format(
          "{}GPU {}: {:g}% mean, {:g}% p95, {:g}{} MiB at most ({} samples)",
          node > 0 ? fmt::format("node {}, ", static_cast<int>(node)) : "",
          static_cast<int>(number(one, "gpu")), number(one, "util_mean"), number(one, "util_p95"),
          number(one, "mem_peak_mib"), total > 0 ? fmt::format(" of {:g}", total) : "",
          static_cast<long long>(number(one, "samples"))));
    }
  }
  const double cpu = number(system, "cpu_mean");
  const double rss = number(system, "rss_peak_mb");
  if (cpu >= 0 || rss >= 0) {
    std::vector<std::string> parts;
    if (cpu >= 0) parts.push_back(fmt::format("CPU {:g}% of a core on average", cpu));
    if (rss >= 0) parts.push_back(fmt::format("memory {:g} MiB at most", rss));
    lines.push_back("Processes: " + fmt::format("{}", fmt::join(parts, "; ")));
  }
  return lines;
}

}  // namespace mlw
