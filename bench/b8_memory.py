"""B8: peak resident memory of mlw shipping a 1 GiB project to a remotedocker target whose store
is empty (`experiment prepare -c rd`: hashing, snapshot, upload, run folder), read with wait4
from a small process (whose own size, about 10 MB, is a floor under the figure)."""

import os
import subprocess
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
    # ru_maxrss carries over exec, so a child spawned from this (large) Python would report this
    # Python's size: a fresh, small interpreter starts mlw and reads its peak with wait4.
    measure = ("import os, sys\n"
               "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)\n"
               "_, status, usage = os.wait4(pid, 0)\n"
               "print(usage.ru_maxrss if os.waitstatus_to_exitcode(status) == 0 else -1)\n")
    done = subprocess.run([sys.executable, "-c", measure, mlw, "-q", "experiment", "prepare", "-c",
                           "rd"], cwd=t.project, env=t.env, capture_output=True, text=True,
                          check=True)
    kb = int(done.stdout.split()[-1])
    if kb < 0:
        raise RuntimeError("mlw experiment prepare failed")
    peak_mb = kb / 1024.0
    print(row("B8", "peak RSS shipping a 1 GiB project (61 files, one of 64 MiB)",
              f"{peak_mb:.1f} MB", "—", "≤ 64 MB", peak_mb <= 64.0))
    t.clear_target_store()
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
