#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlw/history/collect.hpp"

namespace mlw {

/// One metric's numeric values in the order they were logged: x is the line's `step` when it
/// is a number, else the value's position among the metric's values; y is the value.
struct MetricSeries {
  std::vector<double> x;
  std::vector<double> y;
  std::size_t values = 0;  ///< every value logged under the name, numeric or not
};

/// The numeric series of a metrics file, read incrementally: `update` reads what was appended
/// since the last call (whole lines only), so a growing file of a running run is never read
/// twice. Lines are read as `for_each_metric` reads them (the same lines are skipped).
class MetricSeriesReader {
 public:
  MetricSeriesReader() = default;
  MetricSeriesReader(const MetricSeriesReader&) = delete;
  MetricSeriesReader& operator=(const MetricSeriesReader&) = delete;
  MetricSeriesReader(MetricSeriesReader&&) = default;  ///< the map's nodes (and m_last) stay
  MetricSeriesReader& operator=(MetricSeriesReader&&) = default;
  /// Reads `file` from where the last call stopped; starts over when the file shrank. A last
  /// line without its newline is read only `at_end` (the run has ended: it will get none).
  /// A big file read from its start is cut at line starts and read by up to 4 threads.
  void update(const std::filesystem::path& file, bool at_end);
  /// Adds the complete lines of `bytes` (the text of a metrics file from where the last call
  /// stopped); returns how many bytes it used (up to the last newline; all with `at_end`).
  std::size_t add(std::string_view bytes, bool at_end);
  /// Every metric read so far, by name.
  const std::map<std::string, MetricSeries, std::less<>>& series() const { return m_series; }
  /// How many lines were skipped.
  std::size_t skipped() const { return m_skipped; }
  /// The decisions a sweep's trial took on its target (python/mlw/rungs.py), in order.
  const std::vector<TrialDecision>& decisions() const { return m_decisions; }
  /// The bytes of the file read so far.
  std::uint64_t offset() const { return m_offset; }

 private:
  void add_line(std::string_view line);
  /// A line that is no metric: a parameter, a trial's decision, else skipped.
  void not_metric(std::string_view line);
  /// Reads whole lines from m_offset up to `end` (or the end of the file); `size_hint` is where
  /// the range is expected to end (to reserve room).
  void read_range(int fd, std::uint64_t end, std::uint64_t size_hint, bool at_end);
  /// Appends a part read after this one (its positions shifted past this part's values).
  void merge(MetricSeriesReader&& later);
  std::map<std::string, MetricSeries, std::less<>> m_series;
  std::size_t m_skipped = 0;
  std::vector<TrialDecision> m_decisions;
  std::uint64_t m_offset = 0;
  MetricSeries* m_last = nullptr;  ///< the series of the last line read, and its name
  std::string_view m_last_name;
  bool m_track_positions = false;  ///< a part after the first: note step-less points
  std::vector<std::pair<MetricSeries*, std::size_t>> m_positional;
};

/// Reads one metrics line without a JSON library when it is a flat object (string keys and
/// strings without escapes, numbers, true/false/null): sets `name`, `value` (when numeric),
/// `step` (when a number). Returns 1 for such a line with a string "name" and a "value", 0 for
/// a flat line without them, and -1 when the line needs the full parser.
int parse_flat_metric_line(std::string_view line, std::string_view& name, bool& numeric,
                           double& value, bool& has_step, double& step);

/// The points of `series` sorted by x (stable), restricted to from <= x <= to, and reduced to
/// at most `threshold` points by Largest-Triangle-Three-Buckets (the shape is kept: peaks stay).
MetricSeries downsample(const MetricSeries& series, double from, double to, std::size_t threshold);

/// The furthest step a run logged `metric` at (a scheduled sweep's trial: the budget it reached;
/// 0: none), reading its metrics file whole (`at_end`: a last line without its newline counts).
double furthest_step(const std::filesystem::path& metrics_file, const std::string& metric,
                     bool at_end = true);

}  // namespace mlw
