#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlw {

/// What a run's GPU sampler recorded of one GPU (the sys/gpuK/… series; docs/gpus.md).
struct GpuUse {
  int node = 0;              ///< a Slurm job's node (SLURM_NODEID; 0: the first, or the machine)
  int gpu = 0;               ///< as the machine numbers it
  std::size_t samples = 0;   ///< utilisation samples (each may be a window's mean)
  double util_mean = 0;      ///< %, weighted by the time each sample covers
  double util_p95 = 0;       ///< %, the same weights
  double mem_peak_mib = 0;   ///< the most memory used
  double mem_total_mib = 0;  ///< the GPU's memory (0: not said)
  double first_time = 0;     ///< s since 1970 of its first and last samples
  double last_time = 0;
};

/// What the sampler recorded of a run: its GPUs, and its processes' CPU and memory.
struct SystemUse {
  std::vector<GpuUse> gpus;
  double cpu_mean = -1;     ///< % of one core (-1: no samples)
  double rss_peak_mb = -1;  ///< MiB (-1: no samples)
  /// As run.json's "system" ({} where nothing was sampled).
  nlohmann::ordered_json to_json() const;
};

/// Reads the sys/… lines of a metrics file.
SystemUse read_system_use(const std::filesystem::path& metrics_file);

/// The run-wide figures that `history list --where` and `--sort` take, by name: sys/gpu_util (the
/// mean over its GPUs), sys/gpu_util_p95 (the highest), sys/gpu_mem_peak (MiB, the highest),
/// sys/cpu_mean, sys/rss_peak; none where nothing was sampled.
nlohmann::ordered_json system_summary_metrics(const SystemUse& use);

/// A record's "system" as lines for a person: "GPU 1: 37% mean, 52% p95, 5120 of 11441 MiB
/// at most (612 samples)" per GPU, then "CPU: 98% of a core on average; memory: 1.2 GiB at most".
std::vector<std::string> describe_system_use(const nlohmann::ordered_json& system);

}  // namespace mlw
