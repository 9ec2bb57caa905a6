"""B7: `history list` over 100,000 runs, and 16 concurrent local submits (none lost)."""

import os
import sqlite3
import subprocess
import sys
import tempfile
import time

from timing import fill_history, alternate, median, row, sh


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b7-")
    sh(f"{mlw} -q project create -n hist", cwd=work)
    project = os.path.join(work, "hist")
    sh(f"{mlw} -q history list", cwd=project)  # creates the index with mlw's own schema
    db = sqlite3.connect(os.path.join(project, ".mlw", "history.db"))
    now = int(time.time() * 1000)
    fill_history(db, "hist", 100000, now)
    db.commit()
    db.close()
    times = alternate({
        "list": [mlw, "history", "list"],
        "list_failed": [mlw, "history", "list", "--status", "Failed", "--top", "20"],
        # What the shell completion scripts run at each Tab (issue 14): run ids for -r.
        "complete_all": [mlw, "__complete", "history", "info", "-r", ""],
        "complete_prefix": [mlw, "__complete", "history", "info", "-r", f"hist_{now - 50}"],
        "true": ["/bin/true"],
        "version": [mlw, "--version"],
    }, runs=30, warmup=3, cwd=project)
    m = {k: median(v) for k, v in times.items()}
    rows = [
        row("B7", "`mlw history list` (newest 50 of 100,000 runs)", f"{m['list']:.2f} ms",
            f"`/bin/true` {m['true']:.2f} ms", "≤ 50 ms", m["list"] <= 50),
        row("B7", "`mlw history list --status Failed --top 20` (100,000 runs)",
            f"{m['list_failed']:.2f} ms", "—", "≤ 50 ms", m["list_failed"] <= 50),
        row("B7c", "Tab after `mlw history info -r ` (`mlw __complete`, 100,000 runs: newest 200)",
            f"{m['complete_all']:.2f} ms", f"`mlw --version` {m['version']:.2f} ms",
            "≤ `--version` + 3 ms", m["complete_all"] <= m["version"] + 3),
        row("B7c", "Tab after `-r hist_<all but 2 digits>` (100,000 runs)",
            f"{m['complete_prefix']:.2f} ms", f"`mlw --version` {m['version']:.2f} ms",
            "≤ `--version` + 3 ms", m["complete_prefix"] <= m["version"] + 3),
    ]

    # Sixteen submits at once from separate processes: sixteen complete, distinct records.
    sh(f"{mlw} -q project create -n conc", cwd=work)
    conc = os.path.join(work, "conc")
    with open(os.path.join(conc, "noop.py"), "w") as out:
        out.write("pass\n")
    sh(f"{mlw} -q computetarget attach local -n bench --python {python}", cwd=conc)
    start = time.perf_counter()
    procs = [subprocess.Popen([mlw, "-q", "experiment", "submit", "-c", "bench", "noop.py"], cwd=conc,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for _ in range(16)]
    codes = [p.wait() for p in procs]
    elapsed = (time.perf_counter() - start) * 1000
    listed = sh(f"{mlw} -o tsv history list --top 0", cwd=conc).splitlines()
    completed = sum(1 for line in listed if line.split("\t")[4] == "Completed")
    distinct = len({line.split("\t")[0] for line in listed})
    ok = codes == [0] * 16 and completed == 16 and distinct == 16
    rows.append(row("B7", "16 concurrent `mlw experiment submit -c local noop.py`",
                    f"{completed} Completed, {distinct} distinct ids, {elapsed:.0f} ms in all", "—",
                    "16 records, none lost", ok))
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
