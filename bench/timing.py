"""Alternating timer for mlw's benchmarks: runs commands in turn (A, B, A, B, ...) so that both
see the same machine state, and reports medians in milliseconds. Processes are started with
posix_spawn and reaped with waitpid, the same way for mlw and for its floor."""

import os
import statistics
import subprocess
import tempfile
import time


def run_once(argv, cwd=None, env=None):
    """Wall time of one run of argv in ms; raises when it fails."""
    devnull = os.open(os.devnull, os.O_RDWR)
    errors = tempfile.TemporaryFile()
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                   (os.POSIX_SPAWN_DUP2, errors.fileno(), 2)]
        start = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, env if env is not None else os.environ,
                              file_actions=actions)
        _, status = os.waitpid(pid, 0)
        elapsed = (time.perf_counter() - start) * 1000.0
    finally:
        os.chdir(old)
        os.close(devnull)
    code = os.waitstatus_to_exitcode(status)
    errors.seek(0)
    said = errors.read()[-2000:].decode(errors="replace")
    errors.close()
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {code}: {said}")
    return elapsed


def alternate(commands, runs=30, warmup=3, cwd=None, env=None):
    """{name: argv} -> {name: [ms, ...]}, measured in alternation."""
    times = {name: [] for name in commands}
    for i in range(warmup + runs):
        for name, argv in commands.items():
            elapsed = run_once(argv, cwd=cwd, env=env)
            if i >= warmup:
                times[name].append(elapsed)
    return times


def median(values):
    return statistics.median(values)


def row(figure, what, value, floor, target, ok):
    return f"| {figure} | {what} | {value} | {floor} | {target} | {'met' if ok else 'NOT met'} |"


def sh(command, cwd=None):
    return subprocess.run(command, shell=True, cwd=cwd, check=True, capture_output=True, text=True).stdout


def fill_history(db, prefix, count, now_ms, first_number=1):
    """Inserts `count` ended runs (prefix_<ms>, numbered from first_number, a third on docker,
    one in seven Failed) into the runs table of an index mlw created; returns their ids."""
    ids = [f"{prefix}_{now_ms - count + i}" for i in range(count)]
    db.executemany(
        "INSERT INTO runs(run_id, run_number, script, target, status, created_ms, start_ms, end_ms,"
        " exit_code) VALUES(?,?,?,?,?,?,?,?,?)",
        ((ids[i], first_number + i, "train.py", "local" if i % 3 else "docker",
          "Completed" if i % 7 else "Failed", now_ms - count + i, now_ms - count + i,
          now_ms - count + 1000 + i, 0 if i % 7 else 1) for i in range(count)))
    return ids
