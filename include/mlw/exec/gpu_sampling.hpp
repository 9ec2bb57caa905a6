#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace mlw {

struct ComputeConfig;
struct RunPlan;
struct RunEnding;

/// Whether `plan`'s run gets a GPU sampler: it leases GPUs (gpusPerRun a count), or its
/// container is given GPUs without a lease (unleased_gpus).
bool samples_gpus(const RunPlan& plan);

/// The GPUs a run's container is given without a lease (nvidiaDocker on `docker` and
/// `remotedocker`, gpusPerRun all: the 2017 guide's flow), as the compute file's `gpus` names
/// them: "all", indexes or UUIDs ("0,2"), a count as Docker picks it ("0,1"); "" for a run that
/// leases its GPUs or is given none.
std::string unleased_gpus(const ComputeConfig& compute);

/// The monitor's sampler settings (monitor.sh's mlw_sample_…): empty words where the run
/// leases no GPU.
std::string sampler_preamble(const RunPlan& plan);

/// A leased run's GPU sampler on this machine (exec/sampler.sh, a process group of its own in
/// the run folder), for the local and docker kinds' supervisors; remote runs' monitors start
/// theirs. Ended by end() or the destructor.
class LocalSampler {
 public:
  /// Starts it on `gpus` ("1,3", or as unleased_gpus says) for the processes under `root`;
  /// `stop` are the words that stop the run when the idleGpu policy says so. Nothing where the
  /// plan is not sampled or `gpus` is empty.
  LocalSampler(const RunPlan& plan, const std::string& gpus, const std::string& ticket, pid_t root,
               const std::vector<std::string>& stop);
  ~LocalSampler();
  LocalSampler(const LocalSampler&) = delete;
  LocalSampler& operator=(const LocalSampler&) = delete;
  /// Ends it; where it had been killed (it did not stop by itself), gpu_notes says so.
  void end();

 private:
  std::filesystem::path m_run_dir;
  pid_t m_pid = -1;
};

/// The sampler's words in a run's end (end.sh: "gpu-stop REASON", "gpu-note TEXT"), bounded, as
/// problems of `ending`.
void apply_gpu_words(const std::vector<std::string>& lines, RunEnding& ending);

/// The same from the run folder's files (gpu_stop, gpu_notes) on this machine.
void apply_gpu_files(const std::filesystem::path& run_dir, RunEnding& ending);

}  // namespace mlw
