"""B12s (issue 36): queueing a 1,000-point sweep with -a on the local target, end to end, and
`history list --sweep S` over its 1,000 runs (while the sweep's supervisor runs its points one
at a time beside it). B13s: the sweep page of 10,000 runs x 3 parameters in Chromium, until its
parallel coordinates and table are drawn."""

import os
import sqlite3
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
    print(b13s(mlw, project))
    sh(f"rm -rf {work}")


def b13s(mlw, project):
    lists = [",".join(str(v) for v in values) for values in
             ([10 ** -e for e in range(1, 11)], range(16, 176, 16), range(100))]
    out = subprocess.run([mlw, "-q", "experiment", "sweep", "-a", "-c", "local", "--max-runs",
                          "10000", "--max-concurrent", "1", "noop.py", "--lr", lists[0], "--bs",
                          lists[1], "--seed", lists[2]], cwd=project, check=True,
                         capture_output=True, text=True).stdout
    sweep_id = out.split("SweepId: ")[1].split()[0]
    subprocess.run([mlw, "-q", "experiment", "cancel", "-r", sweep_id], cwd=project,
                   capture_output=True, check=False)
    db = sqlite3.connect(os.path.join(project, ".mlw", "history.db"))
    ids = [r[0] for r in db.execute("SELECT run_id FROM runs WHERE sweep_id = ?", (sweep_id,))]
    db.executemany("INSERT OR REPLACE INTO metrics_last(run_id, name, value) VALUES(?,?,?)",
                   ((run_id, "loss", (i * 7919 % 1000) / 1000.0) for i, run_id in enumerate(ids)))
    db.commit()
    db.close()
    server = subprocess.Popen([mlw, "history", "ui", "--port", "0"], cwd=project,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().strip()
    try:
        ms = float(subprocess.run(["node", os.path.join(os.path.dirname(__file__), "ui_timing.cjs"),
                                   url, f"#/sweep/{sweep_id}", "sweep", "5"], check=True,
                                  capture_output=True, text=True).stdout.strip())
    finally:
        server.terminate()
        server.wait()
    return row("B13s", f"the sweep page of {len(ids):,} runs × 3 parameters in Chromium (parallel "
               "coordinates and table drawn; median of 5 loads)", f"{ms:.0f} ms", "—", "≤ 1 s",
               ms <= 1000)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
