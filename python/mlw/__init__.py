"""mlw's helper for scripts run by `mlw experiment submit`.

    from mlw import log_metric, log_param, log_artifact
    log_param("optimizer", "adam")
    log_metric("accuracy", 0.93, step=10)
    log_artifact("model.pkl")

Metrics go to $MLW_METRICS_FILE as JSON lines; artifacts are copied into the run's outputs/
folder ($MLW_OUTPUTS_DIR), which mlw collects into the run's history. Outside an mlw run both
functions still work: metrics are printed and artifacts stay where they are.
"""

import json
import math
import numbers
import os
import shutil
import sys
import threading
import time

__all__ = ["log_metric", "log_param", "log_artifact", "run_id"]

_lock = threading.Lock()


def run_id():
    """The id of the current run (None outside an mlw run)."""
    return os.environ.get("MLW_RUN_ID")


def _plain(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return _plain(value.tolist())
    if hasattr(value, "item"):  # other array-like scalars
        return _plain(value.item())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def _write(kind, record):
    """Appends one JSON line to $MLW_METRICS_FILE (outside a run: prints it on stderr)."""
    path = os.environ.get("MLW_METRICS_FILE")
    line = json.dumps(record, ensure_ascii=False)
    if not path:
        print(kind, line, file=sys.stderr)
        return
    with _lock, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def log_metric(name, value, step=None):
    """Records one value of the metric `name` (optionally at `step`)."""
    if not isinstance(name, str) or not name:
        raise ValueError("metric name must be a non-empty string")
    record = {"name": name, "value": _plain(value), "time": time.time()}
    if step is not None:
        record["step"] = int(step)
    _write("metric", record)
    if step is not None and os.environ.get("MLW_SCHEDULER"):
        from mlw import rungs  # a sweep's trial: judged at its rungs (mlw/rungs.py)

        rungs.observe(name, record["value"], record["step"], _write)


def log_param(name, value):
    """Records the run's parameter `name` (a string, number or bool; a later value wins).

    Parameters are the run's settings (shown as columns, filtered and sorted on by
    `mlw history list --param`); the script's arguments are recorded as parameters already.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("parameter name must be a non-empty string")
    value = _plain(value)
    if not isinstance(value, (str, int, float, bool)):
        value = json.dumps(value)
    _write("param", {"param": name, "value": value})


def log_artifact(path, name=None):
    """Copies the file `path` into the run's outputs/ (as `name`, default its base name)."""
    outputs = os.environ.get("MLW_OUTPUTS_DIR")
    if not outputs:
        return path
    target = os.path.join(outputs, name or os.path.basename(path))
    if os.path.abspath(path) != os.path.abspath(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
    return target
