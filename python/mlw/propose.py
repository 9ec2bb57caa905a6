"""A TPE sweep's point, proposed on the target as its trial starts: `python -m mlw.propose SCRIPT
[ARGS...]`.

`mlw experiment sweep --search tpe` on one SSH target puts its points there ahead of their turn
(docs/sweeps.md "The laptop may close"); each is started as this module with $MLW_PROPOSE (JSON:
the sweep's spec as sweep.json records it, with the sweep's id and the point's number). Under
a lock on the sweep's record on the target ($MLW_SHARE_DIR/sweeps/<sweep>/tpe.jsonl: a line per
proposal and a line per ended attempt) it proposes the point from the trials that have ended
there, the way src/sweep/tpe.cpp does on the machine that started the sweep (docs/sweeps.md
"Bayesian search (TPE)"); a point proposed before (a restart, a requeue) keeps its parameters. The
script then runs as a child with the point's arguments after its own (`--NAME VALUE`), the point
is written to the run's metrics file as parameters and a decision line (verdict `proposal`) (the run's record takes
them as its arguments), and when the script ends its end is added to the record: its exit code,
its metric's last value and whether it was stopped at a rung. Nothing resident proposes: the
machine that started the sweep may sleep.
"""

import fcntl
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

_CANDIDATES = 24
_GAMMA = 0.25  # the good share of the completed trials


def _unit_of(p, value):
    """A parameter's value on the unit scale (a choice's index for a list); None: not its."""
    if p["kind"] == "values":
        return float(p["values"].index(value)) if value in p["values"] else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    low, high = float(p["low"]), float(p["high"])
    try:
        if p["kind"] == "uniform":
            u = (value - low) / (high - low)
        elif p["kind"] == "loguniform":
            u = (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
        else:  # int
            u = (value - low + 0.5) / (high - low + 1)
    except (ValueError, ZeroDivisionError):
        return None
    return min(max(u, 0.0), 1.0) if math.isfinite(u) else None


def _value_of(p, u):
    """The value at `u` on the unit scale (for a list: the choice of index u)."""
    if p["kind"] == "values":
        return p["values"][int(u)]
    low, high = float(p["low"]), float(p["high"])
    if p["kind"] == "uniform":
        return low + u * (high - low)
    if p["kind"] == "loguniform":
        return math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    return int(min(high, math.floor(low + u * (high - low + 1))))


class _Parzen:
    """A Parzen density over one parameter's observed unit values, with a uniform prior as one
    more component (so that no value has density 0); a list's: counts with one each as prior."""

    def __init__(self, choices):
        self.points = []
        self.choices = choices

    def sigma(self):
        return max(0.02, 0.25 * (len(self.points) + 1) ** -0.2)

    def density(self, u):
        m = float(len(self.points))
        if self.choices:
            return (1.0 + self.points.count(u)) / (self.choices + m)
        s = self.sigma()
        total = 1.0  # the prior, uniform on [0, 1]
        for o in self.points:
            z = (u - o) / s
            total += math.exp(-0.5 * z * z) / (s * math.sqrt(2 * math.pi))
        return total / (m + 1)

    def draw(self, rng):
        if self.choices:
            pick = rng.random()
            for k in range(self.choices):
                pick -= self.density(float(k))
                if pick <= 0:
                    return float(k)
            return float(self.choices - 1)
        j = rng.randint(0, len(self.points))
        if j == len(self.points):
            return rng.random()
        u = self.points[j] + self.sigma() * rng.gauss(0.0, 1.0)
        while u < 0 or u > 1:
            u = -u if u < 0 else 2 - u  # reflected into [0, 1]
        return u


def _space(spec):
    """The parameters, in order, each with its name (the sweep's spec has them by name)."""
    return [dict(p, name=name) for name, p in spec["parameters"].items()]


def _random_point(spec, rng):
    point = {}
    for p in _space(spec):
        u = rng.random()
        if p["kind"] == "values":
            n = len(p["values"])
            point[p["name"]] = _value_of(p, math.floor(min(u * n, n - 1)))
        else:
            point[p["name"]] = _value_of(p, u)
    return point


def propose(spec, trials, index):
    """TPE's point number `index` from the ended trials [(point, value, stopped)]: at random
    until `startup` have ended (or none completed), else the best of 24 candidates drawn from
    the good trials' densities by the ratio of good to bad. The same seed, index and trials give
    the same point."""
    rng = random.Random((int(spec.get("seed", 0)) ^ ((index + 1) * 0x9E3779B97F4A7C15)) % 2**64)
    completed = [t for t in trials if not t[2] and t[1] is not None and math.isfinite(t[1])]
    stopped = [t for t in trials if t[2]]
    if len(completed) + len(stopped) < max(int(spec.get("startup", 1)), 1) or not completed:
        return _random_point(spec, rng), False
    completed.sort(key=lambda t: t[1], reverse=spec.get("goal") == "max")  # stable, as C++'s
    good_count = int(math.ceil(_GAMMA * len(completed)))
    good, bad = completed[:good_count], completed[good_count:] + stopped
    params = _space(spec)
    dens = []
    for p in params:
        n = len(p["values"]) if p["kind"] == "values" else 0
        l, g = _Parzen(n), _Parzen(n)
        for group, into in ((good, l), (bad, g)):
            for point, _, _ in group:
                if p["name"] in point:
                    u = _unit_of(p, point[p["name"]])
                    if u is not None:
                        into.points.append(u)
        dens.append((l, g))
    best, best_score = None, -math.inf
    for _ in range(_CANDIDATES):
        candidate = [l.draw(rng) for l, _ in dens]
        score = sum(math.log(l.density(u)) - math.log(g.density(u))
                    for (l, g), u in zip(dens, candidate))
        if score > best_score:
            best, best_score = candidate, score
    return {p["name"]: _value_of(p, u) for p, u in zip(params, best)}, True


def _text(value):
    """A parameter's value as an argument, as mlw writes a point's (param_text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return "%d" % value
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, separators=(",", ":"))  # a list's or an object's JSON, as C++ dumps it


def _record(spec):
    share = os.environ.get("MLW_SHARE_DIR") or "../share/"
    folder = os.path.join(share, "sweeps", str(spec["sweep"]))
    os.makedirs(folder, exist_ok=True)
    return open(os.path.join(folder, "tpe.jsonl"), "a+", encoding="utf-8")


def _read(record):
    """The record's proposals {point: params} and last ends {point: (code, value, stopped)}."""
    record.seek(0)
    proposals, ends, line = {}, {}, "\n"
    for line in record:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by a writer killed while writing
        point = entry.get("point")
        if "params" in entry:
            proposals.setdefault(point, entry["params"])
        elif "end" in entry:
            ends[point] = (entry["end"], entry.get("value"), bool(entry.get("stopped")))
    return proposals, ends, line


def _append(record, last_line, entry):
    record.write(("" if last_line.endswith("\n") else "\n") + json.dumps(entry) + "\n")
    record.flush()


def _choose(spec):
    """This point's parameters (proposed now, or as proposed before) and the log's line."""
    index = int(spec["point"])
    with _record(spec) as record:
        fcntl.flock(record, fcntl.LOCK_EX)
        proposals, ends, last = _read(record)
        if index in proposals:
            return proposals[index], "TPE's point %s, as proposed before" % json.dumps(
                proposals[index])
        trials = []
        for point, (code, value, stopped) in sorted(ends.items()):
            if point in proposals and (stopped or code == 0):
                trials.append((proposals[point], value, stopped))
        params, learnt = propose(spec, trials, index)
        _append(record, last, {"point": index, "run": os.environ.get("MLW_RUN_ID"),
                               "params": params, "time": time.time()})
    return params, "TPE %s %s (%d ended trials)" % (
        "proposes" if learnt else "draws at random", json.dumps(params), len(trials))


def _outcome(metric):
    """The script's last value of the metric (None: none, or not finite) and whether it was
    stopped at a rung, from the run's metrics file."""
    value, stopped = None, False
    path = os.environ.get("MLW_METRICS_FILE")
    mark = json.dumps(metric)  # only the lines that may name it are parsed (a big file is quick)
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if mark not in line and '"stopped"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("name") == metric and "value" in entry:
                    v = entry["value"]
                    value = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
                        else None
                elif entry.get("verdict") == "stopped":
                    stopped = True
    except (OSError, TypeError):
        pass
    return (value if value is not None and math.isfinite(value) else None), stopped


def _pass_on(pid, sig):
    try:
        os.kill(pid, sig)  # not reaped before this process waits for it: the pid is still its
    except OSError:
        pass


def main(argv):
    spec = json.loads(os.environ["MLW_PROPOSE"])
    try:
        params, said = _choose(spec)
    except (OSError, ValueError) as e:
        # The record unusable (a share folder not writable): the trial still runs, at a point
        # drawn at random, and says why; its training is never broken.
        params = propose(spec, [], int(spec["point"]))[0]
        said = "TPE draws at random %s (the sweep's record there cannot be used: %s: %s)" % (
            json.dumps(params), type(e).__name__, e)
    from mlw import _write, log_param

    for name, value in params.items():
        log_param(name, value)
    _write("decision", {"decision": said, "verdict": "proposal", "proposal": params,
                        "time": time.time()})
    print("mlw: " + said, flush=True)
    words = [sys.executable] + argv
    for name, value in params.items():
        words += ["--" + name, _text(value)]
    # A stop is passed on to the script (a process group's signal reaches it once more: harmless
    # for TERM and INT, which stop it either way); one that comes before the script has started
    # is passed on as it starts.
    started, early = [], []

    def on_signal(sig, _frame):
        if started:
            _pass_on(started[0].pid, sig)
        else:
            early.append(sig)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, on_signal)
    child = subprocess.Popen(words)
    started.append(child)
    for sig in early:
        _pass_on(child.pid, sig)
    code = child.wait()
    value, stopped = _outcome(spec["metric"])
    try:
        with _record(spec) as record:
            fcntl.flock(record, fcntl.LOCK_EX)
            _, _, last = _read(record)
            _append(record, last, {"point": int(spec["point"]),
                                   "run": os.environ.get("MLW_RUN_ID"), "end": code,
                                   "value": value, "stopped": stopped, "time": time.time()})
    except OSError as e:
        print("mlw: this trial's end is not in the sweep's record (%s: %s): TPE will not learn "
              "from it" % (type(e).__name__, e), file=sys.stderr, flush=True)
    if code < 0:  # killed by a signal: so is this process, as the script was
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
