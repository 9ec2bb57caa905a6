#include "mlw/config/gpu_watch.hpp"

#include <gtest/gtest.h>

#include "mlw/util/error.hpp"

namespace mlw {

TEST(GpuWatch, IdleGpuOption) {
  const IdleGpuPolicy policy = parse_idle_gpu_option("below=2.5,minutes=0.05,action=stop");
  EXPECT_TRUE(policy.set);
  EXPECT_DOUBLE_EQ(policy.below, 2.5);
  EXPECT_DOUBLE_EQ(policy.minutes, 0.05);
  EXPECT_EQ(policy.action, "stop");
  EXPECT_EQ(policy.sampler_word(), "2.5:0.05:stop");
  EXPECT_EQ(parse_idle_gpu_option("action=stop").sampler_word(), "5:30:stop");
  EXPECT_EQ(IdleGpuPolicy{}.sampler_word(), "");
  for (const char* bad : {"below=0", "below=101", "below=-1", "below=abc", "below=1e3", "below=nan",
                          "minutes=0", "minutes=10081", "action=kill", "bellow=5", "5", ""}) {
    EXPECT_THROW(parse_idle_gpu_option(bad), UsageError) << bad;
  }
}

TEST(GpuWatch, Minutes) {
  EXPECT_EQ(parse_minutes("0"), 0.0);
  EXPECT_EQ(parse_minutes("0.05"), 0.05);
  EXPECT_EQ(parse_minutes("10080"), 10080.0);
  for (const char* bad : {"-1", "10081", "inf", "", "1e2", "ten"}) {
    EXPECT_FALSE(parse_minutes(bad)) << bad;
  }
  EXPECT_EQ(minutes_text(0.05), "0.05");
  EXPECT_EQ(minutes_text(30), "30");
}

TEST(GpuWatch, IdleGpuInAFileAtItsPlace) {
  ConfigDocument doc =
      parse_config_text("type: local\nidleGpu: {below: 5, minutes: -1}\n", "aml_config/t.compute");
  try {
    read_idle_gpu(doc, doc.root["idleGpu"]);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aml_config/t.compute:2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("minutes must be more than 0"), std::string::npos);
  }
}

}  // namespace mlw
