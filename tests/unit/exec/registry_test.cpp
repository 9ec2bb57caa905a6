#include <gtest/gtest.h>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"

namespace mlw {

TEST(ExecutorTable, LocalTargetsHaveTheLocalExecutor) {
  auto executor = make_executor("local");
  EXPECT_NE(dynamic_cast<LocalExecutor*>(executor.get()), nullptr);
}

TEST(ExecutorTable, KnownTypesNotYetRunnableSaySo) {
  for (const char* type : {"docker", "remotedocker", "remote", "slurm"}) {
    try {
      make_executor(type);
      FAIL() << type;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot run on"), std::string::npos) << type;
    }
  }
}

TEST(ExecutorTable, UnknownTypeIsAnError) {
  EXPECT_THROW(make_executor("cloud"), Error);
}

}  // namespace mlw
