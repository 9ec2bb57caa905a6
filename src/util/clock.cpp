#include "mlw/util/clock.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace mlw {

std::int64_t SystemClock::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_utc(std::int64_t epoch_ms) {
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", parts.tm_year + 1900,
                     parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                     epoch_ms % 1000);
}

std::string format_duration(std::int64_t ms) {
  if (ms < 0) ms = 0;
  const std::int64_t seconds = ms / 1000;
  if (seconds >= 3600) {
    return fmt::format("{}h{:02}m{:02}s", seconds / 3600, (seconds / 60) % 60, seconds % 60);
  }
  if (seconds >= 60) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  if (ms >= 10000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  return fmt::format("{:.2f}s", static_cast<double>(ms) / 1000.0);
}

}  // namespace mlw
