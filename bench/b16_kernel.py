"""B16 (issue 48): a notebook kernel on a remotedocker target, driven as Jupyter drives it.

B16   first cell: from starting `mlw notebook kernel -c rd` (image built: warm) to the reply of
      its first cell `print(1)`, through jupyter_client, against `ssh host docker run --rm IMAGE
      python3 -c "print(1)"` with the same key and sshd; alternating, 5 each, median. A second
      floor imports IPython's kernel in that container instead (what any kernel there must do
      before its first answer): the part of the time that is mlw's.
B16r  a cell's round trip (`1`, execute request to reply) in a running kernel, 30 cells, median,
      against the link's round trip (0 on loopback; 25 ms over the emulated link): ≤ 2× RTT + 5 ms.
      A second floor: the same cells in a bare ipykernel on this machine (`python3 -m
      ipykernel_launcher`, no mlw, no link), IPython's own time for a cell.
With "wan" as the third argument mlw, the kernel's connections and the floor go through
bench/linkproxy.py (B16w, B16rw).
"""

import json
import os
import secrets
import socket
import subprocess
import sys
import time

from jupyter_client import BlockingKernelClient

from targets import WAN, Targets
from timing import median, row


def connection_file(folder, index):
    """A connection file as Jupyter writes one: free loopback ports, a key, 0600."""
    ports = {}
    for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports[name] = probe.getsockname()[1]
    ports.update(ip="127.0.0.1", transport="tcp", key=secrets.token_hex(16),
                 signature_scheme="hmac-sha256", kernel_name="mlw")
    path = os.path.join(folder, f"kernel-{index}.json")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        json.dump(ports, out)
    return path


def run_cell(client, code, timeout=120):
    """Executes `code`; returns once its execute_reply has come."""
    msg_id = client.execute(code)
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            if reply["content"]["status"] != "ok":
                raise SystemExit(f"the cell failed: {reply['content']}")
            return


class Kernel:
    """`mlw notebook kernel` started, its client connected; stop() shuts it down as Jupyter does."""

    def __init__(self, t, index, bare=False):
        self.path = connection_file(t.home, index)
        command = [t.mlw_path, "-q", "notebook", "kernel", "-c", "rd", "-f", self.path]
        if bare:  # IPython's kernel itself, on this machine: no mlw, no link
            command = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", self.path]
        self.process = subprocess.Popen(command, cwd=t.project, env=t.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = BlockingKernelClient()
        self.client.load_connection_file(self.path)
        self.client.start_channels()

    def stop(self):
        self.client.shutdown()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.client.stop_channels()


def first_cell_ms(t, index):
    start = time.perf_counter()
    kernel = Kernel(t, index)
    try:
        run_cell(kernel.client, "print(1)")
        return (time.perf_counter() - start) * 1000.0
    finally:
        kernel.stop()


def floor_ms(t, code="print(1)"):
    start = time.perf_counter()
    subprocess.run(t.ssh("docker", "run", "--rm", t.image, "python3", "-c", f"'{code}'"),
                   env=t.env, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000.0


IMPORT_KERNEL = "from ipykernel.kernelapp import IPKernelApp; print(1)"


def round_trips_ms(t, bare=False):
    kernel = Kernel(t, "bare" if bare else "rt", bare)
    try:
        run_cell(kernel.client, "1")
        times = []
        for _ in range(30):
            start = time.perf_counter()
            run_cell(kernel.client, "1")
            times.append((time.perf_counter() - start) * 1000.0)
        return times
    finally:
        kernel.stop()


def main(mlw, link=None):
    wan = link == "wan"
    t = Targets(mlw, "b16", link=WAN if wan else None)
    try:
        t.attach_remote("rd")
        t.mlw("experiment", "submit", "-c", "rd", "noop.py")  # the image, built once
        floor_ms(t)
        floor_ms(t, IMPORT_KERNEL)
        ours, theirs, imports = [], [], []
        for i in range(5):
            ours.append(first_cell_ms(t, i))
            theirs.append(floor_ms(t))
            imports.append(floor_ms(t, IMPORT_KERNEL))
        a, b, c = median(ours), median(theirs), median(imports)
        print(row("B16w" if wan else "B16",
                  "a warm remotedocker kernel's first cell (`notebook kernel` to `print(1)`'s reply)",
                  f"{a:.0f} ms ({a / b:.2f}×; {a / c:.2f}× of importing the kernel)",
                  f"`ssh host docker run --rm IMAGE python3 -c …` {b:.0f} ms; importing "
                  f"ipykernel there {c:.0f} ms", "≤ 1.5×", a / b <= 1.5))
        rtt = 2 * WAN["delay_ms"] if wan else 0.0
        cell = median(round_trips_ms(t))
        bare = median(round_trips_ms(t, bare=True))
        limit = 2 * rtt + 5
        print(row("B16rw" if wan else "B16r", "a cell's round trip in a running remotedocker kernel",
                  f"{cell:.1f} ms", f"the link's round trip {rtt:.0f} ms; a bare local "
                  f"ipykernel's cell {bare:.1f} ms", f"≤ 2× RTT + 5 ms ({limit:.0f} ms)",
                  cell <= limit))
    finally:
        t.remove()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
