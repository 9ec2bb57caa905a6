"""B17 (issue 49): quality per GPU-second of an ASHA sweep against a full random search of the
same 64 points, on the local target with 4 trials at once (each trial a stand-in for one GPU).

The synthetic learning curve (CURVE below) is a known function of the parameters and the epoch,
with seeded noise: loss(e) = final(lr, width) + a(width) / sqrt(e) + noise. The random search
gives every point its 81 epochs; ASHA (--min 1 --max 81 --eta 3) the same points (the same seed).
Figures: the best loss each reached (a trial's last logged value), and the GPU-seconds each
spent (the sum of its runs' durations, each run holding one slot). Target (issue 49): ASHA's best
within 1 % of the random search's, with at most 1/3 of its GPU-seconds.

B17b (against Optuna) is bench/b17b_optuna.py, B17c (a decision's cost on the target)
bench/b17c_decision.py.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from timing import row, sh

CURVE = """import argparse, math, random, time, mlw
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float)
p.add_argument("--width", type=int)
p.add_argument("--epochs", type=int)
a = p.parse_args()
final = 0.1 * (math.log10(a.lr) + 2.5) ** 2 + 0.04 * abs(a.width - 5) + 0.1
amp = 0.3 + 0.05 * a.width
noise = random.Random(f"{a.lr}:{a.width}")
for e in range(1, a.epochs + 1):
    time.sleep(0.03)
    mlw.log_metric("loss", final + amp / math.sqrt(e) + noise.gauss(0, 0.002), step=e)
"""

SWEEP = """method: random
count: 64
seed: 17
maxConcurrent: 4
metric: {name: loss, goal: min}
parameters:
  lr: {loguniform: [0.0001, 0.1]}
  width: {int: [1, 8]}
"""


def sweep(mlw, project, options, arguments):
    """Runs the sweep to its end; (best last loss, GPU-seconds, trials stopped)."""
    out = subprocess.run([mlw, "-q", "experiment", "sweep", "-c", "local", "-f", "sweep.yml",
                          *options, "curve.py", *arguments], cwd=project, capture_output=True, text=True,
                         check=False).stdout
    sweep_id = out.split("SweepId: ")[1].split()[0]
    runs = json.loads(subprocess.run([mlw, "-o", "json", "history", "list", "--sweep", sweep_id,
                                      "--top", "0"], cwd=project, capture_output=True, text=True,
                                     check=True).stdout)
    best = min(r["metrics"]["loss"] for r in runs if r["status"] == "Completed")
    seconds = sum(r.get("duration_s") or 0 for r in runs)
    stopped = sum(r["status"] == "Stopped" for r in runs)
    return best, seconds, stopped


def main(mlw, python):
    del python
    work = tempfile.mkdtemp(prefix="mlw-b17-")
    sh(f"{mlw} -q project create -n b17", cwd=work)
    project = os.path.join(work, "b17")
    for name, text in (("curve.py", CURVE), ("sweep.yml", SWEEP)):
        with open(os.path.join(project, name), "w", encoding="utf-8") as out:
            out.write(text)
    # The random search's trials get --epochs 81 after the script; ASHA's from the scheduler.
    full_best, full_s, _ = sweep(mlw, project, [], ["--epochs", "81"])
    asha_best, asha_s, stopped = sweep(mlw, project, ["--scheduler", "asha", "--resource",
                                                      "epochs", "--min", "1", "--max", "81",
                                                      "--eta", "3"], [])
    ok = asha_best <= full_best * 1.01 and asha_s <= full_s / 3
    print(row("B17", f"ASHA (--min 1 --max 81 --eta 3) over 64 random points, 4 at once on the "
              f"local target ({stopped} stopped): best loss, GPU-seconds",
              f"{asha_best:.4f}, {asha_s:.0f} s ({asha_s / full_s:.2f}×)",
              f"full random search of the same points: {full_best:.4f}, {full_s:.0f} s",
              "best within 1 %, ≤ 1/3 of the GPU-seconds", ok))
    shutil.rmtree(work, ignore_errors=True)  # (a stopped run's folder may still be closing)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
