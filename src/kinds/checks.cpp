// The check rows several kinds share, and how submit uses a kind's rows.

#include <fmt/format.h>

#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/exec/lease.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"
#include "mlw/remote/probe.hpp"

namespace mlw {

namespace {

/// nvidia-smi's "11441 MiB" with the GiB the 2017 guide showed ("Total memory: 11.17GiB").
std::string memory_with_gib(const std::string& memory) {
  if (!memory.ends_with(" MiB")) return memory;
  try {
    const std::string number = memory.substr(0, memory.size() - 4);
    std::size_t used = 0;
    const double mib = std::stod(number, &used);
    if (used != number.size()) return memory;
    return fmt::format("{} ({:.2f} GiB)", memory, mib / 1024.0);
  } catch (const std::exception&) {
    return memory;
  }
}

CheckResult result_of(bool ok) {
  return ok ? CheckResult::Ok : CheckResult::Fail;
}

}  // namespace

void refuse_first(const std::vector<CheckRow>& rows) {
  for (const auto& row : rows) {
    if (!row.refusal.empty()) throw Error(row.refusal, row.exit_code);
  }
}

std::string nvidia_refusal(const ComputeConfig& compute, const TargetFacts& facts,
                           const std::string& host) {
  if (!compute.nvidia_docker || facts.nvidia_runtime || facts.nvidia_docker_binary) return "";
  return fmt::format(
      "nvidiaDocker is true but the Docker engine on {} has no NVIDIA runtime and there is no "
      "nvidia-docker; install nvidia-container-toolkit there "
      "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/install-guide.html), "
      "run 'sudo nvidia-ctk runtime configure --runtime=docker' and restart docker, or set "
      "nvidiaDocker: false",
      host);
}

void docker_rows(const CheckInput& in, std::vector<CheckRow>& rows) {
  const ComputeConfig& compute = in.compute;
  const TargetFacts& facts = in.facts;
  const bool local = !kind_of(compute.type).place->connects();
  CheckRow docker{"docker", result_of(facts.docker_ok),
                  facts.docker_ok ? "server " + facts.docker_detail : facts.docker_detail,
                  local ? "start the Docker engine, or set DOCKER_HOST"
                        : "install Docker there and add " + compute.username +
                              " to the docker group (sudo usermod -aG docker " + compute.username +
                              "), or set useSudo: true"};
  if (!facts.docker_ok) {
    docker.refusal = fmt::format(
        "docker on {} does not answer: {}; {}", in.host, facts.docker_detail,
        local ? "start the Docker engine or set DOCKER_HOST"
              : "add " + compute.username + " to the docker group there, or set useSudo: true");
  }
  rows.push_back(docker);
  const bool nvidia_ok = facts.nvidia_runtime || facts.nvidia_docker_binary;
  const std::string detail = facts.nvidia_runtime ? "the daemon has the nvidia runtime (--gpus)"
                             : facts.nvidia_docker_binary ? "nvidia-docker is installed"
                                                          : "no NVIDIA runtime";
  if (compute.nvidia_docker || nvidia_ok) {
    rows.push_back({"NVIDIA runtime", result_of(nvidia_ok), detail,
                    "install nvidia-container-toolkit on " + in.host +
                        " and restart docker (nvidiaDocker is true)",
                    nvidia_refusal(compute, facts, in.host)});
  } else {
    rows.push_back({"NVIDIA runtime", CheckResult::NotNeeded,
                    detail + " (not needed: nvidiaDocker is false)", ""});
  }
}

void container_checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  docker_rows(in, rows);
  gpu_rows(in, rows, true);
  disk_row(in, rows);
  reboot_row(in, rows);
}

void python_row(const CheckInput& in, std::vector<CheckRow>& rows, bool refuses) {
  const ComputeConfig& compute = in.compute;
  CheckRow row{
      "python", result_of(in.facts.python_ok),
      compute.python_location + ": " + in.facts.python_detail,
      "install Python 3 there or fix pythonLocation in aml_config/" + in.target_name + ".compute"};
  if (refuses && !in.facts.python_ok) {
    row.refusal = fmt::format("python \"{}\" does not run on {}: {}; fix pythonLocation",
                              compute.python_location, in.host, in.facts.python_detail);
    row.exit_code = exit_code::k_not_found;
  }
  rows.push_back(row);
  // nvidiaDocker asks for something this kind cannot give: refused, as before any run.
  const std::string nvidia = nvidia_refusal(compute, in.facts, in.host);
  if (refuses && !nvidia.empty()) {
    rows.push_back({"NVIDIA runtime", CheckResult::Fail, "nvidiaDocker is true",
                    "set nvidiaDocker: false (it is for docker and remotedocker targets)", nvidia});
  }
}

namespace {

/// gpusPerRun (or submit --gpus) against what the target has: a count it can lease.
void lease_row(const CheckInput& in, std::vector<CheckRow>& rows) {
  const ComputeConfig& compute = in.compute;
  if (compute.gpus_per_run == "all") return;
  const std::size_t want = std::stoul(compute.gpus_per_run);
  const std::size_t have = in.facts.gpus.size();
  const std::string file = "aml_config/" + in.target_name + ".compute";
  const bool container = kind_of(compute.type).runner.image;
  std::string refusal;
  std::string fix;
  if (container && !compute.nvidia_docker) {
    refusal = fmt::format(
        "{} GPUs per run asked for, but nvidiaDocker is false in {}: the "
        "container would see none; set nvidiaDocker: true",
        want, file);
    fix = "set nvidiaDocker: true in " + file;
  } else if (container && !in.facts.nvidia_runtime) {
    refusal = fmt::format(
        "gpusPerRun needs the Docker engine's NVIDIA runtime (docker run --gpus) "
        "on {}: nvidia-docker alone cannot be given chosen GPUs; install "
        "nvidia-container-toolkit there",
        in.host);
    fix = "install nvidia-container-toolkit on " + in.host;
  } else if (container && compute.gpus != "all") {
    refusal = fmt::format(
        "gpusPerRun and gpus: {} both choose the GPUs in {}; remove gpus (the "
        "lease picks free ones)",
        compute.gpus, file);
    fix = "remove gpus from " + file;
  } else if (have == 0) {
    refusal = fmt::format(
        "{} GPUs per run asked for, but nvidia-smi lists no GPU on {}; remove "
        "gpusPerRun (or --gpus) for a machine without NVIDIA GPUs",
        want, in.host);
    fix = "remove gpusPerRun from " + file;
  } else if (want > have) {
    refusal = fmt::format("{} GPUs per run asked for; {} has {}", want, in.host, have);
    fix = fmt::format("ask for at most {} (gpusPerRun or --gpus)", have);
  }
  rows.push_back({"GPU lease", refusal.empty() ? CheckResult::Ok : CheckResult::Fail,
                  fmt::format("{} of {} GPUs per run, leased on {}", want, have, in.host), fix,
                  refusal});
}

/// Whether the machine's lease folder is shared between its users (issue 45), where doctor asked.
void lease_folder_row(const CheckInput& in, std::vector<CheckRow>& rows) {
  const std::string& dir = in.facts.lease_dir;
  if (dir.empty()) return;
  if (dir == "shared") {
    rows.push_back({"lease folder", CheckResult::Ok,
                    fmt::format("shared between the users of {}: {} is root's, mode 1777", in.host,
                                lease_folder()),
                    ""});
    return;
  }
  // Not a failure: the runs lease among this user's own; said with the one-time fix.
  rows.push_back({"lease folder", CheckResult::NotNeeded,
                  fmt::format("among {}'s runs only (~/.mlw/leases): {}; to share them between the "
                              "machine's users, an administrator runs once: {}",
                              in.compute.username.empty() ? "this user" : in.compute.username, dir,
                              in.facts.lease_admin),
                  ""});
}

}  // namespace

void sampling_row(const CheckInput& in, std::vector<CheckRow>& rows) {
  const TargetKind& kind = kind_of(in.compute.type);
  if (!kind.has_key("gpuSampleSeconds")) return;
  const ComputeConfig& compute = in.compute;
  const std::string every =
      fmt::format("every {} s (gpuSampleSeconds)", compute.gpu_sample_seconds);
  if (kind.runner.batch) {
    rows.push_back({"GPU sampling", CheckResult::NotNeeded,
                    compute.type == "sge"
                        ? "on the node that runs each job whose CUDA_VISIBLE_DEVICES the site's "
                          "prolog or starter method sets (Grid Engine names no GPUs), " +
                              every
                        : "on each node of a job given GPUs (CUDA_VISIBLE_DEVICES), " + every,
                    ""});
  } else if (in.facts.gpus.empty()) {
    rows.push_back(
        {"GPU sampling", CheckResult::NotNeeded,
         fmt::format("off: nvidia-smi lists no GPU on {} (runs are not sampled)", in.host), ""});
  } else if (compute.gpus_per_run != "all") {
    rows.push_back(
        {"GPU sampling", CheckResult::Ok, "each run's GPUs, CPU and memory " + every, ""});
  } else if (const std::string gpus = unleased_gpus(compute); !gpus.empty()) {
    rows.push_back({"GPU sampling", CheckResult::Ok,
                    "each run's GPUs (those its container is given: gpus " +
                        (gpus == "all" ? gpus : compute.gpus) + ", no lease), CPU and memory " +
                        every,
                    ""});
  } else {
    rows.push_back({"GPU sampling", CheckResult::NotNeeded,
                    "runs that lease GPUs are sampled (set gpusPerRun to lease them)", ""});
  }
}

void gpu_rows(const CheckInput& in, std::vector<CheckRow>& rows, bool say_none) {
  lease_row(in, rows);
  lease_folder_row(in, rows);
  const TargetFacts& facts = in.facts;
  if (facts.gpus.empty() && say_none) {
    const bool needed = in.compute.nvidia_docker;
    rows.push_back({"GPUs", needed ? CheckResult::Fail : CheckResult::NotNeeded,
                    "none found (no nvidia-smi, or no NVIDIA GPU)",
                    needed ? "install the NVIDIA driver on " + in.host : ""});
  }
  for (std::size_t i = 0; i < facts.gpus.size(); ++i) {
    const GpuInfo& gpu = facts.gpus[i];
    rows.push_back({fmt::format("GPU {}", i), CheckResult::Ok,
                    fmt::format("name: {}, total memory: {}, driver: {}", gpu.name,
                                memory_with_gib(gpu.memory), gpu.driver),
                    ""});
  }
  sampling_row(in, rows);
}

void disk_row(const CheckInput& in, std::vector<CheckRow>& rows) {
  const double free_gb = static_cast<double>(in.facts.disk_free_kb) / (1024.0 * 1024.0);
  rows.push_back({"free disk", result_of(in.facts.disk_free_kb >= 1024 * 1024),
                  fmt::format("{:.1f} GiB free in {}", free_gb, in.facts.home),
                  "free some space there (mlw experiment clean -c " + in.target_name +
                      " removes mlw's images)"});
}

void reboot_row(const CheckInput& in, std::vector<CheckRow>& rows) {
  const std::string& hook = in.facts.reboot_hook;
  if (hook.empty()) return;
  const bool wanted = in.compute.restart.after_reboot;
  if (hook != "none") {
    rows.push_back({"boot hook", CheckResult::Ok,
                    hook == "crontab"
                        ? "crontab: an @reboot line while a run with restartAfterReboot goes on"
                        : "systemd: the user unit mlw-reboot.service while a run with "
                          "restartAfterReboot goes on (the user's manager starts at boot)",
                    ""});
    return;
  }
  const std::string fix = fmt::format(
      "install cron on {} (sudo apt-get install cron), or let {}'s systemd manager start at boot "
      "(sudo loginctl enable-linger {})",
      in.host, in.compute.username, in.compute.username);
  CheckRow row{"boot hook", wanted ? CheckResult::Fail : CheckResult::NotNeeded,
               std::string("none: no crontab, no systemd user manager that starts at boot") +
                   (wanted ? "" : " (needed only for restartAfterReboot)"),
               wanted ? fix : ""};
  if (wanted) {
    row.refusal = fmt::format(
        "restartAfterReboot needs a boot hook on {}: {}, or remove restartAfterReboot from "
        "aml_config/{}.compute",
        in.host, fix, in.target_name);
  }
  rows.push_back(row);
}

}  // namespace mlw
