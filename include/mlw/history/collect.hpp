#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// Every value of each metric in a metrics file (JSON lines of {name, value, step}), in order.
std::map<std::string, std::vector<nlohmann::ordered_json>> read_metric_series(
    const std::filesystem::path& metrics_file);

/// The last value of each metric.
nlohmann::ordered_json last_metric_values(const std::filesystem::path& metrics_file);

/// Moves a run's `outputs/` folder to `destination` (in the run's history folder) and returns
/// the relative paths of the regular files in it. Symlinks and special files are left out and
/// reported in `problems`.
std::vector<std::string> collect_outputs(const std::filesystem::path& source,
                                         const std::filesystem::path& destination,
                                         std::vector<std::string>& problems);

/// A one-line sparkline (▁▂▃▄▅▆▇█) of the numeric values of a series.
std::string sparkline(const std::vector<nlohmann::ordered_json>& values, std::size_t width = 40);

}  // namespace mlw
