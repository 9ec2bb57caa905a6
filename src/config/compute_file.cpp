#include "mlw/config/compute_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "mlw/config/names.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {
using C = ComputeConfig;
/// The kinds (by name) whose row lists `key`: the kind table decides where a key applies.
std::vector<std::string_view> kinds_with(std::string_view key) {
  std::vector<std::string_view> kinds;
  for (const TargetKind* kind : target_kinds()) {
    if (kind->has_key(key)) kinds.push_back(kind->name);
  }
  return kinds;
}

/// The values `type` accepts: every kind's name and aliases.
std::vector<std::string_view> type_choices() {
  std::vector<std::string_view> names;
  for (const TargetKind* kind : target_kinds()) {
    names.push_back(kind->name);
    names.insert(names.end(), kind->aliases.begin(), kind->aliases.end());
  }
  return names;
}

}  // namespace

bool is_slurm_time(const std::string& text) {
  static const std::regex format(R"(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2})");
  return std::regex_match(text, format);
}

const std::vector<KeySpec<ComputeConfig>>& compute_keys() {
  static const std::vector<KeySpec<ComputeConfig>> table = {
      {"type",
       &C::type,
       "Where the run executes: local, docker (alias localdocker), remotedocker, remote or slurm.",
       type_choices(),
       {}},
      {"baseDockerImage",
       &C::base_docker_image,
       "The Docker image the run environment is built on.",
       {},
       kinds_with("baseDockerImage")},
      {"address",
       &C::address,
       "SSH endpoint: host, host:port, [v6addr]:port or a Host alias from ~/.ssh/config.",
       {},
       kinds_with("address")},
      {"username", &C::username, "The SSH login user.", {}, kinds_with("username")},
      {"password",
       &C::password,
       "A reference into your secret store (never the password itself).",
       {},
       kinds_with("password")},
      {"privateKeyFile",
       &C::private_key_file,
       "The SSH private key to log in with.",
       {},
       kinds_with("privateKeyFile")},
      {"privateKeyPassphrase",
       &C::private_key_passphrase,
       "A reference into your secret store for the key's passphrase (never the passphrase).",
       {},
       kinds_with("privateKeyPassphrase")},
      {"sharedVolumes",
       &C::shared_volumes,
       "true: bind-mount the run's snapshot into the container; false: copy it in and out.",
       {},
       kinds_with("sharedVolumes")},
      {"nvidiaDocker",
       &C::nvidia_docker,
       "true: run the container with the machine's GPUs (uncomment, or add nvidiaDocker: true).",
       {},
       kinds_with("nvidiaDocker"),
       false,
       true},
      {"gpus",
       &C::gpus,
       "Which GPUs when nvidiaDocker is true: all, a count, or device=0,1.",
       {},
       kinds_with("gpus")},
      {"dockerRunArgs",
       &C::docker_run_args,
       "Extra docker run arguments, e.g. [\"--shm-size=8g\"].",
       {},
       kinds_with("dockerRunArgs")},
      {"nativeSharedDirectory",
       &C::native_shared_directory,
       "A folder that persists across runs, mounted at /mlw/share (env MLW_SHARE_DIR).",
       {},
       {}},
      {"pythonLocation",
       &C::python_location,
       "The Python interpreter that runs the script.",
       {},
       kinds_with("pythonLocation")},
      {"sparkSubmitLocation",
       &C::spark_submit_location,
       "The spark-submit that runs scripts when Framework is PySpark.",
       {},
       kinds_with("sparkSubmitLocation")},
      {"userManagedEnvironment",
       &C::user_managed_environment,
       "true: use the machine's python as it is, without preparing an environment.",
       {},
       kinds_with("userManagedEnvironment")},
      {"useSudo",
       &C::use_sudo,
       "true: run docker through sudo -n on the target.",
       {},
       kinds_with("useSudo")},
      {"partition", &C::partition, "Slurm partition.", {}, kinds_with("partition")},
      {"nodes", &C::nodes, "Slurm: number of nodes.", {}, kinds_with("nodes")},
      {"gpusPerNode", &C::gpus_per_node, "Slurm: GPUs per node.", {}, kinds_with("gpusPerNode")},
      {"timeLimit", &C::time_limit, "Slurm: time limit, HH:MM:SS.", {}, kinds_with("timeLimit")},
      {"account", &C::account, "Slurm: account to charge.", {}, kinds_with("account")},
      {"container",
       &C::container,
       "Slurm: container image to run in.",
       {},
       kinds_with("container")},
      {"containerRuntime",
       &C::container_runtime,
       "Slurm: what runs the container on the nodes: docker, pyxis or apptainer.",
       {"docker", "pyxis", "apptainer"},
       kinds_with("containerRuntime")},
      // 2017 HDInsight cluster files: accepted so that they load, not used (docs/compute-file.md).
      {"yarnDeployMode", &C::unused, "", {}, {}, true},
  };
  return table;
}

/// What docker run --gpus takes: all, a count, or device=ID[,ID…] (indexes or GPU UUIDs).
bool is_docker_gpus(const std::string& value) {
  if (value == "all") return true;
  if (parse_integer(value, 1, 1024)) return true;
  if (!starts_with(value, "device=") || value.size() == 7) return false;
  for (const auto& id : split(value.substr(7), ',')) {
    if (id.empty() || id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-") != std::string::npos) {
      return false;
    }
  }
  return true;
}

ComputeConfig parse_compute(ConfigDocument& doc) {
  ComputeConfig config;
  if (!doc.root["type"]) {
    throw Error(doc.display_path + ": the key \"type\" is missing (one of " + kind_names() + ")");
  }
  if (const YAML::Node type = doc.root["type"]; type.IsScalar() && type.Scalar() == "cluster") {
    fail_at(doc, type,
            "type: cluster is a 2017 HDInsight Spark cluster, which mlw does not run; attach a "
            "machine of it as remote or remotedocker instead (docs/compute-file.md)");
  }
  apply_key_table(doc, compute_keys(), config);
  config.type = std::string(kind_of(config.type).name);  // an alias becomes its kind's name
  // A cloned project's names reach a ProxyCommand: refused as OpenSSH refuses them, with the
  // same words as at attach, at their place in the file.
  try {
    if (!config.address.empty()) parse_address(config.address);
  } catch (const UsageError& e) {
    fail_at(doc, doc.root["address"], e.what());
  }
  try {
    check_ssh_user(config.username);
  } catch (const UsageError& e) {
    fail_at(doc, doc.root["username"], e.what());
  }
  if (config.nodes < 1) fail_at(doc, doc.root["nodes"], "nodes must be at least 1");
  if (config.gpus_per_node < 0) {
    fail_at(doc, doc.root["gpusPerNode"], "gpusPerNode must not be negative");
  }
  if (!config.gpus.empty() && !is_docker_gpus(config.gpus)) {
    fail_at(doc, doc.root["gpus"],
            "gpus must be all, a count (1 or more) or device=0,1 (as docker run --gpus), not \"" +
                config.gpus + "\"");
  }
  if (!config.time_limit.empty() && !is_slurm_time(config.time_limit)) {
    fail_at(doc, doc.root["timeLimit"],
            "timeLimit must be HH:MM:SS (or minutes, MM:SS, D-HH, D-HH:MM:SS), not \"" +
                config.time_limit + "\"");
  }
  return config;
}

std::string render_compute(const ComputeConfig& config, const std::string& name) {
  const std::string header = fmt::format(
      "# Compute target \"{}\", written by mlw (Azure ML Workbench compatible).\n"
      "# Each key is explained above it; see docs/compute-file.md.\n",
      name);
  return render_with_comments(compute_keys(), config, header, config.type);
}

std::string update_compute_text(const std::string& text, const std::string& display_path,
                                const ComputeConfig& before, const ComputeConfig& after,
                                const std::string& name) {
  ConfigDocument doc = parse_config_text(text, display_path);
  if (doc.root.Style() == YAML::EmitterStyle::Flow) return render_compute(after, name);
  std::vector<std::string> lines = split(text, '\n');
  std::string appended;
  for (const auto& spec : compute_keys()) {
    if (spec.ignored) continue;
    const std::string value = render_value(spec, after);
    if (value == render_value(spec, before)) continue;
    YAML::Node key_node;
    YAML::Node value_node;
    bool found = false;  // a default YAML::Node is a defined null: it cannot say "none"
    for (const auto& entry : doc.root) {
      if (entry.first.Scalar() == spec.name) {
        key_node = entry.first;
        value_node = entry.second;
        found = true;
      }
    }
    const bool one_line = !value.starts_with('\n');
    if (found) {
      const int line = key_node.Mark().line;
      // Only a key and a scalar on one line is rewritten in place; anything else is rendered anew.
      if (!one_line || !value_node.IsScalar() || value_node.Mark().line != line ||
          key_node.Mark().column != 0 || line < 0 || line >= static_cast<int>(lines.size())) {
        return render_compute(after, name);
      }
      lines[static_cast<std::size_t>(line)] = std::string(spec.name) + ": " + value;
      continue;
    }
    bool applies = spec.applies_to.empty();
    for (auto t : spec.applies_to) applies = applies || t == after.type;
    if (!applies) continue;
    appended += fmt::format("# {}\n{}{}{}\n", spec.help, spec.name, one_line ? ": " : ":", value);
  }
  std::string out = join(lines, "\n");
  if (!appended.empty()) out += (out.empty() || out.ends_with('\n') ? "" : "\n") + appended;
  return out;
}

}  // namespace mlw
