// The slurm kind: the run as a Slurm batch job, submitted with sbatch on a login node reached
// over SSH, on one or more nodes (optionally in a container).

#include <fmt/format.h>

#include "mlw/exec/place.hpp"
#include "mlw/exec/requeue.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"
#include "slurm.hpp"

namespace mlw {

namespace {

/// The probe's Slurm lines: missing commands, the partition (the compute file's, or the
/// default), its nodes with their state and gres, or why the controller did not answer.
std::string slurm_probe(const ComputeConfig& file) {
  return "(\nset -- " + shell_quote(slurm_config(file).partition) + "\n" +
         std::string(embedded_script("src/kinds/slurm/probe.sh")) + ")\n";
}

/// The commands, the controller, the partition, its nodes, GPUs per node (gres).
void slurm_rows(const CheckInput& in, std::vector<CheckRow>& rows) {
  const SlurmConfig compute = slurm_config(in.compute);
  const SlurmFacts facts = slurm_facts(in.facts);
  const int node_count = static_cast<int>(facts.nodes.size());
  const bool have_commands = facts.missing.empty();
  rows.push_back(
      {"Slurm commands", have_commands ? CheckResult::Ok : CheckResult::Fail,
       have_commands ? "sbatch, squeue, scontrol, sinfo" : "missing: " + join(facts.missing, ", "),
       "use a Slurm login node, or put Slurm's bin folder on the PATH of SSH sessions there",
       have_commands
           ? ""
           : fmt::format("{} has no {} on the PATH of an SSH session: is it a Slurm "
                         "login node? (add Slurm's bin folder to PATH in ~/.bashrc there)",
                         in.host, join(facts.missing, ", "))});
  if (!facts.error.empty()) {
    rows.push_back({"controller", CheckResult::Fail, facts.error,
                    "start slurmctld, or check SlurmctldHost in slurm.conf on the login node",
                    fmt::format("the Slurm controller does not answer on {}: {} (is slurmctld up? "
                                "try: ssh {} sinfo)",
                                in.host, facts.error, in.host)});
    return;
  }
  const std::string partition = compute.partition.empty() ? "(default)" : compute.partition;
  const bool found = !facts.partition.empty();
  rows.push_back({"partition", found ? CheckResult::Ok : CheckResult::Fail,
                  found ? fmt::format("{} ({} nodes)", facts.partition, node_count)
                        : "no partition " + partition,
                  "set partition in the compute file to one that sinfo -s lists",
                  found ? ""
                  : compute.partition.empty()
                      ? fmt::format("Slurm on {} has no default partition: set "
                                    "partition in the compute file (list them with: "
                                    "sinfo -s)",
                                    in.host)
                      : fmt::format("Slurm on {} has no partition \"{}\" (list them "
                                    "with: sinfo -s)",
                                    in.host, compute.partition)});
  if (!found) return;
  int up = 0;
  int idle = 0;
  std::vector<std::string> gpus;
  for (const auto& node : facts.nodes) {
    if (node.state.starts_with("idle")) ++idle;
    if (!node.state.starts_with("down") && !node.state.starts_with("drain") &&
        !node.state.starts_with("fail")) {
      ++up;
    }
    gpus.push_back(node.name + ": " + (node.gres.empty() ? "no GPUs" : node.gres));
  }
  // doctor fails while fewer nodes are up than a run asks for; submit refuses only a run that
  // asks for more nodes than the partition has (Slurm queues it until down nodes come back).
  rows.push_back(
      {"nodes", up >= compute.nodes ? CheckResult::Ok : CheckResult::Fail,
       fmt::format("{} up, {} idle, of {}; a run asks for {}", up, idle, node_count, compute.nodes),
       "wait for nodes to come back (sinfo -R says why they are down) or lower nodes",
       node_count > 0 && compute.nodes > node_count
           ? fmt::format("the run asks for {} nodes but partition {} on {} has {}; lower nodes in "
                         "the compute file",
                         compute.nodes, facts.partition, in.host, node_count)
           : ""});
  const bool gpus_ok = compute.gpus_per_node == 0 || partition_has_gpus(facts);
  rows.push_back(
      {"GPUs per node", gpus_ok ? CheckResult::Ok : CheckResult::Fail, join(gpus, "; "),
       "gpusPerNode is set but the partition's nodes report no GPUs (Gres=gpu:N in "
       "slurm.conf)",
       "", exit_code::k_cannot_start,
       gpus_ok ? ""
               : fmt::format("no node of partition {} on {} reports GPUs (Gres=gpu:N "
                             "in slurm.conf), so Slurm will refuse a run that asks "
                             "for {} per node; see: mlw computetarget doctor -n {}",
                             facts.partition, in.host, compute.gpus_per_node, in.target_name)});
}

void slurm_checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  slurm_rows(in, rows);
  const std::string nvidia = nvidia_refusal(in.compute, in.facts, in.host);
  if (!nvidia.empty()) {
    rows.push_back({"NVIDIA runtime", CheckResult::Fail, "nvidiaDocker is true",
                    "set nvidiaDocker: false (it is for docker and remotedocker targets; "
                    "gpusPerNode asks Slurm for GPUs)",
                    nvidia});
  }
  // A warning that would come as the job starts is no warning: refused, not dropped.
  const RequeueConfig requeue = requeue_config(in.compute);
  const auto limit = slurm_time_seconds(slurm_config(in.compute).time_limit);
  if (requeue.requeue && limit && *limit > 0 && requeue.lead_s >= *limit) {
    rows.push_back({"checkpoint warning", CheckResult::Fail,
                    fmt::format("checkpointLeadSeconds {} is not less than timeLimit ({} s)",
                                requeue.lead_s, *limit),
                    "lower checkpointLeadSeconds or raise timeLimit",
                    fmt::format("checkpointLeadSeconds ({}) must be less than timeLimit ({} s) in "
                                "aml_config/{}.compute: the warning would come as the job starts",
                                requeue.lead_s, *limit, in.target_name)});
  }
  gpu_rows(in, rows, false);
  disk_row(in, rows);
}

/// A value that goes into an #SBATCH line or a command word: one word, no control character (a
/// newline would start another line of the job script).
std::string word_problem(const std::string& value) {
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == ' ' || c == 0x7f) {
      return "must be one word, not \"" + printable(value) + "\"";
    }
  }
  return "";
}

std::string at_least(const std::string& value, int minimum, const char* words) {
  return parse_integer(value, minimum, 1 << 20) ? "" : words;
}

std::string nodes_problem(const std::string& value) {
  return at_least(value, 1, "must be at least 1");
}

std::string gpus_problem(const std::string& value) {
  return at_least(value, 0, "must not be negative");
}

std::string time_problem(const std::string& value) {
  if (value.empty() || is_slurm_time(value)) return "";
  return "must be HH:MM:SS (or minutes, MM:SS, D-HH, D-HH:MM:SS), not \"" + value + "\"";
}

std::string runtime_problem(const std::string& value) {
  if (value == "docker" || value == "pyxis" || value == "apptainer") return "";
  return "must be one of docker, pyxis, apptainer, not \"" + value + "\"";
}

/// A runtime other than docker runs a container: it needs one.
std::string keys_problem(const ComputeConfig& compute) {
  const SlurmConfig slurm = slurm_config(compute);
  if (slurm.container_runtime != "docker" && slurm.container.empty()) {
    return "--container-runtime goes with --container IMAGE";
  }
  return "";
}

/// What attach prints of a slurm target.
void describe(const ComputeConfig& compute, nlohmann::ordered_json& result) {
  const SlurmConfig slurm = slurm_config(compute);
  result["partition"] = slurm.partition.empty() ? "(the default)" : slurm.partition;
  result["nodes"] = slurm.nodes;
  if (slurm.gpus_per_node > 0) result["gpus_per_node"] = slurm.gpus_per_node;
  if (!slurm.time_limit.empty()) result["time_limit"] = slurm.time_limit;
  if (!slurm.account.empty()) result["account"] = slurm.account;
  if (!slurm.container.empty()) {
    result["container"] = slurm.container + " (" + slurm.container_runtime + ")";
  }
}

}  // namespace

/// The slurm kind's row.
const TargetKind& slurm_kind() {
  static const TargetKind kind{
      .name = "slurm",
      .place = &ssh_host(),
      .runner = {.detached = true, .batch = true, .arrays = true, .make_driver = slurm_driver},
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "baseDockerImage", "pythonLocation", "gpuSampleSeconds", "gpuUnusedWarnMinutes"},
      .own_keys = with_requeue_keys(
          {{"partition", ValueKind::String, "Slurm partition.", "", word_problem, "--partition",
            "Slurm partition (default: the cluster's default)"},
           {"nodes", ValueKind::Int, "Slurm: number of nodes.", "1", nodes_problem, "--nodes",
            "Nodes per run (default 1)"},
           {"gpusPerNode", ValueKind::Int, "Slurm: GPUs per node.", "0", gpus_problem,
            "--gpus-per-node", "GPUs per node (--gpus-per-node for sbatch)"},
           {"timeLimit", ValueKind::String, "Slurm: time limit, HH:MM:SS.", "", time_problem,
            "--time", "Time limit, HH:MM:SS"},
           {"account", ValueKind::String, "Slurm: account to charge.", "", word_problem,
            "--account", "Slurm account to charge"},
           {"container", ValueKind::String, "Slurm: container image to run in.", "", word_problem,
            "--container", "Run the script in this image on the nodes"},
           {"containerRuntime", ValueKind::String,
            "Slurm: what runs the container on the nodes: docker, pyxis or apptainer.", "docker",
            runtime_problem, "--container-runtime", "docker (default), pyxis or apptainer"}}),
      .gpu_key = "gpusPerNode",
      .attach = {.remote = true},
      .attach_examples = {"mlw computetarget attach slurm -n hpc -a login.example.com -u me -k "
                          "--partition gpu --nodes 2 --gpus-per-node 4 --time 02:00:00"},
      .probe_section = slurm_probe,
      .check_keys = keys_problem,
      .describe = describe,
      .checks = slurm_checks,
  };
  return kind;
}

}  // namespace mlw
