#!/usr/bin/env bash
# Requeue (issue 37) on Slurm, against the real two-node cluster of tests/fixtures/servers.sh as
# the user mlwslurm, and on its Grid Engine cell as mlwsge: a job with a 1-minute limit and `requeue: true` whose script checkpoints on
# its warning signal and finishes on its second attempt (one record, restarts 1, every line of
# both attempts, a marker line); a job that `scontrol requeue` puts back mid-run (submit
# --requeue) followed without losing a line; the refusals; a rerunnable Grid Engine job that
# `qmod -rj` reschedules mid-run, the same. The cluster's cred_expire is 20 s
# (servers.sh): a requeued job starts again after it.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SLURM_USER SLURM_CONF \
  MLW_TEST_SGE_USER MLW_TEST_SGE_ROOT MLW_TEST_SGE_PORTS
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
SUSER=$MLW_TEST_SLURM_USER
export MLW_RECONNECT_TIMEOUT=60
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"

new_project requeue
# Resumes from its checkpoint (the next line's number, saved after each line) and stops at the
# checkpoint signal with 3; on a later attempt it prints five more lines and ends, warned or not
# (so little is left that it finishes within the lead time).
cat >ckpt.py <<'PY'
import os, signal, subprocess, sys, time
path = os.path.join(os.environ["MLW_CHECKPOINT_DIR"], "next")
restart = int(os.environ["MLW_RESTART_COUNT"])
start = int(open(path).read()) if os.path.exists(path) else 0
warned = []
if os.environ.get("MLW_CHECKPOINT_SIGNAL"):  # Slurm's warning, or Grid Engine's SIGUSR1
    signal.signal(getattr(signal, "SIG" + os.environ["MLW_CHECKPOINT_SIGNAL"]),
                  lambda number, frame: warned.append(number))
print("attempt", restart, "from line", start, "resume", os.environ.get("MLW_RESUME"), flush=True)
for i in range(start, start + 5 if restart > 0 else 10**6):
    if warned and restart == 0:
        left = "-"  # the time left of the job's limit as the warning came: Slurm's squeue says
        if os.environ.get("SLURM_JOB_ID"):
            left = subprocess.run(["squeue", "-h", "-j", os.environ["SLURM_JOB_ID"], "-o", "%L"],
                                  capture_output=True, text=True).stdout.strip()
        print("checkpoint at line", i, "with", left, "left", flush=True)
        sys.exit(3)
    print("line", i, flush=True)
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
    os.replace(path + ".tmp", path)
    time.sleep(0.5)
print("done after", restart, "restart(s)", flush=True)
PY

"$MLW" computetarget attach slurm -n rq -a "$ADDR" -u "$SUSER" --password-stdin --accept-host-key \
  -k --time 1 <"$WORK/pw" >/dev/null 2>"$WORK/e"
expect_eq "attach a Slurm target with a 1-minute limit" "$?" 0
expect_contains "attach writes the requeue keys, off" "$(cat aml_config/rq.compute)" "requeue: false"
sed 's/^timeLimit:.*/timeLimit: "10"/' aml_config/rq.compute >aml_config/plain.compute
sed -i 's/^requeue:.*/requeue: true/; s/^checkpointLeadSeconds:.*/checkpointLeadSeconds: 30/' \
  aml_config/rq.compute
cp aml_config/rq.runconfig aml_config/plain.runconfig

# restarts RUN: the record's restarts.
restarts() { "$MLW" -o json history info -r "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("restarts", 0))'; }
# put_back COMMAND JOB: COMMAND (two words) puts JOB back in the queue; a job the cluster has just
# put back itself (see below) is back already: Slurm then answers "Job is pending execution".
put_back() {
  local said
  # shellcheck disable=SC2086 # the command is two words
  said=$($1 "$2" 2>&1) && return 0
  [[ "$said" == *"pending execution"* ]] && return 0
  echo "$1 $2: $said" >&2
  return 1
}
# show_the_job RUN JOB COMMAND: what the record, the run's log and (Slurm) the cluster say of a run
# that did not complete, for the reader of a failed test.
show_the_job() {
  {
    echo "  the record: $("$MLW" -o json history info -r "$1" 2>&1 | head -c 3000)"
    echo "  its log's end: $(tail -c 2000 ".mlw/runs/$1/driver_log.txt" 2>&1)"
    if [[ "$3" == scontrol* ]]; then
      echo "  scontrol: $(scontrol show job "$2" 2>&1 | head -c 3000)"
      echo "  sacct: $(sacct -j "$2" -P -o JobID,State,ExitCode,Start,End 2>&1 | head -n 20)"
    fi
  } >&2
}
# put_back_and_follow RUN COMMAND WORD NAME: once RUN's job printed line 3, COMMAND (scontrol
# requeue, qmod -rj) puts it back; `logs -f` into $WORK/NAME.txt then has every line of all
# attempts once and in order, the marker "job ID was WORD", and the record Completed with as many
# restarts as the last attempt counted (at least 1: a cluster may put a job back again itself,
# e.g. Slurm after a launch that met the credential it had just revoked).
put_back_and_follow() {
  local run=$1 command=$2 word=$3 out="$WORK/$4.txt" job n state
  check "$command: the job printed first" wait_for 120 grep -q "^line 3" ".mlw/runs/$run/driver_log.txt"
  job=$("$MLW" -o json history info -r "$run" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
  check "$command puts the job back" put_back "$command" "$job"
  timeout -k 5 240 "$MLW" history logs -r "$run" -f >"$out" 2>"$out.err"
  expect_eq "$command: logs -f across it" "$?" 0
  state=$(run_state "$run")
  expect_eq "$command: the run completed" "$state" "Completed 0"
  [[ "$state" == "Completed 0" ]] || show_the_job "$run" "$job" "$command"
  n=$(grep -c '^line ' "$out")
  check "$command: both attempts printed lines ($n)" test "$n" -ge 9
  expect_lines "$command: every line of both attempts" "$out" "$n" ".mlw/runs/$run/driver_log.txt"
  expect_contains "$command: the second attempt is marked in the log" "$(cat "$out")" \
    "mlw: attempt 2 (restart 1): job $job was $word"
  n=$(restarts "$run")
  check "$command: one record, restarts $n (at least 1)" test "$n" -ge 1
  expect_contains "$command: the last attempt finished after as many" "$(cat "$out")" \
    "done after $n restart(s)"
}

# warned_then_finished RUN NAME WHAT SAID: RUN, warned before its limit, took a checkpoint, was put
# back (mlw's log line SAID) and completed on a later attempt: `logs -f` into $WORK/NAME.txt has
# every line of all attempts once and in order, the marker, and one record with its restarts.
warned_then_finished() {
  local run=$1 out="$WORK/$2.txt" n
  timeout -k 5 300 "$MLW" history logs -r "$run" -f >"$out" 2>"$out.err"
  expect_eq "logs -f of $3 warned before its limit" "$?" 0
  expect_eq "$3 completed on its second attempt" "$(run_state "$run")" "Completed 0"
  expect_contains "$3: the script took a checkpoint at the signal" "$(cat "$out")" "checkpoint at line"
  expect_contains "$3: mlw says the job goes back" "$(cat "$out")" "$4"
  expect_contains "$3: the second attempt is marked" "$(cat "$out")" "mlw: attempt 2 (restart 1): job"
  n=$(restarts "$run")
  check "$3: one record, restarts $n (1 but where the cluster put the job back again itself)" test "$n" -ge 1
  expect_contains "$3: resumed from the checkpoint" "$(cat "$out")" "done after $n restart(s)"
  n=$(grep -c '^line ' "$out")
  check "$3: lines of both attempts ($n)" test "$n" -ge 6
  expect_lines "$3: every line of both attempts, once, in order" "$out" "$n" ".mlw/runs/$run/driver_log.txt"
}

# --- bad input ------------------------------------------------------------------------------------
cp aml_config/rq.compute "$WORK/rq.compute"
sed -i 's/^checkpointSignal:.*/checkpointSignal: KILL/' aml_config/rq.compute
run_mlw experiment submit -c rq ckpt.py
expect_eq "a checkpoint signal that cannot be caught stops the submit" "$CODE" 125
expect_contains "it says which line and why" "$ERR" "aml_config/rq.compute:"
expect_contains "and what it may be" "$ERR" "checkpointSignal must be one of USR1"
cp "$WORK/rq.compute" aml_config/rq.compute
sed -i 's/^checkpointLeadSeconds:.*/checkpointLeadSeconds: 60/' aml_config/rq.compute
run_mlw experiment submit -c rq ckpt.py
expect_eq "a warning as long as the time limit stops the submit" "$CODE" 125
expect_contains "it says why, with the file" "$ERR" \
  "checkpointLeadSeconds (60) must be less than timeLimit (60 s) in aml_config/rq.compute"
cp "$WORK/rq.compute" aml_config/rq.compute
"$MLW" computetarget attach local -n here >/dev/null 2>&1
run_mlw experiment submit -c here --requeue ckpt.py
expect_eq "--requeue on a target that is not a batch one is refused" "$CODE" 125
expect_contains "it says where requeue applies" "$ERR" "requeue applies to slurm and sge targets"
check "nothing was recorded for the refusals" bash -c "! ls .mlw/runs/ 2>/dev/null | grep -q ."

# --- the time limit's warning: checkpoint, requeue, finish on the second attempt ----------------
run_mlw -o json experiment submit -c rq -a ckpt.py
expect_eq "submit a requeueable job" "$CODE" 0
LIMITED=$(json_get "$OUT" 'd["run_id"]')

# --- scontrol requeue mid-run (submit --requeue): followed without losing a line ----------------
# It waits its turn behind the first job where the two nodes are taken by other suites' jobs.
run_mlw -o json experiment submit -c plain --requeue -a ckpt.py
expect_eq "submit --requeue" "$CODE" 0
MOVED=$(json_get "$OUT" 'd["run_id"]')
put_back_and_follow "$MOVED" "scontrol requeue" requeued moved
check "the script saw its restart" grep -qE '^attempt [1-9][0-9]* from line [1-9]' "$WORK/moved.txt"
check "… told to resume from its checkpoint (MLW_RESUME=1)" \
  grep -qE '^attempt [1-9][0-9]* from line [1-9][0-9]* resume 1$' "$WORK/moved.txt"
check "… the first attempt not" grep -q '^attempt 0 from line 0 resume 0$' "$WORK/moved.txt"

# --- the same in a container on the node (docker runtime): its MLW_CHECKPOINT_DIR is under
# /mlw/share there, which job.sh finds as the share folder on the node; MLW_RESUME goes in by name.
"$MLW" computetarget attach slurm -n boxed -a "$ADDR" -u "$SUSER" --password-stdin -k \
  --container "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null 2>"$WORK/e"
expect_eq "attach a Slurm target whose runs are containers" "$?" 0
run_mlw -o json experiment submit -c boxed --requeue -a ckpt.py
expect_eq "submit --requeue in a container" "$CODE" 0
BOXED=$(json_get "$OUT" 'd["run_id"]')
put_back_and_follow "$BOXED" "scontrol requeue" requeued boxed
check "… in its container, told to resume from its checkpoint (MLW_RESUME=1)" \
  grep -qE '^attempt [1-9][0-9]* from line [1-9][0-9]* resume 1$' "$WORK/boxed.txt"

# --- the first job: warned before its 1-minute limit -----------------------------------------
warned_then_finished "$LIMITED" limited "the job" "after USR1; requeueing job"
# Slurm sends its warning up to a minute early (here at its first look after the start, with 30 to
# 60 s left; a script killed by it before its handler was set): the script gets it 30 s before.
left=$(sed -nE 's/^checkpoint at line [0-9]+ with ([0-9]+):([0-9]+) left$/\1*60+\2/p' "$WORK/limited.txt")
left=$((${left:-999}))
check "the job: the warning came checkpointLeadSeconds (30) before its limit ($left s left)" \
  test "$left" -ge 20 -a "$left" -le 31
expect_eq "one record for each of the three runs" "$("$MLW" -o json history list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 3

# --- Grid Engine: a rerunnable job (requeue: true, qsub -r y) that qmod -rj reschedules --------
read -r QPORT EPORT <<<"$MLW_TEST_SGE_PORTS"
export SGE_ROOT=$MLW_TEST_SGE_ROOT SGE_CELL=default SGE_QMASTER_PORT=$QPORT SGE_EXECD_PORT=$EPORT
"$MLW" computetarget attach sge -n grid -a "$ADDR" -u "$MLW_TEST_SGE_USER" --password-stdin \
  --accept-host-key -k --queue all.q <"$WORK/pw" >/dev/null 2>"$WORK/e"
expect_eq "attach a Grid Engine target" "$?" 0
sed -i 's/^requeue:.*/requeue: true/' aml_config/grid.compute
run_mlw -o json experiment submit -c grid -a ckpt.py
expect_eq "submit a rerunnable Grid Engine job" "$CODE" 0
RESCHEDULED=$(json_get "$OUT" 'd["run_id"]')
put_back_and_follow "$RESCHEDULED" "qmod -rj" rescheduled grid
check "the script resumed from its checkpoint" grep -qE '^attempt [1-9][0-9]* from line [1-9]' "$WORK/grid.txt"
check "… told to (MLW_RESUME=1)" grep -qE '^attempt [1-9][0-9]* from line [1-9][0-9]* resume 1$' "$WORK/grid.txt"

# --- Grid Engine: warned before its limit (the soft limit s_rt = timeLimit - checkpointLeadSeconds
# sends SIGUSR1), checkpoints, ends 3: job.sh exits 99 and Grid Engine runs it again -------------
"$MLW" computetarget attach sge -n gridlim -a "$ADDR" -u "$MLW_TEST_SGE_USER" --password-stdin \
  -k --queue all.q --time 00:01:00 <"$WORK/pw" >/dev/null 2>"$WORK/e"
expect_eq "attach a Grid Engine target with a 1-minute limit" "$?" 0
expect_contains "… written as timeLimit" "$(cat aml_config/gridlim.compute)" 'timeLimit: "00:01:00"'
sed -i 's/^requeue:.*/requeue: true/; s/^checkpointLeadSeconds:.*/checkpointLeadSeconds: 45/' \
  aml_config/gridlim.compute
run_mlw -o json experiment submit -c gridlim -a ckpt.py
expect_eq "submit a rerunnable Grid Engine job with a 1-minute limit" "$CODE" 0
WARNED=$(json_get "$OUT" 'd["run_id"]')
warned_then_finished "$WARNED" gridlim "the Grid Engine job" \
  "mlw: Grid Engine warned the job (SIGUSR1) and the script ended with 3: it runs again"

finish
