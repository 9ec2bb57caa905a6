#include <unistd.h>

#include <fmt/format.h>

#include <functional>

#include "mlw/api/computetarget.hpp"
#include "mlw/config/targets.hpp"
#include "mlw/exec/slurm.hpp"
#include "mlw/remote/connect.hpp"
#include "mlw/remote/probe.hpp"
#include "mlw/remote/shell.hpp"
#include "mlw/util/net.hpp"
#include "mlw/util/strings.hpp"

// `mlw computetarget doctor`: one row per check, each with its fix.

namespace mlw::api {

namespace {

/// doctor's Slurm lines: the commands, the partition, its nodes up, GPUs per node as Slurm
/// reports them (gres).
void slurm_doctor_lines(const ComputeConfig& compute, const TargetFacts& facts,
                        const std::function<void(const std::string&, bool, const std::string&,
                                                 const std::string&)>& line) {
  line("Slurm commands", facts.slurm_missing.empty(),
       facts.slurm_missing.empty() ? "sbatch, squeue, scontrol, sinfo"
                                   : "missing: " + join(facts.slurm_missing, ", "),
       "use a Slurm login node, or put Slurm's bin folder on the PATH of SSH sessions there");
  const std::string partition = compute.partition.empty() ? "(default)" : compute.partition;
  if (!facts.slurm_error.empty()) {
    line("controller", false, facts.slurm_error,
         "start slurmctld, or check SlurmctldHost in slurm.conf on the login node");
    return;
  }
  line("partition", !facts.slurm_partition.empty(),
       facts.slurm_partition.empty()
           ? "no partition " + partition
           : fmt::format("{} ({} nodes)", facts.slurm_partition, facts.slurm_nodes),
       "set partition in the compute file to one that sinfo -s lists");
  if (facts.slurm_partition.empty()) return;
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
  line("nodes", up >= compute.nodes,
       fmt::format("{} up, {} idle, of {}; a run asks for {}", up, idle, facts.slurm_nodes,
                   compute.nodes),
       "wait for nodes to come back (sinfo -R says why they are down) or lower nodes");
  line("GPUs per node", compute.gpus_per_node == 0 || partition_has_gpus(facts), join(gpus, "; "),
       "gpusPerNode is set but the partition's nodes report no GPUs (Gres=gpu:N in slurm.conf)");
}

/// Resolves the endpoint and opens a TCP connection (closed at once): doctor's first two lines.
std::pair<std::string, std::string> check_reachable(const SshEndpoint& endpoint, bool& resolved) {
  const TcpConnection connection = tcp_connect(endpoint.host, endpoint.port, 10000);
  resolved = connection.resolve_error.empty();
  if (!resolved) return {connection.resolve_error, ""};
  if (connection.fd >= 0) {
    ::close(connection.fd);
    return {"", "port " + std::to_string(endpoint.port) + " answers"};
  }
  return {connection.any_address ? errno_text(connection.connect_errno) : "no address", ""};
}

/// nvidia-smi's "11441 MiB" with the GiB the 2017 guide showed ("Total memory: 11.17GiB").
std::string memory_with_gib(const std::string& memory) {
  if (!memory.ends_with(" MiB")) return memory;
  try {
    std::size_t used = 0;
    const std::string number = memory.substr(0, memory.size() - 4);
    const double mib = std::stod(number, &used);
    if (used != number.size()) return memory;
    return fmt::format("{} ({:.2f} GiB)", memory, mib / 1024.0);
  } catch (const std::exception&) {
    return memory;
  }
}

}  // namespace

int doctor(Context& ctx, const std::string& name) {
  const Project& project = ctx.project();
  const ComputeConfig compute = load_compute(project, name);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int failed = 0;
  auto line = [&](const std::string& check, bool ok, const std::string& detail,
                  const std::string& fix = "") {
    if (!ok) ++failed;
    rows.push_back({{"check", check},
                    {"result", ok ? "ok" : "fail"},
                    {"detail", detail},
                    {"fix", ok ? "" : fix}});
  };
  std::unique_ptr<Shell> shell;
  const bool remote = uses_ssh(compute.type);
  if (remote) {
    const SshEndpoint endpoint = target_endpoint(compute);
    bool resolved = false;
    const auto [error, reached] = check_reachable(endpoint, resolved);
    line("address resolves", resolved, resolved ? endpoint.host : error,
         "fix address in aml_config/" + name + ".compute or ~/.ssh/config");
    if (resolved) {
      line(
          "reachable", error.empty(), error.empty() ? reached : error,
          "check that sshd runs there and that port " + std::to_string(endpoint.port) + " is open");
    }
    if (resolved && error.empty()) {
      try {
        auto ssh = connect_target(ctx, name, compute);
        line("host key", true, ssh->fingerprint() + " is in ~/.ssh/known_hosts");
        line("login", true, compute.username + " with " + ssh->auth_method());
        shell = std::move(ssh);
      } catch (const Error& e) {
        const std::string message = e.what();
        const bool host_key = message.find(": host key:") != std::string::npos;
        line(host_key ? "host key" : "login", false, message,
             host_key ? "attach again with --accept-host-key after checking the fingerprint"
                      : "attach again with -w/--password-stdin or -k");
      }
    }
  } else {
    shell = std::make_unique<LocalShell>();
  }
  if (shell) {
    const TargetFacts facts = probe_target(*shell, compute);
    const bool uses_docker = compute.type == "docker" || compute.type == "remotedocker";
    if (uses_docker) {
      line("docker", facts.docker_ok,
           facts.docker_ok ? "server " + facts.docker_detail : facts.docker_detail,
           compute.type == "docker" ? "start the Docker engine, or set DOCKER_HOST"
                                    : "install Docker there and add " + compute.username +
                                          " to the docker group (sudo usermod -aG docker " +
                                          compute.username + "), or set useSudo: true");
      const bool nvidia_ok = facts.nvidia_runtime || facts.nvidia_docker_binary;
      const std::string nvidia_detail = facts.nvidia_runtime
                                            ? "the daemon has the nvidia runtime (--gpus)"
                                        : facts.nvidia_docker_binary ? "nvidia-docker is installed"
                                                                     : "no NVIDIA runtime";
      if (compute.nvidia_docker || nvidia_ok) {
        line("NVIDIA runtime", nvidia_ok, nvidia_detail,
             "install nvidia-container-toolkit on " + shell->host() +
                 " and restart docker (nvidiaDocker is true)");
      } else {
        rows.push_back({{"check", "NVIDIA runtime"},
                        {"result", "-"},
                        {"detail", nvidia_detail + " (not needed: nvidiaDocker is false)"},
                        {"fix", ""}});
      }
    } else if (compute.type == "slurm") {
      slurm_doctor_lines(compute, facts, line);
    } else {
      line("python", facts.python_ok,
           facts.python_ok ? compute.python_location + ": " + facts.python_detail
                           : compute.python_location + ": " + facts.python_detail,
           "install Python 3 there or fix pythonLocation in aml_config/" + name + ".compute");
    }
    if (facts.gpus.empty() && compute.type != "slurm") {
      const bool needed = compute.nvidia_docker;
      rows.push_back({{"check", "GPUs"},
                      {"result", needed ? "fail" : "-"},
                      {"detail", "none found (no nvidia-smi, or no NVIDIA GPU)"},
                      {"fix", needed ? "install the NVIDIA driver on " + shell->host() : ""}});
      if (needed) ++failed;
    }
    for (std::size_t i = 0; i < facts.gpus.size(); ++i) {
      const GpuInfo& gpu = facts.gpus[i];
      line(fmt::format("GPU {}", i), true,
           fmt::format("name: {}, total memory: {}, driver: {}", gpu.name,
                       memory_with_gib(gpu.memory), gpu.driver));
    }
    const double free_gb = static_cast<double>(facts.disk_free_kb) / (1024.0 * 1024.0);
    line("free disk", facts.disk_free_kb >= 1024 * 1024,
         fmt::format("{:.1f} GiB free in {}", free_gb, facts.home),
         "free some space there (mlw experiment clean -c " + name + " removes mlw's images)");
  }
  ctx.output().print_list(
      rows, {{"check", "CHECK"}, {"result", "RESULT"}, {"detail", "DETAIL"}, {"fix", "FIX"}});
  return failed;
}

}  // namespace mlw::api
