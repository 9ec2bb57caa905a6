// The dashboard's metric series (mlw history ui): the flat-line fast path must agree with the
// full JSON parser on every line it accepts or refuses outright; reading a file in two parts
// must give what reading it whole gives (metrics and a sweep trial's decisions); LTTB keeps at
// most its threshold of points.
#include <cstdlib>

#include "fuzz_util.hpp"
#include "mlw/history/collect.hpp"
#include "mlw/history/series.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

/// One line through both parsers: the fast path's answer (1 or 0) must be the full parser's.
void compare_parsers(std::string_view line) {
  std::string_view name;
  bool numeric = false;
  bool has_step = false;
  double value = 0;
  double step = 0;
  const int flat = mlw::parse_flat_metric_line(line, name, numeric, value, has_step, step);
  if (flat < 0) return;  // the full parser decides
  const auto json = mlw::parse_metric_object(line);
  if (flat == 0) {
    require(!json);
    return;
  }
  require(json.has_value());
  require((*json)["name"].get<std::string>() == name);
  const auto& v = (*json)["value"];
  require(v.is_number() == numeric);
  if (numeric) require(v.get<double>() == value);
  const bool full_step = json->contains("step") && (*json)["step"].is_number();
  require(full_step == has_step);
  if (has_step) require((*json)["step"].get<double>() == step);
}

bool same(const mlw::MetricSeriesReader& a, const mlw::MetricSeriesReader& b) {
  if (a.skipped() != b.skipped() || a.series().size() != b.series().size()) return false;
  if (a.decisions().size() != b.decisions().size()) return false;
  for (std::size_t i = 0; i < a.decisions().size(); ++i) {
    if (a.decisions()[i].text != b.decisions()[i].text) return false;
  }
  for (const auto& [name, series] : a.series()) {
    const auto other = b.series().find(name);
    if (other == b.series().end() || other->second.values != series.values) return false;
    if (other->second.x != series.x || other->second.y != series.y) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = mlw::fuzz::text(data, size);
  for (std::size_t at = 0; at <= input.size();) {
    const auto newline = input.find('\n', at);
    const auto end = newline == std::string_view::npos ? input.size() : newline;
    compare_parsers(input.substr(at, end - at));
    at = end + 1;
  }
  mlw::MetricSeriesReader whole;
  require(whole.add(input, true) == input.size());
  // In two parts, as a running run's file is read: the first part's last partial line waits.
  const std::size_t cut = size ? data[0] * size / 256 : 0;
  mlw::MetricSeriesReader parts;
  const std::size_t used = parts.add(input.substr(0, cut), false);
  require(used <= cut);
  parts.add(input.substr(used), true);
  require(same(whole, parts));
  const std::size_t threshold = size > 1 ? data[1] % 64 : 3;
  for (const auto& [name, series] : whole.series()) {
    const auto shown = mlw::downsample(series, -1e300, 1e300, threshold);
    require(shown.x.size() == shown.y.size());
    require(shown.x.size() <= std::max<std::size_t>(threshold, 3));
  }
  return 0;
}
