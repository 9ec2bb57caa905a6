"""B9: submit-to-start latency on Slurm: from starting `mlw experiment submit -c hpc start.py`
until its output shows the script running on a node, against doing it by hand — `ssh host
sbatch job.sh`, then `ssh host squeue -j ID` again and again until the job is RUNNING — with the
same key, sshd and two-node cluster (tests/fixtures/servers.sh). Issue 4 sets no target: the
ratio is recorded."""

import subprocess
import sys
import time

from targets import Targets
from timing import median


def mlw_start(t, mlw):
    """ms from spawning mlw until the script's first line reaches mlw's stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen([mlw, "experiment", "submit", "-c", "hpc", "start.py"],
                            cwd=t.project, env=t.env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    seen = None
    for line in proc.stdout:
        if seen is None and line.startswith("started"):
            seen = (time.perf_counter() - start) * 1000.0
    if proc.wait() != 0 or seen is None:
        raise RuntimeError("mlw submit failed")
    return seen


def by_hand(t):
    """ms from `ssh sbatch` until a `ssh squeue` says RUNNING (or the job has left the queue)."""
    start = time.perf_counter()
    job = subprocess.run(t.ssh("sbatch", "--parsable", "b9-job.sh"), env=t.env, check=True,
                         capture_output=True, text=True).stdout.strip().split(";")[0]
    for _ in range(600):
        state = subprocess.run(t.ssh("squeue", "-h", "-j", job, "-o", "%T"), env=t.env,
                               capture_output=True, text=True).stdout.strip()
        if state in ("RUNNING", "COMPLETING", ""):
            return (time.perf_counter() - start) * 1000.0
    raise RuntimeError(f"job {job} did not start")


def main(mlw):
    t = Targets(mlw, "b9")
    t.write("start.py", "print('started', flush=True)\n")
    t.mlw("computetarget", "attach", "slurm", "-n", "hpc", "-a", f"127.0.0.1:{t.port}", "-u",
          t.user, "--password-stdin", "-k", "--accept-host-key", stdin=t.password + "\n")
    for line in open(f"{t.project}/aml_config/hpc.compute", encoding="utf-8"):
        if line.startswith("privateKeyFile:"):
            t.key = line.split(":", 1)[1].strip().strip('"').replace("~", t.home, 1)
    subprocess.run(t.ssh("sh", "-c", "'printf \"#!/bin/sh\\npython3 -c pass\\n\" > b9-job.sh'"),
                   env=t.env, check=True, capture_output=True)
    mlw_start(t, mlw)  # warm-up
    times = {"mlw": [], "hand": []}
    for i in range(7):
        for name in (["mlw", "hand"] if i % 2 == 0 else ["hand", "mlw"]):
            times[name].append(mlw_start(t, mlw) if name == "mlw" else by_hand(t))
    mlw_ms, floor = median(times["mlw"]), median(times["hand"])
    print(f"| B9 | Slurm submit-to-start: `mlw experiment submit -c hpc start.py` until the script's "
          f"first line shows | {mlw_ms:.0f} ms ({mlw_ms / floor:.2f}×) | `ssh sbatch` then "
          f"`ssh squeue` until RUNNING {floor:.0f} ms | none set (recorded) | — |")
    subprocess.run(t.ssh("rm", "-f", "b9-job.sh", "slurm-*.out"), env=t.env, capture_output=True)
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
