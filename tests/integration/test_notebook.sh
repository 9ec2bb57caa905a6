#!/usr/bin/env bash
# `mlw notebook` (issue 48, point 1) with Debian's Jupyter: the kernel specs ("PROJECT CONFIG",
# in the project or the user's Jupyter folder), Jupyter missing (one line), then the real
# jupyter-notebook started by `mlw notebook start`: its REST API lists mlw's kernel and starts it
# for a notebook; jupyter_client runs cells in it (the run's target, its variables, a logged
# metric, a failing cell), each cell a run of the history named by the notebook and its cell;
# shutting the session down ends the kernel's run; mlw's kernel process killed (-9) leaves no
# kernel behind. Local target only: kernels on other kinds are refused so far (one line).
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS
PY=/usr/bin/python3
command -v jupyter-notebook >/dev/null && "$PY" -c 'import ipykernel, jupyter_client' || {
  echo "Debian's jupyter-notebook, python3-ipykernel and python3-jupyter-client are required (scripts/setup installs them)"
  exit 1
}
export HOME="$WORK/home" JUPYTER_RUNTIME_DIR="$WORK/runtime"
mkdir -p "$HOME" "$JUPYTER_RUNTIME_DIR"
unset JUPYTER_PATH JUPYTER_DATA_DIR XDG_DATA_HOME JUPYTER_TOKEN
new_project nbp
printf 'type: "local"\npythonLocation: "%s"\n' "$PY" >aml_config/local.compute
"$MLW" -q computetarget attach docker -n d --base-image "${MLW_TEST_IMAGE:-none}" >/dev/null 2>&1

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
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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
check "Jupyter answers on 127.0.0.1" wait_for 30 bash -c "curl -sf -H 'Authorization: token $TOKEN' http://127.0.0.1:$PORT/api/status >/dev/null"
expect_contains "… its kernels include \"nbp local\"" "$(api GET /api/kernelspecs)" '"display_name": "nbp local"'
expect_contains "… not without the token" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/sessions")" "403"

SESSION=$(api POST /api/sessions '{"path": "analysis.ipynb", "type": "notebook", "name": "analysis.ipynb", "kernel": {"name": "mlw-nbp-local"}}')
KERNEL_ID=$(json_get "$SESSION" 'd["kernel"]["id"]')
SESSION_ID=$(json_get "$SESSION" 'd["id"]')
check "a session of analysis.ipynb on the kernel" test -n "$KERNEL_ID"
CONN="$JUPYTER_RUNTIME_DIR/kernel-$KERNEL_ID.json"
check "… its connection file" wait_for 20 test -s "$CONN"
# kernel_alive CONNECTION_FILE: mlw.kernel runs for it (anchored: no shell that names it matches).
kernel_alive() { pgrep -f "^[^ ]*python[^ ]* -m mlw.kernel $1" >/dev/null; }
export -f kernel_alive
KRUN() { json_get "$("$MLW" -o json history list)" '[r["run_id"] for r in d if r["script"] == "-m mlw.kernel"][0]'; }

cat >"$WORK/cells.py" <<'PY'
import json, sys
from jupyter_client import BlockingKernelClient
client = BlockingKernelClient()
client.load_connection_file(sys.argv[1])
client.start_channels()
client.wait_for_ready(timeout=60)
for code in sys.argv[2:]:
    out = []
    reply = client.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(
        m["content"].get("text") or m["content"].get("data", {}).get("text/plain") or m["content"].get("ename") or ""))
    print(json.dumps({"status": reply["content"]["status"], "out": "".join(out)}))
client.stop_channels()
PY
CELLS=$(timeout 120 "$PY" "$WORK/cells.py" "$CONN" \
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
SESSION=$(api POST /api/sessions '{"path": "second.ipynb", "type": "notebook", "name": "second.ipynb", "kernel": {"name": "mlw-nbp-local"}}')
KERNEL_ID=$(json_get "$SESSION" 'd["kernel"]["id"]')
CONN="$JUPYTER_RUNTIME_DIR/kernel-$KERNEL_ID.json"
check "a second kernel" wait_for 30 kernel_alive "$CONN"
LAUNCHER=$(pgrep -f "notebook kernel -c local -f $CONN" | head -n 1)
check "… started by mlw's kernel process" test -n "$LAUNCHER"
KPID=$(pgrep -f "^[^ ]*python[^ ]* -m mlw.kernel $CONN" | head -n 1)
kill -KILL "$LAUNCHER"
# (Jupyter then starts the kernel again, as it does for any kernel that died: a new process.)
check "mlw's kernel process killed: its kernel ends within 10 s" wait_for 10 bash -c "! kill -0 $KPID 2>/dev/null"

# A kernel on another kind: one line, in Jupyter's log (so far).
run_mlw notebook kernel -c d -f "$CONN"
expect_eq "a kernel on a docker target is refused" "$CODE" 1
expect_contains "… saying which kinds can" "$ERR" "notebook kernels run on local targets only so far"

kill -TERM "$NB_PID"
check "Jupyter stops" wait_for 20 bash -c "! kill -0 $NB_PID 2>/dev/null"
finish
