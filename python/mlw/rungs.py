"""A sweep's ASHA and Hyperband decisions, taken on the target in the trial's own process.

`mlw experiment sweep --scheduler asha|hyperband` gives each trial $MLW_SCHEDULER (JSON: the
scheduler, the metric, the sweep and the trial's point and bracket). When the trial logs the
metric at a step that reaches one of its bracket's rungs, `log_metric` judges it here, under a
lock on the sweep's record on the target ($MLW_SHARE_DIR/sweeps/<sweep>/rungs.jsonl, a line per
trial and rung): in the top 1/eta of the values the trials reached at that rung so far, it goes
on; else it ends, Stopped (docs/sweeps.md "ASHA and Hyperband"). Nothing resident decides and the
machine that started the sweep may sleep: every decision is a function of the record. A trial
judged at a rung before (restarted from its checkpoint) is given its recorded verdict again:
nothing is decided twice. Each decision is also a line of the run's metrics file, which the
sweep's supervisor copies into its decisions log.
"""

import fcntl
import json
import math
import os
import sys
import threading
import time

_spec = None
_history = []  # (step, value) of the metric, as logged
_judged = set()
_lock = threading.Lock()


def _load():
    global _spec
    if _spec is None:
        try:
            _spec = json.loads(os.environ.get("MLW_SCHEDULER", "")) or {}
        except ValueError:
            _spec = {}
    return _spec


def _shown(value):
    return "%.6g" % value


def _rungs(spec):
    rung = float(spec["min"]) * float(spec["eta"]) ** int(spec.get("bracket", 0))
    out = []
    while rung < spec["max"]:
        out.append(int(rung))
        rung *= spec["eta"]
    return out


def _value_at(rung):
    """The value logged last at the furthest step up to `rung` (None: none)."""
    found, found_step = None, -math.inf
    for step, value in _history:
        if step <= rung and step >= found_step:
            found, found_step = value, step
    return found


def _record_path(spec):
    share = os.environ.get("MLW_SHARE_DIR") or "../share/"
    folder = os.path.join(share, "sweeps", str(spec["sweep"]))
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "rungs.jsonl")


def _judge_at(spec, rung, value, ranked, where):
    """This trial's verdict at `rung` from the sweep's record: (verdict, text)."""
    eta, maximize, metric = int(spec["eta"]), spec.get("goal") == "max", spec["metric"]
    worst = -math.inf if maximize else math.inf
    with open(_record_path(spec), "a+", encoding="utf-8") as record:
        fcntl.flock(record, fcntl.LOCK_EX)
        record.seek(0)
        reached = []
        line = "\n"
        mark = '"rung": %d,' % rung  # as json.dumps writes it: only this rung's lines are parsed
        for line in record:
            if mark not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short by a decider killed while writing
            if entry.get("bracket") != spec.get("bracket", 0) or entry.get("rung") != rung:
                continue
            if entry.get("point") == spec.get("point"):
                return entry.get("verdict", "goes on"), entry.get("text", "")
            v = entry.get("value")
            reached.append(worst if v is None else float(v))
        reached.append(ranked)
        n = len(reached)
        resource = spec["resource"]
        if n < eta:
            verdict = "goes on"
            text = "reached %s %d%s (%s %s): goes on, %d of the %d to judge by" % (
                resource, rung, where, metric, _shown(value), n, eta)
        else:
            ordered = sorted(reached, reverse=maximize)
            keep = n // eta
            cutoff = ordered[keep - 1]
            promoted = ranked >= cutoff if maximize else ranked <= cutoff
            standing = "%s %s %s the top 1/%d (%d of %d trials at that rung; cutoff %s)" % (
                metric, _shown(value), "is in" if promoted else "is not in", eta, keep, n,
                _shown(cutoff))
            if promoted:
                verdict, text = "promoted", "promoted at %s %d%s: %s" % (resource, rung, where, standing)
            else:
                verdict = "stopped"
                text = "stopped by %s at %s %d%s: %s" % (
                    "Hyperband" if spec["type"] == "hyperband" else "ASHA", resource, rung, where,
                    standing)
        entry = {"point": spec.get("point"), "run": os.environ.get("MLW_RUN_ID"),
                 "bracket": spec.get("bracket", 0), "rung": rung,
                 "value": ranked if math.isfinite(ranked) else None, "verdict": verdict,
                 "text": text, "time": time.time()}
        # After a line cut short (its writer killed), on a line of its own.
        record.write(("" if line.endswith("\n") else "\n") + json.dumps(entry) + "\n")
        # Flushed before the lock goes (not fsynced: a line lost with the machine leaves the rung
        # to the trial's next report).
        record.flush()
    return verdict, text


def _decisions(spec, step, value):
    """The decisions the metric's value at `step` brings: [(verdict, text)]."""
    resource, metric = spec["resource"], spec["metric"]
    if step > spec["max"]:
        return [("stopped", "stopped at %s %s: past its budget of %d (--%s %d was given)" % (
            resource, _shown(step), spec["max"], resource, spec["max"]))]
    out = []
    maximize = spec.get("goal") == "max"
    where = ", bracket %d" % spec.get("bracket", 0) if spec["type"] == "hyperband" else ""
    for rung in _rungs(spec):
        if rung > step:
            break
        if rung in _judged:
            continue
        _judged.add(rung)
        logged = _value_at(rung)
        if logged is None:
            continue
        ranked = logged
        if not math.isfinite(logged):
            out.append(("note", "its %s at %s %d is %s: ranked last" % (metric, resource, rung,
                                                                      _shown(logged))))
            ranked = -math.inf if maximize else math.inf
        verdict, text = _judge_at(spec, rung, logged, ranked, where)
        out.append((verdict, text))
        if verdict == "stopped":
            break
    return out


def observe(name, value, step, write):
    """Called by log_metric: judges the trial where `name` at `step` reaches a rung; `write`
    adds a line to the run's metrics file. A trial stopped here ends (exit code 0, Stopped)."""
    spec = _load()
    if not spec or name != spec.get("metric") or step is None:
        return
    try:
        value = float(value)
    except (TypeError, ValueError):
        return
    with _lock:
        _history.append((float(step), value))
        try:
            decisions = _decisions(spec, float(step), value)
        except (OSError, ValueError, KeyError, TypeError) as e:
            # The record unreachable (a share folder not writable) or $MLW_SCHEDULER bad: the
            # trial goes on, unjudged at this rung, and says why; its training is never broken.
            decisions = [("note", "not judged at step %s: %s: %s; it goes on" % (
                _shown(float(step)), type(e).__name__, e))]
    stopped = None
    for verdict, text in decisions:
        write("decision", {"decision": text, "verdict": verdict, "time": time.time()})
        if verdict == "stopped":
            stopped = text
    if stopped is None:
        return
    print("mlw: " + stopped, file=sys.stderr, flush=True)
    sys.stdout.flush()
    if threading.current_thread() is threading.main_thread():
        raise SystemExit(0)
    os._exit(0)  # from another thread, SystemExit would end that thread alone
