#pragma once
// Requeue on batch targets (Slurm, Grid Engine; docs/reproduce.md): the compute keys that ask
// for it, shared by both kinds, and what the script sees.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mlw/config/compute_file.hpp"

namespace mlw {

/// What a batch target's compute file asks of requeue.
struct RequeueConfig {
  bool requeue = false;         ///< the job is submitted rerunnable and put back after a checkpoint
  std::string signal = "USR1";  ///< the checkpoint signal's name, without SIG
  int lead_s = 120;             ///< how long before the time limit it comes
};

/// The keys requeue, checkpointSignal and checkpointLeadSeconds, for a kind's own_keys.
const std::vector<OwnKey>& requeue_keys();

/// The shared key named `name` of requeue_keys() (one kind takes some of them as they are).
const OwnKey& requeue_key(std::string_view name);

/// `keys` and then requeue_keys(), for a kind's row.
std::vector<OwnKey> with_requeue_keys(std::vector<OwnKey> keys);

/// The requeue keys of `compute` (a checked file, or attach's settings).
RequeueConfig requeue_config(const ComputeConfig& compute);

/// The folder every attempt of run `run_id` sees for its checkpoints, in the share folder
/// `share` (as the script sees it): MLW_CHECKPOINT_DIR.
std::string checkpoint_folder(const std::string& share, const std::string& run_id);

/// What a requeued run's script sees besides the run's variables: MLW_CHECKPOINT_SIGNAL and
/// MLW_CHECKPOINT_DIR (`share` is the share folder as the script sees it); nothing without
/// requeue. MLW_RESTART_COUNT is the job script's, set on each attempt.
std::map<std::string, std::string> requeue_environment(const RequeueConfig& config,
                                                       const std::string& share,
                                                       const std::string& run_id);

}  // namespace mlw
