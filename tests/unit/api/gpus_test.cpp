// `computetarget gpus` reads a machine's answer (gpus_now.sh's lines, then queue.sh's tickets):
// who holds which GPU, for how long it sat idle, whose processes are on it; a lying answer gives
// nulls, never a wrong figure.

#include <gtest/gtest.h>

#include "mlw/api/computetarget.hpp"
#include "mlw/util/error.hpp"

namespace mlw::api {
namespace {

bool in_history(const std::string& run) {
  return run == "r-mine";
}

/// A ticket line of queue.sh: id, held GPUs, since, run, who, want, asked, foreign, owner, mine,
/// its sampler's "GPU BUSY UTIL MEM" use.
std::string ticket(const std::string& held, const std::string& since, const std::string& run,
                   const std::string& use) {
  return "ticket\t1-1\t" + held + "\t" + since + "\t" + run + "\tme@laptop\tgpu:1\t" + since +
         "\t\tmlwgpu\t1\t" + use + "\n";
}

TEST(GpusAnswer, EachGpuWithItsHolderIdleTimeAndProcesses) {
  const std::string answer =
      "now\t1000\n"
      "gpu\t0\tTesla K80\t0\t12\t11441\tGPU-a\n"
      "gpu\t1\tTesla K80\t87\t5120\t11441\tGPU-b\n"
      "gpu\t2\tTesla K80\t[N/A]\t3\t11441\tGPU-c\n"
      "app\tGPU-b\t4242\tpython3\t5100\tmlwgpu\n"
      "app\tGPU-a\t77\tminer\t300\teve\n" +
      ticket("0", "400", "r-mine", "0 700 0 12;") + ticket("1", "900", "r-other", "");
  const auto gpus = read_gpus_answer(answer, "box", in_history);
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0]["run_id"], "r-mine");
  EXPECT_EQ(gpus[0]["in_history"], true);
  EXPECT_EQ(gpus[0]["idle_s"], 300);  // its sampler saw it busy at 700
  EXPECT_EQ(gpus[0]["processes"][0]["user"], "eve");
  EXPECT_EQ(gpus[0]["processes"][0]["foreign"], true);
  EXPECT_EQ(gpus[1]["run_id"], "r-other");
  EXPECT_EQ(gpus[1]["in_history"], false);
  EXPECT_EQ(gpus[1]["idle_s"], 0);  // busy now
  EXPECT_EQ(gpus[1]["processes"][0]["foreign"], false);
  EXPECT_TRUE(gpus[2]["util"].is_null());
  EXPECT_TRUE(gpus[2]["run_id"].is_null());
}

TEST(GpusAnswer, FiguresThatCannotBeAreNullNotWrong) {
  const std::string answer =
      "now\t1e308\n"
      "gpu\t0\tX\t-5\tinf\tnan\tGPU-a\n"
      "gpu\t99999\tX\t1\t1\t1\tGPU-z\n" +
      ticket("0", "99999999999999999999", "../../etc", "0 1e308 0 0;0 nan 1 1;");
  const auto gpus = read_gpus_answer(answer, "box", in_history);
  ASSERT_EQ(gpus.size(), 1u);  // GPU 99999 is no index nvidia-smi gives
  EXPECT_TRUE(gpus[0]["util"].is_null());
  EXPECT_TRUE(gpus[0]["mem_used_mib"].is_null());
  EXPECT_TRUE(gpus[0]["mem_total_mib"].is_null());
  EXPECT_EQ(gpus[0]["in_history"], false);
  EXPECT_EQ(gpus[0]["idle_s"], 0);  // no time read: no idle time made up
}

TEST(GpusAnswer, NoGpuIsOneLineNamingTheMachine) {
  try {
    read_gpus_answer("now\t1\nnone\tNVIDIA-SMI has failed\n", "box", in_history);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "nvidia-smi on box lists no GPU: NVIDIA-SMI has failed");
  }
}

}  // namespace
}  // namespace mlw::api
