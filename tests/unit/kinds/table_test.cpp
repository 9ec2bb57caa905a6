#include <gtest/gtest.h>

#include "mlw/config/compute_file.hpp"
#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

TEST(ExecutorTable, LocalTargetsHaveTheLocalExecutor) {
  auto executor = kind_executors()->make("local");
  EXPECT_NE(dynamic_cast<LocalExecutor*>(executor.get()), nullptr);
}

TEST(ExecutorTable, DockerAndSshTargetsHaveTheTargetExecutor) {
  for (const char* type : {"docker", "remotedocker", "remote"}) {
    auto executor = kind_executors()->make(type);
    EXPECT_NE(dynamic_cast<TargetExecutor*>(executor.get()), nullptr) << type;
  }
}

TEST(ExecutorTable, EveryTargetTypeHasAnExecutor) {
  for (const TargetKind* kind : target_kinds()) {
    EXPECT_NE(kind_executors()->make(std::string(kind->name)), nullptr) << kind->name;
  }
}

TEST(ExecutorTable, UnknownTypeIsAnError) {
  EXPECT_THROW(kind_executors()->make("cloud"), Error);
}

// attach offers the login options (-a, -u, -w, -k, …) exactly where the kind's place logs in.
TEST(ExecutorTable, TheLoginOptionsAreOfferedWhereThePlaceLogsIn) {
  for (const TargetKind* kind : target_kinds()) {
    EXPECT_EQ(kind->attach.remote, kind->place->connects()) << kind->name;
  }
}

}  // namespace mlw
