#include "mlw/history/record.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "mlw/util/clock.hpp"
#include "mlw/util/json_text.hpp"

namespace mlw {

namespace status {
bool is_final(const std::string& value) {
  return value == k_completed || value == k_failed || value == k_canceled || value == k_lost ||
         value == k_stopped;
}
const std::vector<std::string>& all() {
  static const std::vector<std::string> values = {k_queued, k_preparing, k_running, k_completed,
                                                  k_failed, k_canceled,  k_lost,    k_stopped};
  return values;
}
}  // namespace status

std::int64_t RunRecord::duration_ms(std::int64_t now_ms) const {
  if (start_ms == 0) return 0;
  return (end_ms ? end_ms : now_ms) - start_ms;
}

nlohmann::ordered_json utc_or_null(std::int64_t ms) {
  return ms ? nlohmann::ordered_json(format_utc(ms)) : nlohmann::ordered_json();
}

namespace {
std::int64_t ms_from(const nlohmann::ordered_json& json, const char* key) {
  const auto it = json.find(std::string(key) + "_ms");
  return it != json.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}
}  // namespace

void RunRecord::mark_failed(int code, const std::string& problem, std::int64_t now_ms,
                            bool canceled) {
  status = canceled ? status::k_canceled : status::k_failed;
  exit_code = exit_code.value_or(code);
  problems.push_back(problem);
  end_ms = now_ms;
  pid = 0;
  process_group = 0;
}

void RunRecord::mark_lost(const std::string& reason, const std::string& problem) {
  status = status::k_lost;
  lost_reason = reason;
  lost_problem = problem;
  problems.push_back(problem);
}

void RunRecord::clear_lost() {
  if (!lost_problem.empty()) std::erase(problems, lost_problem);
  lost_reason.clear();
  lost_problem.clear();
}

nlohmann::ordered_json RunRecord::to_public_json(const std::string& run_folder) const {
  nlohmann::ordered_json json = to_json();
  for (const char* internal :
       {"pid", "pid_start", "boot_id", "process_group", "created_ms", "started_ms", "ended_ms",
        "cancel_requested", "lost_reason", "lost_problem"}) {
    json.erase(internal);
  }
  json["run_folder"] = run_folder;
  return json;
}

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
      {"created", utc_or_null(created_ms)},
      {"started", utc_or_null(start_ms)},
      {"ended", utc_or_null(end_ms)},
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
      {"params", params},
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
  if (!job_id.empty()) out["job_id"] = job_id;  // batch jobs only (slurm, sge)
  if (!sweep_id.empty()) {
    out["sweep_id"] = sweep_id;
    out["point"] = point;
  }
  if (!gpus.empty()) out["gpus"] = gpus;                              // leased runs only
  if (system.is_object() && !system.empty()) out["system"] = system;  // sampled runs only
  if (!data.empty()) {
    nlohmann::ordered_json sets = nlohmann::ordered_json::array();
    for (const auto& use : data) {
      sets.push_back(
          {{"name", use.name}, {"version", use.version}, {"id", use.id}, {"mount", use.mount}});
    }
    out["data"] = sets;
  }
  if (!rerun_of.empty()) out["rerun_of"] = rerun_of;
  if (!kernel.empty()) {  // notebook cells only
    out["notebook"] = notebook;
    out["cell"] = cell;
    out["kernel"] = kernel;
  }
  if (restarts > 0) out["restarts"] = restarts;
  if (!lost_reason.empty()) {
    out["lost_reason"] = lost_reason;
    out["lost_problem"] = lost_problem;
  }
  if (!node_exit_codes.empty()) {
    nlohmann::ordered_json codes = nlohmann::ordered_json::array();
    for (const auto& code : node_exit_codes) {
      codes.push_back(code ? nlohmann::ordered_json(*code) : nlohmann::ordered_json());
    }
    out["node_exit_codes"] = codes;
  }
  make_json_safe(out);  // a name or an argument that is not UTF-8 is kept, byte for byte
  return out;
}

RunRecord RunRecord::from_json(const nlohmann::ordered_json& json) {
  RunRecord r;
  if (!json.is_object()) return r;  // a damaged run.json: every field keeps its default
  // A number of the wrong kind (a hand edit, another version) is its default, never an
  // exception.
  auto integer = [&](const char* key) -> std::int64_t {
    const auto it = json.find(key);
    if (it == json.end() || !it->is_number_integer()) return 0;
    return it->is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                          it->get<std::uint64_t>(), INT64_MAX))
                                    : it->get<std::int64_t>();
  };
  auto small = [&](const char* key) {
    return static_cast<int>(std::clamp<std::int64_t>(integer(key), INT32_MIN, INT32_MAX));
  };
  auto str = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? text_from_json(it->get<std::string>())
                                               : std::string();
  };
  auto strings = [&](const char* key) {
    std::vector<std::string> out;
    const auto it = json.find(key);
    if (it == json.end() || !it->is_array()) return out;
    for (const auto& item : *it) {
      if (item.is_string()) out.push_back(text_from_json(item.get<std::string>()));
    }
    return out;
  };
  r.run_id = str("run_id");
  r.run_number = integer("run_number");
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
  if (json.contains("exit_code") && json["exit_code"].is_number_integer()) {
    r.exit_code = small("exit_code");
  }
  r.user = str("user");
  r.host = str("host");
  r.git_commit = str("git_commit");
  if (json.contains("git_dirty") && json["git_dirty"].is_boolean()) {
    r.git_dirty = json["git_dirty"].get<bool>();
  }
  r.snapshot_hash = str("snapshot_hash");
  r.snapshot_files =
      static_cast<std::uint64_t>(std::max<std::int64_t>(integer("snapshot_files"), 0));
  r.snapshot_bytes =
      static_cast<std::uint64_t>(std::max<std::int64_t>(integer("snapshot_bytes"), 0));
  r.image_tag = str("image_tag");
  // Nested no deeper than metrics.jsonl allows (copying recurses).
  if (json.contains("metrics") && json["metrics"].is_object() &&
      json_depth(json["metrics"]) <= 40) {
    r.metrics = json["metrics"];
  }
  if (const auto given = json.find("params"); given != json.end() && given->is_object()) {
    for (const auto& [name, value] : given->items()) {
      if (value.is_primitive() && !value.is_null()) r.params[name] = value;
    }
  }
  r.sweep_id = str("sweep_id");
  r.rerun_of = str("rerun_of");
  r.kernel = str("kernel");
  if (!r.kernel.empty()) {
    r.notebook = str("notebook");
    r.cell = std::max(0, small("cell"));
  }
  r.restarts = std::max(0, small("restarts"));
  if (!r.sweep_id.empty()) r.point = small("point");
  r.outputs = strings("outputs");
  r.problems = strings("problems");
  r.pid = small("pid");
  r.process_group = small("process_group");
  r.job_id = str("job_id");
  if (const auto leased = json.find("gpus"); leased != json.end() && leased->is_array()) {
    for (const auto& gpu : *leased) {
      if (gpu.is_number_integer() && gpu.get<std::int64_t>() >= 0 &&
          gpu.get<std::int64_t>() < 1024) {
        r.gpus.push_back(static_cast<int>(gpu.get<std::int64_t>()));
      }
    }
  }
  if (const auto use = json.find("system"); use != json.end() && use->is_object()) {
    r.system = *use;
  }
  if (const auto sets = json.find("data"); sets != json.end() && sets->is_array()) {
    for (const auto& set : *sets) {
      if (!set.is_object() || !set.contains("name") || !set["name"].is_string()) continue;
      DataUse use;
      use.name = set["name"].get<std::string>();
      use.version = set.value("version", 0);
      use.id = set.value("id", "");
      use.mount = set.value("mount", "");
      r.data.push_back(std::move(use));
    }
  }
  r.lost_reason = str("lost_reason");
  r.lost_problem = str("lost_problem");
  if (const auto codes = json.find("node_exit_codes"); codes != json.end() && codes->is_array()) {
    for (const auto& code : *codes) {
      r.node_exit_codes.push_back(
          code.is_number_integer()
              ? std::optional<int>(std::clamp<std::int64_t>(code.get<std::int64_t>(), -1, 255))
              : std::nullopt);
    }
  }
  r.pid_start = static_cast<unsigned long long>(std::max<std::int64_t>(integer("pid_start"), 0));
  r.boot_id = str("boot_id");
  const auto cancel = json.find("cancel_requested");
  r.cancel_requested = cancel != json.end() && cancel->is_boolean() && cancel->get<bool>();
  return r;
}

}  // namespace mlw
