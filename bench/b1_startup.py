"""B1: startup. mlw --version and computetarget list (10 targets) against /bin/true and Python."""

import os
import sys
import tempfile

from timing import alternate, median, row, sh


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b1-")
    sh(f"{mlw} -q project create -n p", cwd=work)
    project = os.path.join(work, "p")
    for i in range(8):
        sh(f"{mlw} -q computetarget attach local -n t{i}", cwd=project)
    times = alternate({
        "version": [mlw, "--version"],
        "list": [mlw, "computetarget", "list"],
        "true": ["/bin/true"],
        "python": [python, "-c", "pass"],
        "python_yaml": [python, "-c", "import yaml"],
    }, runs=40, warmup=5, cwd=project)
    m = {k: median(v) for k, v in times.items()}
    rows = [
        row("B1", "`mlw --version`", f"{m['version']:.2f} ms", f"`/bin/true` {m['true']:.2f} ms",
            "≤ 3 ms median", m["version"] <= 3.0),
        row("B1", "`mlw computetarget list` (10 targets)", f"{m['list']:.2f} ms",
            f"`python3 -c pass` {m['python']:.2f} ms", "≤ 3 ms median", m["list"] <= 3.0),
        row("B1", "`mlw computetarget list` vs `python3 -c \"import yaml\"`",
            f"{m['python_yaml'] / m['list']:.1f}× faster", f"{m['python_yaml']:.2f} ms",
            "≥ 10× faster", m["python_yaml"] / m["list"] >= 10),
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
