"""mlw's notebook kernel (`mlw notebook`, docs/notebooks.md): an IPython kernel that runs as an
mlw run, on the run's target, in its environment and snapshot, started as

    python -m mlw.kernel CONNECTION_FILE [PARENT_PID]

Each cell executed for the notebook (stored in its history: not Jupyter's silent requests) is
told to mlw through cells.jsonl in the run's folder, one JSON line as it starts and one as it
ends; the metrics a cell logs (mlw.log_metric) go to cells/N/metrics.jsonl, N its execution
count. mlw (`mlw notebook kernel`, the process Jupyter started) makes each ended cell a run of
the history. PARENT_PID: that process where it runs on this machine; the kernel ends when it
is gone (Jupyter's SIGKILL leaves no kernel behind).
"""

import json
import os
import sys
import threading
import time

_SOURCE_LIMIT = 4096  # the first bytes of a cell's source kept in its record


def _append(path, record):
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.flush()


def _gone(pid):
    """Whether process `pid` has ended (a zombie that its parent has not reaped yet too)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def _watch_parent(pid):
    """Ends this process when `pid` (mlw's process that Jupyter started) has gone."""
    while True:
        time.sleep(0.5)
        if _gone(pid):
            print("mlw: the notebook's kernel process has gone: the kernel ends", file=sys.stderr)
            os._exit(143)


def main():
    if len(sys.argv) < 2:
        print("usage: python -m mlw.kernel CONNECTION_FILE [PARENT_PID]", file=sys.stderr)
        return 2
    connection = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2].isdigit():
        threading.Thread(target=_watch_parent, args=(int(sys.argv[2]),), daemon=True).start()
    run_metrics = os.environ.get("MLW_METRICS_FILE") or os.path.abspath("metrics.jsonl")
    run_dir = os.path.dirname(run_metrics)
    events = os.path.join(run_dir, "cells.jsonl")
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:
        print(
            "mlw: error: the run's Python has no ipykernel: add ipykernel to the conda file's "
            "dependencies (Debian: apt install python3-ipykernel)",
            file=sys.stderr,
        )
        return 125
    app = IPKernelApp.instance(connection_file=connection)
    app.initialize([])
    shell = app.shell
    current = {}

    def pre_run_cell(info):
        if not getattr(info, "store_history", True) or getattr(info, "silent", False):
            current.clear()
            return
        cell = shell.execution_count
        folder = os.path.join(run_dir, "cells", str(cell))
        os.makedirs(folder, exist_ok=True)
        current["cell"] = cell
        os.environ["MLW_METRICS_FILE"] = os.path.join(folder, "metrics.jsonl")
        os.environ["MLW_CELL"] = str(cell)
        source = (info.raw_cell or "")[:_SOURCE_LIMIT]
        _append(events, {"cell": cell, "event": "start", "time_ms": int(time.time() * 1000),
                         "source": source})

    def post_run_cell(result):
        if "cell" not in current:
            return
        cell = current.pop("cell")
        os.environ["MLW_METRICS_FILE"] = run_metrics
        os.environ.pop("MLW_CELL", None)
        error = result.error_in_exec or result.error_before_exec
        record = {"cell": cell, "event": "end", "time_ms": int(time.time() * 1000),
                  "ok": error is None}
        if error is not None:
            record["error"] = "%s: %s" % (type(error).__name__, error)
        _append(events, record)

    shell.events.register("pre_run_cell", pre_run_cell)
    shell.events.register("post_run_cell", post_run_cell)
    app.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
