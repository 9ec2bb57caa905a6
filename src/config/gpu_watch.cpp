// The GPU telemetry keys (docs/gpus.md): idleGpu's mapping, submit --idle-gpu, and minutes.
#include "mlw/config/gpu_watch.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "mlw/util/error.hpp"
#include "mlw/util/strings.hpp"

namespace mlw {

namespace {

constexpr double k_week_minutes = 7 * 24 * 60;

const std::vector<std::string>& idle_gpu_keys() {
  static const std::vector<std::string> keys = {"below", "minutes", "action"};
  return keys;
}

/// A plain decimal number (no sign, exponent, inf or nan); nullopt otherwise.
std::optional<double> plain_number(std::string_view text) {
  return parse_decimal(text, 0, std::numeric_limits<double>::max());
}

/// Sets `key` of `policy` from `text`; the problem (without a place), or "".
std::string set_key(IdleGpuPolicy& policy, const std::string& key, const std::string& text) {
  if (key == "below") {
    const auto value = plain_number(text);
    if (!value || *value <= 0 || *value > 100) {
      return fmt::format(
          "idleGpu: below must be a utilisation from 0 to 100 (%, more than 0), "
          "not \"{}\"",
          printable(text));
    }
    policy.below = *value;
  } else if (key == "minutes") {
    const auto value = plain_number(text);
    if (!value || *value <= 0 || *value > k_week_minutes) {
      return fmt::format(
          "idleGpu: minutes must be more than 0 and at most 10080 (a week), not "
          "\"{}\"",
          printable(text));
    }
    policy.minutes = *value;
  } else if (key == "action") {
    if (text != "warn" && text != "stop") {
      return fmt::format("idleGpu: action must be warn or stop, not \"{}\"", printable(text));
    }
    policy.action = text;
  } else {
    return fmt::format("idleGpu: unknown key \"{}\"{}", printable(key),
                       did_you_mean(key, idle_gpu_keys()));
  }
  return "";
}

}  // namespace

std::string IdleGpuPolicy::sampler_word() const {
  if (!set) return "";
  return fmt::format("{}:{}:{}", minutes_text(below), minutes_text(minutes), action);
}

std::string IdleGpuPolicy::describe() const {
  return fmt::format("below {}% for {} min: {}", minutes_text(below), minutes_text(minutes),
                     action);
}

IdleGpuPolicy read_idle_gpu(const ConfigDocument& doc, const YAML::Node& node) {
  if (!node.IsMap()) {
    fail_at(doc, node,
            "idleGpu must be a mapping, e.g. idleGpu: {below: 5, minutes: 30, action: stop}");
  }
  IdleGpuPolicy policy;
  policy.set = true;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string text = scalar_value(doc, entry.second, "idleGpu: " + key);
    if (const std::string problem = set_key(policy, key, text); !problem.empty()) {
      fail_at(doc,
              key == "below" || key == "minutes" || key == "action" ? entry.second : entry.first,
              problem);
    }
  }
  return policy;
}

IdleGpuPolicy parse_idle_gpu_option(const std::string& text) {
  IdleGpuPolicy policy;
  policy.set = true;
  for (const auto& item : split(text, ',')) {
    const auto equals = item.find('=');
    if (equals == std::string::npos) {
      throw UsageError(fmt::format(
          "--idle-gpu \"{}\": expected KEY=VALUE items, e.g. below=5,minutes=30,action=stop",
          printable(text)));
    }
    if (const std::string problem =
            set_key(policy, item.substr(0, equals), item.substr(equals + 1));
        !problem.empty()) {
      throw UsageError("--idle-gpu: " + problem.substr(std::string_view("idleGpu: ").size()));
    }
  }
  return policy;
}

std::optional<double> parse_minutes(std::string_view text) {
  const auto value = plain_number(text);
  if (!value || *value > k_week_minutes) return std::nullopt;
  return value;
}

std::string minutes_text(double minutes) {
  return fmt::format("{:g}", minutes);
}

}  // namespace mlw
