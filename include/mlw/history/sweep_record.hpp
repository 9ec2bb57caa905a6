#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// One point of a sweep: its parameters and the run that holds it now (a resumed point gets a
/// new run; the earlier ones are kept in `earlier_runs`).
struct SweepPoint {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::string run_id;
  std::vector<std::string> earlier_runs;
};

/// A sweep (`.mlw/sweeps/<sweep_id>/sweep.json`): what was asked, its points and their runs,
/// and the process that launches them (its supervisor) while it lives.
struct SweepRecord {
  std::string sweep_id;
  std::string project;
  std::string script;
  std::vector<std::string> arguments;  ///< the arguments every point shares
  std::vector<std::string> targets;    ///< the run configurations its points are spread over
  nlohmann::ordered_json spec;         ///< the definition (SweepSpec::to_json)
  std::vector<SweepPoint> points;
  std::int64_t created_ms = 0;
  std::string user;
  std::string host;
  int pid = 0;  ///< the supervisor's (0: none)
  unsigned long long pid_start = 0;
  std::string boot_id;

  /// The runs that hold the points now (not those a resume replaced): run id -> point index.
  std::map<std::string, int> current_runs() const;
  /// The record as sweep.json holds it.
  nlohmann::ordered_json to_json() const;
  /// Reads sweep.json's JSON (missing or wrong keys keep their defaults).
  static SweepRecord from_json(const nlohmann::ordered_json& json);
};

/// The folder of a sweep.
std::filesystem::path sweep_dir(const std::filesystem::path& state_dir, const std::string& id);
/// True when `id` names a sweep of this project.
bool sweep_exists(const std::filesystem::path& state_dir, const std::string& id);
/// The sweep's record; throws mlw::NotFoundError (with near ids) when there is none.
SweepRecord load_sweep(const std::filesystem::path& state_dir, const std::string& id);
/// Writes the sweep's record atomically (`durable`: fsync).
void save_sweep(const std::filesystem::path& state_dir, const SweepRecord& sweep,
                bool durable = true);
/// True while the sweep's supervisor process lives (on this machine, this boot).
bool sweep_owner_alive(const SweepRecord& sweep);

}  // namespace mlw
