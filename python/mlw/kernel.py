"""mlw's notebook kernel (`mlw notebook`, docs/notebooks.md): an IPython kernel that runs as an
mlw run, on the run's target, in its environment and snapshot, started as

    python -m mlw.kernel CONNECTION_FILE [PARENT_PID]     (a target on this machine)
    python -m mlw.kernel remote:SIGNATURE_SCHEME          (any other: container, SSH, cluster)

A target on this machine: the kernel binds the ports of Jupyter's connection file, and ends when
PARENT_PID (`mlw notebook kernel`, the process Jupyter started) is gone. Any other: the kernel
binds free ports of its own machine's (or container's) loopback, with the key that mlw passed in
the run's variable MLW_KERNEL_KEY (never a command line), and says the ports to mlw, which carries
Jupyter's connections to them over its SSH connection. mlw then holds one more connection, the
lifeline, to the kernel's last port: when it drops (mlw killed, the SSH connection lost) and no new
one comes within LIFELINE_WAIT seconds, the kernel ends, and with it the run (its container
removed, its GPUs freed).

mlw learns what the kernel does from lines on the run's own output (the kernel's original stdout,
which the run's log keeps and mlw follows on every kind), each `\\x1emlw-kernel ` and one JSON
object: the ports, and each cell executed for the notebook (stored in its history: not Jupyter's
silent requests) as it starts and ends, with the metrics it logged (mlw.log_metric goes to a file
of the cell's own while it runs). mlw makes each ended cell a run of the history.
"""

import json
import os
import socket
import sys
import threading
import time

_SOURCE_LIMIT = 4096  # the first bytes of a cell's source kept in its record
_METRICS_LIMIT = 1 << 20  # the most bytes of a cell's metrics sent to mlw
_MARK = b"\x1emlw-kernel "
LIFELINE_FIRST = 120  # seconds for mlw's first lifeline connection
LIFELINE_WAIT = 20  # seconds for a new one after it dropped


class _Events:
    """Writes the kernel's events to the run's output: a copy of stdout taken before the kernel
    captures it."""

    def __init__(self):
        self._fd = os.dup(1)
        self._lock = threading.Lock()

    def send(self, record):
        data = _MARK + json.dumps(record, ensure_ascii=True).encode() + b"\n"
        with self._lock:
            while data:
                data = data[os.write(self._fd, data):]


def _gone(pid):
    """Whether process `pid` has ended (a zombie that its parent has not reaped yet too)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


_LOG_FD = 2  # the run's own stderr, copied before the kernel captures it


def _end(message):
    os.write(_LOG_FD, ("mlw: %s: the kernel ends\n" % message).encode())
    os._exit(143)


def _watch_parent(pid):
    """Ends this process when `pid` (mlw's process that Jupyter started) has gone."""
    while True:
        time.sleep(0.5)
        if _gone(pid):
            _end("the notebook's kernel process has gone")


def _watch_lifeline(listener):
    """Ends this process when mlw's lifeline connection has been gone for too long."""
    wait = LIFELINE_FIRST
    while True:
        listener.settimeout(wait)
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            _end("mlw's connection to the kernel has been gone for %d s" % wait)
        connection.settimeout(None)
        try:
            while connection.recv(4096):
                pass
        except OSError:
            pass
        connection.close()
        wait = LIFELINE_WAIT


def _remote_connection(run_dir, scheme):
    """Writes the kernel's own connection file (0600, in the run's folder, removed once the kernel
    has read it): loopback, free ports (0: the kernel picks them), the key from MLW_KERNEL_KEY
    (taken out of the environment)."""
    key = os.environ.pop("MLW_KERNEL_KEY", "")
    if not key:
        print("mlw: error: MLW_KERNEL_KEY is not set: start the kernel with `mlw notebook`",
              file=sys.stderr)
        sys.exit(2)
    path = os.path.join(run_dir, "kernel.json")
    info = {"ip": "127.0.0.1", "transport": "tcp", "key": key, "signature_scheme": scheme,
            "shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0, "hb_port": 0}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(info, out)
    return path


def _grid_engine_elsewhere():
    """(this node, the submit host) when this is a Grid Engine job on a node other than the host
    that submitted it (the one mlw logs in to, whose forward reaches only its own loopback);
    else None. The submit host is this machine when one of its addresses is this machine's
    (Grid Engine names it as the qmaster saw it: "localhost" on a one-machine cell)."""
    submit_host = os.environ.get("SGE_O_HOST", "")
    if not submit_host or not os.environ.get("JOB_ID"):
        return None
    try:
        addresses = socket.getaddrinfo(submit_host, None, 0, socket.SOCK_STREAM)
    except OSError:
        return None  # a name this node cannot resolve: nothing is known, nothing is refused
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            try:
                probe.bind((address[0], 0))
                return None
            except OSError:
                pass
    return socket.gethostname(), submit_host


def _read_metrics(path):
    try:
        with open(path, "rb") as source:
            data = source.read(_METRICS_LIMIT + 1)
    except OSError:
        return []
    if len(data) > _METRICS_LIMIT:
        data = data[:_METRICS_LIMIT].rsplit(b"\n", 1)[0]
        print("mlw: a cell logged over 1 MiB of metrics: the first MiB is kept", file=sys.__stderr__)
    return [line.decode("utf-8", "replace") for line in data.splitlines() if line.strip()]


def _hook_cells(shell, events, run_dir, run_metrics):
    current = {}

    def pre_run_cell(info):
        if not getattr(info, "store_history", True) or getattr(info, "silent", False):
            current.clear()
            return
        cell = shell.execution_count
        folder = os.path.join(run_dir, "cells", str(cell))
        os.makedirs(folder, exist_ok=True)
        current["cell"] = cell
        current["metrics"] = os.path.join(folder, "metrics.jsonl")
        os.environ["MLW_METRICS_FILE"] = current["metrics"]
        os.environ["MLW_CELL"] = str(cell)
        source = (info.raw_cell or "")[:_SOURCE_LIMIT]
        events.send({"cell": cell, "event": "start", "time_ms": int(time.time() * 1000),
                     "source": source})

    def post_run_cell(result):
        if "cell" not in current:
            return
        cell = current.pop("cell")
        os.environ["MLW_METRICS_FILE"] = run_metrics
        os.environ.pop("MLW_CELL", None)
        error = result.error_in_exec or result.error_before_exec
        record = {"cell": cell, "event": "end", "time_ms": int(time.time() * 1000),
                  "ok": error is None, "metrics": _read_metrics(current.pop("metrics"))}
        if error is not None:
            record["error"] = "%s: %s" % (type(error).__name__, error)
        events.send(record)

    shell.events.register("pre_run_cell", pre_run_cell)
    shell.events.register("post_run_cell", post_run_cell)


def main():
    global _LOG_FD
    args = sys.argv[1:]
    if not args:
        print("usage: python -m mlw.kernel CONNECTION_FILE [PARENT_PID] | remote:SCHEME",
              file=sys.stderr)
        return 2
    _LOG_FD = os.dup(2)
    run_metrics = os.environ.get("MLW_METRICS_FILE") or os.path.abspath("metrics.jsonl")
    run_dir = os.path.dirname(run_metrics)
    events = _Events()
    lifeline = None
    if args[0].startswith("remote:"):
        node = _grid_engine_elsewhere()
        if node:
            print("mlw: error: the kernel's Grid Engine job runs on %s, not on %s where mlw logs "
                  "in, and mlw reaches a kernel's loopback only there (qrsh -inherit, which would "
                  "reach another node's, needs control_slaves): queue it there (queue: QUEUE@%s "
                  "in the target's .compute file), or use a Slurm, remote or remotedocker target"
                  % (node[0], node[1], node[1]), file=sys.stderr)
            return 125
        connection = _remote_connection(run_dir, args[0][len("remote:"):])
        lifeline = socket.socket()
        lifeline.bind(("127.0.0.1", 0))
        lifeline.listen(1)
    else:
        connection = args[0]
        if len(args) > 1 and args[1].isdigit():
            threading.Thread(target=_watch_parent, args=(int(args[1]),), daemon=True).start()
    # debugpy's warning about frozen modules, on every start, is not the user's concern.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:
        print(
            "mlw: error: the run's Python has no ipykernel: add ipykernel to the conda file's "
            "dependencies (Debian: apt install python3-ipykernel)",
            file=sys.stderr,
        )
        return 125
    # parent_handle 1: no parent to poll (mlw's lifeline does that) and no console banner.
    options = {"parent_handle": 1} if lifeline is not None else {}
    app = IPKernelApp.instance(connection_file=connection, **options)
    app.initialize([])
    _hook_cells(app.shell, events, run_dir, run_metrics)
    if lifeline is not None:
        # Its ports are bound and its key is in memory: the file (in the run's folder, which may
        # be the project's own) keeps the key no longer.
        os.unlink(connection)
        events.send({"event": "ports", "shell_port": app.shell_port,
                     "iopub_port": app.iopub_port, "stdin_port": app.stdin_port,
                     "control_port": app.control_port, "hb_port": app.hb_port,
                     "lifeline_port": lifeline.getsockname()[1]})
        threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    app.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
