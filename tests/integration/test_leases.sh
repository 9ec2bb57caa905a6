#!/usr/bin/env bash
# GPU leases and the queue on the target (docs/gpus.md), through every kind that holds a lease
# (local, docker, remotedocker, remote), on the SIMULATED NVIDIA host of tests/fixtures/servers.sh:
# four simulated "Tesla K80"s (tests/fixtures/nvidia-sim) on this machine, its own Docker engine
# with the nvidia runtime, and the GPU test user over SSH. It proves which GPUs mlw hands out,
# when a run waits and wakes, never that a GPU computes.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_GPU_DOCKER_HOST MLW_TEST_NVIDIA_SIM MLW_TEST_GPU_USER MLW_TEST_SSH_PORT \
  MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE MLW_TEST_HOSTILE_USER
echo "SIMULATION: every GPU in this suite is simulated (tests/fixtures/nvidia-sim); no GPU is used"

SIM=$MLW_TEST_NVIDIA_SIM
export PATH="$SIM:$PATH" DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST
# The lease folder of this suite, machine-wide as /tmp/mlw-leases is (every user of the machine,
# local and over SSH, sees it), its own so that nothing else leases beside it.
export MLW_LEASE_DIR=/tmp/mlw-leases-test.$$
rm -f "$SIM/compute-apps"
# Shared between this machine's users (root here, the GPU user over SSH) as an administrator
# makes it (docs/gpus.md).
shared_lease_folder "$MLW_LEASE_DIR"
cleanup_leases() { rm -rf "$MLW_LEASE_DIR" "$SIM/compute-apps"; }
trap 'cleanup_leases; cleanup' EXIT
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"

# home NAME: a user's HOME (a laptop), its known_hosts holding the target's key.
home() {
  export HOME="$WORK/$1"
  mkdir -p "$HOME/.ssh"
  printf '[127.0.0.1]:%s %s\n' "$MLW_TEST_SSH_PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" \
    >"$HOME/.ssh/known_hosts"
}

# The script: which simulated GPUs it sees (the last digit of each UUID) and when it ran.
script() {
  cat >lease.py <<'PY'
import os, re, subprocess, sys, time
try:
    seen = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
except FileNotFoundError:
    seen = ""
devices = ",".join(re.findall(r"UUID: GPU-[0-9a-f-]*(\d)\)", seen)) or "none"
start = time.time()
arg = sys.argv[1] if len(sys.argv) > 1 else "2"
if arg.startswith("gate:"):  # held until the test makes the file (bounded): an event, not a clock
    for _ in range(3000):
        if os.path.exists(arg[5:]):
            break
        time.sleep(0.1)
else:
    time.sleep(float(arg))
print(f"LEASE {devices} {start:.3f} {time.time():.3f}", flush=True)
PY
}

# project NAME KIND: a project with a target t of KIND, gpusPerRun 1.
project() {
  new_project "$1"
  script
  attach_gpu_target "$2"
}

# submit_async ARGS…: submits with -a, prints the run id.
submit_async() { "$MLW" -o json experiment submit -a -c t "$@" 2>>"$WORK/submit.err" | json_get "$(cat)" 'd["run_id"]'; }
open_gate() { "$MLW" -q experiment shell -T -r "$1" -- touch open </dev/null; }
all_running() {
  local id
  for id in "$@"; do run_is "$id" Running || return 1; done
}
all_final() {
  local id
  for id in "$@"; do
    case "$(run_state "$id")" in Completed* | Failed* | Canceled* | Lost*) ;; *) return 1 ;; esac
  done
}
# (the overlap check: every pair of runs whose times overlap used distinct devices, and no
# moment had more than four)
check_overlap='
import sys
runs = [l.split() for l in sys.stdin.read().splitlines() if l.startswith("LEASE")]
runs = [(r[1], float(r[2]), float(r[3])) for r in runs]
bad = []
for i, (d, s, e) in enumerate(runs):
    at_once = [r for r in runs if r[1] < s + 0.001 and r[2] > s + 0.001]
    if len(at_once) > 4: bad.append(f"{len(at_once)} at {s}")
    for d2, s2, e2 in runs[i + 1:]:
        if s < e2 and s2 < e and d == d2: bad.append(f"GPU {d} shared")
print("ok" if not bad and len(runs) == 8 else f"{len(runs)} runs: {bad}")
'
check_packing() {
  local name=$1 id lines=""
  shift
  for id in "$@"; do
    expect_eq "$name: $id Completed" "$(run_state "$id")" "Completed 0"
    local line recorded
    line=$("$MLW" history logs -r "$id" | grep '^LEASE ')
    recorded=$("$MLW" -o json history info -r "$id" | python3 -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin).get("gpus", []))))')
    expect_eq "$name: $id saw the GPU its record names" "$(cut -d' ' -f2 <<<"$line")" "$recorded"
    expect_eq "$name: $id's header numbers it as the record does" "$("$MLW" history logs -r "$id" |
      sed -n 's/^mlw:   GPU \([0-9]*\),.*/\1/p' | paste -sd,)" "$recorded"
    lines+="$line"$'\n'
  done
  expect_eq "$name: at most 4 at once, on distinct GPUs" "$(python3 -c "$check_overlap" <<<"$lines")" "ok"
}

# --- 8 one-GPU runs of 2 s, submitted with -a, through each kind ------------------------------
# (LEASE_KINDS narrows it while debugging the suite.)
for kind in ${LEASE_KINDS-local docker remotedocker remote}; do
  home "laptop-$kind"
  project "p-$kind" "$kind"
  # The first four hold the four GPUs until the test opens their gates (a file in each one's
  # working folder, made through experiment shell): an event, so that the ninth below waits for
  # a GPU however slowly this machine submits (with four runs of 2 s ahead, a loaded machine
  # had them all ended before the ninth was submitted, and it ran).
  ids=()
  for _ in 1 2 3 4; do ids+=("$(submit_async lease.py gate:open)"); done
  check "$kind: four gated runs hold the four GPUs" wait_for 60 all_running "${ids[@]}"
  for _ in 5 6 7 8; do ids+=("$(submit_async lease.py 2)"); done
  expect_eq "$kind: 8 runs recorded" "${#ids[@]}" 8
  # A ninth, behind them all, canceled while it waits for a GPU: on every kind that leases.
  ninth=$(submit_async lease.py 2)
  "$MLW" -q experiment cancel -r "$ninth" >/dev/null 2>&1
  check "$kind: a run canceled while it waits ends" wait_for 30 all_final "$ninth"
  expect_eq "$kind: … Canceled 143, as a script stopped, not 125" "$(run_state "$ninth")" "Canceled 143"
  for id in "${ids[@]:0:4}"; do
    check "$kind: $id's gate opened in the run" open_gate "$id"
  done
  check "$kind: all 8 end (bounded)" wait_for 120 all_final "${ids[@]}"
  check_packing "$kind" "${ids[@]}"
done

# --- bad input: one line each, nothing recorded ------------------------------------------------
home laptop-bad
project p-bad local
before=$("$MLW" -o json history list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
for bad in 0 -1 abc 01 +1; do
  expect_error "--gpus $bad" 125 "--gpus must be all or a count of GPUs" experiment submit -c t --gpus "$bad" lease.py
done
expect_error "more GPUs than the target has" 125 "5 GPUs per run asked for; this machine has 4" \
  experiment submit -c t --gpus 5 lease.py
PATH=${PATH#"$SIM:"} expect_error "gpusPerRun where nvidia-smi lists none" 125 \
  "nvidia-smi lists no GPU on this machine" experiment submit -c t lease.py
expect_eq "nothing recorded" \
  "$("$MLW" -o json history list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$before"
echo "gpusPerRun: two" >>aml_config/t.compute
expect_error "a bad gpusPerRun at its place" 125 "t.compute:" experiment submit -c t lease.py
sed -i '$d' aml_config/t.compute

# --- two users of the machine at once never share a GPU: one over SSH (the GPU user, remote),
# one on the machine itself (root, local), each from a laptop (HOME) of its own ----------------
home laptop-a
project p-a remote
home laptop-b
project p-b local
# (each submit's id to a file of its own: with PYTHONUNBUFFERED set, print() writes the id and
# its newline apart, and four appends to one file could interleave)
for i in 1 2 3 4; do
  (export HOME=$WORK/laptop-a && cd "$WORK/p-a" && submit_async lease.py 2 >"$WORK/ids-a.$i") &
  (export HOME=$WORK/laptop-b && cd "$WORK/p-b" && submit_async lease.py 2 >"$WORK/ids-b.$i") &
done
wait
cat "$WORK"/ids-a.[1-4] >"$WORK/ids-a"
cat "$WORK"/ids-b.[1-4] >"$WORK/ids-b"
lines=""
for who in a b; do
  export HOME="$WORK/laptop-$who"
  cd "$WORK/p-$who" || exit 1
  mapfile -t ids <"$WORK/ids-$who"
  expect_eq "user $who: 4 runs" "${#ids[@]}" 4
  check "user $who: its runs end" wait_for 60 all_final "${ids[@]}"
  for id in "${ids[@]}"; do lines+="$("$MLW" history logs -r "$id" | grep '^LEASE ')"$'\n'; done
done
expect_eq "two users: at most 4 at once, on distinct GPUs" "$(python3 -c "$check_overlap" <<<"$lines")" "ok"

# --- the queue, a kill -9 of a holder, a cancel of a waiting run, foreign use ------------------
home laptop-q
project p-q remote
long=()
for _ in 1 2 3 4; do long+=("$(submit_async lease.py 60)"); done
check "four long runs hold the four GPUs" wait_for 30 bash -c "for id in ${long[*]}; do '$MLW' -o json history info -r \$id | grep -q '\"status\": \"Running\"' || exit 1; done"
# Without -a, a run that waits says so, then would print the run as usual (Ctrl-C detaches).
GATE_Q=/tmp/mlw-leases-gate-q-$$
rm -f "$GATE_Q"
timeout -s INT 4 "$MLW" experiment submit -c t lease.py "gate:$GATE_Q" >"$WORK/q.out" 2>"$WORK/q.err" </dev/null
expect_contains "submit says where the run waits" "$(cat "$WORK/q.err")" "Queued (position 1 on t)"
waiting=$(sed -n 's/^RunId: //p' "$WORK/q.out" "$WORK/q.err" | head -1)
expect_eq "the fifth run waits (Queued), on the target after Ctrl-C" "$(run_state "$waiting")" "Queued None"
queue=$("$MLW" -o json experiment queue -c t)
expect_eq "queue: four running, their GPUs as recorded" "$(python3 -c '
import json, sys, subprocess
q = json.loads(sys.argv[1])[0]
ok = len(q["running"]) == 4 and sorted(g for r in q["running"] for g in r["gpus"]) == [0, 1, 2, 3]
for r in q["running"]:
    info = json.loads(subprocess.run([sys.argv[2], "-o", "json", "history", "info", "-r", r["run_id"]], capture_output=True, text=True).stdout)
    ok = ok and info["gpus"] == r["gpus"] and r["in_history"]
print(ok, [w["position"] for w in q["waiting"]][-1:])' "$queue" "$MLW")" "True [1]"
expect_contains "queue's table names the waiting run" "$("$MLW" experiment queue -c t)" "$waiting"
# Another laptop's project on the same machine sees these runs too, as not its own.
other=$(cd "$WORK/p-a" && HOME=$WORK/laptop-a "$MLW" -o json experiment queue -c t)
expect_eq "another laptop's queue shows them, without a record there" "$(python3 -c '
import json, sys
q = json.loads(sys.argv[1])[0]
print(sorted((r["run_id"], r["in_history"]) for r in q["waiting"]))' "$other")" "[('$waiting', False)]"
expect_contains "… named with their user@host in its table" \
  "$(cd "$WORK/p-a" && HOME=$WORK/laptop-a "$MLW" experiment queue -c t)" "$waiting (root@"
# history logs -f on a queued run waits, then follows it to its end.
"$MLW" history logs -f -r "$waiting" >"$WORK/follow.out" 2>&1 &
follower=$!
holder=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process_group"])' ".mlw/runs/${long[0]}/run.json")
# (the monitor's process group: it and the script, which holds the lease too)
kill -9 -- "-$(ps -o pgid= -p "$holder" | tr -d ' ')"
# (how soon it starts is B11b's measure, bench/: here only that it does, whatever the load)
check "kill -9 of a holder (its monitor and script): the waiting run starts" \
  wait_for 30 bash -c "'$MLW' -o json history info -r $waiting | grep -q '\"status\": \"\\(Running\\|Completed\\)\"'"
third=$(submit_async lease.py 1)
expect_eq "another waits" "$(run_state "$third")" "Queued None"
# (cancelled straight after submit -a: its monitor on the target may not have started its
# lease yet; the run ahead holds GPU 0 until the test opens its gate)
run_mlw experiment cancel -r "$third"
expect_eq "cancel of a waiting run" "$(run_state "$third")" "Canceled 143"
expect_eq "… at once, while the GPU it waited for is still held" "$(run_state "$waiting")" "Running None"
touch "$GATE_Q"
check "its place is freed (gone from the queue)" bash -c "! '$MLW' experiment queue -c t | grep -q '$third'"
followed() { ! kill -0 "$follower" 2>/dev/null; }
check "logs -f of the queued run ends with the run" wait_for 30 followed
expect_contains "… having followed its output" "$(cat "$WORK/follow.out")" "LEASE "
# Foreign use: GPU 3's process was not started by mlw; with the others held, a run waits for it.
for id in "${long[@]:1}"; do "$MLW" -q experiment cancel -r "$id" >/dev/null 2>&1; done
echo 3 >"$SIM/compute-apps"
fill=()
for _ in 1 2 3; do fill+=("$(submit_async lease.py 30)"); done
check "three runs take GPUs 0-2" wait_for 20 bash -c "for id in ${fill[*]}; do '$MLW' -o json history info -r \$id | grep -q '\"status\": \"Running\"' || exit 1; done"
foreign=$(submit_async lease.py 1)
waits() { "$MLW" -o json experiment queue -c t | grep -q "\"$foreign\""; }
check "the run waits in the queue" wait_for 30 waits
expect_eq "a run does not get the GPU a foreign process uses" "$(run_state "$foreign")" "Queued None"
expect_contains "queue says so" "$("$MLW" experiment queue -c t)" "GPU 3 in use by a process without a lease"
rm -f "$SIM/compute-apps"
gpus_of() { "$MLW" -o json history info -r "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("gpus"))'; }
on_gpu_3() { [ "$(gpus_of "$foreign")" = "[3]" ]; }
check "the GPU free again: the run starts on it" wait_for 30 on_gpu_3
for id in "${fill[@]}"; do "$MLW" -q experiment cancel -r "$id" >/dev/null 2>&1; done
check "every run of the queue test ends" wait_for 60 all_final "${fill[@]}" "$foreign" "$waiting"

# --- the lease lives as long as the script: kill -9 of a local run's supervisor (issue 45) ------
home laptop-k
project p-k local
first=$(submit_async --gpus 4 lease.py 600)
check "a local run holds all four GPUs" wait_for 30 run_is "$first" Running
sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' ".mlw/runs/$first/run.json")
pg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process_group"])' ".mlw/runs/$first/run.json")
kill -9 "$sup"
check "… its script goes on without its supervisor" kill -0 "$pg"
second=$(submit_async --gpus 1 lease.py 1)
check "a second run is queued" wait_for 10 run_is "$second" Queued
sleep 2
expect_eq "… and stays queued while the first's script runs (no GPU given twice)" \
  "$(run_state "$second")" "Queued None"
kill -9 -- "-$pg"
check "the first's script ended: the second gets a GPU" wait_for 20 run_is "$second" Completed
# The same for a docker run: its supervisor killed, the container goes on and keeps its GPUs
# (exec/hold.sh keeps the lease while the container's process lives).
home laptop-kd
project p-kd docker
first=$(submit_async --gpus 4 lease.py 600)
check "a docker run holds all four GPUs" wait_for 60 run_is "$first" Running
sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' ".mlw/runs/$first/run.json")
container=$(cat ".mlw/runs/$first/container")
kill -9 "$sup"
check "… its container goes on without its supervisor" \
  bash -c "[ \"\$(docker inspect -f '{{.State.Running}}' '$container')\" = true ]"
second=$(submit_async --gpus 1 lease.py 1)
check "a second run is queued" wait_for 10 run_is "$second" Queued
sleep 2
expect_eq "… and stays queued while the first's container runs (no GPU given twice)" \
  "$(run_state "$second")" "Queued None"
docker kill "$container" >/dev/null
check "the first's container ended: the second gets a GPU" wait_for 60 run_is "$second" Completed
# And for a remotedocker run, whose lease its monitor on the target holds: the monitor's process
# group killed with -9, the container goes on and keeps its GPUs.
home laptop-kr
project p-kr remotedocker
first=$(submit_async --gpus 4 lease.py 600)
check "a remotedocker run holds all four GPUs" wait_for 60 run_is "$first" Running
check "… its lease is kept while its container lives (hold.sh)" \
  wait_for 20 pgrep -u "$MLW_TEST_GPU_USER" -f 'mlw-hold [0-9]+$'
pg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process_group"])' ".mlw/runs/$first/run.json")
container=$(cat "$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)/.mlw/runs/$first/container")
kill -9 -- "-$pg"
check "… its container goes on without its monitor" \
  bash -c "[ \"\$(docker inspect -f '{{.State.Running}}' '$container')\" = true ]"
second=$(submit_async --gpus 1 lease.py 1)
# (its place in the target's lease queue: a remotedocker run shows Queued while it is prepared)
place() { "$MLW" -o json experiment queue -c t | python3 -c '
import json, sys
q = json.load(sys.stdin)[0]
print("waiting" if any(w["run_id"] == sys.argv[1] for w in q["waiting"]) else
      "holding" if any(r["run_id"] == sys.argv[1] for r in q["running"]) else "none")' "$second"; }
in_line() { [ "$(place)" != none ]; }
check "a second run is in the lease queue" wait_for 30 in_line
sleep 2
expect_eq "… and waits there while the first's container runs (no GPU given twice)" "$(place)" waiting
docker kill "$container" >/dev/null
check "the first's container ended: the second gets a GPU" wait_for 60 run_is "$second" Completed

# --- maxConcurrentRuns on a target without GPUs: one run at a time ----------------------------
home laptop-slots
project p-slots local
sed -i '/^gpusPerRun/d' aml_config/t.compute
echo "maxConcurrentRuns: 1" >>aml_config/t.compute
PATH=${PATH#"$SIM:"}
GATE_S=/tmp/mlw-leases-gate-s-$$
rm -f "$GATE_S"
one=$(submit_async lease.py "gate:$GATE_S")
two=$(submit_async lease.py 1)
expect_eq "maxConcurrentRuns 1: the second run waits" "$(run_state "$two")" "Queued None"
touch "$GATE_S"
check "both end" wait_for 60 all_final "$one" "$two"
rm -f "$GATE_S" "$GATE_Q"
slot_lines="$("$MLW" history logs -r "$one" | grep '^LEASE ')"
slot_lines+=$'\n'"$("$MLW" history logs -r "$two" | grep '^LEASE ')"
expect_eq "… one after the other" "$(python3 -c '
import sys
(a, b) = [l.split() for l in sys.stdin.read().splitlines()]
print(float(b[2]) >= float(a[3]))' <<<"$slot_lines")" "True"
PATH="$SIM:$PATH"

# --- another user of the machine (issue 45) can neither hang, steal nor starve a lease, nor fake
# the queue view: the attacker is a real user of this machine (MLW_TEST_HOSTILE_USER), the victims
# root here and the GPU user over SSH ----------------------------------------------------------
ATT=$MLW_TEST_HOSTILE_USER
GPU_HOME=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)
as_att() { runuser -u "$ATT" -- "$@"; }
# A folder that the first comer made is not shared, whoever made it: each user leases in its own.
for who in local remote; do
  home "laptop-first-$who"
  project "p-first-$who" "$who"
  export MLW_LEASE_DIR=/tmp/mlw-leases-first.$$
  rm -rf "$MLW_LEASE_DIR"
  as_att mkdir -m 1777 "$MLW_LEASE_DIR"
  as_att mkfifo "$MLW_LEASE_DIR/gpu.0"
  as_att mkdir -m 777 "$MLW_LEASE_DIR/gpu.1"
  id=$(submit_async lease.py 1)
  check "$who: a run beside a folder another user made completes (not hung)" wait_for 30 run_is "$id" Completed
  log=$("$MLW" history logs -r "$id")
  expect_contains "… its log says the folder is not shared" "$log" \
    "mlw: warning: the lease folder $MLW_LEASE_DIR is not root's with mode 1777 (it is $ATT's, mode 1777)"
  expect_contains "… and the administrator's command" "$log" "install -d -o root -g root -m 1777 $MLW_LEASE_DIR"
  check "… nothing of it in that folder" bash -c "[ -z \"\$(ls '$MLW_LEASE_DIR' | grep -v '^gpu[.][01]\$')\" ]"
done
# A folder that is root's but whose locks another user made first: not shared either (that user
# could rename a lock under a run and give its GPU twice).
export MLW_LEASE_DIR=/tmp/mlw-leases-locks.$$
rm -rf "$MLW_LEASE_DIR"
install -d -o root -g root -m 1777 "$MLW_LEASE_DIR"
for k in 0 1 2 3; do as_att mkdir "$MLW_LEASE_DIR/gpu.$k"; done
id=$(submit_async lease.py 1)
check "remote: a run beside locks another user made completes" wait_for 30 run_is "$id" Completed
expect_contains "… its log says the folder has no lock of root's" "$("$MLW" history logs -r "$id")" \
  "mlw: warning: the shared lease folder $MLW_LEASE_DIR has no gpu.0 of root's"
rm -rf "$MLW_LEASE_DIR"
export MLW_LEASE_DIR=/tmp/mlw-leases-first.$$
run_mlw computetarget doctor -n t
expect_contains "doctor's lease folder row says whose runs share the GPUs, and the one command" "$OUT" \
  "among $MLW_TEST_GPU_USER's runs only (~/.mlw/leases): $MLW_LEASE_DIR is $ATT's, mode 1777, not root's with mode 1777; to share them between the machine's users, an administrator runs once: sudo sh -c 'install -d -o root -g root -m 1777 $MLW_LEASE_DIR"
check "the GPU user leased in its own folder" test -d "$GPU_HOME/.mlw/leases"
expect_eq "… which is its alone" "$(stat -c %U:%a "$GPU_HOME/.mlw/leases")" "$MLW_TEST_GPU_USER:700"
# A shared folder as an administrator makes it (the command the warning names, as root).
export MLW_LEASE_DIR=/tmp/mlw-leases-shared.$$
rm -rf "$MLW_LEASE_DIR"
cmd=$(sed -n "s/.*an administrator runs once: sudo sh -c '\(.*\)'\$/\1/p" <<<"$log" | sed "s#/tmp/mlw-leases-first.$$#$MLW_LEASE_DIR#g")
sh -c "$cmd"
expect_eq "the administrator's command makes the shared folder" "$(stat -c %U:%a "$MLW_LEASE_DIR")" "root:1777"
check "… another user cannot take a lock from it" bash -c "! runuser -u '$ATT' -- mv '$MLW_LEASE_DIR/gpu.0' '$MLW_LEASE_DIR/mine' 2>/dev/null"
# The attacker's tickets, first in line (named to sort before every real one): one whose `w` is
# a FIFO, one with a 20 MB info and a FIFO for its held, one that claims the victim's run holds
# every GPU, and one that looks real and holds its lock but never takes a GPU (a forged head of
# the line). Each lock holder is a process group of its own, its output not the suite's.
D=$MLW_LEASE_DIR
as_att mkdir -m 755 "$D/q.0.a" "$D/q.0.b" "$D/q.0.b/w" "$D/q.0.c" "$D/q.0.c/w" "$D/q.0.d" "$D/q.0.d/w"
as_att mkfifo "$D/q.0.a/w" "$D/q.0.b/held"
as_att sh -c "printf 'want=gpu:1\n' >'$D/q.0.a/info'; head -c 20000000 /dev/zero | tr '\\0' x >'$D/q.0.b/info'
  printf 'run=VICTIM\nwho=root@victim\nwant=gpu:4\n' >'$D/q.0.c/info'; echo '0,1,2,3 1' >'$D/q.0.c/held'
  printf 'run=fake\nwho=x@y\nwant=gpu:1\nsince=1\n' >'$D/q.0.d/info'"
holders=()
for q in q.0.a q.0.b q.0.c q.0.d; do
  setsid runuser -u "$ATT" -- flock "$D/$q" sleep 300 </dev/null >/dev/null 2>&1 &
  holders+=($!)
done
home laptop-victim
project p-victim remote
sleep 1
began=$(date +%s)
victim=$(submit_async lease.py 1)
check "the victim's run is not hung nor starved by them" wait_for 60 run_is "$victim" Completed
took=$(($(date +%s) - began))
check "… it waited only for the forged head to stall (${took} s)" test "$took" -lt 40
log=$("$MLW" history logs -r "$victim")
expect_contains "… naming the ticket that is not mlw's" "$log" "passing over $D/q.0.a of user $ATT: it is not a ticket of mlw's"
expect_contains "… and the head that never takes its GPU" "$log" "passing over $D/q.0.d of user $ATT: first in line for 5 s with what it wants free"
as_att sed -i "s/run=VICTIM/run=$victim/" "$D/q.0.c/info"
RUN_TIMEOUT=20 run_mlw -o json experiment queue -c t
expect_eq "experiment queue is not hung by a FIFO or slowed by 20 MB (exit code)" "$CODE" 0
expect_eq "… the forged holder is shown as the other user's, not as the victim's run" "$(json_get "$OUT" '
[(r["run_id"], r["in_history"], r["target_user"]) for r in d[0]["running"]]')" "[('$victim', False, '$ATT')]"
for pid in "${holders[@]}"; do kill -- "-$pid" 2>/dev/null; done
rm -rf "$D" "/tmp/mlw-leases-first.$$"

finish
