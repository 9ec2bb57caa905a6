"""B5a-c: shipping a 2,000-file, 200 MB project to a remotedocker target
(`mlw experiment prepare -c rd`: snapshot, connect, send what the target lacks, make the run
folder, check the environment image) against `rsync -a` over ssh to the same sshd with the same
key: first ship, after a one-file change, and with nothing changed."""

import os
import re
import subprocess
import sys

from targets import WAN, Targets, fill
from timing import median, row, run_once


def main(mlw, link=None):
    """`link` "wan": mlw and rsync both through bench/linkproxy.py (figures B5a-w to B5c-w; the
    first ship is held to the wire time, bytes / rate)."""
    wan = link == "wan"
    w = "-w" if wan else ""
    t = Targets(mlw, "b5", link=WAN if wan else None)
    t.attach_remote("rd")
    fill(os.path.join(t.project, "data"), 2000, 100 * 1024, seed=5)
    prepare = [mlw, "-q", "experiment", "prepare", "-c", "rd"]
    rsync = t.rsync("b5-rsync")
    t.mlw("experiment", "prepare", "-c", "rd")  # image built; local hashes cached

    first = {"mlw": [], "rsync": []}
    for _ in range(3):
        t.clear_target_store("b5-rsync")
        first["mlw"].append(run_once(prepare, cwd=t.project, env=t.env))
        first["rsync"].append(run_once(rsync, env=t.env))
    a_mlw, a_floor = median(first["mlw"]), median(first["rsync"])
    if wan:
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(t.project)
                   for f in fs if "/.mlw" not in d)
        wire = size * 8 / (WAN["rate_mbit"] * 1e6) * 1000
        print(row("B5a-w", "first ship, 2,000 files / 200 MB (`experiment prepare`)",
                  f"{a_mlw:.0f} ms ({a_mlw / wire:.2f}× the wire)",
                  f"the wire {wire:.0f} ms; `rsync -a` {a_floor:.0f} ms ({a_mlw / a_floor:.2f}×)",
                  "≤ 1.1× the wire", a_mlw / wire <= 1.1))
    else:
        print(row("B5a", "first ship, 2,000 files / 200 MB (`experiment prepare`)",
                  f"{a_mlw:.0f} ms ({a_mlw / a_floor:.2f}×)", f"`rsync -a` over ssh {a_floor:.0f} ms",
                  "≤ 1.0×", a_mlw / a_floor <= 1.0))

    changed = {"mlw": [], "rsync": []}
    victim = os.path.join(t.project, "data", "d7", "f350.bin")
    for i in range(7):
        with open(victim, "wb") as out:
            out.write(os.urandom(100 * 1024))
        order = ["mlw", "rsync"] if i % 2 == 0 else ["rsync", "mlw"]
        for name in order:
            argv = prepare if name == "mlw" else rsync
            changed[name].append(run_once(argv, cwd=t.project, env=t.env))
    b_mlw, b_floor = median(changed["mlw"]), median(changed["rsync"])
    bound = 0.35 if wan else 0.5
    print(row("B5b" + w, "ship after a one-file change", f"{b_mlw:.0f} ms ({b_mlw / b_floor:.2f}×)",
              f"`rsync -a` again {b_floor:.0f} ms", f"≤ {bound}×", b_mlw / b_floor <= bound))

    same = {"mlw": [], "rsync": []}
    for i in range(9):
        same["mlw"].append(run_once(prepare, cwd=t.project, env=t.env))
        same["rsync"].append(run_once(rsync, env=t.env))
    verbose = subprocess.run([mlw, "-vv", "experiment", "prepare", "-c", "rd"], cwd=t.project,
                             env=t.env, capture_output=True, text=True, check=True)
    shipped = re.search(r"shipping (\d+) objects \((\d+) bytes\)", verbose.stderr)
    sent = f"{shipped.group(2)} bytes of content sent" if shipped else "no file content sent"
    c_mlw, c_floor = median(same["mlw"]), median(same["rsync"])
    print(row("B5c" + w, "ship with nothing changed",
              f"{c_mlw:.0f} ms ({c_mlw / c_floor:.2f}×), {sent}", f"`rsync -a` again {c_floor:.0f} ms",
              f"no content sent; ≤ {bound}×", not shipped and c_mlw / c_floor <= bound))
    t.clear_target_store("b5-rsync")
    t.remove()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[3] if len(sys.argv) > 3 else None)
