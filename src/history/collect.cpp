#include "mlw/history/collect.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "mlw/history/params.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr int k_max_metric_depth = 32;

/// True when the JSON text nests arrays and objects no deeper than k_max_metric_depth (checked
/// before parsing, so that no parser or copy recurses deeper).
bool shallow_enough(std::string_view line) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > k_max_metric_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

/// One line of a metrics file: {"name": string, "value": any, ...}, else false.
bool visit_line(std::string_view line, const MetricVisitor& visit, const ParamVisitor& params) {
  if (trim(line).empty()) return true;
  auto json = parse_metric_object(line);
  if (!json) {
    auto param = parse_param_line(line);
    if (param && params) params(param->first, std::move(param->second));
    return param.has_value() || parse_decision_line(line).has_value();
  }
  visit((*json)["name"].get<std::string>(), std::move((*json)["value"]));
  return true;
}

}  // namespace

std::optional<TrialDecision> parse_decision_line(std::string_view line) {
  if (line.find("\"decision\"") == std::string_view::npos || !shallow_enough(line))
    return std::nullopt;
  const auto json = nlohmann::ordered_json::parse(line, nullptr, false);
  if (json.is_discarded() || !json.is_object() || json.contains("name")) return std::nullopt;
  const auto text = json.find("decision");
  const auto verdict = json.find("verdict");
  if (text == json.end() || !text->is_string() || verdict == json.end() || !verdict->is_string())
    return std::nullopt;
  const auto time = json.find("time");
  TrialDecision out{text->get<std::string>(), verdict->get<std::string>(),
                    time != json.end() && time->is_number() ? time->get<double>() : 0, nullptr};
  if (const auto point = json.find("proposal");
      out.verdict == k_proposal_verdict && point != json.end() && point->is_object())
    out.proposal = *point;
  return out;
}

std::vector<TrialDecision> read_decisions(const fs::path& metrics_file) {
  std::vector<TrialDecision> out;
  for_each_metric_line(
      metrics_file,
      [&](std::string_view line) {
        if (auto decision = parse_decision_line(line)) out.push_back(std::move(*decision));
      },
      [] {});
  return out;
}

std::optional<nlohmann::ordered_json> parse_metric_object(std::string_view line) {
  if (!shallow_enough(line)) return std::nullopt;
  auto json = nlohmann::ordered_json::parse(line, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("name") ||
      !json["name"].is_string() || !json.contains("value")) {
    return std::nullopt;
  }
  return json;
}

void for_each_metric_line(const fs::path& metrics_file,
                          const std::function<void(std::string_view line)>& line_of,
                          const std::function<void()>& too_long_line) {
  // Only a regular file is read: a FIFO in its place would block for ever.
  const int fd = open_regular_file(metrics_file);
  if (fd < 0) return;
  std::FILE* file = ::fdopen(fd, "rb");
  if (!file) {
    ::close(fd);
    return;
  }
  std::string line;
  bool too_long = false;
  char buffer[65536];
  auto end_line = [&] {
    if (too_long) {
      too_long_line();
    } else {
      line_of(line);
    }
    line.clear();
    too_long = false;
  };
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, file)) {
    std::string_view chunk(buffer, n);
    while (!chunk.empty()) {
      const auto newline = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, newline);
      if (!too_long && line.size() + piece.size() > k_max_metric_line) {
        too_long = true;
        line.clear();
      }
      if (!too_long) line.append(piece);
      if (newline == std::string_view::npos) break;
      end_line();
      chunk.remove_prefix(newline + 1);
    }
  }
  std::fclose(file);
  if (!line.empty() || too_long) end_line();
}

std::size_t for_each_metric(const fs::path& metrics_file, const MetricVisitor& visit,
                            const ParamVisitor& params) {
  std::size_t skipped = 0;
  for_each_metric_line(
      metrics_file,
      [&](std::string_view line) {
        if (!visit_line(line, visit, params)) ++skipped;
      },
      [&] { ++skipped; });
  return skipped;
}

std::map<std::string, std::vector<nlohmann::ordered_json>> read_metric_series(
    const fs::path& metrics_file, std::size_t* skipped) {
  std::map<std::string, std::vector<nlohmann::ordered_json>> series;
  const std::size_t bad =
      for_each_metric(metrics_file, [&](const std::string& name, nlohmann::ordered_json value) {
        series[name].push_back(std::move(value));
      });
  if (skipped) *skipped = bad;
  return series;
}

nlohmann::ordered_json last_metric_values(const fs::path& metrics_file,
                                          std::vector<std::string>* problems) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  const std::size_t bad = for_each_metric(
      metrics_file,
      [&](const std::string& name, nlohmann::ordered_json value) { out[name] = std::move(value); });
  if (bad > 0 && problems) {
    problems->push_back(fmt::format(
        "metrics.jsonl: {} line{} skipped (each must be one JSON object with \"name\" and "
        "\"value\", at most 1 MiB, nested at most {} deep)",
        bad, bad == 1 ? "" : "s", k_max_metric_depth));
  }
  return out;
}

namespace {
void list_files(const fs::path& root, const fs::path& folder, std::vector<std::string>& files,
                std::vector<std::string>& problems) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    struct stat info {};
    if (::lstat(entry.path().c_str(), &info) != 0) continue;
    const std::string relative = entry.path().lexically_relative(root).string();
    if (S_ISDIR(info.st_mode)) {
      list_files(root, entry.path(), files, problems);
    } else if (S_ISREG(info.st_mode)) {
      files.push_back(relative);
    } else {
      problems.push_back("outputs/" + relative + " is not a regular file; it was not collected");
      fs::remove(entry.path(), ec);
    }
  }
}
}  // namespace

std::vector<std::string> collect_outputs(const fs::path& source, const fs::path& destination,
                                         std::vector<std::string>& problems) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(source, ec) || fs::is_symlink(source, ec)) return files;
  if (std::rename(source.c_str(), destination.c_str()) != 0) {
    fs::copy(source, destination, fs::copy_options::recursive, ec);
    if (ec) {
      problems.push_back("outputs could not be collected: " + ec.message());
      return files;
    }
  }
  list_files(destination, destination, files, problems);
  std::sort(files.begin(), files.end());
  return files;
}

std::string sparkline(const std::vector<nlohmann::ordered_json>& values, std::size_t width) {
  static const char* k_bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::vector<double> numbers;
  for (const auto& value : values) {
    if (value.is_number()) numbers.push_back(value.get<double>());
  }
  if (numbers.size() > width) {
    std::vector<double> sampled;
    for (std::size_t i = 0; i < width; ++i) sampled.push_back(numbers[i * numbers.size() / width]);
    sampled.back() = numbers.back();
    numbers = std::move(sampled);
  }
  if (numbers.empty()) return "";
  const auto [low, high] = std::minmax_element(numbers.begin(), numbers.end());
  std::string out;
  for (double x : numbers) {
    const double span = *high - *low;
    const int index = span > 0 ? static_cast<int>((x - *low) / span * 7.0 + 0.5) : 3;
    out += k_bars[std::clamp(index, 0, 7)];
  }
  return out;
}

}  // namespace mlw
