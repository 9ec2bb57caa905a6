#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// The longest metrics line read (bytes, without its newline); a longer one is skipped.
inline constexpr std::size_t k_max_metric_line = 1024 * 1024;

/// A decision a sweep's trial took on its target at a rung (python/mlw/rungs.py), a line of its
/// metrics file: {"decision": TEXT, "verdict": "goes on"|"promoted"|"stopped"|"note", "time": T};
/// or the point TPE proposed for it there (python/mlw/propose.py): verdict "proposal", with the
/// point in "proposal".
struct TrialDecision {
  std::string text;
  std::string verdict;
  double time = 0;                  ///< when it was taken (seconds since the epoch; 0: not said)
  nlohmann::ordered_json proposal;  ///< a proposal's point (an object), else null
};

/// The verdict of a TPE trial's line that names the point proposed for it on its target.
inline constexpr const char* k_proposal_verdict = "proposal";

/// The line as a trial's decision, or nullopt (a metric, a parameter, a bad line).
std::optional<TrialDecision> parse_decision_line(std::string_view line);

/// The decisions in a run's metrics file, in order.
std::vector<TrialDecision> read_decisions(const std::filesystem::path& metrics_file);

/// Receives one metric line's name and value.
using MetricVisitor = std::function<void(const std::string& name, nlohmann::ordered_json value)>;

/// Receives one `mlw.log_param` line's name and value.
using ParamVisitor = std::function<void(const std::string& name, nlohmann::ordered_json value)>;

/// One line of a metrics file as a JSON object with a string "name" and a "value" (nested at
/// most 32 deep), or nullopt.
std::optional<nlohmann::ordered_json> parse_metric_object(std::string_view line);

/// Each line of a metrics file, without its newline, to `line` (a regular file only, read as a
/// stream, never blocking: a FIFO in its place is no file); a line over k_max_metric_line bytes
/// goes to `too_long` instead. A missing file has none.
void for_each_metric_line(const std::filesystem::path& metrics_file,
                          const std::function<void(std::string_view line)>& line,
                          const std::function<void()>& too_long);

/// Reads a metrics file (JSON lines of {name, value, step}) as a stream, calling `visit` for
/// each good line in order; returns how many lines were skipped (not such an object, over
/// 1 MiB, or nested deeper than 32). A missing file has none. Parameter lines
/// (`{"param": …}`) are not metrics and not skipped: they go to `params` when given.
std::size_t for_each_metric(const std::filesystem::path& metrics_file, const MetricVisitor& visit,
                            const ParamVisitor& params = nullptr);

/// Every value of each metric in a metrics file, in order; `skipped` gets the bad lines' count.
std::map<std::string, std::vector<nlohmann::ordered_json>> read_metric_series(
    const std::filesystem::path& metrics_file, std::size_t* skipped = nullptr);

/// The last value of each metric; skipped lines are counted in one line of `problems`.
nlohmann::ordered_json last_metric_values(const std::filesystem::path& metrics_file,
                                          std::vector<std::string>* problems = nullptr);

/// Moves a run's `outputs/` folder to `destination` (in the run's history folder) and returns
/// the relative paths of the regular files in it. Symlinks and special files are left out and
/// reported in `problems`.
std::vector<std::string> collect_outputs(const std::filesystem::path& source,
                                         const std::filesystem::path& destination,
                                         std::vector<std::string>& problems);

/// A one-line sparkline (▁▂▃▄▅▆▇█) of the numeric values of a series.
std::string sparkline(const std::vector<nlohmann::ordered_json>& values, std::size_t width = 40);

}  // namespace mlw
