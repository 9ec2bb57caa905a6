#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mlw/config/gpu_watch.hpp"
#include "mlw/config/keys.hpp"

namespace mlw {

/// The compute key `restart` (docs/reproduce.md): the run's own process on the target runs the
/// script again after it exits with one of the codes, at most max_restarts times.
struct RestartPolicy {
  bool set = false;                ///< the file has the key
  std::vector<int> on_exit_codes;  ///< the codes that restart it (empty: on_failure)
  bool on_failure = false;         ///< every code but 0 restarts it
  int max_restarts = 3;            ///< then the last attempt's code is the run's
  int backoff_seconds = 10;        ///< between an exit and the next attempt
  bool after_reboot = false;       ///< restartAfterReboot: a boot hook starts it again
};

/// The contents of `aml_config/<name>.compute` (spec §2).
struct ComputeConfig {
  std::string type = "local";  ///< canonical executor name: local, docker, remotedocker, …
  std::string base_docker_image;
  std::string address;
  std::string username;
  std::string password;  ///< a secret-store reference (`MlwSecret=…`), never a password
  std::string private_key_file;
  std::string private_key_passphrase;  ///< a secret-store reference, like password
  bool shared_volumes = true;
  bool nvidia_docker = false;
  std::string gpus = "all";
  /// How many GPUs each run takes under a lease (docs/gpus.md): "all" (no lease) or a count.
  std::string gpus_per_run = "all";
  /// wait: GPUs in use by a process without a lease are not handed out; ignore: they are.
  std::string gpu_foreign_use = "wait";
  int max_concurrent_runs = 0;  ///< runs at once on the machine under a lease; 0: no limit
  /// Seconds between a leased run's GPU samples (1 to 60; docs/gpus.md).
  int gpu_sample_seconds = 1;
  /// Minutes after which a leased GPU never used is said in the run's log ("0": never).
  std::string gpu_unused_warn_minutes = "10";
  IdleGpuPolicy idle_gpu;  ///< the key `idleGpu` (a runconfig's or submit --idle-gpu wins)
  std::vector<std::string> docker_run_args;
  std::string native_shared_directory = "~/.mlw/share/";
  std::string data_store = "~/.mlw/data";  ///< `mlw data`'s store on the machine (docs/data.md)
  std::string python_location = "python3";
  std::string spark_submit_location = "spark-submit";  ///< Framework PySpark on local targets
  bool user_managed_environment = false;
  bool use_sudo = false;
  std::string unused;     ///< sink for 2017 keys that are accepted and ignored
  RestartPolicy restart;  ///< the key `restart` (remote and remotedocker targets)
  /// The keys that the target's kind owns (its section, OwnKey), as text: the kind reads them
  /// into its own struct (src/kinds/<kind>/). Checked when the file is read.
  std::map<std::string, std::string> section;
};

/// A key that one kind owns: the kind declares it (src/kinds/<kind>/), the file's reader checks
/// and keeps it as text in ComputeConfig::section, attach offers it as an option.
struct OwnKey {
  std::string_view name;               ///< the key as written in the file
  ValueKind kind = ValueKind::String;  ///< String, Int or Bool
  std::string_view help;               ///< its comment in the file
  std::string_view fallback;           ///< its value when absent ("": none)
  /// The problem with a value, without the key's name ("must be at least 1"), or "": the file's
  /// reader puts the key's name before it, attach the option's.
  std::string (*check)(const std::string& value) = nullptr;
  std::string_view attach_flag;  ///< the attach option that sets it ("--queue"), or none
  std::string_view attach_help;  ///< that option's help
};

/// What the .compute file knows of one kind of target: its names, the shared keys it uses and
/// the keys it owns.
struct ComputeKind {
  std::string_view name;
  std::vector<std::string_view> aliases;
  std::vector<std::string_view> keys;  ///< the shared keys of compute_keys() it uses
  std::vector<OwnKey> own;             ///< the keys it owns
};

/// Every kind, in the table's order. Defined by the kind table (src/kinds/table.cpp), so that
/// this layer names no kind.
const std::vector<ComputeKind>& compute_kinds();

/// The kind named `type` (or an alias) as the .compute file knows it; nullptr when none.
const ComputeKind* find_compute_kind(std::string_view type);

/// The own key `name` of `kind`; nullptr when it has none.
const OwnKey* find_own_key(const ComputeKind& kind, std::string_view name);

/// The text of the own key `key` in `compute`: the file's value, else the fallback its kind
/// declares ("" when the kind has no such key). Kinds read their own struct through it.
std::string own_value(const ComputeConfig& compute, std::string_view key);

/// The kinds' names joined with `separator` ("local, docker, …"), in the table's order.
std::string compute_kind_names(std::string_view separator = ", ");

/// The YAML text of an own key's value (`text` as kept in ComputeConfig::section).
std::string render_own_value(const OwnKey& key, const std::string& text);

/// Checks and normalises the text of an own key's value ("4", "true"); the problem (without the
/// key's name), or "".
std::string own_value_problem(const OwnKey& key, std::string& text);

/// The problem with a gpusPerRun value (or submit --gpus), without the key's name ("must be all
/// or a count …"), or "".
std::string gpus_per_run_problem(const std::string& value);

/// The key table of `.compute` files: parsing, validation, generated comments and docs.
const std::vector<KeySpec<ComputeConfig>>& compute_keys();

/// Reads the key `restart` of a `.compute` document into config.restart, each value checked at
/// its place in the file (config.type must be known); nothing where the key is absent.
void read_restart_policy(const ConfigDocument& doc, ComputeConfig& config);

/// Parses a `.compute` document; warnings stay in `doc.warnings`.
ComputeConfig parse_compute(ConfigDocument& doc);

/// The commented YAML text of a `.compute` file for `config`.
std::string render_compute(const ComputeConfig& config, const std::string& name);

/// The text of an existing `.compute` file (`text`, parsed as `before`) with the keys whose
/// value differs in `after` rewritten in place and missing ones appended: comments, key order,
/// unknown and 2017 keys stay. Falls back to render_compute where a line cannot be rewritten.
std::string update_compute_text(const std::string& text, const std::string& display_path,
                                const ComputeConfig& before, const ComputeConfig& after,
                                const std::string& name);

}  // namespace mlw
