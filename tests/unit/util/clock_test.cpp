#include "mlw/util/clock.hpp"

#include <gtest/gtest.h>

namespace mlw {

TEST(FormatUtc, WritesIso8601WithMilliseconds) {
  EXPECT_EQ(format_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_utc(1795282976808), "2026-11-21T17:42:56.808Z");
}

TEST(FormatDuration, PicksAReadableUnit) {
  EXPECT_EQ(format_duration(150), "0.15s");
  EXPECT_EQ(format_duration(12300), "12.3s");
  EXPECT_EQ(format_duration(123000), "2m03s");
  EXPECT_EQ(format_duration(3723000), "1h02m03s");
}

}  // namespace mlw
