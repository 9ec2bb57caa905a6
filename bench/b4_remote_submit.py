"""B4: a warm `mlw experiment submit -c remotedocker noop.py` (nothing changed, image built)
against `ssh -p PORT host docker run --rm IMAGE python3 -c pass` with the same key and sshd."""

import sys

from targets import WAN, Targets
from timing import alternate, median, row


def main(mlw, link=None):
    """`link` "wan": mlw and the floor both go through bench/linkproxy.py (figure B4w)."""
    wan = link == "wan"
    t = Targets(mlw, "b4", link=WAN if wan else None)
    t.attach_remote("rd")
    t.mlw("experiment", "submit", "-c", "rd", "noop.py")
    times = alternate({
        "mlw": [mlw, "-q", "experiment", "submit", "-c", "rd", "noop.py"],
        "ssh": t.ssh("docker", "run", "--rm", t.image, "python3", "-c", "pass"),
    }, runs=15, warmup=2, cwd=t.project, env=t.env)
    mlw_ms, floor = median(times["mlw"]), median(times["ssh"])
    target = 0.8 if wan else 1.25
    print(row("B4w" if wan else "B4",
              "`mlw experiment submit -c remotedocker noop.py`, nothing changed",
              f"{mlw_ms:.0f} ms ({mlw_ms / floor:.2f}×)",
              f"`ssh -p PORT host docker run --rm IMAGE python3 -c pass` {floor:.0f} ms",
              f"≤ {target}×", mlw_ms / floor <= target))
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
