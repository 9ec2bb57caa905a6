#include <gtest/gtest.h>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/target.hpp"

namespace mlw {

TEST(ExecutorTable, LocalTargetsHaveTheLocalExecutor) {
  auto executor = make_executor("local");
  EXPECT_NE(dynamic_cast<LocalExecutor*>(executor.get()), nullptr);
}

TEST(ExecutorTable, DockerAndSshTargetsHaveTheTargetExecutor) {
  for (const char* type : {"docker", "remotedocker", "remote"}) {
    auto executor = make_executor(type);
    EXPECT_NE(dynamic_cast<TargetExecutor*>(executor.get()), nullptr) << type;
  }
}

TEST(ExecutorTable, KnownTypesNotYetRunnableSaySo) {
  for (const char* type : {"slurm"}) {
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
