#include <gtest/gtest.h>

#include "mlw/config/compute_file.hpp"
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

TEST(ExecutorTable, EveryTargetTypeHasAnExecutor) {
  for (const auto& type : compute_types()) {
    if (type == "localdocker") continue;  // an alias, made canonical when the file is read
    EXPECT_NE(make_executor(type), nullptr) << type;
  }
}

TEST(ExecutorTable, UnknownTypeIsAnError) {
  EXPECT_THROW(make_executor("cloud"), Error);
}

}  // namespace mlw
