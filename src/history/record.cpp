#include "mlw/history/record.hpp"

#include <algorithm>

#include "mlw/util/clock.hpp"

namespace mlw {

namespace status {
bool is_final(const std::string& value) {
  return value == k_completed || value == k_failed || value == k_canceled || value == k_lost;
}
const std::vector<std::string>& all() {
  static const std::vector<std::string> values = {k_queued, k_preparing, k_running, k_completed,
                                                  k_failed, k_canceled,  k_lost};
  return values;
}
}  // namespace status

std::int64_t RunRecord::duration_ms(std::int64_t now_ms) const {
  if (start_ms == 0) return 0;
  return (end_ms ? end_ms : now_ms) - start_ms;
}

namespace {
nlohmann::ordered_json time_or_null(std::int64_t ms) {
  return ms ? nlohmann::ordered_json(format_utc(ms)) : nlohmann::ordered_json();
}
std::int64_t ms_from(const nlohmann::ordered_json& json, const char* key) {
  const auto it = json.find(std::string(key) + "_ms");
  return it != json.end() && it->is_number() ? it->get<std::int64_t>() : 0;
}
}  // namespace

nlohmann::ordered_json RunRecord::to_json() const {
  nlohmann::ordered_json out = {
      {"run_id", run_id},
      {"run_number", run_number},
      {"project", project},
      {"script", script},
      {"arguments", arguments},
      {"command", command},
      {"run_config", run_config},
      {"target", target},
      {"target_type", target_type},
      {"status", status},
      {"created", time_or_null(created_ms)},
      {"started", time_or_null(start_ms)},
      {"ended", time_or_null(end_ms)},
      {"duration_s", end_ms && start_ms ? nlohmann::ordered_json((end_ms - start_ms) / 1000.0)
                                        : nlohmann::ordered_json()},
      {"exit_code", exit_code ? nlohmann::ordered_json(*exit_code) : nlohmann::ordered_json()},
      {"user", user},
      {"host", host},
      {"git_commit",
       git_commit.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(git_commit)},
      {"git_dirty", git_dirty ? nlohmann::ordered_json(*git_dirty) : nlohmann::ordered_json()},
      {"snapshot_hash", snapshot_hash},
      {"snapshot_files", snapshot_files},
      {"snapshot_bytes", snapshot_bytes},
      {"image_tag",
       image_tag.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(image_tag)},
      {"metrics", metrics},
      {"outputs", outputs},
      {"problems", problems},
      {"created_ms", created_ms},
      {"started_ms", start_ms},
      {"ended_ms", end_ms},
      {"pid", pid},
      {"process_group", process_group},
      {"pid_start", pid_start},
      {"boot_id", boot_id},
      {"cancel_requested", cancel_requested},
  };
  if (!job_id.empty()) out["job_id"] = job_id;  // slurm runs only
  return out;
}

RunRecord RunRecord::from_json(const nlohmann::ordered_json& json) {
  RunRecord r;
  auto str = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto strings = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_array() ? it->get<std::vector<std::string>>()
                                              : std::vector<std::string>();
  };
  r.run_id = str("run_id");
  r.run_number = json.value("run_number", std::int64_t{0});
  r.project = str("project");
  r.script = str("script");
  r.arguments = strings("arguments");
  r.command = strings("command");
  r.run_config = str("run_config");
  r.target = str("target");
  r.target_type = str("target_type");
  r.status = str("status");
  r.created_ms = ms_from(json, "created");
  r.start_ms = ms_from(json, "started");
  r.end_ms = ms_from(json, "ended");
  if (json.contains("exit_code") && json["exit_code"].is_number()) {
    r.exit_code = json["exit_code"].get<int>();
  }
  r.user = str("user");
  r.host = str("host");
  r.git_commit = str("git_commit");
  if (json.contains("git_dirty") && json["git_dirty"].is_boolean()) {
    r.git_dirty = json["git_dirty"].get<bool>();
  }
  r.snapshot_hash = str("snapshot_hash");
  r.snapshot_files = json.value("snapshot_files", std::uint64_t{0});
  r.snapshot_bytes = json.value("snapshot_bytes", std::uint64_t{0});
  r.image_tag = str("image_tag");
  if (json.contains("metrics") && json["metrics"].is_object()) r.metrics = json["metrics"];
  r.outputs = strings("outputs");
  r.problems = strings("problems");
  r.pid = json.value("pid", 0);
  r.process_group = json.value("process_group", 0);
  r.job_id = json.value("job_id", "");
  r.pid_start = json.value("pid_start", 0ULL);
  r.boot_id = str("boot_id");
  r.cancel_requested = json.value("cancel_requested", false);
  return r;
}

}  // namespace mlw
