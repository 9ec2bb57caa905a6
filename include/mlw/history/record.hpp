#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// A time as the output schema writes it: ISO 8601 UTC, or null for 0 (not yet).
nlohmann::ordered_json utc_or_null(std::int64_t ms);

/// Run statuses (spec §5).
namespace status {
inline constexpr const char* k_queued = "Queued";
inline constexpr const char* k_preparing = "Preparing";
inline constexpr const char* k_running = "Running";
inline constexpr const char* k_completed = "Completed";
inline constexpr const char* k_failed = "Failed";
inline constexpr const char* k_canceled = "Canceled";
inline constexpr const char* k_lost = "Lost";
/// Ended early by a sweep's early-stopping rule (docs/sweeps.md): not a failure.
inline constexpr const char* k_stopped = "Stopped";
/// True for Completed, Failed, Canceled, Lost and Stopped.
bool is_final(const std::string& status);
/// Every status, for validation and "did you mean".
const std::vector<std::string>& all();
}  // namespace status

/// Why a run is Lost: what stopped answering (a typed reason, never a sentence to parse).
namespace lost_reason {
inline constexpr const char* k_supervisor = "supervisor";  ///< its supervisor process is gone
inline constexpr const char* k_slurm = "slurm";    ///< the Slurm controller stopped answering
inline constexpr const char* k_engine = "engine";  ///< the Docker engine stopped answering
}  // namespace lost_reason

/// A version of a data set a run mounts (docs/data.md).
struct DataUse {
  std::string name;
  int version = 0;
  std::string id;     ///< the version's manifest hash
  std::string mount;  ///< where containers see it
  /// `NAME@VERSION`.
  std::string label() const { return name + "@" + std::to_string(version); }
};

/// Everything recorded about one run (`.mlw/runs/<run_id>/run.json`).
struct RunRecord {
  std::string run_id;
  std::int64_t run_number = 0;
  std::string project;
  std::string script;
  std::vector<std::string> arguments;  ///< the submit arguments after the script
  std::vector<std::string> command;    ///< the full argv that ran
  std::string run_config;
  std::string target;
  std::string target_type;
  std::string status = status::k_queued;
  std::int64_t created_ms = 0;
  std::int64_t start_ms = 0;  ///< 0 until started
  std::int64_t end_ms = 0;    ///< 0 until ended
  std::optional<int> exit_code;
  std::string user;
  std::string host;
  std::string git_commit;
  std::optional<bool> git_dirty;
  std::string snapshot_hash;
  std::uint64_t snapshot_files = 0;
  std::uint64_t snapshot_bytes = 0;
  std::string image_tag;
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();  ///< name -> last value
  /// name -> value: parsed from the arguments, then what the script logged (docs/sweeps.md).
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::string sweep_id;  ///< the sweep the run is a point of (empty: none)
  int point = -1;        ///< its point's index in the sweep
  std::string rerun_of;  ///< the run this one reran (empty: none)
  std::string notebook;  ///< a notebook cell's run: the notebook (`mlw notebook`; empty: none)
  int cell = 0;          ///< … its execution count in the kernel
  std::string kernel;    ///< … the kernel's own run
  int restarts = 0;      ///< times its restart policy ran the script again
  std::vector<std::string> outputs;   ///< relative paths under outputs/
  std::vector<std::string> problems;  ///< what went wrong around the run (e.g. disk full)
  int pid = 0;                        ///< the supervisor's pid while the run is live
  int process_group = 0;              ///< the script's process group (local runs)
  unsigned long long pid_start = 0;   ///< its start time, to tell a reused pid apart
  std::string boot_id;
  bool cancel_requested = false;
  std::string job_id;     ///< the batch system's job id (slurm, sge)
  std::vector<int> gpus;  ///< the GPU indexes leased to the run (gpusPerRun; docs/gpus.md)
  /// What its GPU sampler recorded (SystemUse::to_json; {} where nothing was sampled).
  nlohmann::ordered_json system = nlohmann::ordered_json::object();
  std::vector<DataUse> data;  ///< the data sets' versions it mounts
  /// Each node's exit code, by rank (multi-node batch jobs; none for a rank the system stopped).
  std::vector<std::optional<int>> node_exit_codes;
  /// Why the run is Lost (lost_reason::…; empty while it is not), and the problem that says so
  /// (removed when a new supervisor takes the run over).
  std::string lost_reason;
  std::string lost_problem;

  /// The run failed (`canceled`: it was being canceled, so Canceled) with `code` and
  /// `problem`, ending at `now_ms` with no owner: the one way a failure is recorded. A code
  /// already recorded (the script's) is kept.
  void mark_failed(int code, const std::string& problem, std::int64_t now_ms,
                   bool canceled = false);
  /// Records the run as Lost for `reason`, with `problem` (what to tell the user).
  void mark_lost(const std::string& reason, const std::string& problem);
  /// A new supervisor takes the run over: the Lost reason and its problem are gone.
  void clear_lost();

  /// Duration in milliseconds (to now for a live run, given `now_ms`).
  std::int64_t duration_ms(std::int64_t now_ms) const;
  /// The record as the JSON of run.json.
  nlohmann::ordered_json to_json() const;
  /// The record as users' scripts read it (`history info -o json`, `submit -o json`): run.json
  /// without the supervisor's bookkeeping (pids, boot id, millisecond times), with `run_folder`.
  nlohmann::ordered_json to_public_json(const std::string& run_folder) const;
  /// Reads a record from JSON (missing keys keep their defaults).
  static RunRecord from_json(const nlohmann::ordered_json& json);
};

}  // namespace mlw
