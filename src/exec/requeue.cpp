// Requeue on batch targets: its compute keys and what the script sees (requeue.hpp).

#include "mlw/exec/requeue.hpp"

#include <algorithm>
#include <array>

#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

/// The signals a script may ask to be warned with (Slurm's --signal and a shell's kill take
/// their names).
constexpr std::array<std::string_view, 7> k_signals = {"USR1", "USR2", "TERM", "INT",
                                                       "HUP",  "ALRM", "URG"};

std::string signal_problem(const std::string& value) {
  if (std::find(k_signals.begin(), k_signals.end(), value) != k_signals.end()) return "";
  return "must be one of USR1, USR2, TERM, INT, HUP, ALRM, URG (without SIG), not \"" +
         printable(value) + "\"";
}

std::string lead_problem(const std::string& value) {
  return parse_integer(value, 0, 65535) ? "" : "must be from 0 to 65535 seconds";
}

}  // namespace

const std::vector<OwnKey>& requeue_keys() {
  static const std::vector<OwnKey> keys = {
      {"requeue", ValueKind::Bool,
       "Put the job back in the queue when it ends after its checkpoint signal (preemption, the "
       "time limit) instead of ending the run.",
       "false", nullptr, "", ""},
      {"checkpointSignal", ValueKind::String,
       "The signal the script gets before its time limit (requeue): USR1, USR2, TERM, ….", "USR1",
       signal_problem, "", ""},
      {"checkpointLeadSeconds", ValueKind::Int,
       "How many seconds before the time limit the checkpoint signal comes.", "120", lead_problem,
       "", ""},
  };
  return keys;
}

const OwnKey& requeue_key(std::string_view name) {
  const auto& keys = requeue_keys();
  return *std::find_if(keys.begin(), keys.end(),
                       [&](const OwnKey& key) { return key.name == name; });
}

std::vector<OwnKey> with_requeue_keys(std::vector<OwnKey> keys) {
  keys.insert(keys.end(), requeue_keys().begin(), requeue_keys().end());
  return keys;
}

RequeueConfig requeue_config(const ComputeConfig& compute) {
  RequeueConfig config;
  config.requeue = own_value(compute, "requeue") == "true";
  if (const std::string signal = own_value(compute, "checkpointSignal"); !signal.empty()) {
    config.signal = signal;
  }
  config.lead_s = static_cast<int>(
      parse_integer(own_value(compute, "checkpointLeadSeconds"), 0, 65535).value_or(120));
  return config;
}

std::string checkpoint_folder(const std::string& share, const std::string& run_id) {
  return (share.ends_with('/') ? share : share + "/") + "checkpoints/" + run_id;
}

std::map<std::string, std::string> requeue_environment(const RequeueConfig& config,
                                                       const std::string& share,
                                                       const std::string& run_id) {
  if (!config.requeue) return {};
  return {{"MLW_CHECKPOINT_SIGNAL", config.signal},
          {"MLW_CHECKPOINT_DIR", checkpoint_folder(share, run_id)}};
}

}  // namespace mlw
