"""B12: the dashboard's runs page over 100,000 runs (first byte; interactive in Chromium).
B13: a run page with a 1,000,000-point metric series (data response; chart drawn)."""

import http.client
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

from timing import fill_history, median, row, sh

HERE = os.path.dirname(os.path.abspath(__file__))


def first_byte(port, cookie, path):
    """ms until the first byte of the answer, and the whole answer's status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    response = conn.getresponse()  # returns once the status line has arrived
    elapsed = (time.perf_counter() - start) * 1000.0
    response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"{path}: HTTP {response.status}")
    return elapsed


def whole(port, cookie, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    start = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    body = conn.getresponse().read()
    conn.close()
    return (time.perf_counter() - start) * 1000.0, body


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b12-")
    sh(f"{mlw} -q project create -n dash", cwd=work)
    project = os.path.join(work, "dash")
    with open(os.path.join(project, "big.py"), "w") as f:
        f.write("print('one million points')\n")
    sh(f"{mlw} -q experiment submit -c local big.py", cwd=project)
    big = json.loads(sh(f"{mlw} history last -o json", cwd=project))["run_id"]
    # 1,000,000 points as mlw.log_metric writes them.
    with open(os.path.join(project, ".mlw", "runs", big, "metrics.jsonl"), "w") as f:
        for i in range(1_000_000):
            f.write(json.dumps({"name": "loss", "value": 1.0 / (1 + i / 1000) + (i % 97) * 1e-4,
                                "time": 1.7e9 + i * 0.01, "step": i}) + "\n")
    db = sqlite3.connect(os.path.join(project, ".mlw", "history.db"))
    now = int(time.time() * 1000)
    # Older than the real run made above (their ids must not meet its id).
    ids = fill_history(db, "dash", 99_999, now - 100_000, first_number=2)
    db.executemany("INSERT INTO metrics_last(run_id, name, value) VALUES(?,?,?)",
                   ((run_id, "loss", (i * 7919 % 1000) / 1000.0) for i, run_id in enumerate(ids)))
    db.commit()
    db.close()
    def start():
        server = subprocess.Popen([mlw, "history", "ui", "--port", "0"], cwd=project,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = server.stdout.readline().strip()
        port = int(url.split(":")[2].split("/")[0])
        # Everything is served under the URL's secret base path (/<hex>/).
        base = "/" + url.split("/", 3)[3].split("?")[0].rstrip("/")
        return server, url, port, f"mlw_token_{port}={url.split('token=')[1]}", base

    def stop(server):
        server.terminate()
        server.wait()

    series = f"/api/runs/{big}/series?points=2000"
    # The first request of a fresh server reads the whole file: five fresh servers.
    colds = []
    for _ in range(5):
        server, url, port, cookie, base = start()
        try:
            elapsed, body = whole(port, cookie, base + series)
            colds.append(elapsed)
        finally:
            stop(server)
    cold = median(colds)
    shown = len(json.loads(body)["series"]["loss"]["x"])
    server, url, port, cookie, base = start()
    try:
        html = [first_byte(port, cookie, base + "/") for _ in range(30)]
        page = [first_byte(port, cookie, base + "/api/runs?limit=50") for _ in range(30)]
        by_metric = [first_byte(port, cookie, base + "/api/runs?limit=50&metric=loss&sort=metric")
                     for _ in range(10)]
        whole(port, cookie, base + series)
        warm = [whole(port, cookie, base + series)[0] for _ in range(10)]
        node = lambda hash_, ready: float(subprocess.run(
            ["node", os.path.join(HERE, "ui_timing.cjs"), url, hash_, ready, "7"],
            check=True, capture_output=True, text=True).stdout.strip())
        interactive = node("#/", "runs")
        drawn = node(f"#/run/{big}", "run")
    finally:
        stop(server)
        shutil.rmtree(work, ignore_errors=True)
    rows = [
        row("B12", "runs page over 100,000 runs: first byte of `/`", f"{median(html):.2f} ms", "—",
            "≤ 50 ms", median(html) <= 50),
        row("B12", "… first byte of the first page of runs (`/api/runs`)", f"{median(page):.2f} ms",
            "—", "≤ 50 ms", median(page) <= 50),
        row("B12", "… sorted by a metric's last value", f"{median(by_metric):.2f} ms", "—",
            "(no target)", True),
        row("B12", "runs page interactive in Chromium (navigation to table drawn)",
            f"{interactive:.0f} ms", "—", "≤ 500 ms", interactive <= 500),
        row("B13", f"1,000,000-point series: data response, a fresh server's first request (whole "
            f"file read; {shown} points sent; median of 5)", f"{cold:.0f} ms", "—", "≤ 200 ms", cold <= 200),
        row("B13", "… later requests (read from where the last stopped)", f"{median(warm):.1f} ms",
            "—", "≤ 200 ms", median(warm) <= 200),
        row("B13", "run page with that series: chart drawn in Chromium (server warm)",
            f"{drawn:.0f} ms", "—", "≤ 500 ms", drawn <= 500),
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "python3")
