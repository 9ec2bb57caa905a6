"""B6: log latency of a remotedocker run: the script prints time.time() every 50-150 ms; the time
each line reaches the submitting mlw's stdout, minus the time printed, is the latency (the
container and this process share the machine's clock)."""

import statistics
import subprocess
import sys
import time

from targets import WAN, Targets
from timing import row

SCRIPT = """import random, time
for i in range(60):
    print("T", repr(time.time()), flush=True)
    time.sleep(random.uniform(0.05, 0.15))
"""


def main(mlw, link=None):
    """`link` "wan": through bench/linkproxy.py (figure B6w: p50 within 5 ms of the delay)."""
    wan = link == "wan"
    t = Targets(mlw, "b6", link=WAN if wan else None)
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
    bound = WAN["delay_ms"] + 5 if wan else 100.0
    print(row("B6w" if wan else "B6", "log latency, remotedocker run printing timestamps (60 lines)",
              f"p50 {p50:.1f} ms, p95 {p95:.1f} ms",
              f"one-way delay {WAN['delay_ms']} ms" if wan else "—", f"p50 ≤ {bound:g} ms",
              p50 <= bound))
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
