// Which runs get a GPU sampler, and on which GPUs (docs/gpus.md, "Is the run using its GPUs?").

#include <gtest/gtest.h>

#include "plans.hpp"
#include "temp_dir.hpp"

#include "mlw/exec/executor.hpp"
#include "mlw/exec/gpu_sampling.hpp"
#include "mlw/util/embedded.hpp"
#include "mlw/util/fs.hpp"
#include "mlw/util/process.hpp"

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

TEST(GpuSampling, TheNvmlReaderTravelsPackedAndUnpacksWithTheTargetsTools) {
  const std::string packed(nvml_reader_packed());
  // "ID:" then base64: words a shell takes quoted and sampler.sh's `case` recognises.
  ASSERT_GT(packed.size(), 13u);
  EXPECT_EQ(packed.find_first_not_of("0123456789abcdef"), 12u);
  EXPECT_EQ(packed[12], ':');
  EXPECT_EQ(packed.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", 13),
            std::string::npos);
  // Unpacked as sampler.sh does, it is a program of this machine: its usage for bad words.
  test::TempDir dir("mlw-nvml");
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "printf '%s' \"${1#*:}\" | base64 -d | gzip -dc >r && chmod 755 r && ./r 2>&1; "
               "echo \"exit $?\"; ./r --probe 0,x; echo \"exit $?\"",
               "sh", packed};
  spec.cwd = dir.path();
  const auto result = runner.run(spec);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->output,
            "usage: mlw-nvml-reader MILLISECONDS GPUS | --probe GPUS\nexit 2\nexit 2\n");
}

TEST(GpuSampling, TheMonitorGetsTheNvmlReaderOnlyForASampledRun) {
  test::TempDir dir("mlw-sampling");
  RunPlan plan = gpu_plan(dir.path(), "remotedocker", "all");
  EXPECT_NE(sampler_preamble(plan).find("mlw_sample_nvml=" + std::string(nvml_reader_packed())),
            std::string::npos);
  plan.compute.nvidia_docker = false;
  EXPECT_EQ(sampler_preamble(plan), "mlw_sample_sh=\n");
}

}  // namespace mlw
