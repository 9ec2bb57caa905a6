// The local kind: runs the script with a Python interpreter of this machine.

#include "mlw/exec/local.hpp"
#include "mlw/exec/place.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

namespace {

void local_checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  // Submit finds the interpreter itself (LocalExecutor::validate): these rows are doctor's.
  python_row(in, rows, false);
  gpu_rows(in, rows, true);
  disk_row(in, rows);
}

}  // namespace

/// The local kind's row.
const TargetKind& local_kind() {
  static const TargetKind kind{
      .name = "local",
      .place = &this_machine(),
      .keys = {"pythonLocation", "sparkSubmitLocation", "gpusPerRun", "gpuForeignUse",
               "gpuSampleSeconds", "gpuUnusedWarnMinutes", "maxConcurrentRuns"},
      .attach = {.python = true},
      .attach_examples = {"mlw computetarget attach local -n py311 --python python3.11",
                          "mlw computetarget attach docker -n gpu --base-image pytorch/pytorch "
                          "--nvidia-docker"},
      .checks = local_checks,
      .make_executor = [] { return std::unique_ptr<Executor>(new LocalExecutor()); },
  };
  return kind;
}

}  // namespace mlw
