#include "mlw/util/settings.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string>

#include "mlw/util/error.hpp"

namespace mlw {

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"MLW_SSH_CONNECT_TIMEOUT", 10, 1, "s", "how long an SSH server may take to answer"},
      {"MLW_SSH_KEPT", 300, 0, "s",
       "how long an SSH connection is kept for the next command (0: closed after each; its older "
       "name MLW_SSH_LINGER is read too)",
       "MLW_SSH_LINGER"},
      {"MLW_HISTORY_LOCK_TIMEOUT_MS", 10000, 0, "ms",
       "how long a command waits for the history's write lock"},
      {"MLW_RECONNECT_TIMEOUT", 300, 0, "s",
       "how long a run's supervisor tries to reach its target again"},
      {"MLW_REBOOT_WAIT", 600, 1, "s",
       "how long after its machine restarted a run kept by restartAfterReboot may wait for its "
       "boot hook to start it again"},
      {"MLW_ENGINE_RETRY", 60, 1, "s",
       "how long a Docker engine may not answer before the run is `Lost`"},
      {"MLW_SLURM_RETRY", 300, 1, "s",
       "how long the Slurm controller may not answer before the run is `Lost`"},
      {"MLW_BATCH_RETRY", 300, 1, "s",
       "how long another batch system (Grid Engine) may not answer before the run is `Lost`"},
      {"MLW_ARRAY_WAIT", 300, 1, "s",
       "how long a sweep's job array waits for all its points to join before it is submitted "
       "with those that have"},
      {"MLW_SWEEP_AHEAD", 32, 0, "runs",
       "how many of a sweep's points wait on its one SSH target beyond those it runs at once, so "
       "that they start there while this machine sleeps (0: each starts from here)"},
      {"MLW_PROBE_TIMEOUT", 120, 1, "s",
       "how long a target may take to answer the probe (its tools: docker, perl, curl)"},
  };
  return table;
}

int setting(std::string_view name) {
  for (const Setting& row : settings()) {
    if (row.name != name) continue;
    std::string variable(name);
    const char* value = std::getenv(variable.c_str());
    if ((!value || !*value) && !row.alias.empty()) {
      variable = std::string(row.alias);
      value = std::getenv(variable.c_str());
    }
    if (!value || !*value) return row.default_value;
    const std::string_view text(value);
    int number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || number < row.minimum) {
      throw Error(fmt::format("{} must be a whole number of {} (at least {}), not \"{}\"", variable,
                              row.unit == "s"    ? "seconds"
                              : row.unit == "ms" ? "milliseconds"
                                                 : row.unit,
                              row.minimum, text));
    }
    return number;
  }
  throw Error(fmt::format("internal: no setting named {}", name));
}

void check_settings() {
  for (const Setting& row : settings()) setting(row.name);
}

}  // namespace mlw
