// The compute key `restart` (docs/reproduce.md): a mapping of its own, read and checked here.

#include <fmt/format.h>

#include "mlw/config/compute_file.hpp"
#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

const std::vector<std::string>& restart_keys() {
  static const std::vector<std::string> keys = {"onExitCodes", "onFailure", "maxRestarts",
                                                "backoffSeconds", "restartAfterReboot"};
  return keys;
}

/// An integer in [low, high] at its place in the file.
int bounded(const ConfigDocument& doc, const YAML::Node& node, const std::string& key, int low,
            int high) {
  const int value = int_value(doc, node, key);
  if (value < low || value > high) {
    fail_at(doc, node,
            fmt::format("restart: {} must be from {} to {}, not {}", key, low, high, value));
  }
  return value;
}

}  // namespace

void read_restart_policy(const ConfigDocument& doc, ComputeConfig& config) {
  const YAML::Node node = doc.root["restart"];
  if (!node || node.IsNull()) return;
  if (!node.IsMap()) {
    fail_at(doc, node,
            "restart must be a mapping, e.g. restart: {onExitCodes: [75], maxRestarts: 3, "
            "backoffSeconds: 10}");
  }
  if (config.type != "remote" && config.type != "remotedocker" && config.type != "docker") {
    fail_at(doc, node,
            fmt::format("restart applies to remote, remotedocker and docker targets, not {} ({} "
                        "target runs are not restarted by mlw)",
                        config.type, config.type));
  }
  RestartPolicy& policy = config.restart;
  policy.set = true;
  bool codes_given = false;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (key == "onExitCodes") {
      codes_given = true;
      for (const auto& code : list_value(doc, value, "onExitCodes")) {
        const auto number = parse_integer(code, 1, 255);
        if (!number) {
          fail_at(doc, value,
                  fmt::format("restart: onExitCodes must be exit codes from 1 to 255, not \"{}\"",
                              code));
        }
        policy.on_exit_codes.push_back(static_cast<int>(*number));
      }
      if (policy.on_exit_codes.empty()) {
        fail_at(doc, value, "restart: onExitCodes needs at least one exit code");
      }
    } else if (key == "onFailure") {
      policy.on_failure = bool_value(doc, value, "onFailure");
    } else if (key == "maxRestarts") {
      policy.max_restarts = bounded(doc, value, key, 0, 1000);
    } else if (key == "backoffSeconds") {
      policy.backoff_seconds = bounded(doc, value, key, 0, 86400);
    } else if (key == "restartAfterReboot") {
      policy.after_reboot = bool_value(doc, value, "restartAfterReboot");
      if (policy.after_reboot && config.type == "docker") {
        fail_at(doc, value,
                "restart: restartAfterReboot applies to remote and remotedocker targets: a docker "
                "target's runs are followed by mlw on this machine, which the restart ends too");
      }
    } else {
      fail_at(doc, entry.first,
              fmt::format("restart: unknown key \"{}\"{}", key, did_you_mean(key, restart_keys())));
    }
  }
  if (codes_given == policy.on_failure) {
    fail_at(doc, node,
            codes_given ? "restart: give onExitCodes or onFailure: true, not both"
                        : "restart needs onExitCodes: [CODE, …] or onFailure: true");
  }
}

}  // namespace mlw
