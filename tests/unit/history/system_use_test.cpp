#include "mlw/history/system_use.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <utility>

#include "temp_dir.hpp"

namespace mlw {

namespace {

SystemUse read_text(const std::string& text) {
  test::TempDir dir("system-use");
  const auto file = dir.path() / "metrics.jsonl";
  std::ofstream(file) << text;
  return read_system_use(file);
}

std::string sample(const std::string& name, double value, double time) {
  return "{\"name\":\"" + name + "\",\"value\":" + std::to_string(value) +
         ",\"time\":" + std::to_string(time) + "}\n";
}

}  // namespace

TEST(SystemUse, MeanP95AndPeakPerGpu) {
  std::string text = sample("sys/gpu1/mem_total", 11441, 0) + "{\"name\":\"loss\",\"value\":1}\n";
  for (int i = 0; i < 20; ++i) {
    text += sample("sys/gpu1/util", i < 19 ? 10 : 90, i);
    text += sample("sys/gpu1/mem_used", 100 * i, i);
    text += sample("sys/gpu3/util", 50, i);
  }
  text += sample("sys/cpu", 99, 1) + sample("sys/cpu", 101, 2) + sample("sys/rss_mb", 12, 1) +
          sample("sys/rss_mb", 30, 2);
  const SystemUse use = read_text(text);
  ASSERT_EQ(use.gpus.size(), 2U);
  EXPECT_EQ(use.gpus[0].gpu, 1);
  EXPECT_EQ(use.gpus[0].samples, 20U);
  EXPECT_DOUBLE_EQ(use.gpus[0].util_mean, 14);
  EXPECT_DOUBLE_EQ(use.gpus[0].util_p95, 10);  // one sample in 20 is the top 5%
  EXPECT_DOUBLE_EQ(use.gpus[0].mem_peak_mib, 1900);
  EXPECT_DOUBLE_EQ(use.gpus[0].mem_total_mib, 11441);
  EXPECT_EQ(use.gpus[1].gpu, 3);
  EXPECT_DOUBLE_EQ(use.cpu_mean, 100);
  EXPECT_DOUBLE_EQ(use.rss_peak_mb, 30);
  const auto metrics = system_summary_metrics(use);
  EXPECT_DOUBLE_EQ(metrics["sys/gpu_util"].get<double>(), 32);
  EXPECT_DOUBLE_EQ(metrics["sys/gpu_util_p95"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(metrics["sys/gpu_mem_peak"].get<double>(), 1900);
  const auto lines = describe_system_use(use.to_json());
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "GPU 1: 14% mean, 10% p95, 1900 of 11441 MiB at most (20 samples)");
  EXPECT_EQ(lines[2], "Processes: CPU 100% of a core on average; memory 30 MiB at most");
}

// A Slurm job's other nodes: sys/nodeN/gpuK/…, each its own GPU beside the first node's.
TEST(SystemUse, AnotherNodesGpusAreTheirOwn) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    text += sample("sys/gpu1/util", 20, i) + sample("sys/node1/gpu1/util", 60, i);
    text += sample("sys/node1/gpu0/util", 0, i) + sample("sys/node0/gpu5/util", 1, i);
    text += sample("sys/node-2/gpu0/util", 1, i) + sample("sys/node1/cpu", 50, i);
  }
  const SystemUse use = read_text(text);
  ASSERT_EQ(use.gpus.size(), 3U);  // node0 and node-2 are no node's
  EXPECT_EQ(std::pair(use.gpus[0].node, use.gpus[0].gpu), std::pair(0, 1));
  EXPECT_EQ(std::pair(use.gpus[1].node, use.gpus[1].gpu), std::pair(1, 0));
  EXPECT_EQ(std::pair(use.gpus[2].node, use.gpus[2].gpu), std::pair(1, 1));
  EXPECT_DOUBLE_EQ(use.gpus[2].util_mean, 60);
  EXPECT_DOUBLE_EQ(use.cpu_mean, -1);  // the processes' figures are the first node's
  const auto json = use.to_json();
  EXPECT_FALSE(json["gpus"][0].contains("node"));
  EXPECT_EQ(json["gpus"][2]["node"], 1);
  const auto lines = describe_system_use(json);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[2], "node 1, GPU 1: 60% mean, 60% p95, 0 MiB at most (4 samples)");
  EXPECT_DOUBLE_EQ(system_summary_metrics(use)["sys/gpu_util"].get<double>(), 26.7);
}

// A downsampled series: a sample that covers more time weighs more.
TEST(SystemUse, WeightsEachSampleByTheTimeItCovers) {
  const SystemUse use = read_text(sample("sys/gpu0/util", 0, 0) + sample("sys/gpu0/util", 0, 1) +
                                  sample("sys/gpu0/util", 90, 9));
  ASSERT_EQ(use.gpus.size(), 1U);
  EXPECT_DOUBLE_EQ(use.gpus[0].util_mean, 72);  // (0*1 + 0*1 + 90*8) / 10
}

TEST(SystemUse, ANumberTooLargeForADoubleIsNoSample) {
  const SystemUse use = read_text(
      "{\"name\":\"sys/gpu0/util\",\"value\":1e999,\"time\":1}\n"
      "{\"name\":\"sys/gpu0/util\",\"value\":7,\"time\":1e999}\n" +
      sample("sys/gpu0/util", 40, 2) + sample("sys/gpu0/util", 60, 3));
  ASSERT_EQ(use.gpus.size(), 1u);
  EXPECT_EQ(use.gpus[0].samples, 2u);
  EXPECT_DOUBLE_EQ(use.gpus[0].util_mean, 50);
}

TEST(SystemUse, NothingSampledIsNothing) {
  const SystemUse use = read_text(
      "{\"name\":\"sys\",\"value\":1}\n{\"name\":\"sys/gpux/util\","
      "\"value\":1}\nnot json\n");
  EXPECT_TRUE(use.gpus.empty());
  EXPECT_TRUE(use.to_json().empty());
  EXPECT_TRUE(system_summary_metrics(use).empty());
  EXPECT_TRUE(describe_system_use(use.to_json()).empty());
}

}  // namespace mlw
