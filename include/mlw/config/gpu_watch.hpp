#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "mlw/config/keys.hpp"

namespace mlw {

/// The idleGpu policy (docs/gpus.md): a run whose GPUs all stay below `below` % for `minutes`
/// is warned about, or stopped (Failed, its leases freed).
struct IdleGpuPolicy {
  bool set = false;             ///< a file or submit --idle-gpu gave it
  double below = 5;             ///< utilisation (%), 0 < below <= 100
  double minutes = 30;          ///< minutes in a row, 0 < minutes <= 10080 (a week)
  std::string action = "warn";  ///< warn or stop
  /// The sampler's word for it: "BELOW:MINUTES:ACTION" ("" where not set).
  std::string sampler_word() const;
  /// As a person writes it: "below 5% for 30 min: stop".
  std::string describe() const;
};

/// Reads an idleGpu mapping ({below: 5, minutes: 30, action: stop}) at its place in `doc`; each
/// value checked there.
IdleGpuPolicy read_idle_gpu(const ConfigDocument& doc, const YAML::Node& node);

/// Parses submit --idle-gpu's "below=5,minutes=30,action=stop" (keys as in the file, any left
/// out keeping its default); throws UsageError in one line.
IdleGpuPolicy parse_idle_gpu_option(const std::string& text);

/// A number of minutes (gpuUnusedWarnMinutes: 0 to 10080, fractions allowed); nullopt otherwise.
std::optional<double> parse_minutes(std::string_view text);

/// Minutes as the sampler and the docs write them ("10", "0.05").
std::string minutes_text(double minutes);

}  // namespace mlw
