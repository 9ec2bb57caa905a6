"""B2: local submit overhead in a 1,000-file, 50 MB project, against running the script directly."""

import os
import sys
import tempfile
import time

from timing import alternate, median, row, sh


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b2-")
    sh(f"{mlw} -q project create -n big", cwd=work)
    project = os.path.join(work, "big")
    for i in range(1000):
        folder = os.path.join(project, "data", f"d{i % 20}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{i}.bin"), "wb") as out:
            out.write(os.urandom(50 * 1024))
    with open(os.path.join(project, "noop.py"), "w") as out:
        out.write("pass\n")
    sh(f"{mlw} -q computetarget attach local -n bench --python {python}", cwd=project)
    sh(f"{mlw} -q experiment submit -c bench noop.py", cwd=project)  # first snapshot: hashes 50 MB
    # Files changed in the last two seconds are hashed again by every snapshot (their times could
    # repeat within the clock's resolution): measure the steady state, as a project is between
    # edits, once they are older than that and a snapshot has recorded them.
    time.sleep(2.5)
    sh(f"{mlw} -q experiment submit -c bench noop.py", cwd=project)
    times = alternate({
        "mlw": [mlw, "-q", "experiment", "submit", "-c", "bench", "noop.py"],
        "python": [python, "noop.py"],
    }, runs=30, warmup=3, cwd=project)
    mlw_ms, floor = median(times["mlw"]), median(times["python"])
    print(row("B2", "`mlw experiment submit -c local noop.py`, 1,000 files / 50 MB",
              f"{mlw_ms:.1f} ms (+{mlw_ms - floor:.1f} ms)", f"`python3 noop.py` {floor:.1f} ms",
              "≤ 20 ms added", mlw_ms - floor <= 20.0))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
