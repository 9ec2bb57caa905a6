"""B8: peak resident memory of mlw shipping a 1 GiB project to a remotedocker target whose store
is empty (`experiment prepare -c rd`: hashing, snapshot, upload, run folder), read with wait4."""

import os
import sys

from targets import Targets, fill
from timing import row


def main(mlw):
    t = Targets(mlw, "b8")
    t.attach_remote("rd")
    fill(os.path.join(t.project, "data"), 60, 16 * 1024 * 1024, seed=8)
    with open(os.path.join(t.project, "data", "big.bin"), "wb") as out:
        for _ in range(4):
            out.write(os.urandom(16 * 1024 * 1024))
    t.clear_target_store()
    argv = [mlw, "-q", "experiment", "prepare", "-c", "rd"]
    devnull = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
    os.chdir(t.project)
    pid = os.posix_spawn(mlw, argv, t.env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("mlw experiment prepare failed")
    peak_mb = usage.ru_maxrss / 1024.0
    print(row("B8", "peak RSS shipping a 1 GiB project (61 files, one of 64 MiB)",
              f"{peak_mb:.1f} MB", "—", "≤ 64 MB", peak_mb <= 64.0))
    t.clear_target_store()
    os.chdir("/")
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
