#include "mlw/history/collect.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

std::map<std::string, std::vector<nlohmann::ordered_json>> read_metric_series(
    const fs::path& metrics_file) {
  std::map<std::string, std::vector<nlohmann::ordered_json>> series;
  auto text = read_file_if_exists(metrics_file);
  if (!text) return series;
  for (const auto& line : split(*text, '\n')) {
    if (trim(line).empty()) continue;
    auto json = nlohmann::ordered_json::parse(line, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("name") ||
        !json["name"].is_string() || !json.contains("value")) {
      continue;
    }
    series[json["name"].get<std::string>()].push_back(json["value"]);
  }
  return series;
}

nlohmann::ordered_json last_metric_values(const fs::path& metrics_file) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, values] : read_metric_series(metrics_file)) out[name] = values.back();
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
