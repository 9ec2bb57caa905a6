#pragma once

#include <map>
#include <string>
#include <vector>

#include "mlw/config/gpu_watch.hpp"
#include "mlw/config/keys.hpp"

namespace mlw {

/// The contents of `aml_config/<name>.runconfig` (spec §2).
struct RunConfig {
  std::vector<std::string> argument_vector{"$file"};
  std::string target;
  std::map<std::string, std::string> environment_variables;
  std::string framework = "PySpark";  ///< Workbench's default when the key is absent
  std::string conda_dependencies_file = "aml_config/conda_dependencies.yml";
  std::string spark_dependencies_file = "aml_config/spark_dependencies.yml";
  bool prepare_environment = false;
  bool tracked_run = true;
  std::vector<std::string> data;  ///< data sets the runs mount: NAME[@V][:MOUNT] (docs/data.md)
  std::string unused;             ///< sink for keys that are accepted and ignored
  IdleGpuPolicy idle_gpu;         ///< idleGpu: over the target's (docs/gpus.md)
};

/// The key table of `.runconfig` files.
const std::vector<KeySpec<RunConfig>>& run_config_keys();

/// Parses a `.runconfig` document (YAML, or the JSON of 2017). Returns the names of the
/// accepted-but-ignored keys that were present.
RunConfig parse_run_config(ConfigDocument& doc, std::vector<std::string>* ignored_keys = nullptr);

/// The run configuration mlw writes for a new target: Framework Python, environment prepared.
RunConfig default_run_config(const std::string& target);

/// The commented YAML text of a `.runconfig` file.
std::string render_run_config(const RunConfig& config, const std::string& name);

/// The one explanation, on every target, of a PySpark run where `where` (a machine, an image)
/// has no spark-submit.
std::string no_spark_submit_message(const std::string& run_config_name, const std::string& where);

/// The argument vector of a run: `$file` replaced by the script, then the submit arguments.
std::vector<std::string> expand_argument_vector(const RunConfig& config, const std::string& script,
                                                const std::vector<std::string>& arguments);

}  // namespace mlw
