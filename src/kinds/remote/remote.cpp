// The remote kind: the script with the Python of a Linux machine reached over SSH, no container.

#include "mlw/exec/place.hpp"
#include "mlw/exec/run_session.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

namespace {

void remote_checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  python_row(in, rows, true);
  gpu_rows(in, rows, true);
  disk_row(in, rows);
  reboot_row(in, rows);
}

}  // namespace

/// The remote kind's row.
const TargetKind& remote_kind() {
  static const TargetKind kind{
      .name = "remote",
      .place = &ssh_host(),
      .runner = {.detached = true, .make_driver = monitor_driver},
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "pythonLocation", "userManagedEnvironment", "gpusPerRun", "gpuForeignUse",
               "gpuSampleSeconds", "gpuUnusedWarnMinutes", "maxConcurrentRuns"},
      .attach = {.remote = true, .python = true},
      .attach_examples = {"mlw computetarget attach remotedocker -n my_dsvm -a gpu-vm.example.com "
                          "-u me --password-stdin -k < pw.txt",
                          "mlw computetarget attach remote -n box -a [::1]:2222 -u me "
                          "--private-key-file ~/.ssh/id_ed25519"},
      .checks = remote_checks,
  };
  return kind;
}

}  // namespace mlw
