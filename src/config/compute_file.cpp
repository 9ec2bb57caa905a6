#include "mlw/config/compute_file.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlw/config/names.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {
using C = ComputeConfig;
/// The kinds (by name) whose row lists `key`: the kind table decides where a key applies.
std::vector<std::string_view> kinds_with(std::string_view key) {
  std::vector<std::string_view> kinds;
  for (const ComputeKind& kind : compute_kinds()) {
    if (std::find(kind.keys.begin(), kind.keys.end(), key) != kind.keys.end()) {
      kinds.push_back(kind.name);
    }
  }
  return kinds;
}

/// The values `type` accepts: every kind's name and aliases.
std::vector<std::string_view> type_choices() {
  std::vector<std::string_view> names;
  for (const ComputeKind& kind : compute_kinds()) {
    names.push_back(kind.name);
    names.insert(names.end(), kind.aliases.begin(), kind.aliases.end());
  }
  return names;
}

/// `doc` without the keys that `kind` owns (the shared key table reads the rest).
/// The kind that owns the key `name`, and its declaration; {nullptr, nullptr} for a shared key.
std::pair<const ComputeKind*, const OwnKey*> owner_of(std::string_view name) {
  for (const ComputeKind& kind : compute_kinds()) {
    if (const OwnKey* key = find_own_key(kind, name)) return {&kind, key};
  }
  return {nullptr, nullptr};
}

/// `doc` without the keys that kinds own (the shared key table reads the rest).
ConfigDocument without_own_keys(const ConfigDocument& doc) {
  // A fresh node: assigning to a copy of doc.root would change the document itself.
  ConfigDocument rest{doc.display_path, YAML::Node(YAML::NodeType::Map), doc.warnings};
  for (const auto& entry : doc.root) {
    if (owner_of(entry.first.Scalar()).first) continue;
    rest.root.force_insert(entry.first, entry.second);
  }
  return rest;
}

/// Reads the keys that `kind` owns into config.section, each checked at its place in the file.
/// Another kind's key is checked the same way and warned about: this target does not use it.
void read_own_keys(ConfigDocument& doc, const ComputeKind& kind, ComputeConfig& config) {
  for (const OwnKey& key : kind.own) {
    if (!key.fallback.empty()) config.section[std::string(key.name)] = std::string(key.fallback);
  }
  for (const auto& entry : doc.root) {
    const std::string name = entry.first.Scalar();
    // A name that several kinds own is checked as this kind takes it (sge's timeLimit, slurm's).
    const OwnKey* own = find_own_key(kind, name);
    const auto [owner, other] = owner_of(name);
    const OwnKey* key = own ? own : other;
    if (!key || entry.second.IsNull()) continue;
    std::string text;
    if (key->kind == ValueKind::Int) {
      text = std::to_string(int_value(doc, entry.second, name));
    } else if (key->kind == ValueKind::Bool) {
      text = bool_value(doc, entry.second, name) ? "true" : "false";
    } else {
      text = scalar_value(doc, entry.second, name);
    }
    const std::string problem = own_value_problem(*key, text);
    if (!problem.empty()) fail_at(doc, entry.second, name + " " + problem);
    if (own) {
      // An empty value where none is the default is as if the key were not there (written back
      // the same way).
      if (text.empty() && key->fallback.empty()) continue;
      config.section[name] = text;
    } else {
      doc.warnings.push_back(
          fmt::format("{}: {} is a key of {} targets; this one is {}, which "
                      "does not use it",
                      doc.position_of(entry.first).to_string(false), name, owner->name, kind.name));
    }
  }
}

}  // namespace

/// The type key's comment: every kind, with its aliases ("docker (alias localdocker)").
const std::string& type_help() {
  static const std::string text = [] {
    std::vector<std::string> names;
    for (const ComputeKind& kind : compute_kinds()) {
      std::string name(kind.name);
      for (auto alias : kind.aliases) name += fmt::format(" (alias {})", alias);
      names.push_back(name);
    }
    const std::string last = names.back();
    names.pop_back();
    return "Where the run executes: " + join(names, ", ") + " or " + last + ".";
  }();
  return text;
}

const std::vector<KeySpec<ComputeConfig>>& compute_keys() {
  static const std::vector<KeySpec<ComputeConfig>> table = {
      {"type", &C::type, type_help(), type_choices(), {}},
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
      {"gpusPerRun",
       &C::gpus_per_run,
       "GPUs per run: all (every GPU, no lease) or a count, leased on the machine so that runs "
       "share it (docs/gpus.md).",
       {},
       kinds_with("gpusPerRun"),
       false,
       true},
      {"gpuForeignUse",
       &C::gpu_foreign_use,
       "wait: a GPU that nvidia-smi shows in use by a process without a lease is not leased; "
       "ignore: it is.",
       {},
       kinds_with("gpuForeignUse"),
       false,
       true},
      {"maxConcurrentRuns",
       &C::max_concurrent_runs,
       "Runs at once on the machine (the others wait on it, first come first served); 0: no "
       "limit.",
       {},
       kinds_with("maxConcurrentRuns"),
       false,
       true},
      {"gpuSampleSeconds",
       &C::gpu_sample_seconds,
       "Seconds between the samples of a leased run's GPUs, CPU and memory (1 to 60; "
       "docs/gpus.md).",
       {},
       kinds_with("gpuSampleSeconds"),
       false,
       true},
      {"gpuUnusedWarnMinutes",
       &C::gpu_unused_warn_minutes,
       "Minutes after which a run's leased GPU that it never used is said in its log (0: never).",
       {},
       kinds_with("gpuUnusedWarnMinutes"),
       false,
       true},
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
      {"dataStore",
       &C::data_store,
       "The folder of the machine's data store (mlw data; docs/data.md): on Slurm and Grid "
       "Engine, one on the cluster's shared filesystem.",
       {},
       {},
       false,
       true},
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
      // 2017 HDInsight cluster files: accepted so that they load, not used (docs/compute-file.md).
      {"yarnDeployMode", &C::unused, "", {}, {}, true},
  };
  return table;
}

std::string gpus_per_run_problem(const std::string& value) {
  // A count as written once, not "01": the lease takes the words as they are.
  if (const auto count = parse_integer(value, 1, 1024);
      value == "all" || (count && std::to_string(*count) == value)) {
    return "";
  }
  return "must be all or a count of GPUs (1 or more), not \"" + value + "\"";
}

namespace {

/// The lease keys' values (docs/gpus.md), at their place in the file.
void check_lease_keys(const ConfigDocument& doc, const ComputeConfig& config) {
  if (const std::string problem = gpus_per_run_problem(config.gpus_per_run); !problem.empty()) {
    fail_at(doc, doc.root["gpusPerRun"], "gpusPerRun " + problem);
  }
  if (config.gpu_foreign_use != "wait" && config.gpu_foreign_use != "ignore") {
    fail_at(doc, doc.root["gpuForeignUse"],
            "gpuForeignUse must be wait or ignore, not \"" + config.gpu_foreign_use + "\"");
  }
  if (config.max_concurrent_runs < 0) {
    fail_at(doc, doc.root["maxConcurrentRuns"], "maxConcurrentRuns must be 0 (no limit) or more");
  }
  if (config.gpu_sample_seconds < 1 || config.gpu_sample_seconds > 60) {
    fail_at(doc, doc.root["gpuSampleSeconds"],
            fmt::format("gpuSampleSeconds must be from 1 to 60 (seconds), not {}",
                        config.gpu_sample_seconds));
  }
  if (!parse_minutes(config.gpu_unused_warn_minutes)) {
    fail_at(doc, doc.root["gpuUnusedWarnMinutes"],
            "gpuUnusedWarnMinutes must be minutes from 0 (never) to 10080, not \"" +
                printable(config.gpu_unused_warn_minutes) + "\"");
  }
}

/// The key `idleGpu` (a mapping of its own), where the kind leases GPUs.
void read_idle_gpu_key(const ConfigDocument& doc, ComputeConfig& config) {
  const YAML::Node node = doc.root["idleGpu"];
  if (!node || node.IsNull()) return;
  const auto kinds = kinds_with("gpusPerRun");
  if (std::find(kinds.begin(), kinds.end(), config.type) == kinds.end()) {
    fail_at(doc, node,
            fmt::format("idleGpu applies to targets that lease GPUs ({}), not {}: a {} job's "
                        "GPUs are its scheduler's",
                        join(std::vector<std::string>(kinds.begin(), kinds.end()), ", "),
                        config.type, config.type));
  }
  config.idle_gpu = read_idle_gpu(doc, node);
}

}  // namespace

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

const ComputeKind* find_compute_kind(std::string_view type) {
  for (const ComputeKind& kind : compute_kinds()) {
    if (kind.name == type) return &kind;
    if (std::find(kind.aliases.begin(), kind.aliases.end(), type) != kind.aliases.end()) {
      return &kind;
    }
  }
  return nullptr;
}

std::string compute_kind_names(std::string_view separator) {
  std::vector<std::string> names;
  for (const ComputeKind& kind : compute_kinds()) names.emplace_back(kind.name);
  return join(names, std::string(separator));
}

std::string own_value(const ComputeConfig& compute, std::string_view key) {
  if (const auto found = compute.section.find(std::string(key)); found != compute.section.end()) {
    return found->second;
  }
  const ComputeKind* kind = find_compute_kind(compute.type);
  const OwnKey* own = kind ? find_own_key(*kind, key) : nullptr;
  return own ? std::string(own->fallback) : std::string();
}

const OwnKey* find_own_key(const ComputeKind& kind, std::string_view name) {
  for (const OwnKey& key : kind.own) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::string render_own_value(const OwnKey& key, const std::string& text) {
  return key.kind == ValueKind::String ? yaml_quote(text) : text;
}

std::string own_value_problem(const OwnKey& key, std::string& text) {
  if (key.kind == ValueKind::Int) {
    const auto number = parse_integer(text, -2147483647LL, 2147483647LL);
    if (!number) return fmt::format("must be a whole number, not \"{}\"", text);
    text = std::to_string(*number);
  } else if (key.kind == ValueKind::Bool) {
    if (text != "true" && text != "false") {
      return fmt::format("must be true or false, not \"{}\"", text);
    }
  }
  return key.check ? key.check(text) : "";
}

ComputeConfig parse_compute(ConfigDocument& doc) {
  ComputeConfig config;
  if (!doc.root["type"]) {
    throw Error(doc.display_path + ": the key \"type\" is missing (one of " + compute_kind_names() +
                ")");
  }
  if (const YAML::Node type = doc.root["type"]; type.IsScalar() && type.Scalar() == "cluster") {
    fail_at(doc, type,
            "type: cluster is a 2017 HDInsight Spark cluster, which mlw does not run; attach a "
            "machine of it as remote or remotedocker instead (docs/compute-file.md)");
  }
  ConfigDocument shared = without_own_keys(doc);
  shared.root.remove("restart");  // a mapping of its own: read_restart_policy
  shared.root.remove("idleGpu");  // one too: read_idle_gpu_key
  apply_key_table(shared, compute_keys(), config);
  doc.warnings = std::move(shared.warnings);
  const ComputeKind* kind = find_compute_kind(config.type);
  if (!kind) throw Error(fmt::format("unknown target type \"{}\"", config.type));
  config.type = std::string(kind->name);  // an alias becomes its kind's name
  read_own_keys(doc, *kind, config);
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
  if (!config.gpus.empty() && !is_docker_gpus(config.gpus)) {
    fail_at(doc, doc.root["gpus"],
            "gpus must be all, a count (1 or more) or device=0,1 (as docker run --gpus), not \"" +
                config.gpus + "\"");
  }
  check_lease_keys(doc, config);
  read_restart_policy(doc, config);
  read_idle_gpu_key(doc, config);
  return config;
}

namespace {

/// One key of a file being written: its name, comment, value in YAML (before and after), and
/// whether it belongs in a file of the target's kind.
struct KeyText {
  std::string_view name;
  std::string_view help;
  std::string before;
  std::string after;
  bool applies = true;
};

/// The keys of `after`'s kind, shared and own, with their text in `before` and `after`.
std::vector<KeyText> key_texts(const ComputeConfig& before, const ComputeConfig& after) {
  std::vector<KeyText> keys;
  for (const auto& spec : compute_keys()) {
    if (spec.ignored) continue;
    bool applies = spec.applies_to.empty();
    for (auto t : spec.applies_to) applies = applies || t == after.type;
    keys.push_back(
        {spec.name, spec.help, render_value(spec, before), render_value(spec, after), applies});
  }
  if (const ComputeKind* kind = find_compute_kind(after.type)) {
    for (const OwnKey& key : kind->own) {
      keys.push_back(
          {key.name, key.help,
           before.type == after.type ? render_own_value(key, own_value(before, key.name)) : "",
           render_own_value(key, own_value(after, key.name)), true});
    }
  }
  return keys;
}

}  // namespace

std::string render_compute(const ComputeConfig& config, const std::string& name) {
  const std::string header = fmt::format(
      "# Compute target \"{}\", written by mlw (Azure ML Workbench compatible).\n"
      "# Each key is explained above it; see docs/compute-file.md.\n",
      name);
  std::string out = render_with_comments(compute_keys(), config, header, config.type);
  if (const ComputeKind* kind = find_compute_kind(config.type)) {
    for (const OwnKey& key : kind->own) {
      out += fmt::format("\n# {}\n{}: {}\n", key.help, key.name,
                         render_own_value(key, own_value(config, key.name)));
    }
  }
  return out;
}

std::string update_compute_text(const std::string& text, const std::string& display_path,
                                const ComputeConfig& before, const ComputeConfig& after,
                                const std::string& name) {
  ConfigDocument doc = parse_config_text(text, display_path);
  if (doc.root.Style() == YAML::EmitterStyle::Flow) return render_compute(after, name);
  std::vector<std::string> lines = split(text, '\n');
  std::string appended;
  for (const KeyText& key : key_texts(before, after)) {
    const std::string& value = key.after;
    if (value == key.before) continue;
    YAML::Node key_node;
    YAML::Node value_node;
    bool found = false;  // a default YAML::Node is a defined null: it cannot say "none"
    for (const auto& entry : doc.root) {
      if (entry.first.Scalar() == key.name) {
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
      lines[static_cast<std::size_t>(line)] = std::string(key.name) + ": " + value;
      continue;
    }
    if (!key.applies) continue;
    appended += fmt::format("# {}\n{}{}{}\n", key.help, key.name, one_line ? ": " : ":", value);
  }
  std::string out = join(lines, "\n");
  if (!appended.empty()) out += (out.empty() || out.ends_with('\n') ? "" : "\n") + appended;
  return out;
}

}  // namespace mlw
