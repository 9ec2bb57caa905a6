// Which runs get a GPU sampler, and on which GPUs (docs/gpus.md, "Is the run using its GPUs?").

#include <gtest/gtest.h>

#include "plans.hpp"
#include "temp_dir.hpp"

#include "mlw/exec/executor.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/util/fs.hpp"

namespace mlw {

namespace {

/// A run of a `type` target with nvidiaDocker and the compute file's `gpus`.
RunPlan gpu_plan(const fs::path& root, const std::string& type, const std::string& gpus) {
  RunPlan plan = test::demo_plan(root);
  plan.compute.type = type;
  plan.compute.nvidia_docker = true;
  plan.compute.gpus = gpus;
  return plan;
}

}  // namespace

TEST(GpuSampling, AContainerGivenGpusWithoutALeaseIsSampledOnThoseDockerGives) {
  test::TempDir dir("mlw-sampling");
  for (const char* type : {"docker", "remotedocker"}) {
    EXPECT_EQ(unleased_gpus(gpu_plan(dir.path(), type, "all").compute), "all");
    EXPECT_EQ(unleased_gpus(gpu_plan(dir.path(), type, "").compute), "all");
    EXPECT_EQ(unleased_gpus(gpu_plan(dir.path(), type, "device=1,3").compute), "1,3");
    // A count: Docker's first N.
    EXPECT_EQ(unleased_gpus(gpu_plan(dir.path(), type, "3").compute), "0,1,2");
    EXPECT_TRUE(samples_gpus(gpu_plan(dir.path(), type, "all")));
  }
}

TEST(GpuSampling, NoSamplerWithoutGpusOrWhereTheLeaseNamesThem) {
  test::TempDir dir("mlw-sampling");
  RunPlan plain = gpu_plan(dir.path(), "remotedocker", "all");
  plain.compute.nvidia_docker = false;
  EXPECT_EQ(unleased_gpus(plain.compute), "");
  EXPECT_FALSE(samples_gpus(plain));
  // A process run sees every GPU but asked for none: not sampled without a lease.
  EXPECT_FALSE(samples_gpus(gpu_plan(dir.path(), "remote", "all")));
  // A leased run: its lease's GPUs, not these.
  RunPlan leased = gpu_plan(dir.path(), "remotedocker", "all");
  leased.compute.gpus_per_run = "1";
  EXPECT_EQ(unleased_gpus(leased.compute), "");
  EXPECT_TRUE(samples_gpus(leased));
}

}  // namespace mlw
