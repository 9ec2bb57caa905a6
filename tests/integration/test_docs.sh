#!/usr/bin/env bash
# The docs as a contract: the README's "Use" block and the Python snippet of docs/cli.md are
# taken from the files (not copied here) and run against the built mlw and the real servers of
# tests/fixtures/servers.sh. What a line names that no test machine has is replaced, and only
# that: the run id in the examples by the real one, gpu-vm.example.com / login.example.org by
# the test sshd on loopback, `me` by the test user, pw.txt by a file holding its password, and
# the remotedocker base image by the local test image (the default one is not local, and a test
# engine must never reach for a registry). Host keys are known beforehand, as after a first
# `ssh`. Not run, and said so when the suite runs: the Slurm lines (they ask for 4 GPUs per
# node, which the test cluster has not) and `experiment clean` (it removes the project's
# mlw_env images, which suites running beside this one share).
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_USER MLW_TEST_SGE_USER MLW_TEST_GPU_USER \
  MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh" "$WORK/bin"
printf '[127.0.0.1]:%s %s\n' "$MLW_TEST_SSH_PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" \
  >"$HOME/.ssh/known_hosts"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw.txt"
ln -s "$MLW" "$WORK/bin/mlw"
export PATH="$WORK/bin:$PATH"

# block FILE LANG N: the Nth fenced block of LANG in FILE.
block() {
  python3 - "$@" <<'PY'
import re, sys
path, lang, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
blocks = re.findall(r"^```" + lang + r"\n(.*?)^```", open(path).read(), re.S | re.M)
print(blocks[n - 1] if len(blocks) >= n else "", end="")
PY
}

# doc_line NAME COMMAND: runs a line of the docs (output in $WORK/line.out and line.err); it must
# exit 0.
doc_line() {
  timeout -k 5 300 bash -c "$2" >"$WORK/line.out" 2>"$WORK/line.err" </dev/null
  local code=$?
  expect_eq "$1" "$code" 0
  [ "$code" -eq 0 ] || cat "$WORK/line.err" >&2
}

USE=$(block "$MLW_SOURCE_DIR/README.md" sh 2)
expect_contains "the README's Use block starts with project create" "$USE" "mlw project create -n demo"

# --- the README's Use block, line by line ---------------------------------------------------------
cd "$WORK" || exit 1
RUN_ID=""
LINES_RUN=0
while IFS= read -r line; do
  command=${line%%  #*}
  command=${command%"${command##*[![:space:]]}"}
  [ -n "$command" ] || continue
  case "$command" in
    *"-c hpc"* | *"attach slurm"*)
      echo "not run (it asks for 4 GPUs per node, which the test cluster has not): $command"
      continue ;;
    "mlw experiment clean"*)
      # It removes this project's images, which suites running beside this one share (the same
      # base image and conda file make the same mlw_env image).
      echo "not run (it would remove images other suites use on the shared engine): $command"
      continue ;;
  esac
  if [ "$command" = "mlw history ui" ]; then
    # It serves until Ctrl-C: the page at the URL it printed, then SIGINT.
    bash -c "exec $command" >"$WORK/line.out" 2>"$WORK/line.err" </dev/null &
    ui_pid=$!
    STARTED_PIDS+=("$ui_pid")
    # The URL's whole line (a server slow to start under load has printed nothing yet).
    for _ in $(seq 300); do grep -q '^http.*token=' "$WORK/line.out" && break; sleep 0.1; done
    ui_url=$(head -1 "$WORK/line.out")
    ui_code=$(curl -s -o "$WORK/ui.html" -w '%{http_code}' --max-time 10 -L -c "$WORK/jar" -b "$WORK/jar" "$ui_url")
    expect_eq "README: $command serves the dashboard at the URL it prints" "$ui_code" 200
    [ "$ui_code" = 200 ] || { echo "the dashboard's URL: [$ui_url]"; cat "$WORK/line.out" "$WORK/line.err"; }
    expect_contains "README: … the project's dashboard" "$(cat "$WORK/ui.html")" "<title>demo · mlw</title>"
    kill -INT "$ui_pid"
    wait "$ui_pid"
    expect_eq "README: $command ends with 0 on Ctrl-C" "$?" 0
    LINES_RUN=$((LINES_RUN + 1))
    continue
  fi
  command=${command//demo_1795282976808/$RUN_ID}
  # The Grid Engine lines: the test cell's user, whose sessions reach it.
  if [[ "$command" == *"attach sge"* ]]; then
    command=${command//head.example.org/127.0.0.1:$MLW_TEST_SSH_PORT}
    command=${command//-u me /-u $MLW_TEST_SGE_USER }
    command=${command//< pw.txt/< $WORK/pw.txt}
  fi
  command=${command//gpu-vm.example.com/127.0.0.1:$MLW_TEST_SSH_PORT}
  command=${command//-u me /-u $MLW_TEST_SSH_USER }
  command=${command//< pw.txt/--base-image $MLW_TEST_IMAGE < $WORK/pw.txt}
  doc_line "README: $line" "$command"
  LINES_RUN=$((LINES_RUN + 1))
  case "$command" in
    "mlw project create"*) cd demo || exit 1 ;;
    "mlw experiment submit -c local"*)
      RUN_ID=$(sed -n 's/^RunId: //p' "$WORK/line.out")
      expect_contains "README: the local run printed its epochs" "$(cat "$WORK/line.out")" "epoch" ;;
    "mlw history download"*)
      check "README: download wrote the results folder" test -d results ;;
    "mlw experiment submit -c my_dsvm"*)
      expect_contains "README: the remote run says it completed" "$(cat "$WORK/line.out")" "Completed" ;;
    "mlw experiment submit -c grid"*)
      expect_contains "README: the Grid Engine run went through qsub" "$(cat "$WORK/line.out" "$WORK/line.err")" "Grid Engine job"
      expect_contains "README: the Grid Engine run says it completed" "$(cat "$WORK/line.out")" "Completed" ;;
  esac
done <<<"$USE"
expect_eq "every README line that can run here ran" "$LINES_RUN" 13

# --- -v / -vv (cli.md: debug / trace), on the README's remote target -------------------------------
for level in "" -v -vv; do
  "$MLW" $level computetarget doctor -n my_dsvm >/dev/null 2>"$WORK/level$level.err" </dev/null
done
check "without -v: no debug line" bash -c "! grep -q '^mlw: debug:' '$WORK/level.err'"
check "-v: debug lines" grep -q '^mlw: debug:' "$WORK/level-v.err"
check "-v: no trace line" bash -c "! grep -q '^mlw: trace:' '$WORK/level-v.err'"
check "-vv: trace lines (each SSH command's end)" grep -q '^mlw: trace: ssh .*: exit' "$WORK/level-vv.err"

# --- docs/cli.md's Python snippet, as a script on the local target -------------------------------
block "$MLW_SOURCE_DIR/docs/cli.md" python 1 >snippet.py
check "docs/cli.md has its Python snippet" grep -q "log_artifact" snippet.py
run_mlw experiment submit -c local snippet.py
expect_eq "the docs' Python snippet runs as written" "$CODE" 0
RUN_ID=$(sed -n 's/^RunId: //p' <<<"$OUT")
run_mlw history info -r "$RUN_ID" -o json
expect_eq "its metric is recorded" "$(json_get "$OUT" 'd["metrics"].get("loss")')" "0.25"
expect_eq "the 2017 logger's metric too" "$(json_get "$OUT" 'd["metrics"].get("Accuracy")')" "0.93"
check "its artifact is in the run's outputs" test -f ".mlw/runs/$RUN_ID/outputs/model.pkl"

# --- docs/compute-file.md and docs/runconfig-file.md: their example files load as written ---------
mkdir -p "$WORK/files" && cd "$WORK/files" || exit 1
"$MLW" -q project create -n files >/dev/null 2>&1 && cd files || exit 1
block "$MLW_SOURCE_DIR/docs/compute-file.md" yaml 1 >aml_config/my_dsvm.compute
block "$MLW_SOURCE_DIR/docs/compute-file.md" yaml 2 >aml_config/mmlspark.compute
run_mlw computetarget show -n my_dsvm -o json
expect_eq "compute-file.md's remotedocker example loads" "$CODE:$ERR" "0:"
expect_eq "  with its address and GPUs" "$(json_get "$OUT" 'd["address"], d["gpus"], d["nvidia_docker"]')" \
  "gpu-vm.example.com all False"
run_mlw computetarget show -n mmlspark -o json
expect_eq "compute-file.md's 2017 localdocker example loads" "$CODE:$ERR" "0:"
expect_eq "  as a docker target with its image" "$(json_get "$OUT" 'd["type"], d["base_docker_image"]')" \
  "docker microsoft/mmlspark:plus-0.7.91"
block "$MLW_SOURCE_DIR/docs/runconfig-file.md" json 1 >aml_config/local.runconfig
cat >env.py <<'PY'
import os, sys
print("EXAMPLE_ENV_VAR=" + os.environ["EXAMPLE_ENV_VAR"], sys.argv[1:])
PY
run_mlw experiment submit -c local env.py a b
expect_eq "runconfig-file.md's 2017 example runs a script" "$CODE" 0
expect_contains "  with its variable and the arguments after \$file" "$OUT" "EXAMPLE_ENV_VAR=Example Value ['a', 'b']"
expect_contains "  noting once that UseSampling is ignored" "$ERR" "UseSampling"
run_mlw experiment submit -c local env.py
expect_not_contains "  (once: not on the second run)" "$ERR" "UseSampling"

# --- docs/multi-node-pytorch.md ---------------------------------------------------------------------
# Its attach line, with --no-connect instead of -k (the test cluster has no partition "gpu" and
# no GPUs; -k connects to install a key; doctor and the 4-GPU submit need a real cluster): the
# keys it sets are written.
ATTACH=$(block "$MLW_SOURCE_DIR/docs/multi-node-pytorch.md" "" 1 | sed -n '1,2p' | tr -d '\\\n')
expect_contains "multi-node-pytorch.md starts with its attach line" "$ATTACH" "attach slurm -n hpc"
ATTACH=${ATTACH/ -k / }
run_mlw ${ATTACH#mlw } --no-connect
expect_eq "its attach line works (without connecting)" "$CODE" 0
run_mlw computetarget show -n hpc -o json
expect_eq "  and writes partition, nodes, GPUs per node, time and account" \
  "$(json_get "$OUT" 'd["partition"], d["nodes"], d["gpus_per_node"], d["time_limit"], d["account"]')" \
  "gpu 2 4 04:00:00 proj42"
echo "not run (needs a Slurm cluster with 4 GPUs per node): its doctor and submit lines"
# launch.py as written, with the variables mlw sets on each node (test_slurm.sh checks they are
# set) and a stand-in torchrun on PATH that prints what it was given (no torch here).
block "$MLW_SOURCE_DIR/docs/multi-node-pytorch.md" python 1 >launch.py
mkdir -p fakebin && printf '#!/bin/sh\necho torchrun "$@"\n' >fakebin/torchrun && chmod +x fakebin/torchrun
LAUNCHED=$(PATH="$PWD/fakebin:$PATH" MLW_NUM_NODES=2 MLW_NODE_RANK=1 MLW_GPUS_PER_NODE=4 \
  MASTER_ADDR=n1 MASTER_PORT=29500 python3 launch.py train.py --epochs 10 2>&1)
expect_eq "launch.py becomes torchrun with the node's rank and the master" "$LAUNCHED" \
  "torchrun --nnodes=2 --node_rank=1 --nproc_per_node=4 --master_addr=n1 --master_port=29500 train.py --epochs 10"
run_mlw computetarget attach slurm -n pyx -a login.example.org --no-connect --container nvcr.io/x:1 \
  --container-runtime pyxis
expect_eq "attach slurm --container-runtime (cli.md) is accepted" "$CODE" 0
run_mlw computetarget show -n pyx -o json
expect_eq "  and written" "$(json_get "$OUT" 'd["container"], d["container_runtime"]')" "nvcr.io/x:1 pyxis"

# --- docs/gpu-guide.md, its blocks in order, on the SIMULATED NVIDIA host ------------------------
# (tests/fixtures/nvidia-sim: a fake nvidia-smi reports four Tesla K80s; no GPU computes). The
# machine's name, user and password file are the test sshd's; the CUDA base image is the local
# test image (a test engine reaches no registry). Not run, and said so: the conda file's
# tensorflow line (it installs from PyPI, which no test machine reaches).
echo "SIMULATION: the GPU guide's host is simulated (tests/fixtures/nvidia-sim); no GPU is used"
GUIDE=$MLW_SOURCE_DIR/docs/gpu-guide.md
guide_back=$PWD
cd "$WORK" || exit 1
guide_lines=0
for n in 1 2 3 4 5 6 7; do
  while IFS= read -r line; do
    command=${line%%  #*}
    [ -n "$command" ] || continue
    command=${command//gpu-vm.example.com/127.0.0.1:$MLW_TEST_SSH_PORT}
    command=${command//--username me /--username $MLW_TEST_GPU_USER }
    command=${command//< pw.txt/--base-image $MLW_TEST_IMAGE < $WORK/pw.txt}
    command=${command//nvidia\/cuda:12.2.2-cudnn8-runtime-ubuntu22.04/$MLW_TEST_IMAGE}
    if [[ "$command" == "mlw project create"*"&& cd "* ]]; then
      bash -c "${command%% && cd *}" >"$WORK/line.out" 2>"$WORK/line.err" </dev/null
      expect_eq "gpu-guide: $line" "$?" 0
      cd "${command##* && cd }" || exit 1
      block "$GUIDE" python 1 >gpu_check.py
      guide_lines=$((guide_lines + 1))
      continue
    fi
    doc_line "gpu-guide: $line" "$command"
    guide_lines=$((guide_lines + 1))
    case "$command" in
      "mlw experiment submit -c local"*)
        expect_contains "gpu-guide: the local run prints what it sees" "$(cat "$WORK/line.out")" "GPUs: " ;;
      "mlw computetarget doctor"*)
        expect_contains "gpu-guide: doctor names the GPUs" "$(cat "$WORK/line.out")" "name: Tesla K80" ;;
      "mlw experiment prepare"*)
        # A build that succeeds shows no install message as if it were an error (issue 45).
        expect_not_contains "gpu-guide: prepare's build shows no install message" \
          "$(cat "$WORK/line.out" "$WORK/line.err")" "cannot be installed" ;;
      "mlw experiment submit -c my_dsvm"*)
        expect_contains "gpu-guide: the run's first lines are its GPUs" "$(cat "$WORK/line.out")" \
          $'mlw: GPUs seen by this run:\nmlw:   GPU 0, Tesla K80'
        expect_contains "gpu-guide: the script sees them too" "$(cat "$WORK/line.out")" "GPUs: GPU 0: Tesla K80" ;;
      "mlw experiment queue"*)
        # Its header (the run just submitted may still be listed, or may have ended).
        check "gpu-guide: the queue answers for the target" grep -qE '^TARGET +RUN +STATE' "$WORK/line.out" ;;
    esac
  done < <(block "$GUIDE" sh "$n")
done
expect_eq "every line of the GPU guide ran" "$guide_lines" 12
yaml=$(block "$GUIDE" yaml 1)
echo "not run (it installs tensorflow from PyPI, which no test machine reaches): the conda file of step 3"
expect_contains "gpu-guide: its conda file is one mlw reads" "$yaml" "pip:"
cd "$guide_back" || exit 1

# --- the commands the docs show: every option named is in --help and typed by a suite ----------
while read -r verdict name; do
  expect_eq "the docs name $name: in its --help and exercised by a suite" "$verdict" ok
done < <(python3 "$MLW_SOURCE_DIR/tests/integration/docs_options.py" "$MLW" \
  "$MLW_SOURCE_DIR" "$MLW_SOURCE_DIR/tests/integration")
# --no-color: on a terminal (script(1) gives one) a warning's level name is coloured; with
# --no-color or NO_COLOR=1 it is not.
WARN="computetarget attach remote -n colours -a 192.0.2.1 -w x --no-connect --force"
COLOURED=$(script -qec "'$MLW' $WARN" /dev/null </dev/null)
PLAIN=$(script -qec "'$MLW' --no-color $WARN" /dev/null </dev/null)
PLAIN_ENV=$(script -qec "NO_COLOR=1 '$MLW' $WARN" /dev/null </dev/null)
"$MLW" -q computetarget detach -n colours >/dev/null 2>&1
check "on a terminal a warning is coloured (positive control)" grep -q $'\e\\[' <<<"$COLOURED"
check "--no-color: no escape sequence" bash -c "! grep -q $'\e' <<<\"\$1\"" _ "$PLAIN"
check "NO_COLOR=1: no escape sequence" bash -c "! grep -q $'\e' <<<\"\$1\"" _ "$PLAIN_ENV"
expect_contains "  but the same warning" "$PLAIN" "mlw: warning: a password given with -w"

# --- cli.md's run environment: the variables it lists are the ones a run gets --------------------
DOC_VARS=$(python3 - "$MLW_SOURCE_DIR/docs/cli.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## Run environment", 1)[1].split("The **share folder**", 1)[0]
print(" ".join(sorted(set(re.findall(r"`((?:MLW|AZUREML|PYTHON)[A-Z_]*)(?:=[^`]*)?`", section)))))
PY
)
cat >vars.py <<'PY'
import os
print(" ".join(sorted(k for k in os.environ if k.startswith(("MLW_", "AZUREML_", "PYTHON")))))
PY
# mlw runs with none of these in its own environment, so the run has only what mlw sets.
UNSET=()
for name in $(env | cut -d= -f1 | grep -E '^(MLW_|AZUREML_|PYTHON)'); do UNSET+=(-u "$name"); done
env "${UNSET[@]}" "$MLW" experiment submit -c local vars.py >"$WORK/vars.out" 2>&1 </dev/null
RID=$(sed -n 's/^RunId: //p' "$WORK/vars.out")
expect_eq "a run's MLW_, AZUREML_ and PYTHON variables are the ones cli.md lists" \
  "$(tail -1 ".mlw/runs/$RID/driver_log.txt")" "$DOC_VARS"

# --- every relative link in README.md and docs/*.md names a file that exists -----------------
while IFS= read -r broken; do
  fail "a doc links to a file that does not exist: $broken"
done < <(python3 - "$MLW_SOURCE_DIR" <<'PY'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
        if "://" not in target and not (doc.parent / target).exists():
            print(f"{doc.relative_to(root)} -> {target}")
PY
)
check "the link check sees README's links (positive control)" grep -q "](docs/cli.md)" "$MLW_SOURCE_DIR/README.md"

# --- cli.md's exit codes, row by row (local target) ---------------------------------------------
cat >code.py <<'PY'
import os, signal, sys, time
what = sys.argv[1]
if what == "signal":
    os.kill(os.getpid(), signal.SIGUSR1)
if what == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if what == "sleep":
    print("started", flush=True)
    time.sleep(60)
sys.exit(int(what))
PY
run_mlw experiment submit -c local code.py 3
expect_eq "exit codes: the script's own" "$CODE" 3
run_mlw experiment submit -c local code.py signal
expect_eq "exit codes: 128+N for a death by signal N (SIGUSR1)" "$CODE" 138
run_mlw experiment submit -c local code.py kill
expect_eq "exit codes: 137 for SIGKILL" "$CODE" 137
run_mlw experiment submit -c local --bogus code.py 0
expect_eq "exit codes: 125 for a usage error of submit" "$CODE" 125
run_mlw experiment submit -c nosuchtarget code.py 0
expect_eq "exit codes: 125 when mlw cannot start the run (no such run configuration)" "$CODE" 125
printf 'print(1)\n' >notexec && chmod 644 notexec
run_mlw computetarget attach local -n noexec --python "$PWD/notexec"
run_mlw experiment submit -c noexec code.py 0
expect_eq "exit codes: 126 for an interpreter that is not executable" "$CODE" 126
run_mlw experiment submit -c local missing.py
expect_eq "exit codes: 127 for a missing script" "$CODE" 127
run_mlw computetarget attach local -n nopython --python "$WORK/no/python3"
run_mlw experiment submit -c nopython code.py 0
expect_eq "exit codes: 127 for a missing interpreter" "$CODE" 127
# doctor names the python a run will use: where it is and, behind a shim (pyenv's are shell
# scripts), the interpreter it runs (issue 45).
mkdir -p "$WORK/shims"
printf '#!/bin/sh\nexec python3 "$@"\n' >"$WORK/shims/python" && chmod +x "$WORK/shims/python"
run_mlw computetarget attach local -n shim --python "$WORK/shims/python"
run_mlw computetarget doctor -n shim
expect_contains "doctor: the python's path, and what its shim runs" "$OUT" \
  "at $WORK/shims/python, a script that runs $(python3 -c 'import sys; print(sys.executable)')"
run_mlw computetarget doctor -n local
expect_contains "doctor -n local: the python's resolved path" "$OUT" "python3: Python 3"
expect_contains "… at its path" "$OUT" " at /"
run_mlw experiment submit -c local -a code.py sleep
expect_eq "exit codes: submit -a is 0 once the run started" "$CODE" 0
ASYNC=$(sed -n 's/^RunId: //p' <<<"$OUT")
"$MLW" experiment submit -c local code.py sleep >"$WORK/int.out" 2>&1 &
SUBMIT=$!
check "a waiting submit printed its script's first line" wait_for 20 grep -qs started "$WORK/int.out"
kill -INT "$SUBMIT"
wait "$SUBMIT"
expect_eq "exit codes: 130 when Ctrl-C detaches" "$?" 130
WAITED=$(sed -n 's/^RunId: //p' "$WORK/int.out")
run_mlw history info -r "$WAITED" -o json
expect_eq "  and the run goes on" "$(json_get "$OUT" 'd["status"]')" Running
for run in "$ASYNC" "$WAITED"; do "$MLW" -q experiment cancel -r "$run" >/dev/null 2>&1; done
run_mlw history list
expect_eq "exit codes: 0 for another command that succeeds" "$CODE" 0
run_mlw history info -r files_0
expect_eq "exit codes: 1 when it fails" "$CODE" 1
run_mlw history list --bogus
expect_eq "exit codes: 2 for a usage error" "$CODE" 2

finish
