"""B15, B15e, B15b (issue 47): the GPU sampler's cost, on the SIMULATED NVIDIA host of
tests/fixtures/servers.sh (tests/fixtures/nvidia-sim: a fake nvidia-smi; no GPU computes).

B15   the sampler of one run at 1 s (exec/sampler.sh: its shell, the awk that reads the stream
      and /proc, the watch), for 60 s beside a busy run: its CPU (% of one core) and its memory
      (PSS, MB), read from /proc before it is stopped. The simulated nvidia-smi's own cost is
      left out (it is python here; a real nvidia-smi streams from the driver): what is measured
      is what mlw adds. The run's work in those 60 s against 60 s without a sampler is shown.
B15n  the same sampler reading the GPUs through mlw's NVML reader (src/exec/nvml_reader.c, as
      built beside the mlw given) and the SIMULATED libnvidia-ml.so.1 of nvidia-sim/lib, which
      reads its files at each call (a real NVML asks the driver): its CPU and PSS, the reader's
      included.
B15e  what the telemetry of a 1-minute run adds to its end: the time from the script's last line
      to `submit`'s return on a `remote` target, leased (sampled) against the same target with
      no lease, alternating.
B15b  `computetarget gpus` on a warm kept connection against `ssh host nvidia-smi` (the GPU test
      user, key login), alternating, 15 runs each.
"""

import base64
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from targets import Targets, need
from timing import alternate, median, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSY = """import sys, time
end = time.time() + float(sys.argv[1])
n = 0
while time.time() < end:
    sum(range(2000))
    n += 1
print("WORK", n, time.time(), flush=True)
"""


def group_cost(pgid):
    """CPU seconds, PSS and RSS (kB) of the processes of group `pgid` but python's (the
    simulated nvidia-smi)."""
    cpu = 0.0
    pss = 0
    rss = 0
    tck = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            comm = open(f"/proc/{name}/comm").read().strip()
            if int(fields[2]) != pgid or comm.startswith("python"):
                continue
            cpu += sum(int(x) for x in fields[11:15]) / tck
            for line in open(f"/proc/{name}/smaps_rollup"):
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return cpu, pss, rss


def packed_reader(mlw):
    """The NVML reader built beside `mlw`, as mlw sends it (MLW_NVML: "ID:" gzip, base64)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(mlw)), "mlw-nvml-reader"), "rb") as f:
        data = f.read()
    return "b15" + str(os.getpid()) + ":" + base64.b64encode(gzip.compress(data, 9)).decode()


def work(seconds, with_sampler, sim, nvml=""):
    """(the busy run's work count, sampler CPU s, sampler PSS kB) over `seconds`; `nvml`: the
    packed NVML reader, for a sampler that reads NVML."""
    folder = tempfile.mkdtemp(prefix="mlw-b15-")
    busy = subprocess.Popen([sys.executable, "-c", BUSY, str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    sampler = None
    cost = (0.0, 0, 0)
    if with_sampler:
        program = open(os.path.join(ROOT, "src/exec/sampler.sh")).read()
        awk = open(os.path.join(ROOT, "src/exec/sampler.awk")).read()
        env = dict(os.environ, PATH=f"{sim}:{os.environ['PATH']}")
        if nvml:
            env.update(MLW_NVML=nvml, LD_LIBRARY_PATH=os.path.join(sim, "lib"), HOME=folder)
        sampler = subprocess.Popen(
            ["sh", "-c", program, "mlw-sample", awk, "0", "1", "0", "", "", str(busy.pid),
             "metrics.jsonl", "true"], cwd=folder, env=env, start_new_session=True)
    time.sleep(seconds - 1)
    if sampler:
        cost = group_cost(sampler.pid)
    out, _ = busy.communicate()
    if sampler:
        os.killpg(sampler.pid, signal.SIGTERM)
        sampler.wait()
    count = int(out.split()[1])
    return count, cost


def b15(sim, mlw):
    with_count, (cpu, pss, rss) = work(60, True, sim)
    without_count, _ = work(60, False, sim)
    open(os.path.join(sim, "nvml"), "w").close()
    try:
        _, (n_cpu, n_pss, n_rss) = work(60, True, sim, packed_reader(mlw))
    finally:
        os.unlink(os.path.join(sim, "nvml"))
    share = cpu / 59 * 100
    yield row("B15", "the GPU sampler at 1 s beside a busy run for 60 s (simulated nvidia-smi "
              "left out): CPU of one core; the run's work with it against without",
              f"{share:.2f}% ({with_count / without_count:.3f}× the work)",
              "—", "≤ 0.5%", share <= 0.5)
    yield row("B15m", "… its memory: PSS of its shells, awk and watch (their RSS summed, shared "
              "libraries counted in each)", f"{pss / 1024:.1f} MB ({rss / 1024:.1f} MB)", "—",
              "≤ 8 MB", pss / 1024 <= 8)
    n_share = n_cpu / 59 * 100
    yield row("B15n", "the same through mlw's NVML reader and the simulated libnvidia-ml.so.1: "
              "CPU of one core (the reader's included); PSS (RSS summed)",
              f"{n_share:.2f}%; {n_pss / 1024:.1f} MB ({n_rss / 1024:.1f} MB)", "—",
              "≤ 0.5%, ≤ 8 MB", n_share <= 0.5 and n_pss / 1024 <= 8)


def gpu_target(mlw, leased):
    t = Targets(mlw, "b15")
    t.user = need("MLW_TEST_GPU_USER")
    t.env["MLW_LEASE_DIR"] = f"/tmp/mlw-leases-b15.{os.getpid()}"
    t.write("busy.py", BUSY)
    t.attach_remote("g", kind="remote")
    with open(os.path.join(t.project, "aml_config", "g.compute"), "a", encoding="utf-8") as f:
        f.write("gpusPerRun: 1\n" if leased else "")
    t.mlw("experiment", "submit", "-c", "g", "busy.py", "0")
    return t


def end_delay(t):
    """Seconds from the script's end (its last line's time) to submit's return."""
    done = subprocess.run([t.mlw_path, "-q", "-o", "json", "experiment", "submit", "-c", "g",
                           "busy.py", "60"], cwd=t.project, env=t.env, capture_output=True,
                          text=True, check=True)
    returned = time.time()
    run_id = json.loads(done.stdout)["run_id"]
    log, _ = t.mlw("history", "logs", "-r", run_id)
    ended = float([line for line in log.splitlines() if line.startswith("WORK ")][-1].split()[2])
    return returned - ended


def b15e(mlw):
    sampled, plain = gpu_target(mlw, True), gpu_target(mlw, False)
    try:
        with_s, without_s = [], []
        for _ in range(int(os.environ.get("MLW_B15E_RUNS", "2"))):
            with_s.append(end_delay(sampled))
            without_s.append(end_delay(plain))
        extra = (median(with_s) - median(without_s)) * 1000
        yield row("B15e", "a 1-minute run's end on `remote` (script's end to submit's return), "
                  "sampled against not", f"{median(with_s) * 1000:.0f} ms (+{extra:.0f} ms)",
                  f"{median(without_s) * 1000:.0f} ms", "≤ +50 ms", extra <= 50)
    finally:
        sampled.remove()
        plain.remove()


def b15b(mlw):
    t = gpu_target(mlw, True)
    try:
        times = alternate({"gpus": [mlw, "-q", "computetarget", "gpus", "-c", "g"],
                           "ssh": t.ssh("nvidia-smi")}, runs=15, warmup=2, cwd=t.project,
                          env=t.env)
        ours, floor = median(times["gpus"]), median(times["ssh"])
        yield row("B15b", "`computetarget gpus` (warm kept connection) against `ssh host "
                  "nvidia-smi`", f"{ours:.0f} ms ({ours / floor:.2f}×)", f"{floor:.0f} ms",
                  "≤ 1.2×", ours / floor <= 1.2)
    finally:
        t.remove()


def main():
    mlw = sys.argv[1]
    sim = need("MLW_TEST_NVIDIA_SIM")
    rows = [*b15(sim, mlw), *b15b(mlw), *b15e(mlw)]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
