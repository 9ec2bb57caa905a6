// `mlw experiment diagnostics -r RUN [--file FILE.zip]`: one zip of what a maintainer needs to
// help with a run — its record, logs, the .compute/.runconfig it used with secrets replaced by
// ***, doctor's rows for its target now, mlw's version — and a list of what was missing.

#include <sys/utsname.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <regex>

#include "mlw/api/computetarget.hpp"
#include "mlw/api/experiment.hpp"
#include "mlw/config/compute_file.hpp"
#include "mlw/config/keys.hpp"
#include "mlw/config/names.hpp"
#include "mlw/config/secret_store.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/history/store.hpp"
#include "mlw/util/file_end.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/strings.hpp"
#include "mlw/util/zip.hpp"
#include "run_start.hpp"

namespace mlw::api {

namespace fs = std::filesystem;

namespace {

/// The most of one log taken (its end: where a run failed).
constexpr std::size_t k_log_bound = 8u << 20;

/// Names of keys, variables and script options whose values are secrets: `password`,
/// `api_key`, `AWS_SECRET_ACCESS_KEY`, `HF_TOKEN`, `MY_KEY` (…_KEY, …-key, key).
bool secret_name(const std::string& name) {
  static const std::regex pattern("pass|secret|token|credential|api_?key|(^|[_.-])key$",
                                  std::regex::icase);
  return std::regex_search(name, pattern);
}

/// `node` rebuilt with its values replaced by *** where `all`, or where they sit under a key
/// named like a secret or under EnvironmentVariables; empty values stay empty (a maintainer sees
/// what was not set), a key that is not a plain name is masked too.
YAML::Node masked_yaml(const YAML::Node& node, bool all) {
  if (node.IsScalar()) return YAML::Node(all && !node.Scalar().empty() ? "***" : node.Scalar());
  if (node.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& item : node) out.push_back(masked_yaml(item, all));
    return out;
  }
  if (!node.IsMap()) return YAML::Node(node.Type());
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& entry : node) {
    const bool plain = entry.first.IsScalar();
    const std::string key = plain ? entry.first.Scalar() : "***";
    const bool secret = all || !plain || secret_name(key) || key == "EnvironmentVariables";
    out[key] = masked_yaml(entry.second, secret);
  }
  return out;
}

/// A .compute or .runconfig file as mlw read it (YAML, or the JSON of 2017 files), re-written
/// with every secret-named value and every value under EnvironmentVariables as ***, whatever
/// its YAML style (flow, block scalars, complex keys): masked by parsing, keys in their order,
/// comments left out. A file that does not parse is left out whole.
std::string mask_config(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = load_bounded_yaml(text, name);
  } catch (const Error& e) {
    return fmt::format("# {}: left out, it cannot be read: {}\n", name, e.what());
  }
  YAML::Emitter out;
  out << masked_yaml(root, false);
  return fmt::format(
      "# {} as the run used it; secrets and EnvironmentVariables as ***, comments "
      "left out\n{}\n",
      name, out.c_str());
}

/// A run's script arguments (or command) with the value of every option named like a secret
/// as *** (`--password X`, `--api_key=X`, `--hf-token X`); the values taken out go to `secrets`.
nlohmann::ordered_json masked_arguments(const nlohmann::ordered_json& words,
                                        std::vector<std::string>& secrets) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  bool next_is_secret = false;
  for (const auto& word : words) {
    const std::string text = word.is_string() ? word.get<std::string>() : word.dump();
    const bool option = starts_with(text, "-");
    if (next_is_secret && !option) {
      secrets.push_back(text);
      out.push_back("***");
      next_is_secret = false;
      continue;
    }
    const auto equals = text.find('=');
    const std::string name = text.substr(0, equals);
    const bool secret = option && secret_name(name);
    next_is_secret = secret && equals == std::string::npos;
    if (secret && equals != std::string::npos) {
      secrets.push_back(text.substr(equals + 1));
      out.push_back(name + "=***");
      continue;
    }
    out.push_back(text);
  }
  return out;
}

/// The run's record for the zip: its arguments and command masked as masked_arguments says, and
/// its parameters named like secrets (read from those options) as ***.
std::string masked_record(const RunRecord& record) {
  nlohmann::ordered_json json = record.to_json();
  std::vector<std::string> unused;
  for (const char* key : {"arguments", "command"}) {
    if (json.contains(key) && json[key].is_array()) {
      json[key] = masked_arguments(json[key], unused);
    }
  }
  if (json.contains("params") && json["params"].is_object()) {
    for (auto& [name, value] : json["params"].items()) {
      if (secret_name(name)) value = "***";
    }
  }
  return json.dump(2) + "\n";
}

/// True when `name` (a record's target or run configuration) is a plain name: one from a
/// damaged or hand-made record (`../..`) names no file.
bool plain_name(const std::string& name) {
  try {
    validate_name(name, "name");
    return true;
  } catch (const Error&) {
    return false;
  }
}

/// The secrets this run could know of: its target's stored password and passphrase, its -e
/// values that look like one (named so, or 8 characters or more), and its run configuration's
/// EnvironmentVariables named like one.
std::vector<std::string> known_secrets(Context& ctx, const Project& project, const fs::path& dir,
                                       const RunRecord& record) {
  std::vector<std::string> secrets;
  // The values of script options named like secrets, wherever the script printed them (of 4
  // characters or more: a shorter one would cut words of every log apart).
  masked_arguments(record.arguments, secrets);
  std::erase_if(secrets, [](const std::string& s) { return s.size() < 4; });
  for (const auto& [key, value] : load_run_env(dir)) {
    if (value.size() >= 8 || (!value.empty() && secret_name(key))) {
      secrets.push_back(value);
    }
  }
  // The run configuration's environment values named like secrets, as the run had them.
  try {
    const Project stored = run_files(project, dir);
    for (const auto& [key, value] :
         load_run_config(stored, record.run_config).environment_variables) {
      if (!value.empty() && secret_name(key)) secrets.push_back(value);
    }
  } catch (const Error&) {
  }
  try {
    if (!plain_name(record.target)) return secrets;
    const ComputeConfig compute = load_compute(project, record.target);
    const SecretStore store(ctx.config_dir);
    for (const std::string& reference : {compute.password, compute.private_key_passphrase}) {
      if (!SecretStore::is_reference(reference)) continue;
      try {
        secrets.push_back(store.get(reference));
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  std::erase_if(secrets, [](const std::string& s) { return s.empty(); });
  return secrets;
}

std::string scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets) {
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
      text.replace(at, secret.size(), "***");
    }
  }
  return text;
}

/// The end of a run folder's file, at most k_log_bound bytes, said so where it was cut; read
/// without following a link or waiting on a FIFO. Absent (with why) when not a regular file.
FileEnd bounded(const fs::path& file) {
  FileEnd end = read_file_end(file, k_log_bound);
  if (end.found && end.size > k_log_bound) {
    end.text = fmt::format("(its first {} bytes left out)\n", end.size - k_log_bound) + end.text;
  }
  return end;
}

std::string version_text(std::int64_t now_ms) {
  struct utsname name {};
  ::uname(&name);
  return fmt::format("mlw {}\n{} {} {}\nmade {}\n", MLW_VERSION, name.sysname, name.release,
                     name.machine, now_ms / 1000);
}

}  // namespace

void diagnostics(Context& ctx, const std::string& run_id, const std::optional<std::string>& file) {
  const Project project = ctx.project();
  const StoredRun run = find_stored_run(project, run_id);
  const RunRecord& record = run.record;
  const fs::path& dir = run.dir;
  // By default in the project's outputs/, which no run ships (a zip in the project's folder
  // would go with the next run's snapshot).
  const fs::path out = file ? fs::absolute(expand_user(*file))
                            : project.root / "outputs" / (run_id + "-diagnostics.zip");
  if (!file) make_directories(out.parent_path());
  const std::vector<std::string> secrets = known_secrets(ctx, project, dir, record);
  const std::int64_t now = ctx.clock->now_ms() / 1000;
  ZipWriter zip;
  std::vector<std::string> missing;
  const auto put = [&](const std::string& name, const std::string& text) {
    zip.add(run_id + "/" + name, scrub(text, secrets), now);
  };
  put("run.json", masked_record(record));
  for (const std::string name : {"driver_log.txt", "build.log", "supervisor.log", "metrics.jsonl",
                                 "manifest.json", "stop_reason", "lease.log"}) {
    const FileEnd end = bounded(dir / name);
    if (end.found) {
      put(name, end.text);
    } else if (end.why != "missing") {
      missing.push_back(fmt::format("{}: left out, {}", name, end.why));
    } else if (name == "driver_log.txt" || name == "manifest.json") {
      missing.push_back(fmt::format("{}: not in {}", name, dir.string()));
    }
  }
  // The configuration files as the run used them (its snapshot's), secrets masked.
  for (const auto& [base, suffix] :
       {std::pair{record.run_config, ".runconfig"}, std::pair{record.target, ".compute"}}) {
    const std::string name = base + suffix;
    FileEnd end;
    if (plain_name(base)) end = bounded(dir / "snapshot" / "aml_config" / name);
    if (end.found) {
      put("aml_config/" + name, mask_config(end.text, "aml_config/" + name));
    } else if (!plain_name(base)) {
      missing.push_back(
          fmt::format("the run's {} file: left out, its name \"{}\" in run.json is "
                      "not a plain name",
                      suffix + 1, printable(base)));
    } else {
      missing.push_back(fmt::format("aml_config/{}: not in the run's snapshot folder", name));
    }
  }
  std::string env = "# the run's -e variables (names only)\n";
  for (const auto& [key, _] : load_run_env(dir)) env += key + "\n";
  put("env.txt", env);
  nlohmann::ordered_json doctor;
  try {
    if (!plain_name(record.target)) throw Error("the run's target in run.json is not a plain name");
    doctor = doctor_rows(ctx, record.target);
  } catch (const Error& e) {
    doctor = {{"error", e.what()}};
  }
  make_json_safe(doctor);
  put("doctor.json", doctor.dump(2) + "\n");
  put("version.txt", version_text(ctx.clock->now_ms()));
  if (!missing.empty()) put("MISSING.txt", join(missing, "\n") + "\n");
  atomic_write_file(out, zip.finish(), 0600);
  if (file) keep_out_of_snapshots(project, out.parent_path());
  for (const auto& line : missing) spdlog::warn("missing from the run: {}", line);
  if (ctx.output().structured()) {
    nlohmann::ordered_json said = {
        {"run_id", run_id}, {"file", out.string()}, {"missing", missing}};
    make_json_safe(said);
    ctx.output().print_object(said);
  } else {
    *ctx.out << out.string() << "\n";
  }
}

}  // namespace mlw::api
