// Metric series for charts: an incremental reader with a fast path for flat lines, and LTTB.
#include "mlw/history/series.hpp"

#include "mlw/history/params.hpp"

#include "mlw/util/fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <numeric>
#include <thread>

#include "mlw/history/collect.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_chunk = 4 * 1024 * 1024;
/// From this size on, a file read from its start is read by several threads.
constexpr std::uint64_t k_parallel_from = 16 * 1024 * 1024;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/// A cursor over one line.
struct Cursor {
  std::string_view text;
  std::size_t at = 0;
  void skip_space() {
    while (at < text.size() && is_space(text[at])) ++at;
  }
  bool eat(char c) {
    skip_space();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  /// A string without escapes or control characters; false otherwise.
  bool plain_string(std::string_view& out) {
    if (!eat('"')) return false;
    const std::size_t start = at;
    while (at < text.size() && text[at] != '"') {
      const auto c = static_cast<unsigned char>(text[at]);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;  // the full parser decides these
      ++at;
    }
    if (at == text.size()) return false;
    out = text.substr(start, at - start);
    ++at;
    return true;
  }
  /// A number as JSON writes it (RFC 8259 grammar); false for anything else. Converted into
  /// `out` when `convert`; otherwise only checked to be in range (as the full parser checks).
  bool number(double& out, bool convert) {
    const std::size_t start = at;
    const auto digits = [&] {
      const std::size_t from = at;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
      return at > from;
    };
    const bool negative = at < text.size() && text[at] == '-';
    if (negative) ++at;
    if (at < text.size() && text[at] == '0') {
      ++at;
    } else if (!digits()) {
      return false;
    }
    const std::size_t integer_end = at;
    if (at < text.size() && text[at] == '.') {
      ++at;
      if (!digits()) return false;
    }
    bool exponent = false;
    if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
      exponent = true;
      ++at;
      if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
      if (!digits()) return false;
    }
    const std::size_t first_digit = start + (negative ? 1 : 0);
    if (at == integer_end && integer_end - first_digit <= 15) {
      // An integer of at most 15 digits is exact in a double: no conversion routine needed.
      std::int64_t whole = 0;
      for (std::size_t i = first_digit; i < at; ++i) whole = whole * 10 + (text[i] - '0');
      out = negative ? -static_cast<double>(whole) : static_cast<double>(whole);
      return true;
    }
    if (!convert && !exponent && at - start < 300) return true;  // cannot overflow a double
    const auto result = std::from_chars(text.data() + start, text.data() + at, out);
    return result.ec == std::errc() && result.ptr == text.data() + at && std::isfinite(out);
  }
  bool literal(std::string_view word) {
    if (text.substr(at, word.size()) != word) return false;
    at += word.size();
    return true;
  }
};

/// Where a big file may be cut into `parts` pieces of whole lines: 0, then the start of the
/// first line at or after each k/parts of `size` (fewer when lines are long).
std::vector<std::uint64_t> line_starts(int fd, std::uint64_t size, std::size_t parts) {
  std::vector<std::uint64_t> starts{0};
  char window[64 * 1024];
  for (std::size_t k = 1; k < parts; ++k) {
    std::uint64_t at = std::max<std::uint64_t>(size * k / parts, starts.back() + 1) - 1;
    bool found = false;
    while (!found && at < size) {
      const ssize_t n = ::pread(fd, window, sizeof window, static_cast<off_t>(at));
      if (n <= 0) break;
      const auto* newline =
          static_cast<const char*>(std::memchr(window, '\n', static_cast<std::size_t>(n)));
      if (newline != nullptr) {
        at += static_cast<std::uint64_t>(newline - window) + 1;
        found = true;
      } else {
        at += static_cast<std::uint64_t>(n);
      }
    }
    if (!found || at >= size) break;
    starts.push_back(at);
  }
  return starts;
}

}  // namespace

int parse_flat_metric_line(std::string_view line, std::string_view& name, bool& numeric,
                           double& value, bool& has_step, double& step) {
  Cursor cursor{line};
  if (!cursor.eat('{')) return -1;
  bool has_name = false;
  bool has_value = false;
  bool name_is_string = false;
  has_step = false;
  numeric = false;
  bool first = true;
  while (true) {
    if (first && cursor.eat('}')) break;
    std::string_view key;
    if (!cursor.plain_string(key) || !cursor.eat(':')) return -1;
    // A repeated key of interest: the full parser decides which one counts.
    const bool is_name = key == "name";
    const bool is_value = key == "value";
    const bool is_step = key == "step";
    if ((is_name && has_name) || (is_value && has_value) || (is_step && has_step)) return -1;
    cursor.skip_space();
    if (cursor.at >= line.size()) return -1;
    const char c = line[cursor.at];
    if (c == '"') {
      std::string_view text;
      if (!cursor.plain_string(text)) return -1;
      if (is_name) {
        name = text;
        name_is_string = true;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      double number = 0;
      if (!cursor.number(number, is_value || is_step)) return -1;
      if (is_value) {
        numeric = true;
        value = number;
      } else if (is_step) {
        has_step = true;
        step = number;
      }
    } else if (!cursor.literal("true") && !cursor.literal("false") && !cursor.literal("null")) {
      return -1;  // nested values and anything odd go to the full parser
    }
    has_name = has_name || is_name;
    has_value = has_value || is_value;
    first = false;
    if (cursor.eat(',')) continue;
    if (cursor.eat('}')) break;
    return -1;
  }
  cursor.skip_space();
  if (cursor.at != line.size()) return -1;
  return has_name && name_is_string && has_value ? 1 : 0;
}

void MetricSeriesReader::not_metric(std::string_view line) {
  if (parse_param_line(line)) return;  // a parameter is not a metric, nor skipped
  if (auto decision = parse_decision_line(line)) {
    m_decisions.push_back(std::move(*decision));
    return;
  }
  ++m_skipped;
}

void MetricSeriesReader::add_line(std::string_view line) {
  if (trim(line).empty()) return;
  std::string_view name;
  bool numeric = false;
  bool has_step = false;
  double value = 0;
  double step = 0;
  const int flat = parse_flat_metric_line(line, name, numeric, value, has_step, step);
  std::string owned;
  if (flat == 0) {
    not_metric(line);
    return;
  }
  if (flat < 0) {
    auto json = parse_metric_object(line);
    if (!json) {
      not_metric(line);
      return;
    }
    owned = (*json)["name"].get<std::string>();
    name = owned;
    const auto& v = (*json)["value"];
    numeric = v.is_number();
    if (numeric) value = v.get<double>();
    has_step = json->contains("step") && (*json)["step"].is_number();
    if (has_step) step = (*json)["step"].get<double>();
  }
  if (m_last == nullptr || m_last_name != name) {  // most lines repeat the last line's name
    auto found = m_series.find(name);
    if (found == m_series.end()) found = m_series.emplace(std::string(name), MetricSeries{}).first;
    m_last_name = found->first;
    m_last = &found->second;
  }
  MetricSeries& series = *m_last;
  if (numeric) {
    if (!has_step && m_track_positions) m_positional.emplace_back(&series, series.x.size());
    series.x.push_back(has_step ? step : static_cast<double>(series.values));
    series.y.push_back(value);
  }
  ++series.values;
}

std::size_t MetricSeriesReader::add(std::string_view bytes, bool at_end) {
  std::size_t used = 0;
  while (used < bytes.size()) {
    const auto newline = bytes.find('\n', used);
    if (newline == std::string_view::npos && !at_end) break;
    const std::size_t end = newline == std::string_view::npos ? bytes.size() : newline;
    if (end - used > k_max_metric_line) {
      ++m_skipped;
    } else {
      add_line(bytes.substr(used, end - used));
    }
    used = newline == std::string_view::npos ? bytes.size() : newline + 1;
  }
  return used;
}

void MetricSeriesReader::read_range(int fd, std::uint64_t end, std::uint64_t size_hint,
                                    bool at_end) {
  const std::uint64_t begin = m_offset;
  bool first_read = m_series.empty();
  // One buffer, never zeroed or grown: a chunk after the unfinished line kept at its start.
  const std::size_t capacity = k_chunk + k_max_metric_line + 1;
  const auto buffer = std::make_unique_for_overwrite<char[]>(capacity);
  std::size_t kept = 0;
  bool skipping = false;  // inside a line already over the limit
  while (m_offset + kept < end) {
    const auto want = std::min<std::uint64_t>(capacity - kept, end - (m_offset + kept));
    const ssize_t n = ::pread(fd, buffer.get() + kept, static_cast<std::size_t>(want),
                              static_cast<off_t>(m_offset + kept));
    if (n <= 0) break;
    const std::string_view bytes(buffer.get(), kept + static_cast<std::size_t>(n));
    std::size_t used = 0;
    if (skipping) {
      const auto newline = bytes.find('\n');
      if (newline == std::string_view::npos) {
        m_offset += bytes.size();
        kept = 0;
        continue;
      }
      used = newline + 1;
      skipping = false;
    }
    used += add(bytes.substr(used), false);
    if (first_read && used > 0 && m_offset + used < size_hint) {
      // A big file read from its start: room for the points still to come, in proportion to
      // what the first chunk held (growing a vector of a million points copies it again and
      // again).
      const double scale = static_cast<double>(size_hint - begin) / static_cast<double>(used);
      for (auto& [name, series] : m_series) {
        const auto expected =
            static_cast<std::size_t>(static_cast<double>(series.x.size()) * scale);
        series.x.reserve(expected + expected / 16);
        series.y.reserve(expected + expected / 16);
      }
    }
    first_read = false;
    m_offset += used;
    kept = bytes.size() - used;
    if (kept > k_max_metric_line) {  // a line with no end in sight: skipped like a long one
      ++m_skipped;
      m_offset += kept;
      kept = 0;
      skipping = true;
    } else if (kept > 0) {
      std::memmove(buffer.get(), buffer.get() + used, kept);
    }
  }
  if (at_end && !skipping && kept > 0) m_offset += add({buffer.get(), kept}, true);
}

void MetricSeriesReader::merge(MetricSeriesReader&& later) {
  // A later part counted the positions of its step-less points from 0: they follow this part's.
  std::map<const MetricSeries*, double> shift;
  for (auto& [name, series] : later.m_series) {
    shift[&series] = static_cast<double>(m_series[name].values);
  }
  for (const auto& [series, index] : later.m_positional) series->x[index] += shift[series];
  for (auto& [name, series] : later.m_series) {
    MetricSeries& mine = m_series[name];
    mine.x.insert(mine.x.end(), series.x.begin(), series.x.end());
    mine.y.insert(mine.y.end(), series.y.begin(), series.y.end());
    mine.values += series.values;
  }
  m_skipped += later.m_skipped;
  m_decisions.insert(m_decisions.end(), std::make_move_iterator(later.m_decisions.begin()),
                     std::make_move_iterator(later.m_decisions.end()));
  m_offset = later.m_offset;
}

void MetricSeriesReader::update(const std::filesystem::path& file, bool at_end) {
  const int fd = open_regular_file(file);  // a FIFO in its place is never waited on
  if (fd < 0) return;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size >= 0 && static_cast<std::uint64_t>(size) < m_offset) *this = MetricSeriesReader();
  const auto file_size = static_cast<std::uint64_t>(std::max<off_t>(size, 0));
  constexpr auto k_to_end = std::numeric_limits<std::uint64_t>::max();
  const std::size_t threads = std::min(4u, std::thread::hardware_concurrency());
  const auto starts = m_offset == 0 && threads > 1 && file_size >= k_parallel_from
                          ? line_starts(fd, file_size, threads)
                          : std::vector<std::uint64_t>{m_offset};
  // A big file read for the first time: its parts (whole lines each) on threads of their own.
  // Part k ends where part k+1 starts, the last at the end of the file; the first (this
  // reader) reserves room for the whole file, as the others are appended to it.
  std::vector<MetricSeriesReader> parts(starts.size() - 1);
  std::vector<std::exception_ptr> failures(starts.size());
  const auto read_part = [&](MetricSeriesReader& reader, std::size_t k) {
    try {
      const bool last = k + 1 == starts.size();
      reader.m_offset = starts[k];
      reader.m_track_positions = k > 0;
      reader.read_range(fd, last ? k_to_end : starts[k + 1],
                        last || k == 0 ? file_size : starts[k + 1], last && at_end);
    } catch (...) {
      failures[k] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t k = 1; k < starts.size(); ++k) {
    workers.emplace_back([&, k] { read_part(parts[k - 1], k); });
  }
  read_part(*this, 0);
  for (auto& worker : workers) worker.join();
  ::close(fd);
  for (auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  for (auto& part : parts) merge(std::move(part));
}

double furthest_step(const std::filesystem::path& metrics_file, const std::string& metric,
                     bool at_end) {
  MetricSeriesReader reader;
  reader.update(metrics_file, at_end);
  const auto found = reader.series().find(metric);
  if (found == reader.series().end() || found->second.x.empty()) return 0;
  return *std::max_element(found->second.x.begin(), found->second.x.end());
}

MetricSeries downsample(const MetricSeries& series, double from, double to, std::size_t threshold) {
  // The points in x order: the series itself when sorted (the usual case: steps only grow),
  // else an index sorted by x (stable, so equal steps keep their logged order).
  std::vector<std::size_t> order;
  std::size_t base = 0;
  std::size_t n = 0;
  if (std::is_sorted(series.x.begin(), series.x.end())) {
    const auto first = std::lower_bound(series.x.begin(), series.x.end(), from);
    const auto last = std::upper_bound(first, series.x.end(), to);
    base = static_cast<std::size_t>(first - series.x.begin());
    n = static_cast<std::size_t>(last - first);
  } else {
    order.resize(series.x.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return series.x[a] < series.x[b]; });
    const auto first = std::lower_bound(order.begin(), order.end(), from,
                                        [&](std::size_t i, double v) { return series.x[i] < v; });
    const auto last = std::upper_bound(first, order.end(), to,
                                       [&](double v, std::size_t i) { return v < series.x[i]; });
    base = static_cast<std::size_t>(first - order.begin());
    n = static_cast<std::size_t>(last - first);
  }
  const auto index = [&](std::size_t k) { return order.empty() ? base + k : order[base + k]; };
  const auto px = [&](std::size_t k) { return series.x[index(k)]; };
  const auto py = [&](std::size_t k) { return series.y[index(k)]; };
  MetricSeries out;
  out.values = series.values;
  const auto keep = [&](std::size_t k) {
    out.x.push_back(px(k));
    out.y.push_back(py(k));
  };
  threshold = std::max<std::size_t>(threshold, 3);
  if (n <= threshold) {
    for (std::size_t k = 0; k < n; ++k) keep(k);
    return out;
  }
  // Largest-Triangle-Three-Buckets (Steinarsson 2013): the first and last points, and from each
  // of threshold-2 buckets the point whose triangle with the previous pick and the next
  // bucket's mean is largest.
  const double bucket = static_cast<double>(n - 2) / static_cast<double>(threshold - 2);
  std::size_t picked = 0;
  keep(0);
  for (std::size_t b = 0; b < threshold - 2; ++b) {
    const auto begin = static_cast<std::size_t>(std::floor(b * bucket)) + 1;
    const auto end = std::min(static_cast<std::size_t>(std::floor((b + 1) * bucket)) + 1, n - 1);
    const auto next_begin = end;
    const auto next_end = std::min(static_cast<std::size_t>(std::floor((b + 2) * bucket)) + 1, n);
    double mean_x = 0;
    double mean_y = 0;
    for (std::size_t k = next_begin; k < next_end; ++k) {
      mean_x += px(k);
      mean_y += py(k);
    }
    const double count = static_cast<double>(std::max<std::size_t>(next_end - next_begin, 1));
    mean_x /= count;
    mean_y /= count;
    double best = -1;
    std::size_t best_k = begin;
    for (std::size_t k = begin; k < end; ++k) {
      const double area = std::abs((px(picked) - mean_x) * (py(k) - py(picked)) -
                                   (px(picked) - px(k)) * (mean_y - py(picked)));
      if (area > best) {
        best = area;
        best_k = k;
      }
    }
    keep(best_k);
    picked = best_k;
  }
  keep(n - 1);
  return out;
}

}  // namespace mlw
