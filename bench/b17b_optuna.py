"""B17b (issue 49): mlw's `--search tpe --scheduler hyperband` against Optuna (Debian's
python3-optuna: TPESampler + HyperbandPruner) on the synthetic curve of B17 (bench/b17_sweep.py),
at equal GPU-seconds, median of 5 seeds.

mlw: a sweep file of 40 TPE points (10 at random first, the seed given), Hyperband over epochs 1 to
81 (eta 3), 4 trials at once on the local target (each a stand-in for one GPU); its GPU-seconds
are the sum of its runs' durations (each run's start included, as a GPU would be held for it).
Optuna: the same curve in its own loop (`study.optimize`, 4 threads, the same search space, the
same seed, 10 startup trials, HyperbandPruner(1, 81, 3)), stopped once the sum of its trials'
durations reaches mlw's GPU-seconds for that seed. Figures: each one's best final loss (a
completed trial's last value), the median over the seeds. Target: mlw's median at least as good.
"""

import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from b17_sweep import CURVE
from timing import row, sh

SWEEP = """method: tpe
count: 40
startup: 10
seed: {seed}
maxConcurrent: 4
metric: {{name: loss, goal: min}}
parameters:
  lr: {{loguniform: [0.0001, 0.1]}}
  width: {{int: [1, 8]}}
scheduler: {{type: hyperband, resource: epochs, min: 1, max: 81, eta: 3}}
"""

SEEDS = (1, 2, 3, 4, 5)


def curve(lr, width, epoch, noise):
    """B17's loss at `epoch` (the same function as CURVE's script)."""
    final = 0.1 * (math.log10(lr) + 2.5) ** 2 + 0.04 * abs(width - 5) + 0.1
    return final + (0.3 + 0.05 * width) / math.sqrt(epoch) + noise.gauss(0, 0.002)


def mlw_sweep(mlw, project, seed):
    """(best final loss, GPU-seconds) of mlw's TPE + Hyperband sweep with `seed`."""
    with open(os.path.join(project, "sweep.yml"), "w", encoding="utf-8") as out:
        out.write(SWEEP.format(seed=seed))
    out = subprocess.run([mlw, "-q", "experiment", "sweep", "-c", "local", "-f", "sweep.yml",
                          "curve.py"], cwd=project, capture_output=True, text=True, check=False).stdout
    sweep_id = out.split("SweepId: ")[1].split()[0]
    runs = json.loads(subprocess.run([mlw, "-o", "json", "history", "list", "--sweep", sweep_id,
                                      "--top", "0"], cwd=project, capture_output=True, text=True,
                                     check=True).stdout)
    best = min(r["metrics"]["loss"] for r in runs if r["status"] == "Completed")
    return best, sum(r.get("duration_s") or 0 for r in runs)


def optuna_study(seed, budget):
    """Optuna's best final loss once its trials have spent `budget` seconds, 4 at a time."""
    import optuna  # Debian's python3-optuna (scripts/setup with MLW_SETUP_BENCH=1)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spent = [0.0]
    lock = threading.Lock()

    def objective(trial):
        lr = trial.suggest_float("lr", 0.0001, 0.1, log=True)
        width = trial.suggest_int("width", 1, 8)
        noise = random.Random(f"{lr}:{width}")
        begun = time.monotonic()
        try:
            value = None
            for epoch in range(1, 82):
                time.sleep(0.03)
                value = curve(lr, width, epoch, noise)
                trial.report(value, epoch)
                if trial.should_prune():
                    raise optuna.TrialPruned()
            return value
        finally:
            with lock:
                spent[0] += time.monotonic() - begun

    def enough(study, trial):
        del trial
        if spent[0] >= budget:
            study.stop()

    study = optuna.create_study(
        direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=10),
        pruner=optuna.pruners.HyperbandPruner(min_resource=1, max_resource=81, reduction_factor=3))
    study.optimize(objective, n_trials=1000, n_jobs=4, callbacks=[enough])
    done = [t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    return min(done) if done else math.inf, spent[0], len(study.trials)


def main(mlw, python):
    del python
    work = tempfile.mkdtemp(prefix="mlw-b17b-")
    sh(f"{mlw} -q project create -n b17b", cwd=work)
    project = os.path.join(work, "b17b")
    with open(os.path.join(project, "curve.py"), "w", encoding="utf-8") as out:
        out.write(CURVE)
    ours, theirs, budgets, trials = [], [], [], []
    for seed in SEEDS:
        best, seconds = mlw_sweep(mlw, project, seed)
        their_best, _, n = optuna_study(seed, seconds)
        ours.append(best)
        theirs.append(their_best)
        budgets.append(seconds)
        trials.append(n)
    mine, peer = statistics.median(ours), statistics.median(theirs)
    print(row("B17b", "--search tpe --scheduler hyperband (40 points, 4 at once, local target) "
              "against Optuna's TPESampler + HyperbandPruner at the same GPU-seconds "
              f"(median {statistics.median(budgets):.0f} s; Optuna ran a median of "
              f"{statistics.median(trials):.0f} trials): best loss, median of 5 seeds",
              f"{mine:.4f}", f"Optuna: {peer:.4f}", "at least as good", mine <= peer))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
