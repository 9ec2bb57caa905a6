// The remote kind: the script with the Python of a Linux machine reached over SSH, no container.

#include "mlw/exec/run_session.hpp"
#include "mlw/exec/target.hpp"
#include "mlw/kinds/kind.hpp"

namespace mlw {

namespace {

void remote_checks(const CheckInput& in, std::vector<CheckRow>& rows) {
  python_row(in, rows, true);
  gpu_rows(in, rows, true);
  disk_row(in, rows);
}

}  // namespace

/// The remote kind's row.
const TargetKind& remote_kind() {
  static const TargetKind kind{
      .name = "remote",
      .uses_ssh = true,
      .runs_detached = true,
      .keys = {"address", "username", "password", "privateKeyFile", "privateKeyPassphrase",
               "pythonLocation", "userManagedEnvironment"},
      .attach = {.remote = true, .python = true},
      .attach_examples = {"mlw computetarget attach remotedocker -n my_dsvm -a gpu-vm.example.com "
                          "-u me --password-stdin -k < pw.txt",
                          "mlw computetarget attach remote -n box -a [::1]:2222 -u me "
                          "--private-key-file ~/.ssh/id_ed25519"},
      .checks = remote_checks,
      .make_executor = [] { return std::unique_ptr<Executor>(new TargetExecutor("remote")); },
      .make_driver = monitor_driver,
  };
  return kind;
}

}  // namespace mlw
