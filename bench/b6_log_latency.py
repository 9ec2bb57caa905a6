"""B6: log latency of a remotedocker run: the script prints time.time() every 50-150 ms; the time
each line reaches the submitting mlw's stdout, minus the time printed, is the latency (the
container and this process share the machine's clock)."""

import statistics
import subprocess
import sys
import time

from targets import Targets
from timing import row

SCRIPT = """import random, time
for i in range(60):
    print("T", repr(time.time()), flush=True)
    time.sleep(random.uniform(0.05, 0.15))
"""


def main(mlw):
    t = Targets(mlw, "b6")
    t.attach_remote("rd")
    t.write("stamps.py", SCRIPT)
    t.mlw("experiment", "prepare", "-c", "rd")
    delays = []
    process = subprocess.Popen([mlw, "experiment", "submit", "-c", "rd", "stamps.py"],
                               cwd=t.project, env=t.env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, bufsize=0)
    buffered = b""
    while True:
        chunk = process.stdout.read(65536)
        if not chunk:
            break
        now = time.time()
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            if line.startswith(b"T "):
                delays.append((now - float(line[2:])) * 1000.0)
    if process.wait() != 0 or len(delays) != 60:
        raise RuntimeError(f"the run failed or lost lines: {len(delays)} of 60 seen")
    p50 = statistics.median(delays)
    p95 = statistics.quantiles(delays, n=20)[18]
    print(row("B6", "log latency, remotedocker run printing timestamps (60 lines)",
              f"p50 {p50:.1f} ms, p95 {p95:.1f} ms", "—", "p50 ≤ 100 ms", p50 <= 100.0))
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
