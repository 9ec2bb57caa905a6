#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "mlw/config/keys.hpp"

namespace mlw {

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
  std::vector<std::string> docker_run_args;
  std::string native_shared_directory = "~/.mlw/share/";
  std::string python_location = "python3";
  std::string spark_submit_location = "spark-submit";  ///< Framework PySpark on local targets
  bool user_managed_environment = false;
  bool use_sudo = false;
  std::string partition;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string time_limit;
  std::string account;
  std::string container;
  std::string container_runtime = "docker";
  std::string unused;  ///< sink for 2017 keys that are accepted and ignored
};

/// Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
bool is_slurm_time(const std::string& text);

/// The key table of `.compute` files: parsing, validation, generated comments and docs.
const std::vector<KeySpec<ComputeConfig>>& compute_keys();

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
