"""B12s (issue 36): queueing a 1,000-point sweep with -a on the local target, end to end, and
`history list --sweep S` over its 1,000 runs (while the sweep's supervisor runs its points one
at a time beside it)."""

import os
import subprocess
import sys
import tempfile
import time

from timing import alternate, median, row, sh


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b12s-")
    sh(f"{mlw} -q project create -n sweep", cwd=work)
    project = os.path.join(work, "sweep")
    with open(os.path.join(project, "noop.py"), "w", encoding="utf-8") as out:
        out.write("pass\n")
    values = ",".join(str(i) for i in range(1000))
    queued = []
    ids = []
    for _ in range(3):
        start = time.perf_counter()
        out = subprocess.run([mlw, "-q", "experiment", "sweep", "-a", "-c", "local",
                              "--max-concurrent", "1", "noop.py", "--i", values], cwd=project,
                             check=True, capture_output=True, text=True).stdout
        queued.append((time.perf_counter() - start) * 1000)
        ids.append(out.split("SweepId: ")[1].split()[0])
    q = median(queued)
    times = alternate({
        "list": [mlw, "history", "list", "--sweep", ids[0], "--top", "0"],
        "list_param": [mlw, "history", "list", "--sweep", ids[0], "--top", "0", "--param", "i"],
        "true": ["/bin/true"],
    }, runs=20, warmup=2, cwd=project)
    m = {k: median(v) for k, v in times.items()}
    for sweep_id in ids:
        subprocess.run([mlw, "-q", "experiment", "cancel", "-r", sweep_id], cwd=project,
                       capture_output=True, check=False)
    print(row("B12s", "`mlw experiment sweep -a` of 1,000 points on the local target (records, "
              "one snapshot, its supervisor started)", f"{q:.0f} ms", "—", "≤ 2 s", q <= 2000))
    print(row("B12s", "`mlw history list --sweep S --top 0` (its 1,000 runs; 3,000 in the history)",
              f"{m['list']:.1f} ms", f"`/bin/true` {m['true']:.2f} ms", "≤ 50 ms", m["list"] <= 50))
    print(row("B12s", "… with `--param i` (a parameter column)", f"{m['list_param']:.1f} ms", "—",
              "≤ 50 ms", m["list_param"] <= 50))
    sh(f"rm -rf {work}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
