#include <fmt/format.h>

#include <functional>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/util/error.hpp"

namespace mlw {

namespace {

struct ExecutorRow {
  const char* type;
  std::function<std::unique_ptr<Executor>()> make;  ///< empty: not available in this build
};

const std::vector<ExecutorRow>& executor_table() {
  static const std::vector<ExecutorRow> table = {
      {"local", [] { return std::make_unique<LocalExecutor>(); }},
      {"docker", nullptr},
      {"remotedocker", nullptr},
      {"remote", nullptr},
      {"slurm", nullptr},
  };
  return table;
}

}  // namespace

std::unique_ptr<Executor> make_executor(const std::string& type) {
  for (const auto& row : executor_table()) {
    if (row.type != type) continue;
    if (!row.make) {
      throw Error(fmt::format(
          "this build of mlw ({}) cannot run on {} targets yet: only local targets run today; "
          "the target's files are kept and will work when support lands",
          MLW_VERSION, type));
    }
    return row.make();
  }
  throw Error("unknown target type \"" + type + "\"");
}

}  // namespace mlw
