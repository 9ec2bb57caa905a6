#pragma once

#include <cstdint>
#include <string>

namespace mlw {

/// The wall clock, behind an interface so that tests can fix the time.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Milliseconds since the Unix epoch.
  virtual std::int64_t now_ms() const = 0;
};

/// The system's real-time clock.
class SystemClock : public Clock {
 public:
  std::int64_t now_ms() const override;
};

/// An epoch-milliseconds time as ISO 8601 UTC with milliseconds, e.g. 2026-11-21T17:33:18.123Z.
std::string format_utc(std::int64_t epoch_ms);

/// A duration as "1h02m03s", "2m03s", "3.2s" or "0.15s".
std::string format_duration(std::int64_t ms);

}  // namespace mlw
