#include <fmt/format.h>

#include <functional>

#include "mlw/exec/executor.hpp"
#include "mlw/exec/local.hpp"
#include "mlw/exec/target.hpp"
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
      {"docker", [] { return std::make_unique<TargetExecutor>("docker"); }},
      {"remotedocker", [] { return std::make_unique<TargetExecutor>("remotedocker"); }},
      {"remote", [] { return std::make_unique<TargetExecutor>("remote"); }},
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
          "this build of mlw ({}) cannot run on {} targets yet: slurm targets come later; "
          "the target's files are kept and will work when support lands",
          MLW_VERSION, type));
    }
    return row.make();
  }
  throw Error("unknown target type \"" + type + "\"");
}

}  // namespace mlw
