#!/usr/bin/env bash
# `mlw notebook` (issue 48, point 1) with Debian's Jupyter: the kernel specs ("PROJECT CONFIG",
# in the project or the user's Jupyter folder), Jupyter missing (one line), then the real
# jupyter-notebook started by `mlw notebook start`: its REST API lists mlw's kernel and starts it
# for a notebook; jupyter_client runs cells in it (the run's target, its variables, a logged
# metric, a failing cell), each cell a run of the history named by the notebook and its cell;
# shutting the session down ends the kernel's run; mlw's kernel process killed (-9) leaves no
# kernel behind. Then kernels on other machines: a container of the Docker engine (docker), the
# simulated NVIDIA host's engine over SSH (remotedocker: its hostname, GPU list, a metric, the
# GPU leased while the kernel lives, the container removed and the GPU freed when Jupyter shuts
# it down; the key on no command line and nowhere in the project) and a plain SSH login (remote:
# mlw's kernel process killed, the kernel there ends on its own); and the SSH connections of a
# remotedocker kernel cut (mlw's kernel process ends, saying so; its container is removed).
source "$(dirname "$0")/lib.sh"

KERNEL_CELLS=$MLW_SOURCE_DIR/tests/integration/kernel_cells.py
require_env MLW_TEST_SERVERS MLW_TEST_IMAGE MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD \
  MLW_TEST_GPU_USER MLW_TEST_GPU_DOCKER_HOST
PY=/usr/bin/python3
command -v jupyter-notebook >/dev/null && "$PY" -c 'import ipykernel, jupyter_client' || {
  echo "Debian's jupyter-notebook, python3-ipykernel and python3-jupyter-client are required (scripts/setup installs them)"
  exit 1
}
export HOME="$WORK/home" JUPYTER_RUNTIME_DIR="$WORK/runtime"
mkdir -p "$HOME" "$JUPYTER_RUNTIME_DIR"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
unset JUPYTER_PATH JUPYTER_DATA_DIR XDG_DATA_HOME JUPYTER_TOKEN
new_project nbp
printf 'type: "local"\npythonLocation: "%s"\n' "$PY" >aml_config/local.compute
"$MLW" -q computetarget attach docker -n d --base-image "$MLW_TEST_IMAGE" >/dev/null
# The kernels' images are built by this run (an earlier run's, on the same engine, would hide it).
docker image ls -q --filter label=mlw.project=nbp | xargs -r docker image rm -f >/dev/null

# --- the kernel specs ---------------------------------------------------------------------------
run_mlw -o json notebook kernels
expect_eq "notebook kernels" "$CODE" 0
expect_eq "a kernel per run configuration, named as Workbench did" \
  "$(json_get "$OUT" '" | ".join(k["display_name"] for k in d)')" "nbp d | nbp docker | nbp local"
SPEC=.mlw/jupyter/kernels/mlw-nbp-local/kernel.json
check "… in the project's .mlw/jupyter" test -s "$SPEC"
expect_eq "… whose command is this mlw's kernel for the configuration" \
  "$(json_get "$(cat "$SPEC")" '" ".join(d["argv"][3:])')" "notebook kernel -c local -f {connection_file}"
expect_eq "… with its project" "$(json_get "$(cat "$SPEC")" 'd["argv"][2]')" "$PWD"
run_mlw notebook kernels --user
check "--user: into ~/.local/share/jupyter" test -s "$HOME/.local/share/jupyter/kernels/mlw-nbp-local/kernel.json"
rm aml_config/docker.runconfig
run_mlw notebook kernels
check "a configuration removed: its spec is removed" test ! -e .mlw/jupyter/kernels/mlw-nbp-docker

# --- Jupyter missing ----------------------------------------------------------------------------
CODE=0
ERR=$(env PATH=/nonexistent "$MLW" notebook start --no-browser 2>&1 >/dev/null) || CODE=$?
expect_eq "Jupyter missing: exit 1" "$CODE" 1
expect_contains "… one line, with the package to install" "$ERR" \
  "mlw: error: Jupyter is not installed here (no jupyter-notebook on PATH): install it (Debian: sudo apt install jupyter-notebook python3-ipykernel)"

# --- Jupyter, started by mlw --------------------------------------------------------------------
PORT=$(free_port)
rm -f "$WORK/nb.out"
"$MLW" notebook start --no-browser --port "$PORT" >"$WORK/nb.out" 2>"$WORK/nb.err" &
NB_PID=$!
STARTED_PIDS+=("$NB_PID")
check "notebook start prints the URL" wait_for 30 grep -q "^http://127.0.0.1:$PORT/?token=" "$WORK/nb.out"
TOKEN=$(sed -n 's/.*token=//p' "$WORK/nb.out")
check "the token is on no command line" bash -c "! grep -qa '$TOKEN' /proc/$NB_PID/cmdline"
api() { # METHOD PATH [BODY]
  curl -s --max-time 20 -X "$1" -H "Authorization: token $TOKEN" ${3:+-d "$3"} "http://127.0.0.1:$PORT$2"
}
# open_session NOTEBOOK KERNEL: a session of NOTEBOOK on Jupyter's KERNEL (its KERNEL_ID,
# SESSION_ID and connection file CONN).
open_session() {
  local session
  session=$(api POST /api/sessions "{\"path\": \"$1\", \"type\": \"notebook\", \"name\": \"$1\", \"kernel\": {\"name\": \"$2\"}}")
  KERNEL_ID=$(json_get "$session" 'd["kernel"]["id"]')
  SESSION_ID=$(json_get "$session" 'd["id"]')
  CONN="$JUPYTER_RUNTIME_DIR/kernel-$KERNEL_ID.json"
}
check "Jupyter answers on 127.0.0.1" wait_for 30 bash -c "curl -sf -H 'Authorization: token $TOKEN' http://127.0.0.1:$PORT/api/status >/dev/null"
expect_contains "… its kernels include \"nbp local\"" "$(api GET /api/kernelspecs)" '"display_name": "nbp local"'
expect_contains "… not without the token" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/sessions")" "403"

open_session analysis.ipynb mlw-nbp-local
check "a session of analysis.ipynb on the kernel" test -n "$KERNEL_ID"
check "… its connection file" wait_for 20 test -s "$CONN"
# kernel_alive CONNECTION_FILE: mlw.kernel runs for it (anchored: no shell that names it matches).
kernel_alive() { pgrep -f "^[^ ]*python[^ ]* -m mlw.kernel $1" >/dev/null; }
export -f kernel_alive
KRUN() { json_get "$("$MLW" -o json history list)" '[r["run_id"] for r in d if r["script"] == "-m mlw.kernel"][0]'; }

CELLS=$(timeout 120 "$PY" "$KERNEL_CELLS" "$CONN" \
  'import os, socket, mlw; print("HOST", socket.gethostname(), os.environ["MLW_TARGET"], os.getcwd().endswith("/snapshot")); mlw.log_metric("acc", 0.93)' \
  '1/0' 2>&1)
expect_contains "a cell runs in the kernel, on the target, in the run's snapshot" "$CELLS" \
  "\"HOST $(hostname) local True\\n\""
expect_contains "… a failing cell says so" "$CELLS" '"status": "error"'
KERNEL_RUN=$(KRUN)
check "the kernel is a run of the history" test -n "$KERNEL_RUN"
check "… Running" run_is "$KERNEL_RUN" Running
check "each cell is a run" wait_for 20 bash -c "'$MLW' -o json history list | grep -q '\"cell\": 2'"
LIST=$("$MLW" -o json history list)
CELL1=$(json_get "$LIST" 'json.dumps([r for r in d if r.get("cell") == 1][0])')
expect_eq "cell 1: its notebook, kernel and status" \
  "$(json_get "$CELL1" 'd["notebook"], d["kernel"] == "'"$KERNEL_RUN"'", d["status"], d["target"]')" \
  "analysis.ipynb True Completed local"
expect_eq "cell 1: the metric it logged" "$(json_get "$CELL1" 'd["metrics"]["acc"]')" "0.93"
CELL2=$(json_get "$LIST" 'json.dumps([r for r in d if r.get("cell") == 2][0])')
expect_eq "cell 2 failed, saying why" "$(json_get "$CELL2" 'd["status"], d["problems"]')" \
  "Failed ['ZeroDivisionError: division by zero']"
CELL1_ID=$(json_get "$CELL1" 'd["run_id"]')
expect_contains "history info names the cell" "$("$MLW" history info -r "$CELL1_ID")" "analysis.ipynb"

api DELETE "/api/sessions/$SESSION_ID" >/dev/null
check "the session shut down: the kernel's run ends" wait_for 30 bash -c "'$MLW' -o json history info -r '$KERNEL_RUN' | grep -q '\"status\": \"Completed\"'"
check "… and no kernel process is left" wait_for 10 bash -c "! kernel_alive '$CONN'"

# mlw's kernel process killed: the kernel on the target ends too (it watches its mlw).
open_session second.ipynb mlw-nbp-local
check "a second kernel" wait_for 30 kernel_alive "$CONN"
LAUNCHER=$(pgrep -o -f "notebook kernel -c local -f $CONN")
check "… started by mlw's kernel process" test -n "$LAUNCHER"
KPID=$(pgrep -f "^[^ ]*python[^ ]* -m mlw.kernel $CONN" | head -n 1)
kill -KILL "$LAUNCHER"
# (Jupyter then starts the kernel again, as it does for any kernel that died: a new process.)
check "mlw's kernel process killed: its kernel ends within 10 s" wait_for 10 bash -c "! kill -0 $KPID 2>/dev/null"

# --- kernels on other machines ------------------------------------------------------------------
# The remotedocker and remote targets are the SIMULATED NVIDIA host (its nvidia-smi and engine,
# tests/fixtures/nvidia-sim): what mlw does is real, the GPUs are not.
"$MLW" -q computetarget attach remotedocker -n gpu -a "127.0.0.1:$MLW_TEST_SSH_PORT" \
  -u "$MLW_TEST_GPU_USER" --password-stdin --accept-host-key --base-image "$MLW_TEST_IMAGE" \
  <"$WORK/pw" >/dev/null
printf 'nvidiaDocker: true\ngpusPerRun: 1\n' >>aml_config/gpu.compute
"$MLW" -q computetarget attach remote -n rm -a "127.0.0.1:$MLW_TEST_SSH_PORT" \
  -u "$MLW_TEST_GPU_USER" --password-stdin --accept-host-key <"$WORK/pw" >/dev/null
sed -i "s|^pythonLocation:.*|pythonLocation: \"$PY\"|" aml_config/rm.compute
run_mlw notebook kernels
expect_contains "the new targets' kernels" "$OUT" "nbp gpu"
gpu_engine() { DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST docker "$@"; }
queue_runs() { json_get "$("$MLW" -o json experiment queue -c "$1")" '" ".join(r["run_id"] for t in d for r in t["running"])'; }

# key_found CONNECTION_FILE PLACE...: whether the file's key is in a process's command line
# ("cmdlines") or in a file under PLACE.
cat >"$WORK/key_found.py" <<'PY'
import glob, json, os, sys
try:
    key = json.load(open(sys.argv[1]))["key"].encode()
except (OSError, ValueError, KeyError):
    sys.exit(2)  # no key to look for: neither found nor absent
places = []
for place in sys.argv[2:]:
    if place == "cmdlines":
        places += glob.glob("/proc/[0-9]*/cmdline")
    else:
        places += [os.path.join(d, f) for d, _, fs in os.walk(place) for f in fs]
def holds(path):
    try:
        with open(path, "rb") as f:
            return key in f.read()
    except OSError:
        return False
sys.exit(0 if any(holds(p) for p in places) else 1)
PY
# key_absent CONNECTION_FILE PLACE...: the key is in none (a file that cannot be read fails).
key_absent() { "$PY" "$WORK/key_found.py" "$@"; [ $? -eq 1 ]; }
open_session d.ipynb mlw-nbp-d
check "\"nbp d\": a session on the docker target" wait_for 20 test -s "$CONN"
CELLS=$(timeout 240 "$PY" "$KERNEL_CELLS" "$CONN" 'import os; print("IN", os.environ["MLW_TARGET"], os.getcwd(), os.path.exists("/.dockerenv"))' 2>&1)
expect_contains "a cell runs in the run's container" "$CELLS" "IN d /mlw/run/snapshot True"
cp "$CONN" "$WORK/d-connection.json" # (Jupyter removes its own at the shutdown)
DRUN=$(kernel_on d)
# Its image is the configuration's plus ipykernel (here the base image has it: said, not installed).
expect_contains "… in an image built for kernels, which checked for ipykernel" \
  "$(cat ".mlw/runs/$DRUN/build.log" 2>&1)" "mlw: ipykernel is there, for the notebook kernel"
api DELETE "/api/sessions/$SESSION_ID" >/dev/null
check "… the session shut down: its run is Completed" wait_for 40 run_is "$DRUN" Completed
check "… and its container is removed" wait_for 20 bash -c "[ -z \"\$(docker ps -aq --filter label=mlw.run=$DRUN)\" ]"
check "… and its key is kept nowhere in the project (whose folder the run's is)" \
  key_absent "$WORK/d-connection.json" .mlw aml_config
# Neither a kernel nor a cell is a script to run again: one line each saying where they rerun.
expect_error "rerun of a kernel's run" 125 'is a notebook kernel of d, started by Jupyter; open the notebook again (mlw notebook start) and choose "nbp d"' \
  experiment rerun -r "$DRUN"
DCELL=$(json_get "$("$MLW" -o json history list)" '[r["run_id"] for r in d if r.get("kernel") == "'"$DRUN"'"][0]')
expect_error "rerun of a cell's run" 125 "is cell [1] of notebook d.ipynb (kernel $DRUN), not a script; run the cell again in Jupyter" \
  experiment rerun -r "$DCELL"

# Every GPU held by a run: the kernel waits for its lease, said in Jupyter's log, then starts.
printf 'import time\ntime.sleep(120)\n' >hold.py
HOLD=$("$MLW" -o json experiment submit -a -c gpu --gpus 4 hold.py 2>/dev/null | json_get "$(cat)" 'd["run_id"]')
check "a run holds the 4 (simulated) GPUs" wait_for 60 run_is "$HOLD" Running
open_session gpu.ipynb mlw-nbp-gpu
check "\"nbp gpu\": a session on the remotedocker target" wait_for 20 test -s "$CONN"
check "… its kernel waits for a GPU, said in Jupyter's log" wait_for 60 grep -q \
  "mlw: warning: notebook kernel nbp_[0-9]* waits in gpu's queue (\`mlw experiment queue -c gpu\` shows what it waits for): the notebook connects once it starts" "$WORK/nb.err"
"$MLW" -q experiment cancel -r "$HOLD" >/dev/null
CELLS=$(timeout 240 "$PY" "$KERNEL_CELLS" "$CONN" \
  'import os, socket, subprocess, mlw; print("HOST", socket.gethostname(), os.environ["MLW_TARGET"], os.getcwd()); print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout); mlw.log_metric("loss", 0.25)' \
  'import os; print("KEY", "MLW_KERNEL_KEY" in os.environ)' 2>&1)
GRUN=$(kernel_on gpu)
CID=$(gpu_engine ps -q --filter "label=mlw.run=$GRUN")
check "the kernel runs in a container of the (simulated) GPU host's engine" test -n "$CID"
expect_contains "a cell runs there: that container's hostname, the target, the run's snapshot" \
  "$CELLS" "HOST $CID gpu /mlw/run/snapshot"
expect_contains "… the GPU list of the host's nvidia-smi" "$CELLS" "GPU 0: "
expect_contains "… and the kernel's key is not among the cell's variables" "$CELLS" "KEY False"
expect_eq "the kernel holds a GPU lease, as a run does" "$(queue_runs gpu)" "$GRUN"
check "the cells are runs" wait_for 20 bash -c "'$MLW' -o json history list | grep -q '\"notebook\": \"gpu.ipynb\"'"
GCELL=$(json_get "$("$MLW" -o json history list)" 'json.dumps([r for r in d if r.get("notebook") == "gpu.ipynb" and r["cell"] == 1][0])')
expect_eq "… cell 1: target, kernel, status and the metric it logged" \
  "$(json_get "$GCELL" 'd["target"], d["kernel"] == "'"$GRUN"'", d["status"], d["metrics"]["loss"]')" \
  "gpu True Completed 0.25"
check "the kernel's key is on no command line here" key_absent "$CONN" cmdlines
check "… and kept nowhere in the project" key_absent "$CONN" .mlw aml_config
api DELETE "/api/sessions/$SESSION_ID" >/dev/null
check "the session shut down: the kernel's run is Completed" wait_for 40 run_is "$GRUN" Completed
check "… its container is removed" wait_for 20 bash -c "[ -z \"\$(DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST docker ps -aq --filter label=mlw.run=$GRUN)\" ]"
# (The lease goes with the run's last process there, a moment after its record is final.)
gpu_free() { [ -z "$(queue_runs gpu)" ]; }
check "… and its GPU is free" wait_for 20 gpu_free

# A plain SSH login (remote): mlw's kernel process killed (Jupyter's SIGKILL), its run is canceled
# by the run's supervisor here; that killed too (this machine gone), the kernel there ends on its
# own.
open_session rm.ipynb mlw-nbp-rm
check "\"nbp rm\": a session on the remote target" wait_for 20 test -s "$CONN"
CELLS=$(timeout 240 "$PY" "$KERNEL_CELLS" "$CONN" 'import os, getpass; print("USER", getpass.getuser(), os.environ["MLW_TARGET"])' 2>&1)
expect_contains "a cell runs as the target's user" "$CELLS" "USER $MLW_TEST_GPU_USER rm"
# The notebook's "Restart kernel": Jupyter ends mlw's kernel process and starts another on the
# same connection file, whose ports that one holds from its start.
FIRST=$(kernel_on rm)
api POST "/api/kernels/$KERNEL_ID/restart" >/dev/null
CELLS=$(timeout 240 "$PY" "$KERNEL_CELLS" "$CONN" 'print("AGAIN", 6 * 7)' 2>&1)
expect_contains "a kernel Jupyter restarts answers on the same ports" "$CELLS" "AGAIN 42"
check "… the kernel before it ended (Completed)" wait_for 60 run_is "$FIRST" Completed
RRUN=$(kernel_on rm)
check "… and the new one is another run" test "$RRUN" != "$FIRST"
# kernel_there RUN: the kernel's Python there, the process of the target's user whose run is RUN.
kernel_there() {
  for p in $(pgrep -u "$MLW_TEST_GPU_USER" -f "python[^ ]* -m mlw.kernel remote:"); do
    grep -qa "MLW_RUN_ID=$1" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done | head -n 1
}
LAUNCHER=$(pgrep -o -f "notebook kernel -c rm -f $CONN")
THERE=$(kernel_there "$RRUN")
check "… the kernel is a process of the target's user" test -n "$THERE"
kill -KILL "$LAUNCHER"
check "mlw's kernel process killed: its run is canceled" wait_for 40 run_is "$RRUN" Canceled
check "… and its process there is gone" wait_for 20 bash -c "! kill -0 ${THERE:-0} 2>/dev/null"
expect_contains "… the record says why" "$("$MLW" -o json history info -r "$RRUN")" \
  "ended without stopping it: nothing is left to use the run"
# Jupyter starts the kernel again, a new run: now mlw's kernel process and the run's supervisor
# are killed, as when this machine is gone; the kernel there ends on its own.
relaunched() { [ "$(pgrep -f "notebook kernel -c rm -f $CONN" | wc -l)" -ge 2 ]; }
check "(Jupyter starts the kernel again)" wait_for 120 relaunched
check "(… and it answers)" bash -c "timeout 240 '$PY' '$KERNEL_CELLS' '$CONN' 'print(6 * 7)' | grep -q 42"
ARUN=$(kernel_on rm)
THERE=$(kernel_there "$ARUN")
check "… a kernel there" test -n "$THERE"
# shellcheck disable=SC2046 # pids
kill -KILL $(pgrep -f "notebook kernel -c rm -f $CONN")
check "every mlw process of the kernel killed: the kernel there ends within 40 s" \
  wait_for 40 bash -c "! kill -0 ${THERE:-0} 2>/dev/null"
GPU_HOME=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)
expect_contains "… its log there says why" "$(cat "$GPU_HOME/.mlw/runs/$ARUN/driver_log.txt")" \
  "mlw's connection to the kernel has been gone for 20 s"
api DELETE "/api/sessions/$SESSION_ID" >/dev/null

[ "$FAILED" -eq 0 ] || { echo "--- Jupyter's log (the end)"; tail -40 "$WORK/nb.err"; }
kill -TERM "$NB_PID"
check "Jupyter stops" wait_for 20 bash -c "! kill -0 $NB_PID 2>/dev/null"

# --- the SSH connection dropped while a kernel is open (remotedocker) ---------------------------
# Jupyter starts mlw's kernel as below; then every SSH connection of its processes is cut (the
# sshd serving each is killed): mlw's kernel process ends, saying so (Jupyter: the kernel died),
# and the kernel there is not left behind: its container ends and is removed, its GPU freed.
kernel_connection "$WORK/drop.json"
"$MLW" notebook kernel -c gpu -f "$WORK/drop.json" >"$WORK/drop.out" 2>"$WORK/drop.err" &
DROPPER=$!
STARTED_PIDS+=("$DROPPER")
CELLS=$(timeout 240 "$PY" "$KERNEL_CELLS" "$WORK/drop.json" 'print("BEFORE", 6 * 7)' 2>&1)
expect_contains "a kernel started as Jupyter does answers" "$CELLS" "BEFORE 42"
DRUN=$(kernel_on gpu)
# shellcheck disable=SC2046 # pids
drop_logins $(pgrep -f "notebook kernel -c gpu -f $WORK/drop.json")
check "the SSH connection dropped: mlw's kernel process ends" \
  wait_for 40 bash -c "! kill -0 $DROPPER 2>/dev/null"
reap "$DROPPER"
expect_eq "… exit 1 (Jupyter says the kernel died)" "$REAPED" 1
expect_contains "… saying why" "$(cat "$WORK/drop.err")" \
  "the connection to the kernel on gpu was lost: the kernel ends there"
check "… its container there ends and is removed" wait_for 60 bash -c \
  "[ -z \"\$(DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST docker ps -aq --filter label=mlw.run=$DRUN)\" ]"
check "… and its GPU is freed" wait_for 30 gpu_free
[ "$FAILED" -eq 0 ] || cat "$WORK/drop.err" >&2

# --- a connection file's port taken here since Jupyter chose it: said at once, no run ------------
# (Jupyter picks free ports, then starts mlw's kernel, which carries them: another program may
# take one in between. Held from the start, before the run is submitted: a queue wait or an image
# build cannot widen that window, and a port taken already is said before anything starts.)
kernel_connection "$WORK/taken.json"
TAKEN=$(json_get "$(cat "$WORK/taken.json")" 'd["iopub_port"]')
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").close(); time.sleep(120)' "$TAKEN" "$WORK/taken.up" &
TAKER=$!
STARTED_PIDS+=("$TAKER")
check "(another program listens on the connection file's iopub port)" wait_for 20 test -e "$WORK/taken.up"
NEWEST=$("$MLW" history list -o tsv | head -1 | cut -f1)
run_mlw notebook kernel -c rm -f "$WORK/taken.json"
expect_eq "a connection file whose port is taken here: exit 1" "$CODE" 1
expect_contains "… one line naming the port and what to do" "$ERR" \
  "port $TAKEN (Jupyter's iopub_port) is already in use on this machine: start the kernel again (Jupyter chooses free ports anew)"
expect_eq "… and no run started" "$("$MLW" history list -o tsv | head -1 | cut -f1)" "$NEWEST"
kill "$TAKER"

# --- a kernel whose environment cannot be built: the build's reason, as submit says it ----------
printf 'dependencies:\n  - python=2.7\n' >aml_config/conda_dependencies.yml
kernel_connection "$WORK/bad-env.json"
run_mlw notebook kernel -c d -f "$WORK/bad-env.json"
expect_eq "a kernel whose image cannot be built: exit 125" "$CODE" 125
expect_contains "… the build's reason" "$ERR" \
  "asks for python=2.7 but the base image $MLW_TEST_IMAGE has no conda to install it"
expect_contains "… and the kernel's run Failed" "$ERR" "is Failed"
finish
