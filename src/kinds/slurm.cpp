// The slurm kind: the run as a Slurm batch job, submitted with sbatch on a login node reached
// over SSH, on one or more nodes (optionally in a container).

#include <fmt/format.h>

#include "mlw/exec/run_session.hpp"
#include "mlw/exec/slurm.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/util/shell_quote.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The probe's Slurm lines: missing commands, the partition (the compute file's, or the
/// default), its nodes with their state and gres, or why the controller did not answer.
std::string slurm_probe(const ComputeConfig& compute) {
  return "for c in sbatch squeue scontrol sinfo; do command -v \"$c\" >/dev/null 2>&1 || echo "
         "\"slurm_missing=$c\"; done\n"
         "p=" +
         shell_quote(compute.partition) +
         "\n"
         "[ -n \"$p\" ] || p=$(sinfo -h -o %P 2>/dev/null | sed -n 's/\\*$//p' | head -n 1)\n"
         "if [ -n \"$p\" ]; then\n"
         "  if out=$(scontrol show partition \"$p\" 2>&1); then\n"
         "    echo \"slurm_partition=$p\"\n"
         "    sinfo -h -p \"$p\" -N -o '%N|%T|%G' 2>/dev/null | sort -u | sed 's/^/slurm_node=/'\n"
         "  elif ! printf '%s' \"$out\" | grep -qi 'not found'; then\n"
         "    echo \"slurm_error=$(printf '%s' \"$out\" | tail -n 1)\"\n"
         "  fi\n"
         "elif ! out=$(sinfo -h -o %P 2>&1); then\n"
         "  echo \"slurm_error=$(printf '%s' \"$out\" | tail -n 1)\"\n"
         "fi\n";
}

/// The commands, the controller, the partition, its nodes, GPUs per node (gres).
void slurm_rows(const CheckInput& in, std::vector<CheckRow>& rows) {
  const ComputeConfig& compute = in.compute;
  const TargetFacts& facts = in.facts;
  const bool have_commands = facts.slurm_missing.empty();
  rows.push_back(
      {"Slurm commands", have_commands ? CheckResult::Ok : CheckResult::Fail,
       have_commands ? "sbatch, squeue, scontrol, sinfo"
                     : "missing: " + join(facts.slurm_missing, ", "),
       "use a Slurm login node, or put Slurm's bin folder on the PATH of SSH sessions there",
       have_commands
           ? ""
           : fmt::format("{} has no {} on the PATH of an SSH session: is it a Slurm "
                         "login node? (add Slurm's bin folder to PATH in ~/.bashrc there)",
                         in.host, join(facts.slurm_missing, ", "))});
  if (!facts.slurm_error.empty()) {
    rows.push_back({"controller", CheckResult::Fail, facts.slurm_error,
                    "start slurmctld, or check SlurmctldHost in slurm.conf on the login node",
                    fmt::format("the Slurm controller does not answer on {}: {} (is slurmctld up? "
                                "try: ssh {} sinfo)",
                                in.host, facts.slurm_error, in.host)});
    return;
  }
  const std::string partition = compute.partition.empty() ? "(default)" : compute.partition;
  const bool found = !facts.slurm_partition.empty();
  rows.push_back({"partition", found ? CheckResult::Ok : CheckResult::Fail,
                  found ? fmt::format("{} ({} nodes)", facts.slurm_partition, facts.slurm_nodes)
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
  for (const auto& node : facts.slurm_node_list) {
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
       fmt::format("{} up, {} idle, of {}; a run asks for {}", up, idle, facts.slurm_nodes,
                   compute.nodes),
       "wait for nodes to come back (sinfo -R says why they are down) or lower nodes",
       facts.slurm_nodes > 0 && compute.nodes > facts.slurm_nodes
           ? fmt::format("the run asks for {} nodes but partition {} on {} has {}; lower nodes in "
                         "the compute file",
                         compute.nodes, facts.slurm_partition, in.host, facts.slurm_nodes)
           : ""});
  rows.push_back({"GPUs per node",
                  compute.gpus_per_node == 0 || partition_has_gpus(facts) ? CheckResult::Ok
                                                                          : CheckResult::Fail,
                  join(gpus, "; "),
                  "gpusPerNode is set but the partition's nodes report no GPUs (Gres=gpu:N in "
                  "slurm.conf)"});
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
  gpu_rows(in, rows, false);
  disk_row(in, rows);
}

}  // namespace

/// The slurm kind's row.
const TargetKind& slurm_kind() {
  static const TargetKind kind{
      .name = "slurm",
      .uses_ssh = true,
      .runs_detached = true,
      .batch = true,
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "baseDockerImage", "pythonLocation", "partition", "nodes", "gpusPerNode",
               "timeLimit", "account", "container", "containerRuntime"},
      .attach = {.remote = true, .slurm = true},
      .attach_examples = {"mlw computetarget attach slurm -n hpc -a login.example.com -u me -k "
                          "--partition gpu --nodes 2 --gpus-per-node 4 --time 02:00:00"},
      .probe_section = slurm_probe,
      .checks = slurm_checks,
      .make_executor = [] { return std::unique_ptr<Executor>(new TargetExecutor("slurm")); },
      .make_driver = slurm_driver,
  };
  return kind;
}

}  // namespace mlw
