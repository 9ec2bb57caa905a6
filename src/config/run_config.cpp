#include "mlw/config/run_config.hpp"

#include <fmt/format.h>

#include <optional>

#include "mlw/config/names.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {
using R = RunConfig;
}

const std::vector<KeySpec<RunConfig>>& run_config_keys() {
  static const std::vector<KeySpec<RunConfig>> table = {
      {"ArgumentVector",
       &R::argument_vector,
       "The command line; $file is the script given to submit, whose own arguments follow.",
       {},
       {}},
      {"Target", &R::target, "The compute target (aml_config/<Target>.compute).", {}, {}},
      {"EnvironmentVariables",
       &R::environment_variables,
       "Environment variables set in the run.",
       {},
       {}},
      {"Framework",
       &R::framework,
       "Python, or PySpark (runs spark-submit).",
       {"Python", "PySpark"},
       {}},
      {"CondaDependenciesFile",
       &R::conda_dependencies_file,
       "The environment for docker and remote targets.",
       {},
       {}},
      {"SparkDependenciesFile",
       &R::spark_dependencies_file,
       "Spark packages, only for Framework PySpark.",
       {},
       {}},
      {"PrepareEnvironment",
       &R::prepare_environment,
       "true: build the environment as part of submit when it is missing.",
       {},
       {}},
      {"TrackedRun", &R::tracked_run, "true: record the run in the project's history.", {}, {}},
      {"data",
       &R::data,
       "Data sets the run mounts read-only: NAME, NAME@VERSION, NAME@VERSION:/MOUNT (mlw data).",
       {},
       {},
       false,
       true},
      {"UseSampling", &R::unused, "", {}, {}, true},
      // Early 2017 files: the environment was always managed; mlw prepares it the same way.
      {"ManagedEnvironment", &R::unused, "", {}, {}, true},
      {"DataSourceSettings", &R::unused, "", {}, {}, true},
      {"DataSourceSubstitutions", &R::unused, "", {}, {}, true},
  };
  return table;
}

namespace {

/// The 2018 Azure ML SDK's run configuration (lower-case keys: script, arguments, target,
/// framework, environment, …) is named as such, not read as a 2017 file with a dozen unknown
/// keys and a wrong Framework.
void refuse_sdk_format(const ConfigDocument& doc) {
  int sdk_keys = 0;
  for (const char* key : {"script", "arguments", "target", "framework", "environment",
                          "communicator", "history", "nodeCount", "data", "docker"}) {
    if (doc.root[key]) ++sdk_keys;
  }
  if (sdk_keys < 2 || doc.root["ArgumentVector"] || doc.root["Framework"]) return;
  throw Error(fmt::format(
      "{}: an Azure ML SDK (2018) run configuration (lower-case keys such as script, framework, "
      "environment); mlw reads the 2017 Workbench format (ArgumentVector, Target, Framework, "
      "CondaDependenciesFile, …): see docs/runconfig-file.md, or let mlw write one with: mlw "
      "computetarget attach … --force",
      doc.display_path));
}

}  // namespace

RunConfig parse_run_config(ConfigDocument& doc, std::vector<std::string>* ignored_keys) {
  refuse_sdk_format(doc);
  RunConfig config;
  // CondaFile: the first name of CondaDependenciesFile in early 2017 Workbench files.
  std::optional<std::string> conda_file;
  if (const YAML::Node early = doc.root["CondaFile"]; early) {
    conda_file = scalar_value(doc, early, "CondaFile");
    doc.root.remove("CondaFile");
  }
  const bool conda_named = static_cast<bool>(doc.root["CondaDependenciesFile"]);
  if (const YAML::Node idle = doc.root["idleGpu"]; idle && !idle.IsNull()) {
    config.idle_gpu = read_idle_gpu(doc, idle);
  }
  doc.root.remove("idleGpu");
  auto ignored = apply_key_table(doc, run_config_keys(), config);
  if (conda_file && !conda_named) config.conda_dependencies_file = *conda_file;
  if (const YAML::Node vars = doc.root["EnvironmentVariables"]; vars && vars.IsMap()) {
    for (const auto& entry : vars) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      if (!is_environment_name(name)) {
        fail_at(doc, entry.first,
                fmt::format("\"{}\" cannot name an environment variable: use letters, digits "
                            "and _, not starting with a digit",
                            printable(name)));
      }
    }
  }
  if (ignored_keys) *ignored_keys = std::move(ignored);
  return config;
}

RunConfig default_run_config(const std::string& target) {
  RunConfig config;
  config.target = target;
  config.framework = "Python";
  config.prepare_environment = true;
  return config;
}

std::string render_run_config(const RunConfig& config, const std::string& name) {
  const std::string header = fmt::format(
      "# Run configuration \"{}\", written by mlw (Azure ML Workbench compatible).\n"
      "# Used by: mlw experiment submit -c {} SCRIPT [ARGS...]; see docs/runconfig-file.md.\n",
      name, name);
  return render_with_comments(run_config_keys(), config, header);
}

std::string no_spark_submit_message(const std::string& run_config_name, const std::string& where) {
  return fmt::format(
      "Framework is PySpark (Workbench's default when a .runconfig has no Framework line) but "
      "{} has no spark-submit; set Framework: Python in aml_config/{}.runconfig, or install "
      "Spark there",
      where, run_config_name);
}

std::vector<std::string> expand_argument_vector(const RunConfig& config, const std::string& script,
                                                const std::vector<std::string>& arguments) {
  std::vector<std::string> out;
  for (const auto& item : config.argument_vector) out.push_back(item == "$file" ? script : item);
  out.insert(out.end(), arguments.begin(), arguments.end());
  return out;
}

}  // namespace mlw
