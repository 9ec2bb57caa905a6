"""B4: a warm `mlw experiment submit -c remotedocker noop.py` (nothing changed, image built)
against `ssh -p PORT host docker run --rm IMAGE python3 -c pass` with the same key and sshd."""

import sys

from targets import Targets
from timing import alternate, median, row


def main(mlw):
    t = Targets(mlw, "b4")
    t.attach_remote("rd")
    t.mlw("experiment", "submit", "-c", "rd", "noop.py")
    times = alternate({
        "mlw": [mlw, "-q", "experiment", "submit", "-c", "rd", "noop.py"],
        "ssh": t.ssh("docker", "run", "--rm", t.image, "python3", "-c", "pass"),
    }, runs=15, warmup=2, cwd=t.project, env=t.env)
    mlw_ms, floor = median(times["mlw"]), median(times["ssh"])
    print(row("B4", "`mlw experiment submit -c remotedocker noop.py`, nothing changed",
              f"{mlw_ms:.0f} ms ({mlw_ms / floor:.2f}×)",
              f"`ssh -p PORT host docker run --rm IMAGE python3 -c pass` {floor:.0f} ms",
              "≤ 1.25×", mlw_ms / floor <= 1.25))
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
