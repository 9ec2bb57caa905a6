#!/usr/bin/env bash
# Sweeps (docs/sweeps.md): parameters as data, `experiment sweep` on the local target (a 3x2
# grid ranked by compare, --resume after its supervisor is killed, early stopping by the median
# rule, cancel; ASHA, Hyperband and TPE are test_schedulers.sh's), then on the SIMULATED four-GPU host of tests/fixtures/servers.sh (simulated
# "Tesla K80"s, tests/fixtures/nvidia-sim: it proves which GPUs the leases hand out, never that a
# GPU computes) spread over two targets, and on the two-node Slurm cluster.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_GPU_DOCKER_HOST MLW_TEST_NVIDIA_SIM MLW_TEST_GPU_USER MLW_TEST_SSH_PORT \
  MLW_TEST_SSH_PASSWORD MLW_TEST_SSH_HOST_KEY MLW_TEST_IMAGE MLW_TEST_SLURM_USER SLURM_CONF \
  MLW_TEST_SGE_USER MLW_TEST_SGE_ROOT MLW_TEST_SGE_PORTS
echo "SIMULATION: the GPUs of the second part are simulated (tests/fixtures/nvidia-sim)"

new_project sweeps
"$MLW" -q computetarget attach local -n local >/dev/null 2>&1 || true
cat >train.py <<'PY'
import argparse, time
import mlw
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--pause", type=float, default=0.02)
a = p.parse_args()
mlw.log_param("optimizer", "adam")
for s in range(1, a.steps + 1):
    mlw.log_metric("loss", a.lr * 10 + 1.0 / a.bs + 1.0 / s, step=s)
    time.sleep(a.pause)
PY

# --- parameters are data ------------------------------------------------------------------------
printf 'import mlw\nmlw.log_param("optimizer", "adam")\n' >anyargs.py
"$MLW" -q experiment submit -c local anyargs.py --lr=0.5 --bs 16 --steps 2 data.txt --debug lr2=3 >/dev/null 2>&1
info=$("$MLW" -o json history last)
expect_eq "params from --k=v, --k v, a flag, k=v, and log_param; typed" \
  "$(json_get "$info" 'json.dumps(d["params"], sort_keys=True)')" \
  '{"bs": 16, "debug": true, "lr": 0.5, "lr2": 3, "optimizer": "adam", "steps": 2}'

# --- a 3x2 grid: one record per point, best first in compare -------------------------------------
out=$("$MLW" experiment sweep -c local -e MLW_SWEEP_TEST=1 train.py --lr 0.1,0.01,0.001 --bs 32,64 2>"$WORK/sweep.err")
expect_eq "the grid ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' <<<"$out")
check "SweepId is printed" test -n "$sweep"
json=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "six runs, in the order of the lists (lr slowest), each with its point" \
  "$(json_get "$json" '" ".join("%s:%s/%s" % (r["point"], r["params"]["lr"], r["params"]["bs"]) for r in d)')" \
  "0:0.1/32 1:0.1/64 2:0.01/32 3:0.01/64 4:0.001/32 5:0.001/64"
expect_eq "one snapshot for all" "$(json_get "$json" 'len({r["snapshot_hash"] for r in d})')" 1
cmp=$("$MLW" -o json history compare --sweep "$sweep" --sort metric:loss)
expect_eq "compare --sweep: best (lowest loss) first, parameters as columns" \
  "$(json_get "$cmp" '" ".join("%s/%s" % (r["params"]["lr"], r["params"]["bs"]) for r in d)')" \
  "0.001/64 0.001/32 0.01/64 0.01/32 0.1/64 0.1/32"
run_mlw history compare --sweep "$sweep"
expect_contains "a grid without a sweep file is ranked by the loss its runs logged, and says so" "$ERR" \
  "ranked by the metric loss the runs logged, lowest first"
expect_contains "… in a loss column" "$(head -1 <<<"$OUT")" " loss "
expect_eq "… its runs' metric nested as history list nests it" "$(json_get "$cmp" 'sorted(d[0]["metrics"])')" "['loss']"
table=$("$MLW" history list --sweep "$sweep" --param lr --param metric:loss --where 'lr<0.05' --sort metric:loss:desc)
expect_eq "--param metric:loss with --sort metric:loss: one loss column" \
  "$(head -1 <<<"$table" | tr -s ' ' '\n' | grep -cx loss)" 1
expect_eq "list --where lr<0.05 --sort metric:loss:desc: four runs, worst first" \
  "$(awk 'NR>1 {print $9}' <<<"$table" | tr '\n' ' ')" "0.01 0.01 0.001 0.001 "
expect_contains "the table has an lr column" "$(head -1 <<<"$table")" "lr"

# The dashboard over this sweep, in Chromium (tests/integration/ui_sweep_browser.cjs).
"$MLW" history ui --port 0 >"$WORK/ui.out" 2>"$WORK/ui.err" &
UI_PID=$!
check "the dashboard prints its URL" wait_for 10 test -s "$WORK/ui.out"
BROWSER=$(cd "$MLW_SOURCE_DIR/tests/integration" && timeout 180 node ui_sweep_browser.cjs "$(head -1 "$WORK/ui.out")" \
  "$sweep" ${MLW_UI_SHOTS:-} 2>&1)
kill -INT "$UI_PID"
count_browser_checks "$BROWSER"
check "the browser checks ran (20 of them)" test "$(grep -c '^ok \|^not ok ' <<<"$BROWSER")" -ge 20

# --- bad input: one line each, nothing recorded -------------------------------------------------
before=$(ls .mlw/runs | wc -l)
expect_error "an empty list item" 125 "--lr 0.1,,0.2: an empty value" experiment sweep -c local train.py --lr 0.1,,0.2
expect_error "no parameter to sweep" 125 "no parameters to sweep" experiment sweep -c local train.py --lr 0.1
printf 'methd: grid\nparameters:\n  lr: [1]\n' >typo.yml
expect_error "a typo in the sweep file" 125 'typo.yml:1:1: unknown key "methd" (did you mean "method"?)' \
  experiment sweep -c local -f typo.yml train.py
printf 'parameters:\n  lr: {range: [1, 2], step: 0}\n' >step.yml
expect_error "a range with step 0" 125 "step.yml:2:29: parameter lr: step must be more than 0" \
  experiment sweep -c local -f step.yml train.py
printf 'maxConcurrent: 0\nparameters:\n  lr: [1]\n' >mc.yml
expect_error "maxConcurrent 0" 125 "mc.yml:1:16: maxConcurrent must be 1 or more" experiment sweep -c local -f mc.yml train.py
printf 'parameters:\n  a: {range: [1, 101]}\n  b: {range: [1, 100]}\n' >big.yml
expect_error "a grid past 10,000 points" 125 "the sweep has 10100 points, more than 10000; give --max-runs 10100" \
  experiment sweep -c local -f big.yml train.py
expect_error "more points than --max-runs" 125 "the sweep has 4 points, more than 3; give --max-runs 4" \
  experiment sweep -c local --max-runs 3 train.py --lr 1,2,3,4
expect_error "a target that is not the project's" 125 'no run configuration named "nosuch"' \
  experiment sweep -c local,nosuch train.py --lr 1,2
expect_eq "nothing recorded by the refusals" "$(ls .mlw/runs | wc -l)" "$before"

# A target that does not answer (nothing listens on port 9): its points go to the others; alone,
# nothing is recorded.
printf 'type: remote\naddress: 127.0.0.1:9\nusername: nobody\n' >aml_config/dead.compute
sed 's/^Target: .*/Target: dead/' aml_config/local.runconfig >aml_config/dead.runconfig
sweeps=$(ls .mlw/sweeps | wc -l)
"$MLW" experiment sweep -c dead,local train.py --lr 1,2 >"$WORK/o" 2>"$WORK/e"
expect_eq "a sweep over a dead target and local ends with 0" "$?" 0
expect_contains "the dead target is left out, saying why" "$(cat "$WORK/e")" \
  "target dead: ssh 127.0.0.1:9: connect: Connection refused"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
expect_eq "its points ran on local" "$(json_get "$("$MLW" -o json history list --sweep "$sweep")" \
  '" ".join(r["target"] + ":" + r["status"] for r in d)')" "local:Completed local:Completed"
before=$(ls .mlw/runs | wc -l)
expect_error "a sweep whose only target does not answer" 125 "connect: Connection refused" \
  experiment sweep -c dead train.py --lr 1,2
expect_eq "… records nothing" "$(ls .mlw/runs | wc -l) $(ls .mlw/sweeps | wc -l)" "$before $((sweeps + 1))"

# --- resume after the sweep's supervisor is killed ------------------------------------------------
# Point 0 is held until the test opens its gate, so that --resume meets a point still running
# whatever the machine's load (issue 45); the others run at once.
cat >gated.py <<'PY'
import os, sys, time
import mlw
lr = float(sys.argv[sys.argv.index("--lr") + 1])
gate = sys.argv[sys.argv.index("--gate") + 1]
for _ in range(1200):  # at most 120 s
    if lr != 1 or os.path.exists(gate):
        break
    time.sleep(0.1)
mlw.log_metric("loss", lr, step=1)
PY
GATE=$WORK/gate
"$MLW" -q experiment sweep -a -c local --max-concurrent 1 gated.py --lr 1,2,3,4 --gate "$GATE" >"$WORK/o"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
owner() { json_get "$(json_file ".mlw/sweeps/$sweep/sweep.json")" 'd["pid"]'; }
check "the first point runs (held at its gate)" wait_for 20 bash -c "'$MLW' history list --sweep $sweep | grep -q Running"
kill -9 "$(owner)"
states() { "$MLW" -o json history list --sweep "$sweep" | json_get "$(cat)" '" ".join(r["status"] for r in d)'; }
check "the points never started are Failed" wait_for 20 bash -c "[ \"\$('$MLW' -o json history list --sweep $sweep | grep -c '\"Failed\"')\" -ge 3 ]"
expect_eq "… none left Queued, the held one Running" "$(states)" "Running Failed Failed Failed"
expect_contains "... with the reason and the way out" "$("$MLW" history list --sweep "$sweep" -o json)" \
  "mlw experiment sweep --resume $sweep"
kept=$(json_get "$(json_file ".mlw/sweeps/$sweep/sweep.json")" 'd["points"][0]["run_id"]')
"$MLW" -q experiment sweep --resume "$sweep" -a >/dev/null
expect_eq "--resume -a while a point still runs ends with 0" "$?" 0
points=$(json_file ".mlw/sweeps/$sweep/sweep.json")
expect_eq "the running point keeps its run: no second run of it" \
  "$(json_get "$points" '(d["points"][0]["run_id"], len(d["points"][0].get("earlier_runs", [])))')" "('$kept', 0)"
touch "$GATE"
check "every point ends" wait_for 60 bash -c "[[ \"\$('$MLW' -o json history list --sweep $sweep)\" != *'\"Running\"'* && \"\$('$MLW' -o json history list --sweep $sweep)\" != *'\"Queued\"'* ]]"
points=$(json_file ".mlw/sweeps/$sweep/sweep.json")
expect_eq "the failed points have new runs, their first ones kept as earlier" \
  "$(json_get "$points" 'sum(len(p.get("earlier_runs", [])) for p in d["points"])')" 3
cmp=$("$MLW" -o json history compare --sweep "$sweep")
expect_eq "every point Completed after --resume" "$(json_get "$cmp" '" ".join(sorted(r["status"] for r in d))')" \
  "Completed Completed Completed Completed"
expect_eq "… one run of point 0 in the history" \
  "$(json_get "$("$MLW" -o json history list --sweep "$sweep")" 'sum(1 for r in d if r["point"] == 0)')" 1

# --- early stopping by the median rule -----------------------------------------------------------
cat >stop.yml <<'YML'
maxConcurrent: 1
metric: {name: loss, goal: min}
parameters:
  lr: [0.01, 0.02, 5, 6]
earlyStop: {rule: median, minSteps: 2, minCompleted: 2}
YML
"$MLW" -q experiment sweep -c local -f stop.yml train.py --steps 20 --pause 0.1 >"$WORK/o" 2>"$WORK/e"
expect_eq "a sweep with stopped trials ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
cmp=$("$MLW" -o json history compare --sweep "$sweep")
expect_eq "the two bad trials are Stopped (not Failed), the good ones Completed" \
  "$(json_get "$cmp" '" ".join("%s:%s" % (r["params"]["lr"], r["status"]) for r in d)')" \
  "0.01:Completed 0.02:Completed 5:Stopped 6:Stopped"
expect_contains "the reason is the run's problem" "$(json_get "$cmp" 'd[2]["problem"]')" "stopped early by the median rule"
expect_contains "the decision is logged" "$(cat ".mlw/sweeps/$sweep/decisions.log")" "median rule at step"
expect_contains "compare says what was saved" "$("$MLW" history compare --sweep "$sweep" 2>&1)" "2 trials stopped, about"
# Stopped early means fewer steps, whatever the machine's speed (a sanitizer build is slow): the
# stopped trials end long before their 20 steps (decided at step 2, stopped a poll or two after).
steps=$(for id in $(json_get "$cmp" '" ".join(r["run_id"] for r in d[2:])'); do
  metric_values ".mlw/runs/$id/metrics.jsonl" loss | wc -l
done | sort -n | tail -1)
check "stopped early: the stopped trials ran well under their 20 steps (at most $steps)" test "$steps" -lt 15
# The sweep page's curves: each trial's own, the stopped ones with them (not averaged into a band).
"$MLW" history ui --port 0 >"$WORK/ui2.out" 2>"$WORK/ui2.err" &
UI_PID=$!
check "the dashboard prints its URL" wait_for 10 test -s "$WORK/ui2.out"
URL=$(head -1 "$WORK/ui2.out")
BASE=${URL%%/?token=*}
PORT=${BASE#http://*:}
PORT=${PORT%%/*}
curves=$(curl -s --max-time 10 -H "Cookie: mlw_token_$PORT=${URL##*token=}" "$BASE/api/sweeps/$sweep/curves?metric=loss")
kill -INT "$UI_PID"
expect_eq "the curves have each trial, stopped ones included, with its status" \
  "$(json_get "$curves" '" ".join(sorted(t["status"] for t in d["trials"]))')" "Completed Completed Stopped Stopped"
expect_eq "… each a curve of its own (a stopped trial's ends early)" \
  "$(json_get "$curves" 'all(len(t["x"]) == len(t["y"]) > 0 for t in d["trials"]) and min(len(t["x"]) for t in d["trials"] if t["status"] == "Stopped") < 20')" "True"

# --- ASHA when higher is better: the best trials go on (issue 45) --------------------------------
# acc grows with lr at every step: the trial with the highest lr is the best at every rung.
printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--lr", type=float)\na = p.parse_args()\nfor s in range(1, 9):\n    mlw.log_metric("acc", a.lr * s / 10, step=s)\n    time.sleep(0.1)\n' >acc.py
cat >asha.yml <<'YML'
maxConcurrent: 1
metric: {name: acc, goal: max}
parameters:
  lr: [1, 2, 3, 4, 5, 6]
earlyStop: {rule: asha, minSteps: 2, eta: 2}
YML
"$MLW" -q experiment sweep -c local -f asha.yml acc.py >"$WORK/o" 2>"$WORK/e"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
cmp=$("$MLW" -o json history compare --sweep "$sweep")
expect_eq "ASHA with goal: max: the best trial (lr 6) completes, ranked first" \
  "$(json_get "$cmp" '(d[0]["params"]["lr"], d[0]["status"])')" "(6, 'Completed')"
expect_eq "… no trial better than a stopped one was stopped" "$(json_get "$cmp" \
  'all(s["params"]["lr"] < min(c["params"]["lr"] for c in d if c["status"] == "Completed") for s in d if s["status"] == "Stopped")')" "True"

# --- seed: in a sweep file: the same seed gives the same points, another seed others -------------
rand_points() { # SEED: the lr of each point of a 3-point random sweep with that seed
  printf 'method: random\ncount: 3\nseed: %s\nparameters:\n  lr: {uniform: [0.0, 1.0]}\n' "$1" >rand.yml
  "$MLW" -q experiment sweep -c local -f rand.yml train.py --steps 1 --pause 0 >"$WORK/o" 2>"$WORK/e"
  json_get "$("$MLW" -o json history list --sweep "$(sed -n 's/^SweepId: //p' "$WORK/o")")" \
    '" ".join("%.12f" % r["params"]["lr"] for r in d)'
}
first=$(rand_points 7)
expect_eq "seed: 7 twice gives the same points" "$(rand_points 7)" "$first"
check "… and seed: 8 others" test "$(rand_points 8)" != "$first"

# --- cancel -r SWEEP -----------------------------------------------------------------------------
"$MLW" -q experiment sweep -a -c local --max-concurrent 1 train.py --lr 1,2,3 --steps 100 --pause 0.1 >"$WORK/o"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
check "its first run starts" wait_for 20 bash -c "'$MLW' history list --sweep $sweep | grep -q Running"
"$MLW" -q experiment cancel -r "$sweep" >/dev/null
expect_eq "cancel -r SWEEP ends with 0" "$?" 0
expect_eq "every run of the sweep Canceled" "$(json_get "$("$MLW" -o json history list --sweep "$sweep")" \
  '" ".join(r["status"] for r in d)')" "Canceled Canceled Canceled"

# --- the simulated 4-GPU host: two targets, the leases pack the points ------------------------------
SIM=$MLW_TEST_NVIDIA_SIM
export PATH="$SIM:$PATH" DOCKER_HOST=$MLW_TEST_GPU_DOCKER_HOST
export MLW_LEASE_DIR=/tmp/mlw-leases-sweep.$$
trap 'rm -rf "$MLW_LEASE_DIR"; cleanup' EXIT
# Shared between this machine's users (root here, the GPU user over SSH) as an administrator
# makes it (docs/gpus.md).
shared_lease_folder "$MLW_LEASE_DIR"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
export HOME="$WORK/home"
mkdir -p "$HOME/.ssh"
printf '[127.0.0.1]:%s %s\n' "$MLW_TEST_SSH_PORT" "$(cut -d' ' -f1,2 "$MLW_TEST_SSH_HOST_KEY")" >"$HOME/.ssh/known_hosts"
new_project gpus
cat >lease.py <<'PY'
import re, subprocess, sys, time
seen = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
devices = ",".join(re.findall(r"UUID: GPU-[0-9a-f-]*(\d)\)", seen)) or "none"
start = time.time()
time.sleep(1.5)
print(f"LEASE {devices} {start:.3f} {time.time():.3f}", flush=True)
PY
"$MLW" -q computetarget attach remotedocker -n gpu -a "127.0.0.1:$MLW_TEST_SSH_PORT" -u "$MLW_TEST_GPU_USER" \
  --password-stdin --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
printf 'nvidiaDocker: true\ngpusPerRun: 1\n' >>aml_config/gpu.compute
"$MLW" -q computetarget attach local -n here >/dev/null 2>&1 || true
echo "gpusPerRun: 1" >>aml_config/here.compute
"$MLW" -q experiment sweep -c gpu,here lease.py --seed 1,2,3,4,5,6,7,8 >"$WORK/o" 2>"$WORK/e"
rc=$?
expect_eq "an 8-point sweep over two targets on the 4-GPU host ends with 0" "$rc" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
# (Seen once under the sanitizers in a rehearsal, with every script run: what each run became.)
[ "$rc" = 0 ] || json_get "$json" '"\n".join("  %s %s %s %s" % (r["run_id"], r["target"],
  r["status"], r.get("problems")) for r in d if r["status"] != "Completed")'
expect_eq "both targets took points" "$(json_get "$json" '" ".join(sorted({r["target"] for r in d}))')" "gpu here"
lines=$(for id in $(json_get "$json" '" ".join(r["run_id"] for r in d)'); do "$MLW" history logs -r "$id" | grep '^LEASE'; done)
expect_eq "eight runs reported their GPUs" "$(grep -c LEASE <<<"$lines")" 8
expect_eq "the leases packed them: at most 4 at once, on distinct GPUs" "$(python3 -c '
import sys
runs = [l.split() for l in sys.stdin.read().splitlines()]
runs = [(r[1], float(r[2]), float(r[3])) for r in runs]
bad = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:]
       if a[1] < b[2] and b[1] < a[2] and set(a[0].split(",")) & set(b[0].split(","))]
peak = max(sum(1 for r in runs if r[1] <= t[1] < r[2]) for t in runs)
print("ok" if not bad and peak <= 4 else f"overlap {bad} peak {peak}")' <<<"$lines")" "ok"

# ASHA on the leased GPUs of the simulated host, six trials at once on its 4 GPUs: each judged
# itself in its container against the sweep's record on the host (in the GPU user's share
# folder). Which trial reaches a rung first is the machine's timing: the verdicts are computed
# again here, by hand's rule, from the record's order. q 0.1 (the best: never stopped) dies after
# its epoch-3 report (exit 75, before its checkpoint); its restart policy runs it again from the
# checkpoint of epoch 2 (MLW_RESUME=1), and its second report at epochs 3 is given the recorded
# verdict: nothing is decided twice.
"$MLW" -q computetarget attach remotedocker -n gpur -a "127.0.0.1:$MLW_TEST_SSH_PORT" \
  -u "$MLW_TEST_GPU_USER" --password-stdin --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
printf 'nvidiaDocker: true\ngpusPerRun: 1\nrestart: {onExitCodes: [75], maxRestarts: 1, backoffSeconds: 0}\n' \
  >>aml_config/gpur.compute
cat >ckpt.py <<'PY'
import argparse, os, sys, time, mlw
p = argparse.ArgumentParser()
p.add_argument("--q", type=float)
p.add_argument("--epochs", type=int)
a = p.parse_args()
ck = os.path.join(os.environ["MLW_CHECKPOINT_DIR"], "epoch")
start = int(open(ck).read()) if os.environ.get("MLW_RESUME") == "1" else 0
print("attempt", os.environ["MLW_RESTART_COUNT"], "from epoch", start, flush=True)
for e in range(start + 1, a.epochs + 1):
    mlw.log_metric("loss", a.q + 1 / e, step=e)
    if a.q == 0.1 and e == 3 and os.environ["MLW_RESTART_COUNT"] == "0":
        sys.exit(75)
    open(ck, "w").write(str(e))
    time.sleep(0.3)
PY
"$MLW" -q experiment sweep -c gpur --metric loss --scheduler asha --resource epochs --min 1 --max 9 \
  ckpt.py --q 0.5,0.9,0.1,0.7,0.3,0.8 >"$WORK/o" 2>"$WORK/e"
expect_eq "an ASHA sweep on the leased GPUs ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
record=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)/.mlw/share/gpus/gpur/sweeps/$sweep/rungs.jsonl
expect_eq "… every verdict in the record is the rule's, in the record's order" "$(python3 - "$record" <<'PY'
import json, sys
seen, bad = {}, []
for e in map(json.loads, open(sys.argv[1])):
    at = seen.setdefault(e["rung"], [])
    at.append(e["value"])
    n, cut = len(at), sorted(at)[len(at) // 3 - 1] if len(at) >= 3 else None
    want = "goes on" if n < 3 else ("promoted" if e["value"] <= cut else "stopped")
    bad += [] if want == e["verdict"] else [(e["point"], e["rung"], e["verdict"], want)]
print(bad or "ok")
PY
)" "ok"
expect_eq "… the trials it stopped are Stopped, the others Completed" "$(json_get "$json" \
  'sorted("%s:%s" % (r["point"], r["status"]) for r in d)')" "$(python3 -c '
import json, sys
stopped = {e["point"] for e in map(json.loads, open(sys.argv[1])) if e["verdict"] == "stopped"}
print(sorted("%s:%s" % (p, "Stopped" if p in stopped else "Completed") for p in range(6)))' "$record")"
expect_eq "… q 0.1, restarted once, judged once at each rung" "$(json_get "$json" \
  '[(r["status"], r.get("restarts")) for r in d if r["params"]["q"] == 0.1]') $(grep -c '"point": 2,' "$record")" \
  "[('Completed', 1)] 2"
expect_contains "… its second attempt went on from its checkpoint (MLW_RESUME=1)" \
  "$("$MLW" history logs -r "$(json_get "$json" '[r["run_id"] for r in d if r["params"]["q"] == 0.1][0]')")" \
  "attempt 1 from epoch 2"

# The laptop may close: a sweep on one SSH target puts its points there ahead of their turn, each
# waiting for one of the sweep's --max-concurrent slots, so that with this machine's processes
# stopped (SIGSTOP of the sweep's supervisor and of every run's: the laptop asleep) the host still
# starts the next point as one ends, two at a time, all six; woken, the records catch up.
# Each run 4 s: the two slots' runs overlap even where a loaded machine takes seconds to start one
# (with 1 s runs, a CI machine once started each next point only after the other slot's had ended).
printf 'import time\nt = time.time()\ntime.sleep(4)\nprint(f"TURN {t:.3f} {time.time():.3f}")\n' >turn.py
"$MLW" -q experiment sweep -a -c gpu --max-concurrent 2 turn.py --x 1,2,3,4,5,6 >"$WORK/o" 2>"$WORK/e"
expect_eq "a detached sweep of six points on one SSH target starts" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
ids=$(json_get "$("$MLW" -o json history list --sweep "$sweep")" '" ".join(r["run_id"] for r in d)')
on_host=$(getent passwd "$MLW_TEST_GPU_USER" | cut -d: -f6)/.mlw/runs
all_have() { for id in $ids; do [ -e "$on_host/$id/$1" ] || return 1; done; }
check "all six wait on the host, not only the two it runs at once" wait_for 60 all_have monitor.pid
tree_of() { echo "$1"; for c in $(ps -o pid= --ppid "$1"); do tree_of "$c"; done; }
asleep=$( (tree_of "$(owner)"; for id in $ids; do json_get "$(json_file ".mlw/runs/$id/run.json")" 'd["pid"]'
  done) | awk -v me=$$ '$1 > 1 && $1 != me' | sort -u)
# shellcheck disable=SC2086 # one pid a word
kill -STOP $asleep 2>/dev/null
check "… with this machine asleep, the host runs all six to their end" wait_for 90 all_have exit_code
expect_eq "… two at a time (the sweep's slots), never more" "$(for id in $ids; do
  grep -h '^TURN' "$on_host/$id/driver_log.txt"; done | python3 -c '
import sys
runs = [tuple(map(float, l.split()[1:])) for l in sys.stdin]
print(len(runs), max(sum(1 for r in runs if r[0] <= t[0] < r[1]) for t in runs))')" "6 2"
# shellcheck disable=SC2086 # one pid a word
kill -CONT $asleep 2>/dev/null
check "… woken, every record says Completed" wait_for 60 bash -c \
  "[ \"\$('$MLW' -o json history list --sweep $sweep | grep -c '\"Completed\"')\" = 6 ]"

# TPE's points wait there too, each proposed on the host as its turn comes (python/mlw/propose.py)
# from the trials that ended there: asleep, one at a time, each point after the 3 drawn at random
# learns from every one before it; woken, each record has the point proposed for it as its
# arguments; the same seed proposes the same points again.
cat >tpe.py <<'PY'
import argparse, mlw
p = argparse.ArgumentParser(); p.add_argument("--x", type=float); p.add_argument("--opt")
a = p.parse_args()
mlw.log_metric("loss", (a.x - 0.3) ** 2 + (0 if a.opt == "b" else 0.05))
PY
printf 'method: tpe\ncount: 7\nstartup: 3\nmaxConcurrent: 1\nmetric: {name: loss}\nparameters:\n  x: {uniform: [0, 1]}\n  opt: [a, b, c]\n' >tpe.yml
# proposals: of the runs' logs on stdin, "K:draws" or "K:proposes" for each point's proposal
# there (K: the ended trials it saw), in K's order.
proposals() {
  sed -n 's/^mlw: TPE \(proposes\|draws at random\) .*(\([0-9]*\) ended trials)$/\2:\1/p' |
    sort -n | cut -d' ' -f1 | tr '\n' ' '
}
tpe_sweep() { # SEED: starts it detached; sets sweep and ids
  "$MLW" -q experiment sweep -a -c gpu -f tpe.yml --seed "$1" tpe.py >"$WORK/o" 2>"$WORK/e"
  sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
  ids=$(json_get "$("$MLW" -o json history list --sweep "$sweep")" '" ".join(r["run_id"] for r in d)')
}
tpe_points() { # the sweep's records' points, in point order
  json_get "$("$MLW" -o json history list --sweep "$sweep")" '" ".join("%s:%.9f:%s" % (r["point"],
    r["params"]["x"], r["params"]["opt"]) for r in sorted(d, key=lambda r: r["point"]))'
}
tpe_sweep 5
check "a TPE sweep's seven points all wait on the host" wait_for 60 all_have monitor.pid
asleep=$( (tree_of "$(owner)"; for id in $ids; do json_get "$(json_file ".mlw/runs/$id/run.json")" 'd["pid"]'
  done) | awk -v me=$$ '$1 > 1 && $1 != me' | sort -u)
# shellcheck disable=SC2086 # one pid a word
kill -STOP $asleep 2>/dev/null
check "… with this machine asleep, the host runs all seven" wait_for 120 all_have exit_code
expect_eq "… each proposed there, point k from the k trials before it" "$(for id in $ids; do
  cat "$on_host/$id/driver_log.txt"; done | proposals)" \
  "0:draws 1:draws 2:draws 3:proposes 4:proposes 5:proposes 6:proposes "
# shellcheck disable=SC2086 # one pid a word
kill -CONT $asleep 2>/dev/null
check "… woken, every record says Completed" wait_for 60 bash -c \
  "[ \"\$('$MLW' -o json history list --sweep $sweep | grep -c '\"Completed\"')\" = 7 ]"
first=$(tpe_points)
expect_eq "… each record has the point proposed there" "$first" "$(python3 -c '
import json, sys
p = [json.loads(l) for l in open(sys.argv[1]) if "params" in l]
print(" ".join("%s:%.9f:%s" % (e["point"], e["params"]["x"], e["params"]["opt"]) for e in sorted(p, key=lambda e: e["point"])))' \
  "${on_host%/runs}/share/gpus/gpu/sweeps/$sweep/tpe.jsonl")"
last=$(json_file ".mlw/runs/$(json_get "$("$MLW" -o json history list --sweep "$sweep")" \
  '[r["run_id"] for r in d if r["point"] == 6][0]')/run.json")
expect_eq "… as its arguments (a rerun is given them again)" "$(json_get "$last" \
  '" ".join(d["arguments"][-4:]) == " ".join(d["command"][-4:])')-$(json_get "$last" '" ".join(d["command"][-4:])')" \
  "True-$(json_get "$last" '"--x %s --opt %s" % (repr(d["params"]["x"]), d["params"]["opt"])')"
expect_contains "… the decisions log says it" "$(cat ".mlw/sweeps/$sweep/decisions.log")" \
  "(point 6): TPE proposes"
tpe_sweep 5
check "the same seed again" wait_for 120 bash -c \
  "[ \"\$('$MLW' -o json history list --sweep $sweep | grep -c '\"Completed\"')\" = 7 ]"
expect_eq "… proposes the same points there" "$(tpe_points)" "$first"

# TPE with ASHA there: the trials stopped at a rung are among those each proposal learns from.
printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--q", type=float)\np.add_argument("--epochs", type=int)\na = p.parse_args()\nfor e in range(1, a.epochs + 1):\n    mlw.log_metric("loss", a.q + 1 / e, step=e)\n    time.sleep(0.1)\n' >tq.py
"$MLW" -q experiment sweep -c gpu --max-concurrent 1 --metric loss --search tpe --count 6 \
  --startup 3 --seed 3 --scheduler asha --resource epochs --min 1 --max 9 tq.py \
  --q 0.1,0.3,0.5,0.7,0.9 >"$WORK/o" 2>"$WORK/e"
expect_eq "TPE with ASHA on the host ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "… its trials completed or were stopped there" \
  "$(json_get "$json" '" ".join(sorted({r["status"] for r in d}))')" "Completed Stopped"
expect_eq "… point k proposed from the k before it, the stopped ones among them" "$(for id in \
  $(json_get "$json" '" ".join(r["run_id"] for r in d)'); do "$MLW" history logs -r "$id"
  done | proposals)" "0:draws 1:draws 2:draws 3:proposes 4:proposes 5:proposes "

# Canceled while its points wait there for their turn: the waits end, every run Canceled, and
# nothing of the sweep's is left running on the host.
printf 'import time\nprint("long", flush=True)\ntime.sleep(60)\n' >long.py
"$MLW" -q experiment sweep -a -c gpu --max-concurrent 1 long.py --x 1,2,3 >"$WORK/o" 2>"$WORK/e"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
ids=$(json_get "$("$MLW" -o json history list --sweep "$sweep")" '" ".join(r["run_id"] for r in d)')
check "a sweep's three points wait on the host, one runs" wait_for 60 bash -c \
  "$(declare -f all_have); ids='$ids' on_host='$on_host' all_have monitor.pid && '$MLW' history list --sweep $sweep | grep -q Running"
"$MLW" -q experiment cancel -r "$sweep" >/dev/null 2>&1
check "… canceled, every run ends Canceled" wait_for 60 bash -c \
  "[ \"\$('$MLW' -o json history list --sweep $sweep | grep -c '\"Canceled\"')\" = 3 ]"
check "… and no monitor of it is left on the host" all_have exit_code

# --- Slurm: a sweep's points are one job array, at most --max-concurrent at once (%K) ---------------
check "no other suite is using the Slurm cluster" slurm_lock shared
new_project slurmsweep
cat >s.py <<'PY'
import argparse, time
import mlw
p = argparse.ArgumentParser(); p.add_argument("--x", type=int); a = p.parse_args()
mlw.log_metric("score", a.x * 2)
print("element of x", a.x, flush=True)
start = time.time()
time.sleep(2)
print("SPAN", start, time.time(), flush=True)
PY
# peak_of SWEEP: the most points whose scripts ran at the same moment (their own SPAN lines: the
# records' times lag the scripts' by the supervisors' rounds).
peak_of() {
  local id
  for id in $(json_get "$("$MLW" -o json history list --sweep "$1")" '" ".join(r["run_id"] for r in d)'); do
    "$MLW" history logs -r "$id" | grep '^SPAN'
  done | python3 -c '
import sys
spans = [tuple(map(float, l.split()[1:3])) for l in sys.stdin]
print(len(spans), max(sum(1 for b, e in spans if b <= s < e) for s, _ in spans))'
}
"$MLW" -q computetarget attach slurm -n cluster -a "127.0.0.1:$MLW_TEST_SSH_PORT" -u "$MLW_TEST_SLURM_USER" \
  --password-stdin --accept-host-key <"$WORK/pw" >/dev/null 2>&1
"$MLW" -q experiment sweep -c cluster --max-concurrent 2 s.py --x 1,2,3 >"$WORK/o" 2>"$WORK/e"
expect_eq "a Slurm sweep ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "each point its own record and metric" \
  "$(json_get "$json" '" ".join("%s:%s" % (r["status"], r["metrics"].get("score")) for r in d)')" \
  "Completed:2 Completed:4 Completed:6"
expect_eq "one array: the elements' ids are JOBID_0, _1, _2 of one job" \
  "$(json_get "$json" '"%d %s" % (len({r["job_id"].split("_")[0] for r in d}), " ".join(r["job_id"].split("_")[1] for r in d))')" \
  "1 0 1 2"
for i in 0 1 2; do
  id=$(json_get "$json" "d[$i][\"run_id\"]")
  expect_contains "element $i's log is its run's" "$("$MLW" history logs -r "$id")" "element of x $((i + 1))"
done
array=$(json_get "$json" 'd[0]["job_id"].split("_")[0]')
expect_contains "Slurm holds one array job of 3 tasks throttled to 2" \
  "$(scontrol -o show job "$array" 2>&1)" "ArrayTaskThrottle=2"
# (the cluster is shared with test_slurm: fewer than 2 at once can happen; more must not)
peak=$(peak_of "$sweep")
check "three scripts ran, at most 2 at once ($peak)" test "${peak% *}" = 3 -a "${peak#* }" -le 2
# Early stopping on Slurm: the metrics come back live (follow.sh's mlw-metric lines), and a bad
# element is stopped with scancel JOBID_i.
cat >q.py <<'PY'
import argparse, time
import mlw
p = argparse.ArgumentParser(); p.add_argument("--q", type=float); a = p.parse_args()
for s in range(1, 16):
    mlw.log_metric("loss", a.q / s, step=s)
    time.sleep(0.2)
PY
cat >stop.yml <<'YML'
maxConcurrent: 1
metric: {name: loss, goal: min}
parameters:
  q: [1, 1.1, 5, 6]
earlyStop: {rule: median, minSteps: 2, minCompleted: 2}
YML
"$MLW" -q experiment sweep -c cluster -f stop.yml q.py >"$WORK/o" 2>"$WORK/e"
expect_eq "a Slurm sweep with stopped elements ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "the bad elements are Stopped early, the good ones Completed" \
  "$(json_get "$json" '" ".join(r["status"] for r in d)')" "Completed Completed Stopped Stopped"
expect_eq "… each after a few of its 15 steps (3 s)" \
  "$(json_get "$json" 'all(r["duration_s"] < 2.5 for r in d[2:])')" "True"
expect_contains "the decision was scancel of the element" "$(cat ".mlw/sweeps/$sweep/decisions.log")" "median rule"
# ASHA on the job array: rungs at epochs 2, 4, 8 (eta 2); one element at a time, so by hand: q 1
# goes on (alone at each rung), 1.1, 5 and 6 are not in the top half at rung 2.
printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--q", type=float)\np.add_argument("--epochs", type=int)\na = p.parse_args()\nfor s in range(1, a.epochs + 1):\n    mlw.log_metric("loss", a.q / s, step=s)\n    time.sleep(0.2)\n' >qe.py
# asha_array TARGET WHAT: that sweep on TARGET's job array, its statuses as computed by hand.
asha_array() {
  "$MLW" -q experiment sweep -c "$1" --max-concurrent 1 --metric loss --scheduler asha \
    --resource epochs --min 2 --max 15 --eta 2 qe.py --q 1,1.1,5,6 >"$WORK/o" 2>"$WORK/e"
  expect_eq "ASHA on $2 ends with 0" "$?" 0
  sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
  expect_eq "… its elements completed and stopped as computed by hand" "$(json_get "$("$MLW" -o json \
    history list --sweep "$sweep")" '" ".join("%s:%s" % (r["params"]["q"], r["status"]) for r in sorted(d, key=lambda r: r["point"]))')" \
    "1:Completed 1.1:Stopped 5:Stopped 6:Stopped"
}
asha_array cluster "a Slurm job array"
expect_contains "… stopped at the first rung" "$(cat ".mlw/sweeps/$sweep/decisions.log")" \
  "(point 1): stopped by ASHA at epochs 2: loss 0.55 is not in the top 1/2"
# TPE on a job array: each element proposes its point as it starts, from the elements that ended
# before it (one at a time: element k from the k before it), and its record has it.
cp ../gpus/tpe.py .
# tpe_array TARGET WHAT: a TPE sweep of 4 points (2 at random) on TARGET's job array.
tpe_array() {
  "$MLW" -q experiment sweep -c "$1" --max-concurrent 1 --metric loss --search tpe --count 4 \
    --startup 2 --seed 3 tpe.py --x 0.1,0.2,0.3,0.4,0.5 --opt a,b >"$WORK/o" 2>"$WORK/e"
  expect_eq "TPE on $2 ends with 0" "$?" 0
  sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
  json=$("$MLW" -o json history list --sweep "$sweep")
  expect_eq "… each element proposed its point there, from those that ended before it" "$(for id in \
    $(json_get "$json" '" ".join(r["run_id"] for r in d)'); do "$MLW" history logs -r "$id"
  done | proposals)" "0:draws 1:draws 2:proposes 3:proposes "
  expect_eq "… its records have their points" "$(json_get "$json" \
    'all(r["params"]["x"] in (0.1, 0.2, 0.3, 0.4, 0.5) and r["params"]["opt"] in "ab" for r in d) and len(d)')" 4
}
tpe_array cluster "a Slurm job array"
slurm_unlock

# --- Grid Engine: one job array, qsub -t 1-3 -tc 2 --------------------------------------------------
read -r QPORT EPORT <<<"$MLW_TEST_SGE_PORTS"
export SGE_ROOT=$MLW_TEST_SGE_ROOT SGE_CELL=default SGE_QMASTER_PORT=$QPORT SGE_EXECD_PORT=$EPORT
"$MLW" -q computetarget attach sge -n cell -a "127.0.0.1:$MLW_TEST_SSH_PORT" -u "$MLW_TEST_SGE_USER" \
  --password-stdin --accept-host-key <"$WORK/pw" >/dev/null 2>&1
"$MLW" -q experiment sweep -c cell --max-concurrent 2 s.py --x 1,2,3 >"$WORK/o" 2>"$WORK/e"
expect_eq "a Grid Engine sweep ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
json=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "each task its own record and metric" \
  "$(json_get "$json" '" ".join("%s:%s" % (r["status"], r["metrics"].get("score")) for r in d)')" \
  "Completed:2 Completed:4 Completed:6"
expect_eq "one array: the tasks' ids are JOBID.1, .2, .3 of one job" \
  "$(json_get "$json" '"%d %s" % (len({r["job_id"].split(".")[0] for r in d}), " ".join(r["job_id"].split(".")[1] for r in d))')" \
  "1 1 2 3"
id=$(json_get "$json" 'd[2]["run_id"]')
expect_contains "task 3's log is its run's" "$("$MLW" history logs -r "$id")" "element of x 3"
expect_eq "three scripts ran, at most 2 at once (-tc 2)" "$(peak_of "$sweep")" "3 2"
array=$(json_get "$json" 'd[0]["job_id"].split(".")[0]')
expect_contains "Grid Engine accounted three tasks of the one job" "$(qacct -j "$array" 2>&1 | grep -c '^taskid')" 3
# ASHA in a Grid Engine array, as on Slurm above (rungs 2, 4, 8; one task at a time): each task
# judged itself against the sweep's record in the cell's shared home.
asha_array cell "a Grid Engine array"
tpe_array cell "a Grid Engine array"
finish
