"""B16b, B16c (issue 48): working inside a running run, against OpenSSH doing the same.

B16b  `mlw experiment shell -r RUN -- true` into a remotedocker run's container (key login; each
      call logs in on a connection of its own, as a pty needs) against `ssh host docker exec
      CONTAINER true` with the same key and sshd, alternating, 15 runs each.
B16c  a 200 MB download from a `remote` run's http.server through `mlw experiment forward`
      (direct-tcpip over mlw's own login) against the same download through `ssh -N -L`,
      alternating, 5 each: throughput (MB/s), median. A second floor, `ssh -L` with the cipher
      and MAC that libssh2 1.10 (Debian 12) negotiates with this sshd (aes128-ctr,
      hmac-sha2-256; it has neither chacha20-poly1305 nor AES-GCM, which OpenSSH prefers),
      shows how much of the gap is the algorithms rather than mlw's relay.
"""

import json
import os
import socket
import subprocess
import sys
import time

from targets import Targets
from timing import alternate, median, row

SERVE = """import http.server, os, socketserver, sys, time
os.makedirs("www", exist_ok=True)
with open("www/big.bin", "wb") as out:
    block = os.urandom(1 << 20)
    for _ in range(200):
        out.write(block)
class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory="www", **kwargs)
    def log_message(self, *args):
        pass
socketserver.ThreadingTCPServer.allow_reuse_address = True
server = socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), Quiet)
print("serving", flush=True)
server.serve_forever()
"""
WAIT = "import time\nprint('waiting', flush=True)\ntime.sleep(600)\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(t, target, script, *args):
    """Submits `script` with -a and waits (60 s at most) for its first line; its run id."""
    out, _ = t.mlw("-o", "json", "experiment", "submit", "-c", target, "-a", script, *args)
    run_id = json.loads(out)["run_id"]
    for _ in range(600):
        log, _ = t.mlw("history", "logs", "-r", run_id)
        if log.strip():
            return run_id
        time.sleep(0.1)
    raise SystemExit(f"run {run_id} printed nothing in 60 s")


def wait_port(port, seconds=30):
    for _ in range(seconds * 10):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


def download_ms(port):
    start_at = time.perf_counter()
    subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/big.bin"],
                   check=True)
    return (time.perf_counter() - start_at) * 1000.0


def b16b(mlw):
    t = Targets(mlw, "b16b")
    try:
        t.attach_remote("rd", "remotedocker")
        t.write("wait.py", WAIT)
        run_id = start(t, "rd", "wait.py")
        times = alternate({
            "mlw": [mlw, "-q", "experiment", "shell", "-r", run_id, "--", "true"],
            "ssh": t.ssh("docker", "exec", f"mlw-{run_id}", "true"),
        }, runs=15, warmup=2, cwd=t.project, env=t.env)
        t.mlw("experiment", "cancel", "-r", run_id)
        ours, floor = median(times["mlw"]), median(times["ssh"])
        yield row("B16b", "`experiment shell -r RUN -- true` into a remotedocker run's container",
                  f"{ours:.0f} ms ({ours / floor:.2f}×)",
                  f"`ssh host docker exec C true` {floor:.0f} ms", "≤ 1.2×", ours / floor <= 1.2)
    finally:
        t.remove()


def b16c(mlw):
    t = Targets(mlw, "b16c")
    procs = []
    try:
        t.attach_remote("rm", "remote")
        t.write("serve.py", SERVE)
        port = free_port()
        run_id = start(t, "rm", "serve.py", str(port))
        ours_port, theirs_port = free_port(), free_port()
        procs.append(subprocess.Popen(
            [mlw, "-q", "experiment", "forward", "-r", run_id, f"{port}:{ours_port}"],
            cwd=t.project, env=t.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(
            [*t.ssh_command(), "-N", "-L", f"127.0.0.1:{theirs_port}:localhost:{port}",
             f"{t.user}@127.0.0.1"], env=t.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        same_port = free_port()
        procs.append(subprocess.Popen(
            [*t.ssh_command(), "-c", "aes128-ctr", "-m", "hmac-sha2-256", "-N", "-L",
             f"127.0.0.1:{same_port}:localhost:{port}", f"{t.user}@127.0.0.1"], env=t.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_port(ours_port)
        wait_port(theirs_port)
        wait_port(same_port)
        for _ in range(60):  # the file is written before the server starts
            if subprocess.run(["curl", "-sf", "-o", "/dev/null", "-r", "0-0",
                               f"http://127.0.0.1:{ours_port}/big.bin"]).returncode == 0:
                break
            time.sleep(0.5)
        ours, theirs, same = [], [], []
        for p in (ours_port, theirs_port, same_port):
            download_ms(p)
        for _ in range(5):
            ours.append(download_ms(ours_port))
            theirs.append(download_ms(theirs_port))
            same.append(download_ms(same_port))
        t.mlw("experiment", "cancel", "-r", run_id)
        mb = 200 * 1.048576
        a, b, c = (mb / (median(x) / 1000.0) for x in (ours, theirs, same))
        yield row("B16c", "200 MB downloaded through `experiment forward` (remote, direct-tcpip)",
                  f"{a:.0f} MB/s ({a / b:.2f}×; {a / c:.2f}× of the same algorithms)",
                  f"`ssh -N -L` {b:.0f} MB/s; with `-c aes128-ctr -m hmac-sha2-256` {c:.0f} MB/s",
                  "≥ 0.8×", a / b >= 0.8)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        t.remove()


def main():
    mlw = sys.argv[1]
    print("\n".join([*b16b(mlw), *b16c(mlw)]))


if __name__ == "__main__":
    main()
