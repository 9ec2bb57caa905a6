#!/usr/bin/env bash
# Shared helpers for integration suites: each suite drives the built mlw binary ($MLW) against a
# real Python in a scratch folder, counts checks, and ends with "N passed, M failed".
set -u
: "${MLW:?set MLW to the mlw binary (ctest does this)}"
: "${MLW_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PASSED=0
FAILED=0
WORK=$(mktemp -d /tmp/mlw-it-XXXXXX)
export XDG_CONFIG_HOME="$WORK/config"
export MLW_HISTORY_LOCK_TIMEOUT_MS=2000
unset MLW_OUTPUT NO_COLOR
STARTED_PIDS=()

RO_MOUNT=""
cleanup() {
  local pid
  [ -n "$RO_MOUNT" ] && umount "$RO_MOUNT" 2>/dev/null
  for pid in "${STARTED_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  if mountpoint -q "$WORK/tmpfs" 2>/dev/null; then umount "$WORK/tmpfs"; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v python3 >/dev/null || { echo "python3 is required for integration tests"; exit 1; }

pass() { PASSED=$((PASSED + 1)); }
fail() {
  FAILED=$((FAILED + 1))
  echo "FAIL: $*" >&2
}

# check NAME CONDITION-COMMAND...: passes when the command succeeds.
check() {
  local name=$1
  shift
  if "$@"; then pass; else fail "$name"; fi
}

expect_eq() { # NAME ACTUAL EXPECTED
  if [ "$2" == "$3" ]; then pass; else fail "$1: expected [$3], got [$2]"; fi
}

expect_contains() { # NAME HAYSTACK NEEDLE
  if [[ "$2" == *"$3"* ]]; then pass; else fail "$1: [$3] not in [$2]"; fi
}

expect_not_contains() { # NAME HAYSTACK NEEDLE
  if [[ "$2" != *"$3"* ]]; then pass; else fail "$1: [$3] unexpectedly in [$2]"; fi
}

# run_mlw ARGS...: runs mlw, leaving OUT (stdout), ERR (stderr) and CODE; killed after
# RUN_TIMEOUT seconds where that is set (a check of something that once spun for ever).
run_mlw() {
  local out_file="$WORK/.out" err_file="$WORK/.err"
  # shellcheck disable=SC2086 # "timeout N" or nothing
  ${RUN_TIMEOUT:+timeout $RUN_TIMEOUT} "$MLW" "$@" >"$out_file" 2>"$err_file" </dev/null
  CODE=$?
  OUT=$(cat "$out_file")
  ERR=$(cat "$err_file")
}

# expect_error NAME CODE MESSAGE-PART ARGS...: mlw fails with CODE and one "mlw: error:" line.
expect_error() {
  local name=$1 code=$2 part=$3
  shift 3
  run_mlw "$@"
  expect_eq "$name (exit code)" "$CODE" "$code"
  expect_contains "$name (message)" "$ERR" "$part"
  local lines
  lines=$(grep -c '^mlw: error: ' <<<"$ERR")
  expect_eq "$name (one error line)" "$lines" "1"
}

# yaml_alias_bomb HEAD-LINE: a 1 KB "billion laughs" YAML file (9 levels of 9 aliases) after
# HEAD-LINE, on stdout.
yaml_alias_bomb() {
  local level items
  printf '%s\nlol1: &a1 [x, x, x, x, x, x, x, x, x]\n' "$1"
  for level in 2 3 4 5 6 7 8 9; do
    items=$(printf "*a$((level - 1)), %.0s" 1 2 3 4 5 6 7 8)
    printf 'lol%d: &a%d [%s*a%d]\n' "$level" "$level" "$items" "$((level - 1))"
  done
}

# shared_lease_folder DIR: DIR made shared between the machine's users as an administrator makes
# it, by the command mlw's warning and doctor name (mlw_lease_admin, src/exec/lease_dir.sh).
shared_lease_folder() {
  local cmd
  # shellcheck disable=SC1090,SC2016 # the function's file; the outer shell expands $1
  cmd=$(sh -c '. "$1"; mlw_lease_admin "$2"' sh "$MLW_SOURCE_DIR/src/exec/lease_dir.sh" "$1" |
    sed "s/^sudo sh -c '\(.*\)'\$/\1/")
  sh -c "$cmd"
}

# sim_start [AT_EXIT]: for a suite on the SIMULATED NVIDIA host (tests/fixtures/nvidia-sim, whose
# folder is SIM): its scripted files (load, fault, compute-apps, calls) removed now and at exit
# (with the command AT_EXIT; nvml too: the simulated libnvidia-ml.so.1 answers where the test
# makes it), HOME the test's own and knowing the sshd's host key, the test
# users' password in $WORK/pw.
sim_start() {
  SIM=$MLW_TEST_NVIDIA_SIM
  sim_reset
  # shellcheck disable=SC2064 # AT_EXIT is the caller's, expanded now
  trap "sim_reset; ${1:-:}; cleanup" EXIT
  printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
  export HOME="$WORK/home"
  mkdir -p "$HOME/.ssh"
  printf '[127.0.0.1]:%s %s\n' "$MLW_TEST_SSH_PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" \
    >"$HOME/.ssh/known_hosts"
}
sim_reset() { rm -f "$SIM/load" "$SIM/fault" "$SIM/compute-apps" "$SIM/calls" "$SIM/nvml"; }
# load LINES…: what the simulated GPUs report ("INDEX UTIL% MEMORY_MIB" each).
load() { printf '%s\n' "$@" >"$SIM/load"; }
# metric_values FILE NAME: the values of metric NAME in a metrics.jsonl, one per line.
metric_values() {
  python3 - "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("name") == sys.argv[2]:
        print(d["value"])
PY
}

# attach_gpu_target KIND: a target t of KIND on the SIMULATED NVIDIA host (the GPU test user over
# SSH at 127.0.0.1:$MLW_TEST_SSH_PORT, its password in $WORK/pw; this machine's Docker engine of
# the simulated host for docker), one leased GPU per run (gpusPerRun: 1).
attach_gpu_target() {
  local address="127.0.0.1:$MLW_TEST_SSH_PORT"
  case "$1" in
    local) "$MLW" -q computetarget attach local -n t >/dev/null ;;
    docker) "$MLW" -q computetarget attach docker -n t --base-image "$MLW_TEST_IMAGE" >/dev/null ;;
    remote)
      "$MLW" -q computetarget attach remote -n t -a "$address" -u "$MLW_TEST_GPU_USER" \
        --password-stdin <"$WORK/pw" >/dev/null
      ;;
    remotedocker)
      "$MLW" -q computetarget attach remotedocker -n t -a "$address" -u "$MLW_TEST_GPU_USER" \
        --password-stdin --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
      ;;
  esac
  case "$1" in docker | remotedocker) echo "nvidiaDocker: true" >>aml_config/t.compute ;; esac
  echo "gpusPerRun: 1" >>aml_config/t.compute
}

# json_get JSON PYTHON-EXPRESSION-ON-d
json_get() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print($2)" <<<"$1"; }

# require_env VAR...: the suite needs the real servers' variables (tests/fixtures/servers.sh
# sets them; scripts/test starts the servers); a missing one fails the suite, never skips it.
require_env() {
  local var
  for var in "$@"; do
    if [ -z "${!var:-}" ]; then
      echo "FAIL: $var is not set: start the servers with tests/fixtures/servers.sh (scripts/test does)"
      exit 1
    fi
  done
}

# json_of_args ARGS...: the arguments as one JSON list; json_file FILE: a JSON file re-printed
# the same way (for comparing argument lists that went through a run).
json_of_args() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1:], ensure_ascii=False))' "$@"; }
json_file() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1], encoding="utf-8")), ensure_ascii=False))' "$1"; }

# ssh_sessions_of USER: the test sshd's session processes ("sshd: USER [priv]") of USER, so that
# a suite that kills connections leaves other suites' sessions alone.
ssh_sessions_of() {
  local child
  for child in $(pgrep -P "$(cat "$MLW_TEST_SERVERS/sshd.pid")"); do
    case "$(tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null)" in
      # OpenSSH >= 9.8 names the process sshd-session; older ones sshd.
      "sshd: $1 "* | "sshd-session: $1 "*) echo "$child" ;;
    esac
  done
}

# expect_lines NAME FILE N [LOG]: FILE's "line I" lines are exactly line 0 ... line N-1, in order
# (none lost, doubled or reordered), and, given LOG (a run's driver_log.txt), the same as LOG's.
expect_lines() {
  local name=$1 file=$2 n=$3 log=${4:-}
  check "$name: line 0 to line $((n - 1)), each once, in order" \
    diff <(grep '^line ' "$file") <(seq 0 $((n - 1)) | sed 's/^/line /')
  [ -z "$log" ] || check "$name: the same lines as driver_log.txt" \
    diff <(grep '^line ' "$file") <(grep '^line ' "$log")
}

# shell_would_run NAME SHELL-TEXT MARKER: removes MARKER, checks (a positive control) that a shell
# given SHELL-TEXT does create it, and removes it again, so that a later "MARKER is absent" check
# means mlw gave no shell that text unquoted, not that the marker could never appear.
shell_would_run() {
  rm -f "$3"
  check "$1 (positive control: a shell running it creates $3)" sh -c "$2; test -e '$3'"
  rm -f "$3"
}

# slurm_lock shared|exclusive: holds a lock on the shared Slurm cluster of servers.sh until
# slurm_unlock or the end of the suite. A suite that runs jobs on it holds it shared; test_slurm
# holds it exclusive while it stops the controller, so that no other suite's job meets a
# controller that is away. The lock is held by a background process of its own (mlw's processes
# must not inherit it), which lets go when told, when the suite's folder is gone, or after 600 s
# (ctest's limit for a suite); slurm_lock returns once it is held, or fails after 600 s.
slurm_lock() {
  rm -f "$WORK/slurm-lock.held" "$WORK/slurm-lock.release"
  flock "--$1" -w 600 "$MLW_TEST_SERVERS/slurm-controller.lock" bash -c '
    touch "$1.held"
    for _ in $(seq 1 6000); do
      [ -e "$1.release" ] || [ ! -d "${1%/*}" ] && exit 0
      sleep 0.1
    done' _ "$WORK/slurm-lock" </dev/null >/dev/null 2>&1 &
  wait_for 600 test -e "$WORK/slurm-lock.held"
}
slurm_unlock() { touch "$WORK/slurm-lock.release"; }

# count_browser_checks OUTPUT: a pass or a fail per "ok NAME" / "not ok NAME: why" line of a
# browser script's output (the others are printed).
count_browser_checks() {
  echo "$1" | grep -v '^ok '
  while read -r line; do
    case "$line" in
      "ok "*) pass ;;
      "not ok "*) fail "browser: ${line#not ok }" ;;
    esac
  done <<<"$1"
}

# run_state RUN_ID: "STATUS EXIT_CODE" of a run; run_is RUN_ID STATUS: whether it is in it.
run_state() { "$MLW" -o json history info -r "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["exit_code"])'; }
run_is() { [[ "$(run_state "$1")" == $2* ]]; }
# as_someone_else RUN_ID: the run's record in this project says another user started it (a
# shared project), for the refusals of what only a run's own user may do.
as_someone_else() {
  python3 - ".mlw/runs/$1/run.json" <<'PY'
import json, sys
path = sys.argv[1]
record = json.load(open(path))
record["user"] = "someone-else"
json.dump(record, open(path, "w"))
PY
}

# wait_for SECONDS COMMAND...: polls (bounded) until the command succeeds.
wait_for() {
  local limit=$1 i
  shift
  for ((i = 0; i < limit * 10; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  return 1
}

# make_wheel NAME PYTHON-SOURCE: wheels/NAME-1.0-py3-none-any.whl, a pure-Python wheel whose
# module NAME holds the source (pip --no-index installs it from the project).
make_wheel() {
  mkdir -p wheels
  python3 - "$1" "$2" <<'PY'
import sys, zipfile
module, source = sys.argv[1], sys.argv[2]
info = f"{module}-1.0.dist-info"
with zipfile.ZipFile(f"wheels/{module}-1.0-py3-none-any.whl", "w") as z:
    z.writestr(f"{module}/__init__.py", source + "\n")
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{info}/RECORD", "")
PY
}

new_project() { # NAME [TEMPLATE] -> cd into it
  (cd "$WORK" && "$MLW" -q project create -n "$1" --template "${2:-blank}" >/dev/null) || {
    echo "cannot create project $1"
    exit 1
  }
  cd "$WORK/$1" || exit 1
}

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# start_link PORT [DELAY_MS] [RATE_MBIT]: bench/linkproxy.py in front of 127.0.0.1:PORT (an
# emulated slow link; 12.5 ms each way and 100 Mbit/s unless given); sets LINK_PORT and LINK_PID
# (killed when the suite ends). With LINK_LISTEN set, it listens on that port.
start_link() {
  local ready="$WORK/link.$RANDOM"
  python3 "$MLW_SOURCE_DIR/bench/linkproxy.py" --listen "${LINK_LISTEN:-0}" --to "127.0.0.1:$1" \
    --delay-ms "${2:-12.5}" --rate-mbit "${3:-100}" --ready "$ready" >/dev/null 2>&1 &
  LINK_PID=$!
  STARTED_PIDS+=("$LINK_PID")
  wait_for 10 test -s "$ready" || { echo "the link emulator did not start"; exit 1; }
  LINK_PORT=$(cat "$ready")
}

# via_link: with MLW_TEST_VIA_LINK set (the *_link.sh suites), every SSH connection of the suite
# goes through the link emulator (start_link), as over a user's 25 ms link.
via_link() {
  [ -n "${MLW_TEST_VIA_LINK:-}" ] || return 0
  start_link "$MLW_TEST_SSH_PORT"
  export MLW_TEST_SSH_PORT=$LINK_PORT
  echo "every SSH connection of this suite goes through the link emulator (port $LINK_PORT)"
}

# forward_check TARGET BIND: `experiment forward` into a batch job of TARGET (Slurm, Grid Engine)
# that serves a page naming its run on BIND (an address of its node) at a free port: the page
# through two connections, then Ctrl-C ends the forward (exit 0) and the run is canceled.
forward_check() {
  local target=$1 bind=$2 port rid fpid local_port got i
  port=$(free_port)
  cat >page.py <<'PY'
import http.server, os, socketserver, sys, time
open("page.txt", "w").write("page of %s\n" % os.environ["MLW_RUN_ID"])
open("tail.bin", "w").write("no newline")
class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the connection stays open after an answer
    def log_message(self, *args):
        pass
socketserver.TCPServer.allow_reuse_address = True
server = socketserver.TCPServer((sys.argv[2], int(sys.argv[1])), Quiet)
server.timeout = 0.5
print("serving", flush=True)
end = time.time() + 180
while time.time() < end:
    server.handle_request()
PY
  run_mlw -o json experiment submit -c "$target" -a page.py "$port" "$bind"
  rid=$(json_get "$OUT" 'd["run_id"]')
  check "forward into a $target job: it serves" wait_for 120 grep -q serving ".mlw/runs/$rid/driver_log.txt"
  rm -f "$WORK/fwd.out"
  "$MLW" experiment forward -r "$rid" "$port:0" >"$WORK/fwd.out" 2>"$WORK/fwd.err" &
  fpid=$!
  STARTED_PIDS+=("$fpid")
  check "forward into a $target job: the URL" wait_for 30 test -s "$WORK/fwd.out"
  local_port=$(sed -n 's#^http://127.0.0.1:\([0-9]*\)/ .*#\1#p' "$WORK/fwd.out")
  for i in 1 2; do
    got=$(curl -s --max-time 60 "http://127.0.0.1:$local_port/page.txt")
    expect_eq "forward into a $target job: its page (connection $i)" "$got" "page of $rid"
    [ "$got" = "page of $rid" ] || cat "$WORK/fwd.err" >&2
  done
  # Bytes that end no line (a binary protocol: ZeroMQ, a notebook kernel's) come while the
  # connection is open, not when it closes.
  got=$(timeout 30 python3 - "$local_port" <<'PY'
import socket, sys
conn = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
conn.sendall(b"GET /tail.bin HTTP/1.1\r\nHost: mlw\r\n\r\n")
data = b""
while not data.endswith(b"no newline"):
    chunk = conn.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.endswith(b"no newline"))
PY
  )
  expect_eq "forward into a $target job: bytes that end no line come at once" "$got" True
  kill -INT "$fpid"
  check "forward into a $target job: Ctrl-C ends it" wait_for 10 bash -c "! kill -0 $fpid 2>/dev/null"
  kill -KILL "$fpid" 2>/dev/null # still there: failed above; the wait must not hang
  wait "$fpid"
  expect_eq "forward into a $target job: … exit 0" "$?" 0
  "$MLW" experiment cancel -r "$rid" >/dev/null 2>&1
}

# kernel_on TARGET: the newest notebook kernel's run on TARGET.
kernel_on() { json_get "$("$MLW" -o json history list)" '[r["run_id"] for r in d if r["script"] == "-m mlw.kernel" and r["target"] == "'"$1"'"][0]'; }

# reap PID: the exit code of this shell's background process PID in REAPED. Called once a check
# said that it ended: one still running is killed first, so that the wait cannot hang.
reap() {
  kill -KILL "$1" 2>/dev/null
  wait "$1"
  # shellcheck disable=SC2034 # read by the suites
  REAPED=$?
}

# drop_logins PID...: cuts every SSH connection to the test sshd that these processes hold, as a
# dropped network would, by killing the sshd serving each (root only).
drop_logins() {
  local pid lport
  for pid in "$@"; do
    for lport in $(ss -Htnp state established "dport = :$MLW_TEST_SSH_PORT" | grep "pid=$pid," |
      awk '{print $3}' | sed 's/.*://'); do
      ss -Htnp state established "sport = :$MLW_TEST_SSH_PORT and dport = :$lport" |
        grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u | xargs -r kill -KILL
    done
  done
}

# free_port [N]: N (default 1) distinct loopback ports free now, one a line, drawn below the
# ephemeral range (32768-60999) that the outgoing connections of the suites run at once take from
# (a port a kernel chose, binding to 0, was once taken by one before mlw listened on it).
free_port() {
  /usr/bin/python3 - "${1:-1}" <<'PY'
import random, socket, sys
draw = random.SystemRandom()
ports = []
for _ in range(500 * int(sys.argv[1])):
    port = draw.randrange(20000, 32768)
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        probe.close()
    if port not in ports:
        ports.append(port)
        if len(ports) == int(sys.argv[1]):
            break
else:
    sys.exit("free_port: not enough free ports below 32768")
print("\n".join(map(str, ports)))
PY
}

# kernel_connection FILE: a connection file as Jupyter writes one (free loopback ports, a key,
# 0600), its ports from free_port.
kernel_connection() {
  local ports
  ports=$(free_port 5) || return 1
  # shellcheck disable=SC2086 # five numbers
  /usr/bin/python3 - "$1" $ports <<'PY'
import json, os, secrets, sys
names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
ports = dict(zip(names, map(int, sys.argv[2:])))
ports.update(ip="127.0.0.1", transport="tcp", key=secrets.token_hex(16),
             signature_scheme="hmac-sha256", kernel_name="mlw")
with os.fdopen(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
    json.dump(ports, out)
PY
}

# queued_kernel TARGET: Jupyter's `notebook kernel -c TARGET` started while TARGET's queue is
# full, until it says that it waits there; its pid in QUEUED, its run in QRUN.
queued_kernel() {
  kernel_connection "$WORK/queued.json"
  "$MLW" notebook kernel -c "$1" -f "$WORK/queued.json" >"$WORK/queued.out" 2>"$WORK/queued.err" &
  QUEUED=$!
  STARTED_PIDS+=("$QUEUED")
  check "a kernel waits in $1's queue, saying so" wait_for 60 grep -q "waits in $1's queue" \
    "$WORK/queued.err"
  QRUN=$(kernel_on "$1")
}

# queued_kernel_killed GONE...: mlw's process of the queued kernel killed (Jupyter's SIGKILL): its
# job leaves the queue (the command GONE… says when it has) and its run is Canceled, saying why.
queued_kernel_killed() {
  kill -KILL "$QUEUED"
  check "mlw's kernel process killed: its job leaves the queue" wait_for 60 "$@"
  check "… its run is Canceled" wait_for 60 run_is "$QRUN" Canceled
  expect_contains "… saying why" "$("$MLW" -o json history info -r "$QRUN")" \
    "ended without stopping it: nothing is left to use the run"
  [ "$FAILED" -eq 0 ] || cat "$WORK/queued.err" >&2
}

# kernel_check TARGET: `mlw notebook kernel` on a batch TARGET as Jupyter starts it (a connection
# file of free ports and a key, 0600), driven by jupyter_client: a cell runs in the kernel's job
# and is a run of the history; the shutdown a notebook sends ends the kernel's run (Completed).
kernel_check() {
  local target=$1 conn=$WORK/kernel-$1.json kpid out krun
  kernel_connection "$conn"
  "$MLW" notebook kernel -c "$target" -f "$conn" >"$WORK/kernel.out" 2>"$WORK/kernel.err" &
  kpid=$!
  STARTED_PIDS+=("$kpid")
  out=$(timeout 240 /usr/bin/python3 "$MLW_SOURCE_DIR/tests/integration/kernel_cells.py" "$conn" \
    --shutdown 'import os; print("CELL", os.environ["MLW_TARGET"], os.environ["MLW_RUN_ID"])' 2>&1)
  krun=$(kernel_on "$target")
  expect_contains "a notebook kernel on $target: a cell runs in its job" "$out" "CELL $target $krun"
  check "… the cell is a run of the history" wait_for 20 bash -c \
    "'$MLW' -o json history list | grep -q '\"kernel\": \"$krun\"'"
  check "… the notebook's shutdown ends the kernel's run (Completed)" wait_for 60 run_is "$krun" Completed
  check "… and mlw's kernel process" wait_for 20 bash -c "! kill -0 $kpid 2>/dev/null"
  [ "$FAILED" -eq 0 ] || cat "$WORK/kernel.err" >&2
}
