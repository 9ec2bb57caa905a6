"""B3: `mlw experiment submit -c docker noop.py` with the environment image cached, against
`docker run --rm IMAGE python3 -c pass` on the same engine."""

import sys

from targets import Targets
from timing import alternate, median, row


def main(mlw):
    t = Targets(mlw, "b3")
    t.use_docker_image()
    t.mlw("experiment", "prepare", "-c", "docker")
    times = alternate({
        "mlw": [mlw, "-q", "experiment", "submit", "-c", "docker", "noop.py"],
        "docker": ["docker", "run", "--rm", t.image, "python3", "-c", "pass"],
    }, runs=15, warmup=2, cwd=t.project, env=t.env)
    mlw_ms, floor = median(times["mlw"]), median(times["docker"])
    print(row("B3", "`mlw experiment submit -c docker noop.py`, environment cached",
              f"{mlw_ms:.0f} ms ({mlw_ms / floor:.2f}×)",
              f"`docker run --rm IMAGE python3 -c pass` {floor:.0f} ms", "≤ 1.15×",
              mlw_ms / floor <= 1.15))
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1])
