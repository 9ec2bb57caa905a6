"""B17c (issue 49): what a decision at a rung costs on the target. A scheduled sweep's trial is
judged in its own process by mlw's helper (python/mlw/rungs.py, shipped in every run folder):
`log_metric` at a rung takes the lock on the sweep's record, reads it (parsing that rung's lines
only), appends its line and flushes it. Measured here as a trial runs it, against a record of 1,000 trials' decisions (4,000
lines): 60 decisions at a rung (each a new trial), against the floor of the same `log_metric`
off a rung (a metrics line, no decision). The lock is held for the read and the write only, so
another trial reaching a rung waits at most that long; no trial waits on one that is not at a
rung. Target: a decision ≤ 100 ms.
"""

import json
import os
import subprocess
import sys
import tempfile

from timing import median, row

PROBE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
share = sys.argv[2]
spec = {"type": "asha", "resource": "epochs", "min": 1, "max": 81, "eta": 3, "metric": "loss",
        "goal": "min", "sweep": "b17c", "bracket": 0}
os.environ["MLW_SHARE_DIR"] = share
os.environ["MLW_METRICS_FILE"] = os.path.join(share, "metrics.jsonl")
os.makedirs(os.path.join(share, "sweeps", "b17c"), exist_ok=True)
with open(os.path.join(share, "sweeps", "b17c", "rungs.jsonl"), "w") as out:
    for point in range(1000):
        for rung in (1, 3, 9, 27):
            out.write(json.dumps({"point": point, "bracket": 0, "rung": rung, "value": 1 + point % 97 / 100,
                                  "verdict": "goes on", "text": "x" * 90, "time": 0}) + "\n")
os.environ["MLW_SCHEDULER"] = json.dumps(dict(spec, point=0))
import mlw
from mlw import rungs
at, off = [], []
for point in range(1000, 1060):
    rungs._spec, rungs._history, rungs._judged = dict(spec, point=point), [], set()
    t = time.perf_counter()
    mlw.log_metric("loss", 0.5, step=1)  # at rung 1: a decision (promoted: 0.5 is the best)
    at.append(time.perf_counter() - t)
    t = time.perf_counter()
    mlw.log_metric("loss", 0.4, step=2)  # between rungs: a metrics line only
    off.append(time.perf_counter() - t)
print(json.dumps({"at": at, "off": off}))
"""


def main(mlw, python):
    del mlw
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    share = tempfile.mkdtemp(prefix="mlw-b17c-")
    out = subprocess.run([python, "-c", PROBE, os.path.join(root, "python"), share + "/"],
                         capture_output=True, text=True, check=True).stdout
    times = json.loads(out)
    at = sorted(1000 * t for t in times["at"])
    off = median([1000 * t for t in times["off"]])
    worst = at[-1]
    print(row("B17c", "a decision at a rung on the target (mlw's helper in the trial: lock, read a "
              "record of 4,000 lines, append), 60 trials: median, worst",
              f"{median(at):.1f} ms, {worst:.1f} ms",
              f"log_metric off a rung: {off:.2f} ms", "≤ 100 ms", worst <= 100))
    subprocess.run(["rm", "-rf", share], check=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
