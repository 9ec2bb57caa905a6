// The remotedocker kind: the run in a container on a Linux machine reached over SSH, in an
// environment image built there (nvidia-docker for GPUs).

#include "mlw/exec/place.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

/// The remotedocker kind's row.
const TargetKind& remotedocker_kind() {
  static const TargetKind kind{
      .name = "remotedocker",
      .place = &ssh_host(),
      .runner = {.image = true, .detached = true, .make_driver = monitor_driver},
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "baseDockerImage", "sharedVolumes", "nvidiaDocker", "gpus", "dockerRunArgs",
               "useSudo", "gpusPerRun", "gpuForeignUse", "gpuSampleSeconds", "gpuUnusedWarnMinutes",
               "maxConcurrentRuns"},
      .attach = {.remote = true, .docker = true},
      .attach_examples = {"mlw computetarget attach remotedocker -n my_dsvm -a gpu-vm.example.com "
                          "-u me --password-stdin -k < pw.txt",
                          "mlw computetarget attach remote -n box -a [::1]:2222 -u me "
                          "--private-key-file ~/.ssh/id_ed25519"},
      .checks = container_checks,
  };
  return kind;
}

}  // namespace mlw
