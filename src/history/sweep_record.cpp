#include "mlw/history/sweep_record.hpp"

#include <fmt/format.h>

#include "mlw/history/record.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/process.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

std::map<std::string, int> SweepRecord::current_runs() const {
  std::map<std::string, int> runs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!points[i].run_id.empty()) runs[points[i].run_id] = static_cast<int>(i);
  }
  return runs;
}

nlohmann::ordered_json SweepRecord::to_json() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < points.size(); ++i) {
    nlohmann::ordered_json point = {
        {"point", i}, {"params", points[i].params}, {"run_id", points[i].run_id}};
    if (!points[i].earlier_runs.empty()) point["earlier_runs"] = points[i].earlier_runs;
    list.push_back(std::move(point));
  }
  nlohmann::ordered_json out = {{"sweep_id", sweep_id},
                                {"project", project},
                                {"script", script},
                                {"arguments", arguments},
                                {"targets", targets},
                                {"spec", spec},
                                {"created", utc_or_null(created_ms)},
                                {"created_ms", created_ms},
                                {"user", user},
                                {"host", host},
                                {"pid", pid},
                                {"pid_start", pid_start},
                                {"boot_id", boot_id},
                                {"points", list}};
  make_json_safe(out);
  return out;
}

SweepRecord SweepRecord::from_json(const nlohmann::ordered_json& json) {
  SweepRecord r;
  if (!json.is_object()) return r;
  const auto str = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? text_from_json(it->get<std::string>())
                                               : std::string();
  };
  const auto strings = [](const nlohmann::ordered_json& list) {
    std::vector<std::string> out;
    if (!list.is_array()) return out;
    for (const auto& item : list) {
      if (item.is_string()) out.push_back(text_from_json(item.get<std::string>()));
    }
    return out;
  };
  const auto integer = [&](const char* key) -> std::int64_t {
    const auto it = json.find(key);
    return it != json.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  r.sweep_id = str("sweep_id");
  r.project = str("project");
  r.script = str("script");
  if (json.contains("arguments")) r.arguments = strings(json["arguments"]);
  if (json.contains("targets")) r.targets = strings(json["targets"]);
  if (json.contains("spec") && json["spec"].is_object()) r.spec = json["spec"];
  r.created_ms = integer("created_ms");
  r.user = str("user");
  r.host = str("host");
  r.pid = static_cast<int>(integer("pid"));
  r.pid_start = static_cast<unsigned long long>(std::max<std::int64_t>(integer("pid_start"), 0));
  r.boot_id = str("boot_id");
  if (const auto points = json.find("points"); points != json.end() && points->is_array()) {
    for (const auto& item : *points) {
      SweepPoint point;
      if (!item.is_object()) continue;
      if (item.contains("params") && item["params"].is_object()) point.params = item["params"];
      if (item.contains("run_id") && item["run_id"].is_string()) {
        point.run_id = text_from_json(item["run_id"].get<std::string>());
      }
      if (item.contains("earlier_runs")) point.earlier_runs = strings(item["earlier_runs"]);
      r.points.push_back(std::move(point));
    }
  }
  return r;
}

std::filesystem::path sweep_dir(const std::filesystem::path& state_dir, const std::string& id) {
  return state_dir / "sweeps" / id;
}

bool sweep_exists(const std::filesystem::path& state_dir, const std::string& id) {
  if (id.empty() || id.find('/') != std::string::npos || id[0] == '.') return false;
  std::error_code ec;
  return fs::is_regular_file(sweep_dir(state_dir, id) / "sweep.json", ec);
}

SweepRecord load_sweep(const std::filesystem::path& state_dir, const std::string& id) {
  if (!sweep_exists(state_dir, id)) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(state_dir / "sweeps", ec)) {
      ids.push_back(entry.path().filename().string());
    }
    throw NotFoundError(
        fmt::format("no sweep \"{}\" in this project{}", id, did_you_mean(id, ids)));
  }
  const auto json = nlohmann::ordered_json::parse(
      read_file(sweep_dir(state_dir, id) / "sweep.json"), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw Error(
        fmt::format("the record of sweep {} (.mlw/sweeps/{}/sweep.json) is damaged", id, id));
  }
  return SweepRecord::from_json(json);
}

void save_sweep(const std::filesystem::path& state_dir, const SweepRecord& sweep, bool durable) {
  const auto dir = sweep_dir(state_dir, sweep.sweep_id);
  make_directories(dir);
  atomic_write_file(dir / "sweep.json", sweep.to_json().dump(1) + "\n", 0644, durable);
}

bool sweep_owner_alive(const SweepRecord& sweep) {
  if (sweep.pid <= 0 || sweep.boot_id != boot_id() || sweep.host != host_name()) return false;
  const auto started = process_start_time(sweep.pid);
  return started && (sweep.pid_start == 0 || *started == sweep.pid_start);
}

}  // namespace mlw
