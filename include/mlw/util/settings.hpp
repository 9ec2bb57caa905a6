#pragma once

#include <string_view>
#include <vector>

namespace mlw {

/// One environment variable that tunes mlw itself (a whole number; docs/cli.md lists them all).
struct Setting {
  std::string_view name;     ///< e.g. "MLW_SLURM_RETRY"
  int default_value;         ///< used when the variable is unset or empty
  int minimum;               ///< the smallest value accepted
  std::string_view unit;     ///< "s" or "ms"
  std::string_view meaning;  ///< one line, as docs/cli.md says it
  std::string_view alias{};  ///< an older name read when this one is unset, e.g. MLW_SSH_LINGER
};

/// The table of every such variable: the one place mlw reads them from.
const std::vector<Setting>& settings();

/// The value of the setting `name` (a row of settings()): the environment's, else the default.
/// Throws mlw::Error naming the variable when it holds anything but a whole number ≥ its minimum.
int setting(std::string_view name);

/// Checks every setting of the environment at once (each command does, before it starts), so
/// that a bad value fails with one line instead of deep inside a run's supervisor.
void check_settings();

}  // namespace mlw
