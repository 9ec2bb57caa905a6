#include "mlw/exec/container.hpp"

#include "mlw/data/dataset.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/lease.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "mlw/config/keys.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/json_text.hpp"
#include "mlw/util/settings.hpp"
#include "mlw/util/sha256.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr const char* k_environment_format = "mlw-env-2";

/// Project paths named by a pip requirement line (`./wheels/x.whl`, `--find-links=wheels`).
std::vector<std::string> named_paths(const std::string& requirement) {
  std::vector<std::string> paths;
  std::string token;
  auto flush = [&] {
    std::string candidate = token;
    token.clear();
    while (starts_with(candidate, "./")) candidate = candidate.substr(2);
    if (candidate.empty() || candidate[0] == '-' || candidate[0] == '/' ||
        candidate.find("://") != std::string::npos || candidate.find("..") != std::string::npos) {
      return;
    }
    while (!candidate.empty() && candidate.back() == '/') candidate.pop_back();
    paths.push_back(candidate);
  };
  for (char c : requirement) {
    if (c == ' ' || c == '\t' || c == '=') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  return paths;
}

/// The version of a conda `python` line (`python=3.5.2`, `python==3.6`, `python 3.11`, `python`:
/// empty); nothing for another package.
std::optional<std::string> python_pin(const std::string& dependency) {
  if (dependency == "python") return std::string();
  for (const char* prefix : {"python==", "python=", "python "}) {
    if (starts_with(dependency, prefix)) {
      std::string version = trim(dependency.substr(std::string_view(prefix).size()));
      if (version.ends_with(".*")) version.resize(version.size() - 2);
      return version;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string share_folder(const std::string& native, const RunPlan& plan) {
  std::string folder = native;
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  return (folder == "/" ? "" : folder) + "/" + plan.project.name + "/" + plan.target_name;
}

std::string share_variable(const std::string& folder) {
  return folder.ends_with('/') ? folder : folder + "/";
}

EnvironmentSpec environment_spec(const RunPlan& plan) {
  EnvironmentSpec env;
  const std::string file = plan.run_config.conda_dependencies_file;
  env.conda_file = read_file_if_exists(plan.project.root / file).value_or("");
  std::vector<std::string> pip;
  if (!trim(env.conda_file).empty()) {
    YAML::Node root;
    try {
      root = load_bounded_yaml(env.conda_file, file);
    } catch (const Error& e) {
      throw Error(e.what(), exit_code::k_cannot_start);
    }
    const YAML::Node deps = root.IsMap() ? root["dependencies"] : YAML::Node();
    if (deps && !deps.IsSequence() && !deps.IsNull()) {
      throw Error(fmt::format("{}:{}: dependencies must be a list", file, deps.Mark().line + 1),
                  exit_code::k_cannot_start);
    }
    for (const auto& item : deps) {
      if (item.IsScalar()) {
        const std::string name = item.Scalar();
        if (const auto pin = python_pin(name)) {
          env.python_pin = *pin;
        } else if (name != "pip" && !starts_with(name, "pip=")) {
          env.conda_packages.push_back(name);
        }
      } else if (item.IsMap() && item["pip"] && !item["pip"].IsNull()) {
        if (!item["pip"].IsSequence()) {
          throw Error(fmt::format("{}:{}: pip must be a list", file, item["pip"].Mark().line + 1),
                      exit_code::k_cannot_start);
        }
        for (const auto& requirement : item["pip"]) {
          if (!requirement.IsScalar()) {
            throw Error(
                fmt::format("{}:{}: each pip entry must be one requirement line (got a {})", file,
                            requirement.Mark().line + 1, requirement.IsMap() ? "mapping" : "list"),
                exit_code::k_cannot_start);
          }
          pip.push_back(requirement.Scalar());
        }
      }
    }
  }
  std::set<std::string> seen;
  for (const auto& requirement : pip) {
    env.requirements += requirement + "\n";
    for (const auto& path : named_paths(requirement)) {
      for (const auto& entry : plan.manifest.entries) {
        if (!entry.link_target.empty()) continue;
        if ((entry.path == path || starts_with(entry.path, path + "/")) &&
            seen.insert(entry.path).second) {
          env.local_files.push_back(entry);
        }
      }
    }
  }
  std::string hashed =
      fmt::format("{}\n{}\n{}\n{}\n", k_environment_format, plan.compute.base_docker_image,
                  plan.run_config.framework, env.conda_file);
  for (const auto& entry : env.local_files) {
    hashed += fmt::format("{} {:o} {}\n", entry.path, entry.mode, entry.sha256);
  }
  // A kernel's image is the run's plus ipykernel: an image of its own, the run's left as it is.
  if (plan.notebook_kernel) hashed += "notebook kernel: ipykernel\n";
  env.hash = sha256_hex(hashed).substr(0, 24);
  env.tag = "mlw_env:" + env.hash;
  // The exec form's JSON array: no shell reads the words, and every one is on the RUN line.
  nlohmann::json run = {"/bin/sh", "/mlw/env/install.sh"};
  for (auto& word : install_arguments(plan, env)) run.push_back(std::move(word));
  env.dockerfile =
      fmt::format("FROM {}\nCOPY . /mlw/env/\nRUN {}\nLABEL mlw.env=\"{}\" mlw.project=\"{}\"\n",
                  plan.compute.base_docker_image,
                  run.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), env.hash,
                  project_label(plan.project.name));
  env.install_script = std::string(embedded_script("src/exec/install.sh"));
  return env;
}

std::map<std::string, std::string> run_environment(const RunPlan& plan, const std::string& run_dir,
                                                   const std::string& share_dir,
                                                   const std::string& helper_dir,
                                                   const std::map<std::string, std::string>& base) {
  std::map<std::string, std::string> env = base;
  for (const auto& [k, v] : plan.run_config.environment_variables) env[k] = v;
  for (const auto& [k, v] : plan.extra_env) env[k] = v;
  // Data sets: where the run sees each (its mount in a container, else its folder there).
  const bool in_container = run_dir == "/mlw/run";
  for (const auto& use : plan.record.data) {
    const auto path = plan.data_paths.find(use.name);
    env[data_variable(use.name)] =
        in_container || path == plan.data_paths.end() ? use.mount : path->second;
  }
  env["MLW_RUN_ID"] = plan.record.run_id;
  env["MLW_TARGET"] = plan.target_name;
  env["MLW_PROJECT"] = plan.project.name;
  env["MLW_OUTPUTS_DIR"] = run_dir + "/snapshot/outputs";
  env["MLW_METRICS_FILE"] = run_dir + "/metrics.jsonl";
  env["MLW_SHARE_DIR"] = share_variable(share_dir);
  env["AZUREML_NATIVE_SHARE_DIRECTORY"] = share_variable(share_dir);
  env["PYTHONUNBUFFERED"] = "1";
  const auto existing = env.find("PYTHONPATH");
  env["PYTHONPATH"] =
      (helper_dir.empty() ? run_dir + "/helper" : helper_dir) +
      (existing != env.end() && !existing->second.empty() ? ":" + existing->second : std::string());
  return env;
}

namespace {

/// A printf format that prints `text` byte for byte and then "x" (words.sh reads it): only ASCII
/// letters and digits stay as they are, every other byte is \ooo.
std::string printf_word(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9');
    out += plain ? std::string(1, c) : fmt::format("\\{:03o}", u);
  }
  return out + "x";
}

}  // namespace

std::vector<std::string> data_binds(const RunPlan& plan) {
  std::vector<std::string> binds;
  for (const auto& use : plan.record.data) {
    const auto path = plan.data_paths.find(use.name);
    if (path != plan.data_paths.end()) binds.push_back(path->second + ":" + use.mount + ":ro");
  }
  return binds;
}

bool passes_docker(const std::string& value) {
  return is_utf8(value);
}

std::vector<std::string> utf8_command(const RunPlan& plan, std::vector<std::string> words) {
  const auto env = run_environment(plan, "/mlw/run", "/mlw/share");
  const bool odd_env = std::any_of(env.begin(), env.end(),
                                   [](const auto& item) { return !passes_docker(item.second); });
  const bool odd_word = std::any_of(words.begin(), words.end(),
                                    [](const auto& word) { return !passes_docker(word); });
  if (!odd_env && !odd_word) return words;
  std::vector<std::string> wrapped = {"/bin/sh", "-c", script_body("src/exec/words.sh"),
                                      "mlw-words"};
  for (const auto& [key, value] : env) {
    if (!passes_docker(value)) wrapped.push_back(key + "=" + printf_word(value));
  }
  wrapped.push_back("--");
  for (const auto& word : words) wrapped.push_back(printf_word(word));
  return wrapped;
}

namespace {

/// `text` in the characters docker takes in names and labels ([A-Za-z0-9_.-]; lowercased first
/// where `lower`): the others as '-' and, when one was (or `text` is empty and `empty_changes`),
/// a short hash of `text` appended, so that two such names cannot meet.
std::string docker_safe(const std::string& text, bool lower, bool empty_changes) {
  std::string out;
  bool changed = empty_changes && text.empty();
  for (char c : text) {
    if (lower && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    out += ok ? c : '-';
    changed = changed || !ok;
  }
  if (changed) out += "-" + sha256_hex(text).substr(0, 8);
  return out;
}

}  // namespace

std::string container_name(const std::string& run_id) {
  return "mlw-" + docker_safe(run_id, true, false);
}

std::string project_label(const std::string& project) {
  return docker_safe(project, false, true);
}

std::vector<std::string> docker_run_words(const RunPlan& plan, const TargetRunPaths& paths,
                                          const TargetFacts& facts, const std::string& image,
                                          const std::string& user) {
  std::vector<std::string> words = docker_words(plan.compute, facts);
  const std::string name = container_name(plan.record.run_id);
  words.insert(words.end(),
               {"create", "--name", name, "--label", "mlw.run=" + plan.record.run_id, "--label",
                "mlw.project=" + plan.project.name, "--init", "-w", "/mlw/run/snapshot"});
  if (plan.compute.shared_volumes) {
    // The id goes into the run folder's `container` at create, for cancel.
    words.insert(words.end(), {"--cidfile", "container", "-v", paths.run_dir + ":/mlw/run"});
    if (!user.empty()) words.insert(words.end(), {"--user", user, "-e", "HOME=/tmp"});
  }
  words.insert(words.end(), {"-v", paths.share_dir + ":/mlw/share"});
  for (const auto& bind : data_binds(plan)) words.insert(words.end(), {"-v", bind});
  for (const auto& [key, value] : run_environment(plan, "/mlw/run", "/mlw/share")) {
    if (passes_docker(value)) words.insert(words.end(), {"-e", key});
  }
  if (plan.compute.nvidia_docker && facts.nvidia_runtime) {
    const std::string& gpus = plan.compute.gpus.empty() ? "all" : plan.compute.gpus;
    words.insert(words.end(),
                 {"--gpus", gpus.find(',') != std::string::npos ? "\"" + gpus + "\"" : gpus});
  }
  for (const auto& arg : plan.compute.docker_run_args) words.push_back(arg);
  words.push_back(image);
  for (auto& word : container_command(plan)) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> container_command(const RunPlan& plan) {
  std::vector<std::string> words = utf8_command(plan, script_command(plan));
  if (!plan.compute.nvidia_docker) return words;
  // The run header (spec §6): the GPUs this container sees, numbered as on the machine where
  // the container was given chosen ones (a lease: device=@GPUS@, filled in by the monitor), as
  // the record numbers them.
  std::vector<std::string> header = {"/bin/sh", "-c", script_body("src/exec/gpus.sh"), "mlw-gpus"};
  if (const std::string& gpus = plan.compute.gpus; starts_with(gpus, "device=")) {
    header.insert(header.end(), {"--machine", gpus.substr(7)});
  }
  header.insert(header.end(), words.begin(), words.end());
  return header;
}

std::vector<std::string> script_command(const RunPlan& plan, const std::string& python) {
  std::vector<std::string> words = {python};
  if (plan.propose_on_target && plan.run_config.framework != "PySpark") {
    words.insert(words.end(), {"-m", "mlw.propose"});  // the point's arguments added there
  }
  if (plan.run_config.framework == "PySpark") {
    // Where the run starts without an image built for it (remote, a batch job, a prebuilt image), a
    // missing spark-submit is explained as on the local target, not as tini's exec failure.
    words = {"/bin/sh", "-c", script_body("src/exec/spark.sh"),
             no_spark_submit_message(plan.record.run_config, "the run's PATH")};
  }
  for (auto& word : expand_argument_vector(plan.run_config, plan.script, plan.arguments)) {
    words.push_back(std::move(word));
  }
  // A restart policy: the script under exec/restart.sh, which runs it again after those codes.
  if (const RestartPolicy& restart = plan.compute.restart; restart.set) {
    std::string codes = restart.on_failure ? "any" : "";
    for (const int code : restart.on_exit_codes)
      codes += (codes.empty() ? "" : " ") + std::to_string(code);
    std::vector<std::string> wrapped = {"/bin/sh",
                                        "-c",
                                        script_body("src/exec/restart.sh"),
                                        "mlw-restart",
                                        codes,
                                        std::to_string(restart.max_restarts),
                                        std::to_string(restart.backoff_seconds)};
    wrapped.insert(wrapped.end(), words.begin(), words.end());
    return wrapped;
  }
  return words;
}

std::string engine_create_body(const RunPlan& plan, const TargetRunPaths& paths,
                               const TargetFacts& facts, const std::string& image,
                               const std::string& user) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [key, value] : run_environment(plan, "/mlw/run", "/mlw/share")) {
    if (passes_docker(value)) env.push_back(key + "=" + value);
  }
  nlohmann::json binds = {paths.run_dir + ":/mlw/run", paths.share_dir + ":/mlw/share"};
  for (const auto& bind : data_binds(plan)) binds.push_back(bind);
  nlohmann::json host = {{"Init", true}, {"Binds", binds}};
  if (plan.compute.nvidia_docker && facts.nvidia_runtime) {
    const std::string gpus = plan.compute.gpus.empty() ? "all" : plan.compute.gpus;
    nlohmann::json request = {{"Driver", ""}, {"Capabilities", {{"gpu"}}}};
    if (gpus == "all") {
      request["Count"] = -1;
    } else if (starts_with(gpus, "device=")) {
      request["Count"] = 0;
      request["DeviceIDs"] = split(gpus.substr(7), ',');
    } else {
      try {
        request["Count"] = std::stoi(gpus);
      } catch (const std::exception&) {
        throw Error(fmt::format("gpus: \"{}\" is not all, a count or device=0,1", gpus),
                    exit_code::k_cannot_start);
      }
    }
    host["DeviceRequests"] = {request};
  }
  nlohmann::json body = {
      {"Image", image},
      {"Cmd", container_command(plan)},
      {"WorkingDir", "/mlw/run/snapshot"},
      {"Env", env},
      {"Labels", {{"mlw.run", plan.record.run_id}, {"mlw.project", plan.project.name}}},
      {"HostConfig", host}};
  if (!user.empty()) {
    body["User"] = user;
    body["Env"].push_back("HOME=/tmp");
  }
  return body.dump();
}

bool runs_in_engine(const ComputeConfig& compute, const TargetFacts& facts) {
  return compute.shared_volumes && compute.docker_run_args.empty() && !compute.use_sudo &&
         (!compute.nvidia_docker || facts.nvidia_runtime);
}

namespace {

/// The monitor's lease settings (monitor.sh's mlw_lease_… and, for a sweep's point that waits
/// for its turn there, mlw_gate_…): none where the run takes no lease.
std::string lease_preamble(const RunPlan& plan, bool container) {
  const LeaseRequest lease = lease_request(plan);
  std::string text;
  if (plan.gate) {
    text = "mlw_gate_want=" + shell_quote(fmt::format("slot:{}", plan.gate->slots)) +
           "\nmlw_gate_dir=" + shell_quote("own:" + plan.gate->folder) + "\n";
  }
  if (lease.want.empty() && !plan.gate) return "mlw_lease_want=\n";
  text += "mlw_lease_want=" + shell_quote(lease.want) +
          "\nmlw_lease_dir=" + shell_quote(lease.folder) +
          "\nmlw_lease_run=" + shell_quote(plan.record.run_id) +
          "\nmlw_lease_who=" + shell_quote(plan.record.user + "@" + plan.record.host) +
          "\nmlw_lease_foreign=" + shell_quote(lease.foreign) +
          "\nmlw_lease_sh=" + shell_quote(lease_script()) + "\n";
  if (lease.want.empty()) return text;
  if (!container) text += "mlw_gpus_sh=" + shell_quote(script_body("src/exec/gpus.sh")) + "\n";
  if (container) text += "mlw_hold_sh=" + shell_quote(script_body("src/exec/hold.sh")) + "\n";
  return text;
}

}  // namespace

std::string monitor_script(const RunPlan& given, const TargetRunPaths& paths,
                           const TargetFacts& facts, const std::string& image) {
  const bool container = !image.empty();
  // A leased run's container is given the GPUs the lease grants there: a word and a JSON item
  // that the monitor fills in (device=@GPUS@).
  RunPlan plan = given;
  if (container && plan.compute.gpus_per_run != "all") plan.compute.gpus = "device=@GPUS@";
  std::string script = "#!/bin/sh\n# The monitor of run " + plan.record.run_id +
                       ", written by mlw: its settings, then src/exec/monitor.sh.\n";
  const auto env = container ? run_environment(plan, "/mlw/run", "/mlw/share")
                             : run_environment(plan, paths.run_dir, paths.share_dir);
  for (const auto& [key, value] : env) script += "export " + shell_quote(key + "=" + value) + "\n";
  std::string mode = "process";
  std::vector<std::string> words;
  if (!container) {
    words = script_command(plan, plan.compute.python_location);
  } else {
    mode = plan.compute.shared_volumes ? "container" : "copy";
    const ComputeConfig& compute = plan.compute;
    const std::vector<std::string> docker = docker_words(compute, facts);
    words = docker_run_words(plan, paths, facts, image, "@USER@");
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(docker.size()));
    // The engine's API creates it where it is sure to be the engine the docker command asks.
    const bool plain = runs_in_engine(compute, facts);
    script += "mlw_docker=" + shell_quote(join(docker, " ")) + "\nmlw_create_json=" +
              shell_quote(plain ? engine_create_body(plan, paths, facts, image, "@USER@") : "") +
              "\nmlw_container_name=" + shell_quote(container_name(plan.record.run_id)) +
              "\nmlw_engine_retry=" + std::to_string(setting("MLW_ENGINE_RETRY")) + "\n" +
              engine_socket_lookup();
  }
  script += lease_preamble(plan, container) + sampler_preamble(plan);
  // restartAfterReboot: the boot hook's file (exec/reboot.sh), which the monitor installs.
  if (const RestartPolicy& restart = plan.compute.restart; restart.after_reboot) {
    script += "mlw_reboot=" + std::to_string(restart.max_restarts) +
              "\nmlw_reboot_sh=" + shell_quote(embedded_script("src/exec/reboot.sh")) + "\n";
  } else {
    script += "mlw_reboot=\n";
  }
  // The data store's marker of the run's data sets, which the monitor holds (data/data.sh).
  script += "mlw_data_uses=" +
            (plan.record.data.empty()
                 ? std::string()
                 : shell_quote(plan.compute.data_store + "/uses/" + plan.record.run_id)) +
            "\n";
  script += "mlw_run=" + shell_quote(paths.run_dir) +
            "\nmlw_share=" + shell_quote(paths.share_dir) + "\nmlw_mode=" + mode + "\nset -- " +
            shell_join(words) + "\n";
  return script + std::string(embedded_script("src/exec/monitor.sh"));
}

}  // namespace mlw
