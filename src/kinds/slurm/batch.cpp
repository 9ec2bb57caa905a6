#include "slurm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "mlw/exec/container.hpp"
#include "mlw/exec/requeue.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr const char* k_user_placeholder = "@MLW_USER@";

/// The variables every node sees besides the run's: node count, GPUs and the rendezvous.
const std::vector<std::string> k_node_variables = {
    "MLW_NODE_RANK", "MLW_NUM_NODES",     "MLW_GPUS_PER_NODE", "MASTER_ADDR",
    "MASTER_PORT",   "MLW_RESTART_COUNT", "MLW_RESUME"};

bool in_container(const RunPlan& plan) {
  return !slurm_config(plan.compute).container.empty();
}

int number(const std::string& text, int fallback) {
  return static_cast<int>(parse_integer(text, 0, 1 << 30).value_or(fallback));
}

/// The run's variables as its script sees them, with requeue's.
std::map<std::string, std::string> slurm_environment(const RunPlan& plan, const std::string& run,
                                                     const std::string& share) {
  auto env = run_environment(plan, run, share);
  for (auto& [key, value] :
       requeue_environment(requeue_config(plan.compute), share, plan.record.run_id)) {
    env[key] = value;
  }
  return env;
}

}  // namespace

SlurmConfig slurm_config(const ComputeConfig& compute) {
  SlurmConfig config;
  auto value = [&](const char* key) { return own_value(compute, key); };
  config.partition = value("partition");
  config.nodes = number(value("nodes"), 1);
  config.gpus_per_node = number(value("gpusPerNode"), 0);
  config.time_limit = value("timeLimit");
  config.account = value("account");
  config.container = value("container");
  config.container_runtime = value("containerRuntime");
  return config;
}

bool is_slurm_time(const std::string& text) {
  static const std::regex format(R"(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2})");
  return std::regex_match(text, format);
}

std::optional<long> slurm_time_seconds(const std::string& text) {
  if (!is_slurm_time(text)) return std::nullopt;
  const auto dash = text.find('-');
  const bool with_days = dash != std::string::npos;
  std::vector<long long> parts;
  for (const auto& part : split(with_days ? text.substr(dash + 1) : text, ':')) {
    const auto value = parse_integer(part, 0, 100'000'000);
    if (!value) return std::nullopt;
    parts.push_back(*value);
  }
  if (with_days) {
    const auto days = parse_integer(text.substr(0, dash), 0, 100'000);
    if (!days) return std::nullopt;
    parts[0] += *days * 24;  // the hours after the days
  }
  // Without days: minutes, MM:SS, HH:MM:SS; with them: HH, HH:MM, HH:MM:SS after the days.
  static const long long scales[2][3][3] = {{{60}, {60, 1}, {3600, 60, 1}},
                                            {{3600}, {3600, 60}, {3600, 60, 1}}};
  long long seconds = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    seconds += parts[i] * scales[with_days ? 1 : 0][parts.size() - 1][i];
  }
  return static_cast<long>(seconds);
}

SlurmFacts slurm_facts(const TargetFacts& facts) {
  SlurmFacts slurm;
  for (const auto& [key, value] : facts.section) {
    if (key == "slurm_missing") {
      slurm.missing.push_back(value);
    } else if (key == "slurm_error") {
      slurm.error = value;
    } else if (key == "slurm_partition") {
      slurm.partition = value;
    } else if (key == "slurm_node") {
      const auto parts = split(value, '|');
      SlurmNode node;
      node.name = parts.empty() ? value : parts[0];
      if (parts.size() > 1) node.state = parts[1];
      if (parts.size() > 2 && parts[2] != "(null)") node.gres = parts[2];
      const bool seen = std::any_of(slurm.nodes.begin(), slurm.nodes.end(),
                                    [&](const SlurmNode& n) { return n.name == node.name; });
      if (!seen) slurm.nodes.push_back(node);
    }
  }
  return slurm;
}

SlurmNodeCommand slurm_node_command(const RunPlan& plan, const TargetRunPaths& paths) {
  SlurmNodeCommand node;
  const SlurmConfig compute = slurm_config(plan.compute);
  if (!in_container(plan)) {
    node.command = script_command(plan, plan.compute.python_location);
    return node;
  }
  const std::string mounts = paths.run_dir + ":/mlw/run," + paths.share_dir + ":/mlw/share";
  const std::vector<std::string> script = script_command(plan);
  if (compute.container_runtime == "pyxis") {
    node.srun_options = {"--container-image=" + compute.container, "--container-mounts=" + mounts,
                         "--container-workdir=/mlw/run/snapshot"};
    node.command = script;
  } else if (compute.container_runtime == "apptainer") {
    node.command = {"apptainer", "exec", "--bind", mounts, "--pwd", "/mlw/run/snapshot"};
    if (compute.gpus_per_node > 0) node.command.push_back("--nv");
    const bool has_scheme =
        compute.container.find("://") != std::string::npos || compute.container.ends_with(".sif");
    node.command.push_back(has_scheme ? compute.container : "docker://" + compute.container);
    node.command.insert(node.command.end(), script.begin(), script.end());
  } else {
    node.command = {"docker",    "run",
                    "--rm",      "--init",
                    "--network", "host",
                    "--label",   "mlw.run=" + plan.record.run_id,
                    "-v",        paths.run_dir + ":/mlw/run",
                    "-v",        paths.share_dir + ":/mlw/share",
                    "-w",        "/mlw/run/snapshot",
                    "--user",    k_user_placeholder,
                    "-e",        "HOME=/tmp"};
    if (compute.gpus_per_node > 0) node.command.insert(node.command.end(), {"--gpus", "all"});
    // The docker CLI sends words and values to the engine as JSON: a value that is not UTF-8
    // is set inside the container by utf8_command instead, and so are such words.
    for (const auto& [key, value] : slurm_environment(plan, "/mlw/run", "/mlw/share")) {
      if (passes_docker(value)) node.command.insert(node.command.end(), {"-e", key});
    }
    for (const auto& key : k_node_variables) node.command.insert(node.command.end(), {"-e", key});
    node.command.push_back(compute.container);
    const auto words = utf8_command(plan, script);
    node.command.insert(node.command.end(), words.begin(), words.end());
  }
  return node;
}

std::vector<std::string> sbatch_options(const RunPlan& plan) {
  const SlurmConfig compute = slurm_config(plan.compute);
  std::vector<std::string> options = {"--job-name=" + container_name(plan.record.run_id),
                                      fmt::format("--nodes={}", compute.nodes),
                                      "--ntasks-per-node=1"};
  if (compute.gpus_per_node > 0) {
    options.push_back(fmt::format("--gpus-per-node={}", compute.gpus_per_node));
  }
  if (!compute.partition.empty()) options.push_back("--partition=" + compute.partition);
  if (!compute.time_limit.empty()) options.push_back("--time=" + compute.time_limit);
  if (!compute.account.empty()) options.push_back("--account=" + compute.account);
  // Rerunnable, and the batch shell (job.sh) warned before the limit: it passes the signal on.
  if (const RequeueConfig requeue = requeue_config(plan.compute); requeue.requeue) {
    options.push_back("--requeue");
    options.push_back(fmt::format("--signal=B:{}@{}", requeue.signal, requeue.lead_s));
  }
  // Relative to the folder sbatch runs in (the run's).
  options.insert(options.end(), {"--output=driver_log.txt", "--open-mode=append"});
  return options;
}

std::string slurm_run_env(const RunPlan& plan, const TargetRunPaths& paths) {
  const SlurmConfig compute = slurm_config(plan.compute);
  const RequeueConfig requeue = requeue_config(plan.compute);
  std::string text = "# Run " + plan.record.run_id + ", written by mlw; job.sh sources it.\n";
  const auto env = in_container(plan) ? slurm_environment(plan, "/mlw/run", "/mlw/share")
                                      : slurm_environment(plan, paths.run_dir, paths.share_dir);
  for (const auto& [key, value] : env) text += "export " + shell_quote(key + "=" + value) + "\n";
  const SlurmNodeCommand node = slurm_node_command(plan, paths);
  text +=
      "mlw_share=" + shell_quote(paths.share_dir) + "\n" +
      fmt::format("mlw_nodes={}\nmlw_gpus_per_node={}\n", compute.nodes, compute.gpus_per_node) +
      fmt::format("mlw_sample_every={}\nmlw_sample_warn={}\n", plan.compute.gpu_sample_seconds,
                  shell_quote(plan.compute.gpu_unused_warn_minutes)) +
      fmt::format("mlw_checkpoint_signal={}\nmlw_checkpoint_lead={}\n",
                  shell_quote(requeue.requeue ? requeue.signal : ""), requeue.lead_s) +
      "srun_options=(" + shell_join(node.srun_options) + ")\n" + "command=(" +
      shell_join(node.command) + ")\n";
  return text;
}

bool partition_has_gpus(const SlurmFacts& facts) {
  return std::any_of(facts.nodes.begin(), facts.nodes.end(),
                     [](const SlurmNode& node) { return node.gres.starts_with("gpu"); });
}

SlurmEnd slurm_end(const std::string& state, const std::string& exit_field,
                   std::optional<int> script_code) {
  SlurmEnd end;
  int code = 0;
  int signal = 0;
  const auto colon = exit_field.find(':');
  code = static_cast<int>(parse_integer(exit_field.substr(0, colon), 0, 255).value_or(0));
  if (colon != std::string::npos) {
    signal = static_cast<int>(parse_integer(exit_field.substr(colon + 1), 0, 127).value_or(0));
  }
  const int reported = signal > 0 ? 128 + signal : code;
  if (state == "COMPLETED") {
    end.status = status::k_completed;
    end.exit_code = script_code.value_or(0);
    if (end.exit_code != 0) end.status = status::k_failed;
  } else if (state == "FAILED") {
    end.status = status::k_failed;
    end.exit_code = script_code.value_or(reported);
  } else if (state == "CANCELLED") {
    end.status = status::k_canceled;
    end.exit_code = reported != 0 ? reported : 143;
    end.problem = "Slurm cancelled the job (scancel)";
  } else if (state == "OUT_OF_MEMORY") {
    end.status = status::k_failed;
    end.exit_code = 137;
    end.problem = "Slurm killed the job: out of memory (OUT_OF_MEMORY)";
  } else if (state == "TIMEOUT") {
    end.status = status::k_failed;
    end.exit_code = reported != 0 ? reported : 143;
    end.problem =
        "Slurm stopped the job at its time limit (TIMEOUT; timeLimit in the compute file)";
  } else if (state == "LOST") {
    end.status = status::k_lost;
    end.problem =
        "the Slurm controller did not answer; the job may go on: follow it with history logs -f";
    return end;
  } else {
    end.status = status::k_failed;
    end.exit_code = reported != 0 ? reported : script_code.value_or(1);
    end.problem = fmt::format("Slurm ended the job as {}", state.empty() ? "UNKNOWN" : state);
  }
  if (end.status == status::k_failed && end.exit_code == 0) end.exit_code = 1;
  return end;
}

}  // namespace mlw
