// The docker kind (2017's localdocker): the run in a container of this machine's Docker engine,
// in an environment image built from baseDockerImage.

#include "mlw/exec/place.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

/// The docker kind's row.
const TargetKind& docker_kind() {
  static const TargetKind kind{
      .name = "docker",
      .aliases = {"localdocker"},
      .place = &this_machine(),
      .runner = {.image = true, .detached = true, .make_driver = monitor_driver},
      .keys = {"baseDockerImage", "sharedVolumes", "nvidiaDocker", "gpus", "dockerRunArgs",
               "gpusPerRun", "gpuForeignUse", "gpuSampleSeconds", "gpuUnusedWarnMinutes",
               "maxConcurrentRuns"},
      .attach = {.docker = true},
      .attach_examples = {"mlw computetarget attach local -n py311 --python python3.11",
                          "mlw computetarget attach docker -n gpu --base-image pytorch/pytorch "
                          "--nvidia-docker"},
      .checks = container_checks,
  };
  return kind;
}

}  // namespace mlw
