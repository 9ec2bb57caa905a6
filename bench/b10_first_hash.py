"""B10: the first submit of a project holding 1 GiB (every file hashed and stored), against
sha256sum over the same files. Each mlw run starts with no snapshot store and no hash cache, so
it hashes everything; both read the files from the page cache. `cp` of the same files into a new
folder is timed alongside: storing 1 GiB of new content cannot cost less than copying it, and on
machines where fresh memory is expensive (a VM that hands freed pages back to its host) that copy,
not the hash, is most of the time."""

import os
import shutil
import sys
import tempfile

from timing import median, row, run_once, sh

FILES = 64
SIZE = 16 * 1024 * 1024  # 64 x 16 MiB = 1 GiB


def main(mlw, python):
    work = tempfile.mkdtemp(prefix="mlw-b10-")
    try:
        sh(f"{mlw} -q project create -n gib", cwd=work)
        project = os.path.join(work, "gib")
        files = []
        for i in range(FILES):
            folder = os.path.join(project, "data", f"d{i % 8}")
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"f{i}.bin")
            with open(path, "wb") as out:
                out.write(os.urandom(SIZE))
            files.append(path)
        with open(os.path.join(project, "noop.py"), "w") as out:
            out.write("pass\n")
        sh(f"{mlw} -q computetarget attach local -n bench --python {python}", cwd=project)
        state = os.path.join(project, ".mlw")
        mlw_times, floor_times, copy_times = [], [], []
        copy_dir = os.path.join(work, "copy")
        for i in range(6):
            # Each side starts right after its previous output is deleted: the store, the
            # prepared tree and the runs' snapshots (hard links into the store) for mlw, the
            # copy for cp. Both then write into memory just freed, as a user's machine would.
            for name in ("objects", "trees", "manifests", "cache"):
                shutil.rmtree(os.path.join(state, name), ignore_errors=True)
            runs = os.path.join(state, "runs")
            for run in os.listdir(runs) if os.path.isdir(runs) else []:
                shutil.rmtree(os.path.join(runs, run, "snapshot"), ignore_errors=True)
            t_mlw = run_once([mlw, "-q", "experiment", "submit", "-c", "bench", "noop.py"],
                             cwd=project)
            t_floor = run_once(["sha256sum", *files], cwd=project)
            shutil.rmtree(copy_dir, ignore_errors=True)
            os.makedirs(copy_dir)
            t_copy = run_once(["cp", *files, copy_dir], cwd=project)
            if i > 0:  # the first round warms the page cache
                mlw_times.append(t_mlw)
                floor_times.append(t_floor)
                copy_times.append(t_copy)
        mlw_ms, floor, copy = median(mlw_times), median(floor_times), median(copy_times)
        print(row("B10", "first `mlw experiment submit` of a 1 GiB project (64 files, all hashed "
                  "and stored)", f"{mlw_ms:.0f} ms ({mlw_ms / floor:.2f}×)",
                  f"`sha256sum` of the files {floor:.0f} ms (`cp` of them: {copy:.0f} ms)", "≤ 0.5×", mlw_ms <= 0.5 * floor))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
