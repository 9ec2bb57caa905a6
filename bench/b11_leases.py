"""B11, B11b, B4q (issue 35): GPU leases on the SIMULATED 4-GPU host of tests/fixtures/servers.sh
(a fake nvidia-smi with four "Tesla K80"s on the GPU test user's PATH; no GPU computes).

B11   makespan of 32 one-GPU runs of a 2-second script, submitted with -a back to back to a
      `remote` target (gpusPerRun: 1), against the ideal 32 × 2 s / 4 = 16 s.
B11b  hand-off: on each GPU, from a run's end (its script's last line) to the next run's first
      line, p50 and p95 (from the same 32 runs).
B11s  B11's 32 runs as the points of one `experiment sweep -a` instead of 32 submits.
B4q   a submit that queues with -a on a `remotedocker` target whose four GPUs are held, against
      B4's warm submit of noop.py on the same target kind (alternating, same run).
"""

import json
import os
import subprocess
import sys
import time

from targets import WAN, Targets, need
from timing import alternate, median, row

SCRIPT = """import sys, time
print("START", time.time(), flush=True)
time.sleep(float(sys.argv[1]))
print("END", time.time(), flush=True)
"""


def gpu_targets(mlw, link):
    t = Targets(mlw, "b11", link=link)
    t.user = need("MLW_TEST_GPU_USER")
    t.env["MLW_LEASE_DIR"] = f"/tmp/mlw-leases-bench.{os.getpid()}"
    t.write("sleep.py", SCRIPT)
    return t


def runs_of(t, ids):
    """{run_id: (gpu, start, end)} from each run's log and record."""
    out = {}
    for run_id in ids:
        log, _ = t.mlw("history", "logs", "-r", run_id)
        info = json.loads(t.mlw("-o", "json", "history", "info", "-r", run_id)[0])
        times = {line.split()[0]: float(line.split()[1]) for line in log.splitlines()
                 if line.startswith(("START ", "END "))}
        out[run_id] = (tuple(info.get("gpus", [])), times.get("START"), times.get("END"),
                       info["status"])
    return out


def leased_remote(mlw, link):
    """A `remote` target g on the 4-GPU host with gpusPerRun: 1, its connection kept (warm)."""
    t = gpu_targets(mlw, link)
    t.attach_remote("g", kind="remote")
    with open(os.path.join(t.project, "aml_config", "g.compute"), "a", encoding="utf-8") as f:
        f.write("gpusPerRun: 1\n")
    t.mlw("experiment", "submit", "-c", "g", "sleep.py", "0")
    return t


def makespan_of(runs, start):
    """Seconds from `start` to the last of the 32 runs' last line (inf unless all 32 ended)."""
    ends = [r[2] for r in runs.values() if r[2]]
    return max(ends) - start if len(ends) == 32 else float("inf")


def b11(mlw, link=None):
    wan = link is not None
    t = leased_remote(mlw, link)
    start = time.time()
    ids = []
    for _ in range(32):
        out, _ = t.mlw("-o", "json", "experiment", "submit", "-a", "-c", "g", "sleep.py", "2")
        ids.append(json.loads(out)["run_id"])
    deadline = time.time() + 180
    while time.time() < deadline:
        states = [json.loads(t.mlw("-o", "json", "history", "info", "-r", i)[0])["status"]
                  for i in ids[-4:]]
        if all(s in ("Completed", "Failed", "Canceled", "Lost") for s in states):
            break
        time.sleep(0.5)
    runs = runs_of(t, ids)
    makespan = makespan_of(runs, start)
    ideal = 32 * 2 / 4
    name = "B11w" if wan else "B11"
    print(row(name, "makespan of 32 one-GPU runs of a 2 s script on the 4-GPU host (remote, "
              "submitted with -a back to back)", f"{makespan:.1f} s ({makespan / ideal:.2f}×)",
              f"ideal 32 × 2 s / 4 = {ideal:.0f} s", "≤ 1.10×", makespan / ideal <= 1.10))
    if not wan:
        gaps = []
        by_gpu = {}
        for gpu, begin, end, _ in runs.values():
            by_gpu.setdefault(gpu, []).append((begin, end))
        for spans in by_gpu.values():
            spans.sort()
            gaps += [(b2 - e1) * 1000 for (_, e1), (b2, _) in zip(spans, spans[1:])]
        gaps.sort()
        p50 = gaps[len(gaps) // 2] if gaps else float("inf")
        p95 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.95))] if gaps else float("inf")
        print(row("B11b", "hand-off: a run's last line to the next run's first line on its GPU "
                  f"({len(gaps)} hand-offs)", f"p50 {p50:.0f} ms, p95 {p95:.0f} ms", "—",
                  "p50 ≤ 250 ms, p95 ≤ 500 ms", p50 <= 250 and p95 <= 500))
    t.remove()


def b11s(mlw):
    """B11 through one `experiment sweep` of 32 points instead of 32 submits."""
    t = leased_remote(mlw, None)
    start = time.time()
    out, _ = t.mlw("experiment", "sweep", "-a", "-c", "g", "sleep.py", "2",
                   "--point", ",".join(str(i) for i in range(32)))
    sweep_id = out.split("SweepId: ")[1].split()[0]
    deadline = time.time() + 180
    ids = []
    while time.time() < deadline:
        listed = json.loads(t.mlw("-o", "json", "history", "list", "--sweep", sweep_id,
                                  "--top", "0")[0])
        ids = [r["run_id"] for r in listed]
        if listed and all(r["status"] in ("Completed", "Failed", "Canceled", "Lost")
                          for r in listed):
            break
        time.sleep(0.5)
    makespan = makespan_of(runs_of(t, ids), start)
    ideal = 32 * 2 / 4
    print(row("B11s", "the same 32 runs as one `mlw experiment sweep -a` of 32 points",
              f"{makespan:.1f} s ({makespan / ideal:.2f}×)",
              f"ideal 32 × 2 s / 4 = {ideal:.0f} s", "≤ 1.10×", makespan / ideal <= 1.10))
    t.remove()


def b4q(mlw):
    t = gpu_targets(mlw, None)
    t.attach_remote("rd")
    t.attach_remote("rdq")
    with open(os.path.join(t.project, "aml_config", "rdq.compute"), "a", encoding="utf-8") as f:
        f.write("nvidiaDocker: true\ngpusPerRun: 1\n")
    t.mlw("experiment", "submit", "-c", "rd", "noop.py")
    held = [json.loads(t.mlw("-o", "json", "experiment", "submit", "-a", "-c", "rdq", "sleep.py",
                             "300")[0])["run_id"] for _ in range(4)]
    times = alternate({
        "queued": [mlw, "-q", "experiment", "submit", "-a", "-c", "rdq", "noop.py"],
        "b4": [mlw, "-q", "experiment", "submit", "-c", "rd", "noop.py"],
    }, runs=10, warmup=1, cwd=t.project, env=t.env)
    queued, b4 = median(times["queued"]), median(times["b4"])
    print(row("B4q", "`mlw experiment submit -a` of a run that queues for a GPU (remotedocker)",
              f"{queued:.0f} ms ({queued / b4:.2f}×)",
              f"B4, `mlw experiment submit -c remotedocker noop.py` {b4:.0f} ms", "≤ 1.1×",
              queued / b4 <= 1.1))
    # The waiting runs first (their cancel is at once), then the four that hold the GPUs; the
    # lease folder is left in /tmp (a run still ending may hold a lease in it).
    listed = json.loads(t.mlw("-o", "json", "history", "list")[0])
    waiting = [r["run_id"] for r in listed if r["status"] == "Queued"]
    for run_id in waiting + held:
        subprocess.run([mlw, "-q", "experiment", "cancel", "-r", run_id], cwd=t.project,
                       env=t.env, capture_output=True, check=False)
    t.remove()


def main(mlw, link=None):
    if link == "wan":
        b11(mlw, WAN)
        return
    b11(mlw)
    b11s(mlw)
    b4q(mlw)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
