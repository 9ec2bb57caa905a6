#!/usr/bin/env bash
# Sweeps with a scheduler or a Bayesian search (docs/sweeps.md "ASHA and Hyperband", "Bayesian
# search (TPE)") on the local target: ASHA's and Hyperband's promotions against references
# computed by hand from the logged metrics, taken on the target by each trial (the sweep's
# record in the share folder; the sweep's supervisor asleep), the record's hostile lines, the
# dashboard's rungs page in Chromium, bad input, TPE's reproducible proposals. ASHA on leased
# GPUs, on Slurm and on Grid Engine is test_sweeps.sh's.
source "$(dirname "$0")/lib.sh"

export HOME="$WORK/home"
mkdir -p "$HOME"
new_project sched
"$MLW" -q computetarget attach local -n local >/dev/null 2>&1 || true
owner() { json_get "$(json_file ".mlw/sweeps/$sweep/sweep.json")" 'd["pid"]'; }

# --- --scheduler asha: promotions as computed by hand from the logged metrics (issue 49) -------
# loss = q + 1/epoch, logged with the epoch as its step; one trial at a time, so the order of the
# points is the order of the decisions. Rungs at epochs 1 and 3 (--min 1 --max 9 --eta 3); a
# trial goes on while fewer than eta have reached its rung, else when in the top 1/eta there:
#   q   0.5 0.9 0.1 | 0.7  0.3  0.8  | 0.2          | 0.6  0.4
#       on  on  on  | stop stop stop | on, stop at 3 | stop stop  (the first rung's cutoff:
#   1.1 for 3-5 trials, 1.2 (6-8: top 2), 1.3 (9: top 3); rung 3: 0.2+1/3 is not the best of 4).
# curve_script PAUSE: loss = q + 1/epoch, logged with the epoch as its step, PAUSE s an epoch.
curve_script() { printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--q", type=float)\np.add_argument("--epochs", type=int)\na = p.parse_args()\nfor e in range(1, a.epochs + 1):\n    mlw.log_metric("loss", a.q + 1 / e, step=e)\n    time.sleep(%s)\n' "$1"; }
curve_script 0.25 >curve.py
# hand_asha TARGETS: the sweep above, one trial at a time, on TARGETS (sets sweep); by_hand: its
# outcome; q_statuses: "q:status" of the sweep's runs in the points' order.
hand_asha() {
  "$MLW" -q experiment sweep -c "$1" --max-concurrent 1 --metric loss --scheduler asha \
    --resource epochs --min 1 --max 9 --eta 3 curve.py --q 0.5,0.9,0.1,0.7,0.3,0.8,0.2,0.6,0.4 \
    >"$WORK/o" 2>"$WORK/e"
  local code=$?
  sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
  return "$code"
}
by_hand="0.5:Completed 0.9:Completed 0.1:Completed 0.7:Stopped 0.3:Stopped 0.8:Stopped 0.2:Stopped 0.6:Stopped 0.4:Stopped"
q_statuses() {
  json_get "$("$MLW" -o json history list --sweep "$sweep")" \
    '" ".join("%s:%s" % (r["params"]["q"], r["status"]) for r in sorted(d, key=lambda r: r["point"]))'
}
hand_asha local
expect_eq "an ASHA sweep whose trials completed or were stopped ends with 0" "$?" 0
list=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "ASHA: the trials completed and stopped as computed by hand" "$(q_statuses)" "$by_hand"
expect_eq "… each trial was given the whole budget (--epochs 9)" \
  "$(json_get "$list" 'sorted(set(r["params"]["epochs"] for r in d))')" "[9]"
decisions=$(cat ".mlw/sweeps/$sweep/decisions.log")
expect_contains "… q 0.2 was promoted at the first rung, saying why" "$decisions" \
  "(point 6): promoted at epochs 1: loss 1.2 is in the top 1/3 (2 of 7 trials at that rung; cutoff 1.2)"
expect_contains "… and stopped at the second" "$decisions" \
  "(point 6): stopped by ASHA at epochs 3: loss 0.533333 is not in the top 1/3 (1 of 4 trials at that rung; cutoff 0.433333)"
cmp=$("$MLW" -o json history compare --sweep "$sweep")
expect_eq "compare --sweep: the budget each trial reached (completed: 9; q 0.2: from rung 3 on)" \
  "$(json_get "$cmp" '" ".join("%s:%s" % (r["params"]["q"], 9 if r["reached"] == 9 else ("part" if 3 <= r["reached"] < 9 else r["reached"])) for r in d[:4])')" \
  "0.1:9 0.2:part 0.5:9 0.9:9"
expect_contains "… and the budget spent against every trial's whole budget" \
  "$("$MLW" history compare --sweep "$sweep" 2>&1)" "of 81 epochs spent"
# The dashboard's page of this sweep, in Chromium (ui_sweep_rungs_browser.cjs): the rungs' tallies
# by hand (rung 1: 9 reached, 2 promoted, 2 went on, 5 stopped; rung 3: 4, 1, 2, 1), the budget,
# each trial's reached budget best first, the best so far at each completed trial's end.
"$MLW" history ui --port 0 >"$WORK/ui_rungs.out" 2>"$WORK/ui_rungs.err" &
UI_PID=$!
check "the dashboard prints its URL" wait_for 10 test -s "$WORK/ui_rungs.out"
BROWSER=$(cd "$MLW_SOURCE_DIR/tests/integration" && timeout 120 node ui_sweep_rungs_browser.cjs \
  "$(head -1 "$WORK/ui_rungs.out")" "$sweep" '{"rungs": [[1, 9, 2, 2, 5], [3, 4, 1, 2, 1]],
  "budget": "Budget: 35 of 81 epochs spent (43%) against every trial given --epochs 9",
  "reached": [9, 3, 9, 9, 1, 1, 1, 1, 1], "best": [0.611111, 0.611111, 0.211111]}' ${MLW_UI_SHOTS:-} 2>&1)
kill -INT "$UI_PID"
count_browser_checks "$BROWSER"
check "the browser checks ran (8 of them)" test "$(grep -c '^ok \|^not ok ' <<<"$BROWSER")" -ge 8
# Each trial judged itself on the target, under a lock on the sweep's record in the target's share
# folder: a line per trial and rung, in the order they were taken (13 by hand: 3 trials at both
# rungs, 4 stopped at the first, q 0.2 at both).
rungs=$HOME/.mlw/share/sched/local/sweeps/$sweep/rungs.jsonl
expect_eq "the decisions are in the sweep's record on the target, one line per trial and rung" \
  "$(python3 -c 'import json,sys; print(" ".join("%d@%d:%s" % (e["point"], e["rung"], e["verdict"][0]) for e in map(json.loads, open(sys.argv[1]))))' "$rungs")" \
  "0@1:g 0@3:g 1@1:g 1@3:g 2@1:p 2@3:p 3@1:s 4@1:s 5@1:s 6@1:p 6@3:s 7@1:s 8@1:s"
# Each stopped trial ended itself at once: exit 0, and no epoch logged past the rung it was stopped
# at (5 at epoch 1, q 0.2 at epoch 3); counted in epochs, not seconds, which a loaded machine bends.
expect_eq "… a trial stopped there ends itself at once (exit 0, Stopped, no epoch past its rung)" \
  "$(json_get "$list" 'sorted((r["exit_code"], max(float(json.loads(l)["step"]) for l in open(".mlw/runs/%s/metrics.jsonl" % r["run_id"]) if json.loads(l).get("name") == "loss")) for r in d if r["status"] == "Stopped")')" \
  "[(0, 1.0), (0, 1.0), (0, 1.0), (0, 1.0), (0, 1.0), (0, 3.0)]"
# Over two targets there is no record they share: the sweep's supervisor judges the same trials by
# the same rule as they report (the same outcome by hand), and none is judged on a target.
"$MLW" -q computetarget attach local -n local2 >/dev/null 2>&1
hand_asha local,local2
expect_eq "ASHA over two targets ends with 0" "$?" 0
expect_eq "… judged by its supervisor, as computed by hand" "$(q_statuses)" "$by_hand"
expect_contains "… saying why, as on the target" "$(cat ".mlw/sweeps/$sweep/decisions.log")" \
  "(point 6): stopped by ASHA at epochs 3: loss 0.533333 is not in the top 1/3 (1 of 4 trials at that rung; cutoff 0.433333)"
check "… with no record on a target" test ! -e "$HOME/.mlw/share/sched/local/sweeps/$sweep"

# Resumed after its supervisor was killed, a sweep judged here replays what it had decided of a
# trial still running (from decisions.log): no rung of it is judged twice.
curve_script 0.5 >slow.py
"$MLW" -q experiment sweep -a -c local,local2 --max-concurrent 1 --metric loss --scheduler asha \
  --resource epochs --min 1 --max 9 --eta 3 slow.py --q 0.5,0.9 >"$WORK/o" 2>"$WORK/e"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
check "its first trial reached the first rung" wait_for 20 grep -q "(point 0): reached epochs 1 " \
  ".mlw/sweeps/$sweep/decisions.log"
kill -9 "$(owner)"
"$MLW" -q experiment sweep --resume "$sweep" >"$WORK/o" 2>"$WORK/e"
expect_eq "… resumed while it runs, the sweep ends with 0" "$?" 0
expect_eq "… that trial judged once at each rung" "$(for r in 1 3; do
  grep -c "(point 0): reached epochs $r " ".mlw/sweeps/$sweep/decisions.log"; done | xargs)" "1 1"

# The laptop may sleep: with the sweep's supervisor stopped (SIGSTOP), the third trial to reach the
# rung (epochs 1; q 0.3, after 6 s) is still judged, by itself, against the two before it.
printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--q", type=float)\np.add_argument("--epochs", type=int)\na = p.parse_args()\ntime.sleep(a.q * 20)\nfor e in range(1, a.epochs + 1):\n    mlw.log_metric("loss", a.q + 1 / e, step=e)\n    time.sleep(0.2)\n' >late.py
"$MLW" -q experiment sweep -a -c local --max-concurrent 3 --metric loss --scheduler asha \
  --resource epochs --min 1 --max 3 --eta 3 late.py --q 0.1,0.2,0.3 >"$WORK/o"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
check "the three trials start" wait_for 20 bash -c "! '$MLW' history list --sweep $sweep | grep -q Queued"
asleep=$(owner)
kill -STOP "$asleep"
check "… with the sweep's supervisor asleep, q 0.3 is Stopped at the rung" wait_for 30 bash -c \
  "'$MLW' -o json history list --sweep $sweep | grep -q '\"Stopped\"'"
expect_not_contains "… by itself (the supervisor logged nothing of it)" \
  "$(cat ".mlw/sweeps/$sweep/decisions.log")" "stopped by ASHA"
kill -CONT "$asleep"
check "… and once it wakes, the sweep ends" wait_for 30 grep -q "every point's run has ended" \
  ".mlw/sweeps/$sweep/decisions.log"
expect_eq "q 0.1 and 0.2 completed, q 0.3 stopped" "$(q_statuses)" "0.1:Completed 0.2:Completed 0.3:Stopped"
expect_contains "… the supervisor logged the decision taken while it slept" \
  "$(cat ".mlw/sweeps/$sweep/decisions.log")" \
  "(point 2): stopped by ASHA at epochs 1: loss 1.3 is not in the top 1/3 (1 of 3 trials at that rung; cutoff 1.1)"
# The record on a target is outside input: a line cut short (its decider killed while writing) and
# a line that is no JSON are passed over, and the next line is one of its own; a share folder
# that cannot be written leaves the trial going on, unjudged, saying why. Run as a trial runs it.
judge_alone() { # SHARE: the helper judging one report of loss 0.05 at epochs 1 (eta 2)
  MLW_SHARE_DIR=$1 MLW_METRICS_FILE=$WORK/hr.jsonl PYTHONPATH=$MLW_SOURCE_DIR/python \
    MLW_SCHEDULER='{"type": "asha", "resource": "epochs", "min": 1, "max": 9, "eta": 2, "metric": "loss", "sweep": "s", "point": 0, "bracket": 0}' \
    python3 -c 'import mlw; mlw.log_metric("loss", 0.05, step=1); print("went on")' 2>&1
}
mkdir -p "$WORK/hr/sweeps/s"
printf '{"point": 9, "bracket": 0, "rung": 1, "value": 0.1, "verdict": "goes on"}\nnot json\n{"point": 8, "rung": 1, "val' \
  >"$WORK/hr/sweeps/s/rungs.jsonl"
expect_eq "a record with a cut line and garbage: judged against the good line" "$(judge_alone "$WORK/hr/")" "went on"
expect_contains "… promoted, saying so in its metrics" "$(cat "$WORK/hr.jsonl")" \
  "promoted at epochs 1: loss 0.05 is in the top 1/2 (1 of 2 trials at that rung; cutoff 0.05)"
expect_eq "… its line on a line of its own" "$(tail -n 1 "$WORK/hr/sweeps/s/rungs.jsonl" | json_get "$(cat)" 'd["point"]')" 0
expect_eq "a share folder that cannot be written: the trial goes on" "$(judge_alone "$WORK/hr.jsonl/")" "went on"
expect_contains "… saying it was not judged, and why" "$(cat "$WORK/hr.jsonl")" \
  '"not judged at step 1: NotADirectoryError'
run_mlw experiment sweep -c local --scheduler asha --resource epochs --min 9 --max 3 --metric loss \
  curve.py --q 1,2
expect_eq "--min more than --max is refused (125, as submit refuses)" "$CODE" 125
expect_contains "… in one line" "$ERR" "--min 9 is more than --max 3"
run_mlw experiment sweep -c local --scheduler asha --resource epochs --max 3 --eta 1 --metric loss \
  curve.py --q 1,2
expect_contains "eta 1 is refused" "$ERR" "eta must be 2 or more (got 1)"
run_mlw experiment sweep -c local --scheduler asha --resource epochs --max 3 curve.py --q 1,2
expect_contains "a scheduler with no metric is refused, saying how to name one" "$ERR" \
  "--metric NAME[:max]"

# --- --search tpe: points proposed from the ended trials; the same seed, the same points -------
printf 'import argparse, mlw\np = argparse.ArgumentParser()\np.add_argument("--x", type=float)\np.add_argument("--opt")\na = p.parse_args()\nmlw.log_metric("loss", (a.x - 0.3) ** 2 + (0 if a.opt == "b" else 0.05))\n' >tpe.py
printf 'method: tpe\ncount: 8\nstartup: 3\nmaxConcurrent: 1\nmetric: {name: loss}\nparameters:\n  x: {uniform: [0, 1]}\n  opt: [a, b, c]\n' >tpe.yml
tpe_points() { # SEED: each point's x and opt, in point order
  "$MLW" -q experiment sweep -c local -f tpe.yml --seed "$1" tpe.py >"$WORK/o" 2>"$WORK/e"
  sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
  json_get "$("$MLW" -o json history list --sweep "$sweep")" \
    '" ".join("%.9f:%s" % (r["params"]["x"], r["params"]["opt"]) for r in sorted(d, key=lambda r: r["point"]))'
}
first=$(tpe_points 5)
decisions=$(cat ".mlw/sweeps/$(sed -n 's/^SweepId: //p' "$WORK/o")/decisions.log")
expect_eq "TPE: every point ran, with its x and opt" "$(wc -w <<<"$first")" 8
expect_eq "TPE with seed 5 twice proposes the same points" "$(tpe_points 5)" "$first"
check "… and seed 6 others" test "$(tpe_points 6)" != "$first"
expect_contains "… the first 3 drawn at random, said" "$decisions" \
  "(point 2): TPE draws at random"
expect_contains "… then proposed from the ended trials, said" "$decisions" \
  "(point 3): TPE proposes"
expect_contains "… learning from the 7 before the last" "$decisions" "(7 ended trials)"
"$MLW" -q experiment sweep -c local --search tpe --count 4 --startup 2 --seed 1 --metric loss \
  tpe.py --x 0.1,0.3,0.5 --opt a,b >"$WORK/o" 2>"$WORK/e"
expect_eq "--search tpe --count 4 --startup 2 from the command line (lists: choices) ends with 0" \
  "$?" 0
expect_eq "… its 4 points chosen from the lists" "$(json_get "$("$MLW" -o json history list \
  --sweep "$(sed -n 's/^SweepId: //p' "$WORK/o")")" \
  'sorted(set(r["params"]["x"] in (0.1, 0.3, 0.5) and r["params"]["opt"] in ("a", "b") for r in d)) + [len(d)]')" \
  "[True, 4]"
run_mlw experiment sweep -c local --search bayes tpe.py --x 0.1,0.3
expect_contains "--search bayes is refused, naming the choices" "$ERR" \
  "--search must be grid, random or tpe (got bayes)"
printf 'method: tpe\ncount: 9\nstartup: 3\nseed: 3\nmaxConcurrent: 1\nmetric: {name: loss}\nparameters:\n  q: {uniform: [0, 1]}\nscheduler: {type: asha, resource: epochs, min: 1, max: 9}\n' >tpeasha.yml
"$MLW" -q experiment sweep -c local -f tpeasha.yml curve.py >"$WORK/o" 2>"$WORK/e"
expect_eq "TPE with ASHA (a sweep file's scheduler:) ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
list=$("$MLW" -o json history list --sweep "$sweep")
expect_eq "… its trials completed or were stopped" \
  "$(json_get "$list" 'sorted(set(r["status"] for r in d))')" "['Completed', 'Stopped']"
expect_contains "… TPE learnt from them" "$(cat ".mlw/sweeps/$sweep/decisions.log")" "TPE proposes"

# --- --scheduler hyperband: each bracket judged by itself, by hand ------------------------------
# --min 1 --max 9 --eta 3: brackets whose first rungs are 1 (rungs 1, 3), 3 (rung 3) and 9 (none:
# its trials run in full); point i is in bracket i mod 3. One trial at a time, so by hand: in
# bracket 0 (q 0.5, 0.7, 0.9) the third at epochs 1 (1.9) is not in the top 1/3 of 1.5, 1.7, 1.9;
# in bracket 1 (q 0.2, 0.4, 0.8) the third at epochs 3 (1.13333) is not; bracket 2 runs in full.
curve_script 0.05 >fast.py
"$MLW" -q experiment sweep -c local --max-concurrent 1 --metric loss --scheduler hyperband \
  --resource epochs --min 1 --max 9 --eta 3 fast.py --q 0.5,0.2,0.3,0.7,0.4,0.6,0.9,0.8,1.0 \
  >"$WORK/o" 2>"$WORK/e"
expect_eq "a Hyperband sweep ends with 0" "$?" 0
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
expect_eq "Hyperband: the trials completed and stopped as computed by hand" "$(json_get "$("$MLW" \
  -o json history list --sweep "$sweep")" '" ".join("%s:%s" % (r["point"], r["status"][0]) for r in sorted(d, key=lambda r: r["point"]))')" \
  "0:C 1:C 2:C 3:C 4:C 5:C 6:S 7:S 8:C"
decisions=$(cat ".mlw/sweeps/$sweep/decisions.log")
expect_contains "… point 6 at bracket 0's first rung" "$decisions" \
  "(point 6): stopped by Hyperband at epochs 1, bracket 0: loss 1.9 is not in the top 1/3 (1 of 3 trials at that rung; cutoff 1.5)"
expect_contains "… point 7 at bracket 1's first rung, epochs 3" "$decisions" \
  "(point 7): stopped by Hyperband at epochs 3, bracket 1: loss 1.13333 is not in the top 1/3 (1 of 3 trials at that rung; cutoff 0.533333)"
expect_not_contains "… bracket 2's trials were never judged" "$decisions" "(point 8): reached"

# --- a trial that never logs the resource as its step: said while it runs -----------------------
# Three trials reach epochs 1 at once; the fourth logs its loss with no step for 8 s: once it has
# run twice as long as the slowest took to its first rung (at least 5 s), the supervisor says so.
# (The slowest's time is what the machine gave it: 1 s, or 2 s on a busy one.)
printf 'import argparse, time, mlw\np = argparse.ArgumentParser()\np.add_argument("--q", type=float)\np.add_argument("--epochs", type=int)\na = p.parse_args()\nfor e in range(1, a.epochs + 1):\n    if a.q == 4:\n        mlw.log_metric("loss", a.q)\n        time.sleep(8 / a.epochs)\n    else:\n        mlw.log_metric("loss", a.q + 1 / e, step=e)\n' >nostep.py
"$MLW" -q experiment sweep -c local --max-concurrent 1 --metric loss --scheduler asha \
  --resource epochs --min 1 --max 3 --eta 3 nostep.py --q 1,2,3,4 >"$WORK/o" 2>"$WORK/e"
sweep=$(sed -n 's/^SweepId: //p' "$WORK/o")
decisions=$(cat ".mlw/sweeps/$sweep/decisions.log")
said=$(grep -o '(point 3) reached no rung in [0-9]* s (the others reached their first in [0-9]* s or less): does it log loss with epochs as its step?' <<<"$decisions")
expect_eq "a trial that logs no step is said to reach no rung, with the others' time" \
  "$(sed -E 's/in [0-9]+ s/in N s/g' <<<"$said")" \
  "(point 3) reached no rung in N s (the others reached their first in N s or less): does it log loss with epochs as its step?"
expect_eq "… once it had run twice the others' time, and 5 s" "$(sed -E 's/.* in ([0-9]+) s .* in ([0-9]+) s .*/\1 \2/' <<<"$said" |
  awk '{ print ($1 >= 5 && $1 >= 2 * ($2 - 1)) ? "yes" : $0 }')" yes
expect_eq "… while it ran (before its end), once" "$(grep '(point 3)' <<<"$decisions" |
  grep -o 'reached no rung\|ended: ' | tr '\n' '|')" "reached no rung|ended: |"

# --- a sweep in the foreground returns once its supervisor has written its last lines ----------
# (The check above once missed point 3's "ended" line: the command had returned when every run
# had ended, before its supervisor logged them.) Here the supervisor is held (SIGSTOP) from the
# moment its last run runs (one at a time on local) until it has ended and 2 s more: the
# command waits for it. (Each run takes 8 s: with 3, a loaded CI machine once saw the last run as
# Running only after it and the supervisor had ended, and there was nothing left to hold.)
printf 'import argparse, time\np = argparse.ArgumentParser()\np.add_argument("--q")\np.parse_args()\ntime.sleep(8)\n' >three.py
known=$(ls .mlw/sweeps)
"$MLW" -q experiment sweep -c local three.py --q 1,2 >"$WORK/o" 2>"$WORK/e" &
cli=$!
STARTED_PIDS+=("$cli")
new_sweep() { sweep=$(comm -13 <(sort <<<"$known") <(ls .mlw/sweeps | sort) | head -1) && [ -n "$sweep" ]; }
supervised() { new_sweep && [ "$(owner)" != "$cli" ] && [ "$(owner)" -gt 0 ]; }
runs_are() { [ "$(json_get "$("$MLW" -o json history list --sweep "$sweep")" '" ".join(sorted(r["status"] for r in d))')" = "$1" ]; }
check "(a foreground sweep's supervisor has taken over)" wait_for 30 supervised
check "(its last run runs)" wait_for 30 runs_are "Completed Running"
held=$(owner)
# (Once, under the sanitizers on a loaded machine, the owner named here was no longer running:
# what the sweep's supervisor said is shown where that happens again.)
kill -STOP "$held" || { echo "--- supervisor.log of $sweep"; cat ".mlw/sweeps/$sweep/supervisor.log"; }
check "(it has ended, its supervisor held)" wait_for 30 runs_are "Completed Completed"
sleep 2
check "a sweep in the foreground has not returned while its supervisor has not logged the end" \
  kill -0 "$cli"
kill -CONT "$held"
check "… it returns once it has" wait_for 30 bash -c "! kill -0 $cli 2>/dev/null"
wait "$cli"
expect_eq "… with 0" "$?" 0
expect_eq "… and decisions.log then says each run's end and the sweep's" "$(grep -o 'ended: Completed\|every point.s run has ended' ".mlw/sweeps/$sweep/decisions.log" | sort | uniq -c | awk '{$1 = $1; printf "%s|", $0}')" "2 ended: Completed|1 every point's run has ended|"
finish
