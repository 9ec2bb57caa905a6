// Metric series for charts: an incremental reader with a fast path for flat lines, and LTTB.
#include "mlw/history/series.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "mlw/history/collect.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr std::size_t k_max_line = 1024 * 1024;  // as for_each_metric
constexpr std::size_t k_chunk = 4 * 1024 * 1024;

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
  /// A number as JSON writes it (RFC 8259 grammar); false for anything else.
  bool number(double& out) {
    const std::size_t start = at;
    const auto digits = [&] {
      const std::size_t from = at;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
      return at > from;
    };
    if (at < text.size() && text[at] == '-') ++at;
    if (at < text.size() && text[at] == '0') {
      ++at;
    } else if (!digits()) {
      return false;
    }
    if (at < text.size() && text[at] == '.') {
      ++at;
      if (!digits()) return false;
    }
    if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
      ++at;
      if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
      if (!digits()) return false;
    }
    const auto result = std::from_chars(text.data() + start, text.data() + at, out);
    return result.ec == std::errc() && result.ptr == text.data() + at && std::isfinite(out);
  }
  bool literal(std::string_view word) {
    if (text.substr(at, word.size()) != word) return false;
    at += word.size();
    return true;
  }
};

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
      if (!cursor.number(number)) return -1;
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
    ++m_skipped;
    return;
  }
  if (flat < 0) {
    auto json = parse_metric_object(line);
    if (!json) {
      ++m_skipped;
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
  auto found = m_series.find(name);
  if (found == m_series.end()) found = m_series.emplace(std::string(name), MetricSeries{}).first;
  MetricSeries& series = found->second;
  if (numeric) {
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
    if (end - used > k_max_line) {
      ++m_skipped;
    } else {
      add_line(bytes.substr(used, end - used));
    }
    used = newline == std::string_view::npos ? bytes.size() : newline + 1;
  }
  return used;
}

void MetricSeriesReader::update(const std::filesystem::path& file, bool at_end) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size >= 0 && static_cast<std::uint64_t>(size) < m_offset) *this = MetricSeriesReader();
  std::string buffer;
  bool skipping = false;  // inside a line already over the limit
  while (true) {
    const std::size_t kept = buffer.size();
    buffer.resize(kept + k_chunk);
    const ssize_t n =
        ::pread(fd, buffer.data() + kept, k_chunk, static_cast<off_t>(m_offset + kept));
    buffer.resize(kept + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n <= 0) break;
    std::size_t used = 0;
    if (skipping) {
      const auto newline = buffer.find('\n');
      if (newline == std::string::npos) {
        m_offset += buffer.size();
        buffer.clear();
        continue;
      }
      used = newline + 1;
      skipping = false;
    }
    used += add(std::string_view(buffer).substr(used), false);
    m_offset += used;
    buffer.erase(0, used);
    if (buffer.size() > k_max_line) {  // a line with no end in sight: skipped like a long one
      ++m_skipped;
      m_offset += buffer.size();
      buffer.clear();
      skipping = true;
    }
  }
  if (at_end && !skipping && !buffer.empty()) m_offset += add(buffer, true);
  ::close(fd);
}

MetricSeries downsample(const MetricSeries& series, double from, double to, std::size_t threshold) {
  std::vector<std::size_t> order(series.x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!std::is_sorted(series.x.begin(), series.x.end())) {
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return series.x[a] < series.x[b]; });
  }
  const auto first = std::lower_bound(order.begin(), order.end(), from,
                                      [&](std::size_t i, double v) { return series.x[i] < v; });
  const auto last = std::upper_bound(first, order.end(), to,
                                     [&](double v, std::size_t i) { return v < series.x[i]; });
  const std::size_t n = static_cast<std::size_t>(last - first);
  MetricSeries out;
  out.values = series.values;
  const auto keep = [&](std::size_t k) {
    out.x.push_back(series.x[*(first + static_cast<std::ptrdiff_t>(k))]);
    out.y.push_back(series.y[*(first + static_cast<std::ptrdiff_t>(k))]);
  };
  threshold = std::max<std::size_t>(threshold, 3);
  if (n <= threshold) {
    for (std::size_t k = 0; k < n; ++k) keep(k);
    return out;
  }
  const auto px = [&](std::size_t k) {
    return series.x[*(first + static_cast<std::ptrdiff_t>(k))];
  };
  const auto py = [&](std::size_t k) {
    return series.y[*(first + static_cast<std::ptrdiff_t>(k))];
  };
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
