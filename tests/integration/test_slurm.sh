#!/usr/bin/env bash
# Slurm targets against the real two-node cluster of tests/fixtures/servers.sh (munge,
# slurmctld, slurmd n1 and n2 on loopback), reached through the loopback sshd as the user
# mlwslurm: attach and its refusals, doctor, one-node and two-node runs (ranks and one master
# address), hostile arguments through sbatch and srun, exit codes, Queued while the nodes are
# busy, cancel, a time limit, a container run, experiment forward and shell into a job, and the
# controller going away mid-run.
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/shell_checks.sh
source "$(dirname "$0")/shell_checks.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SLURM_USER MLW_TEST_IMAGE SLURM_CONF
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
SUSER=$MLW_TEST_SLURM_USER
USER_HOME=$(getent passwd "$SUSER" | cut -d: -f6)
export MLW_RECONNECT_TIMEOUT=60
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"

new_project sproj
cat >args.py <<'PY'
import json, os, sys
os.makedirs("outputs", exist_ok=True)
json.dump(sys.argv[1:], open("outputs/args.json", "w", encoding="utf-8"), ensure_ascii=False)
print("ARGS", json.dumps(sys.argv[1:]))
PY
cat >ranks.py <<'PY'
import os
rank = os.environ["MLW_NODE_RANK"]
os.makedirs("outputs", exist_ok=True)
line = " ".join(os.environ[k] for k in ("MLW_NODE_RANK", "MLW_NUM_NODES", "MLW_GPUS_PER_NODE",
                                        "MASTER_ADDR", "MASTER_PORT"))
open(f"outputs/rank{rank}.txt", "w").write(line + "\n")
print("RANK", line, flush=True)
PY
cat >exit_with.py <<'PY'
import sys
print("exiting with", sys.argv[1], flush=True)
sys.exit(int(sys.argv[1]))
PY
cat >slow.py <<'PY'
import sys, time
for i in range(int(sys.argv[1])):
    print("line", i, flush=True)
    time.sleep(float(sys.argv[2]))
print("done", flush=True)
PY

# --- attach and its refusals ------------------------------------------------------------------
attach() { "$MLW" computetarget attach slurm -a "$ADDR" -u "$SUSER" --password-stdin --accept-host-key "$@" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"; }
attach -n nope --partition nope
expect_eq "an unknown partition is refused" "$?" 1
expect_contains "the refusal names the partition" "$(cat "$WORK/e")" 'no partition "nope"'
check "nothing written for an unknown partition" test ! -e aml_config/nope.compute
attach -n big --nodes 3
expect_eq "more nodes than the partition has is refused" "$?" 1
expect_contains "the refusal gives both counts" "$(cat "$WORK/e")" "asks for 3 nodes but partition debug"
attach -n badtime --time "two hours"
expect_eq "a time limit in the wrong format is a usage error" "$?" 2
expect_contains "the time format is named" "$(cat "$WORK/e")" "--time must be HH:MM:SS"
attach -n one -k
expect_eq "attach slurm with -k" "$?" 0
expect_contains "attach says the partition" "$(cat "$WORK/o")" "(the default)"
for key in partition nodes gpusPerNode timeLimit account container containerRuntime; do
  check "the compute file documents $key" grep -q "^$key:" aml_config/one.compute
done
"$MLW" computetarget attach slurm -n two -a "$ADDR" -u "$SUSER" --nodes 2 \
  --private-key-file "$(sed -n 's/^privateKeyFile: "\(.*\)"/\1/p' aml_config/one.compute | sed "s#^~#$HOME#")" \
  >/dev/null 2>"$WORK/e"
expect_eq "attach a two-node target with the key" "$?" 0
cp aml_config/one.compute aml_config/short.compute
cp aml_config/one.runconfig aml_config/short.runconfig
sed -i 's/^Target:.*/Target: short/' aml_config/short.runconfig
sed -i 's/^timeLimit:.*/timeLimit: "1"/' aml_config/short.compute
sed -i 's/^timeLimit:.*/timeLimit: "x"/' aml_config/two.compute
run_mlw experiment submit -c two ranks.py
expect_eq "a malformed timeLimit in the file stops the submit" "$CODE" 125
expect_contains "the file and line are named" "$ERR" "aml_config/two.compute:"
sed -i 's/^timeLimit:.*/timeLimit: ""/' aml_config/two.compute

# --- doctor -------------------------------------------------------------------------------------
run_mlw computetarget doctor -n two
expect_eq "doctor passes on the cluster" "$CODE" 0
expect_contains "doctor names the partition" "$OUT" "debug (2 nodes)"
expect_contains "doctor counts the nodes" "$OUT" "2 up"
expect_contains "doctor shows GPUs per node" "$OUT" "n1: no GPUs"

# --- a time limit (started first: Slurm enforces it within about a minute) --------------------
run_mlw -o json experiment submit -c short -a slow.py 1000 0.2
TIMED=$(json_get "$OUT" 'd["run_id"]')

# --- one node: hostile arguments, exit codes ------------------------------------------------
HOSTILE=("" "a'b" 'say "hi"' '$(touch /tmp/mlw-pwned-slurm)' '`id`' 'x; rm -rf ~' $'two\nlines' 'héllo wörld ✓' '*' 'back\slash')
EXPECTED=$(json_of_args "${HOSTILE[@]}")
shell_would_run "the injection argument" ': $(touch /tmp/mlw-pwned-slurm)' /tmp/mlw-pwned-slurm
run_mlw -o json experiment submit -c one args.py "${HOSTILE[@]}"
expect_eq "a one-node run" "$CODE" 0
[ "$CODE" = 0 ] || echo "one-node run said: $OUT $ERR" >&2
RID=$(json_get "$OUT" 'd["run_id"]')
expect_eq "hostile arguments intact through sbatch and srun" \
  "$(json_file ".mlw/runs/$RID/outputs/args.json")" "$EXPECTED"
check "nothing ran from an argument" test ! -e /tmp/mlw-pwned-slurm
expect_eq "the Slurm job id is recorded" "$(json_get "$("$MLW" -o json history info -r "$RID")" 'd["job_id"] != ""')" "True"
# The job's files on the shared filesystem hold its -e values: the user's alone (issue 45).
check "the job's run folder is the user's alone" test "$(stat -c %a "$USER_HOME/.mlw/runs/$RID")" = 700
for f in job.sh run.env; do
  check "… another user cannot read its $f" bash -c "! runuser -u nobody -- cat '$USER_HOME/.mlw/runs/$RID/$f' >/dev/null 2>&1"
done
KEYFILE=$(sed -n 's/^privateKeyFile: "\(.*\)"/\1/p' aml_config/one.compute | sed "s#^~#$HOME#")
"$MLW" computetarget attach slurm -n gpu -a "$ADDR" -u "$SUSER" --gpus-per-node 1 \
  --private-key-file "$KEYFILE" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach --gpus-per-node" "$?" 0
expect_eq "attach shows the GPUs per node" "$(grep '^gpus_per_node ' "$WORK/o" | tr -s ' ')" "gpus_per_node 1"
expect_contains "attach warns that no node of the partition has GPUs" "$(cat "$WORK/e")" \
  "mlw: warning: no node of partition debug on $ADDR reports GPUs (Gres=gpu:N in slurm.conf)"
run_mlw experiment submit -c gpu exit_with.py 0
expect_eq "a job sbatch rejects cannot start" "$CODE" 125
expect_contains "sbatch's own message is shown, as the one error line" "$ERR" "mlw: error: sbatch on $ADDR refused the job:"
expect_contains "sbatch's reason" "$ERR" "gres"
expect_eq "… said once" "$(grep -c 'refused the job' <<<"$OUT$ERR")" 1
run_mlw experiment submit -c one --gpus 1 exit_with.py 0
expect_eq "submit --gpus 1 asks Slurm for a GPU per node (it has none here)" "$CODE" 125
expect_contains "sbatch refused the GPU request" "$ERR" "gres"
expect_error "--gpus all means nothing to Slurm" 125 "--gpus all: target one (slurm) takes a count of GPUs" \
  experiment submit -c one --gpus all exit_with.py 0
run_mlw experiment submit -c one exit_with.py 3
expect_eq "a failing script's exit code" "$CODE" 3
expect_contains "the log came back" "$OUT" "exiting with 3"
"$MLW" computetarget attach slurm -n acct -a "$ADDR" -u "$SUSER" --account mlwacct --time 00:05:00 \
  --private-key-file "$KEYFILE" >"$WORK/o" 2>"$WORK/e"
expect_eq "attach --account --time" "$?" 0
expect_eq "attach shows both" "$(grep -E '^(time_limit|account) ' "$WORK/o" | tr -s ' ' | tr '\n' ',')" \
  "time_limit 00:05:00,account mlwacct,"
run_mlw -o json experiment submit -c acct exit_with.py 0
expect_eq "a run with an account and a time limit" "$CODE" 0
JOB=$(json_get "$("$MLW" -o json history info -r "$(json_get "$OUT" 'd["run_id"]')")" 'd["job_id"]')
JOBINFO=$(scontrol show job "$JOB" 2>&1)
expect_contains "Slurm got the account" "$JOBINFO" "Account=mlwacct"
expect_contains "Slurm got the time limit" "$JOBINFO" "TimeLimit=00:05:00"

# --- two nodes: both ranks, one master address ------------------------------------------------
run_mlw -o json experiment submit -c two ranks.py
expect_eq "a two-node run" "$CODE" 0
RID=$(json_get "$OUT" 'd["run_id"]')
R0=$(cat ".mlw/runs/$RID/outputs/rank0.txt" 2>/dev/null)
R1=$(cat ".mlw/runs/$RID/outputs/rank1.txt" 2>/dev/null)
expect_eq "rank 0 ran" "$(cut -d' ' -f1-3 <<<"$R0")" "0 2 0"
expect_eq "rank 1 ran" "$(cut -d' ' -f1-3 <<<"$R1")" "1 2 0"
expect_eq "one master address and port" "$(cut -d' ' -f4-5 <<<"$R0")" "$(cut -d' ' -f4-5 <<<"$R1")"
expect_eq "the master is the first node" "$(cut -d' ' -f4 <<<"$R0")" "n1"
expect_eq "both ranks in the log" "$(grep -c '^RANK ' ".mlw/runs/$RID/driver_log.txt")" "2"

# --- two nodes, one fails while the other runs: the first failure is the run's -----------------
cat >fail_rank0.py <<'PY'
import os, sys, time
if os.environ["MLW_NODE_RANK"] == "0":
    time.sleep(1)
    sys.exit(5)
time.sleep(60)
PY
for attempt in 1 2; do
  run_mlw -o json experiment submit -c two fail_rank0.py
  expect_eq "rank 0 exits 5 while rank 1 runs: the run's exit code is 5 (attempt $attempt)" "$CODE" 5
  RID=$(ls -t .mlw/runs | head -1)
  # Rank 1 was stopped by Slurm: no code of its own (None), or the signal's if it kept a moment.
  expect_eq "every rank's exit code is kept (attempt $attempt)" \
    "$(json_get "$(cat ".mlw/runs/$RID/run.json")" '[d["node_exit_codes"][0], len(d["node_exit_codes"])]')" "[5, 2]"
done

# --- Queued while the nodes are busy, then cancel ---------------------------------------------
run_mlw -o json experiment submit -c two -a slow.py 600 0.2
BUSY=$(json_get "$OUT" 'd["run_id"]')
check "the busy run printed before the next submit" wait_for 60 grep -q "line 1" ".mlw/runs/$BUSY/driver_log.txt"
run_mlw -o json experiment submit -c one -a exit_with.py 0
WAITING=$(json_get "$OUT" 'd["run_id"]')
expect_eq "submit -a says Queued" "$(json_get "$OUT" 'd["status"]')" "Queued"
expect_eq "a run shows Queued while the nodes are busy" "$(run_state "$WAITING")" "Queued None"
run_mlw experiment cancel -r "$BUSY"
expect_eq "cancel a Slurm run" "$CODE" 0
expect_eq "the cancelled run is Canceled" "$(run_state "$BUSY" | cut -d' ' -f1)" "Canceled"
check "scancel took the job away" bash -c "! squeue -h -n mlw-$BUSY | grep -q ."
check "the queued run ended" wait_for 60 run_is "$WAITING" Completed
expect_eq "the queued run ran once the nodes were free" "$(run_state "$WAITING")" "Completed 0"
# A run canceled while it waits in the queue never runs, and its record has no start.
run_mlw -o json experiment submit -c two -a slow.py 600 0.2
BUSY=$(json_get "$OUT" 'd["run_id"]')
check "the busy run printed" wait_for 60 grep -q "line 1" ".mlw/runs/$BUSY/driver_log.txt"
run_mlw -o json experiment submit -c one -a exit_with.py 0
WAITING=$(json_get "$OUT" 'd["run_id"]')
run_mlw experiment cancel -r "$WAITING"
expect_eq "cancel a queued run exits 0" "$CODE" 0
expect_eq "cancel a queued run" "$(run_state "$WAITING" | cut -d' ' -f1)" "Canceled"
check "it never printed" bash -c "! grep -q 'exiting with' '.mlw/runs/$WAITING/driver_log.txt'"
expect_eq "a run canceled while it waited has no start in its record" \
  "$(json_get "$("$MLW" -o json history info -r "$WAITING")" '[d["started"], d["duration_s"]]')" "[None, None]"
"$MLW" experiment cancel -r "$BUSY" >/dev/null 2>&1

# --- a notebook kernel while its job waits in the queue: its connections cut, then it killed ---
# (issue 48.) A cut connection is made again: the kernel goes on waiting. mlw's kernel process
# killed (Jupyter's SIGKILL): its job leaves the queue, not to start later for a notebook that is
# gone, and its run is Canceled, saying why.
run_mlw -o json experiment submit -c two -a slow.py 600 0.2
BUSY=$(json_get "$OUT" 'd["run_id"]')
check "(the nodes are busy)" wait_for 60 grep -q "line 1" ".mlw/runs/$BUSY/driver_log.txt"
queued_kernel one
job_queued() { squeue -h -n "mlw-$QRUN" | grep -q .; }
check "… its job is queued" job_queued
# shellcheck disable=SC2046 # pids
drop_logins $(pgrep -f "notebook kernel -c one -f $WORK/queued.json")
sleep 10
check "its connections cut: mlw's kernel process waits on" kill -0 "$QUEUED"
check "… its job still queued" job_queued
expect_eq "… its run still Queued" "$(run_state "$QRUN" | cut -d' ' -f1)" "Queued"
job_gone() { ! job_queued; }
queued_kernel_killed job_gone
"$MLW" experiment cancel -r "$BUSY" >/dev/null 2>&1

# --- the SSH connection killed mid-run: the run goes on, logs -f has every line once ----------
run_mlw -o json experiment submit -c one -a slow.py 30 0.1
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run printed before its SSH sessions are killed" wait_for 60 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
KILLED=0
for child in $(ssh_sessions_of "$SUSER"); do kill "$child" && KILLED=$((KILLED + 1)); done
check "an SSH session of the run was killed" test "$KILLED" -gt 0
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "logs -f after a dropped connection" "$?" 0
expect_lines "logs -f after the drop" "$WORK/follow.txt" 30 ".mlw/runs/$RID/driver_log.txt"
expect_eq "completed after the drop" "$(run_state "$RID")" "Completed 0"

# --- a container on the nodes (docker runtime) ------------------------------------------------
"$MLW" computetarget attach slurm -n boxed -a "$ADDR" -u "$SUSER" --container "$MLW_TEST_IMAGE" \
  --private-key-file "$(sed -n 's/^privateKeyFile: "\(.*\)"/\1/p' aml_config/one.compute | sed "s#^~#$HOME#")" \
  >/dev/null 2>"$WORK/e"
expect_eq "attach a container target" "$?" 0
cat >where.py <<'PY'
import os
print("IN", os.getcwd(), os.path.exists("/.dockerenv"), os.environ["MLW_NODE_RANK"], flush=True)
PY
run_mlw experiment submit -c boxed where.py
expect_eq "a run in a container on the node" "$CODE" 0
expect_contains "it ran in the image, in the snapshot" "$OUT" "IN /mlw/run/snapshot True 0"

# --- experiment forward: a step of the job (srun --overlap) connects on its node's loopback -----
forward_check one 127.0.0.1
kernel_check one

# --- experiment shell: a step of the job (srun --overlap --pty) on its node -----------------------
write_wait_py
shell_checks one MLW_NODE_RANK=0

# --- the time limit -----------------------------------------------------------------------------
wait_for 150 run_is "$TIMED" Failed  # asserted on the next line, with the state seen
expect_eq "a run over its time limit fails with 143 (Slurm's SIGTERM)" "$(run_state "$TIMED")" "Failed 143"
expect_contains "the time limit is named" "$("$MLW" -o json history info -r "$TIMED")" "time limit"

# --- the controller away mid-run: Lost after a bounded retry, then logs -f resumes -------------
# Only while no other suite runs jobs on the cluster (test_hostile holds the lock shared).
check "no other suite is using the Slurm cluster" slurm_lock exclusive
export MLW_SLURM_RETRY=2
run_mlw -o json experiment submit -c one -a slow.py 60 0.2
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run printed before the controller is killed" wait_for 60 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
kill "$(cat "$MLW_TEST_SERVERS/slurmctld.pid")"
wait_for 60 run_is "$RID" Lost  # asserted on the next line, with the state seen
expect_eq "an unanswering controller makes the run Lost" "$(run_state "$RID" | cut -d' ' -f1)" "Lost"
expect_contains "Lost says why" "$("$MLW" -o json history info -r "$RID")" "controller did not answer"
slurmctld
check "the restarted controller answers" wait_for 30 bash -c 'squeue >/dev/null 2>&1'
slurm_unlock
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "logs -f follows the run again" "$?" 0
expect_lines "logs -f after the controller came back" "$WORK/follow.txt" 60 ".mlw/runs/$RID/driver_log.txt"
expect_eq "the run completed" "$(run_state "$RID")" "Completed 0"
[ "$(run_state "$RID")" = "Completed 0" ] || cat "$WORK/follow.err" ".mlw/runs/$RID/supervisor.log" >&2
unset MLW_SLURM_RETRY

# --- clean -----------------------------------------------------------------------------------
run_mlw -o json experiment clean -c one
expect_eq "clean a Slurm target" "$CODE" 0
check "finished run folders removed on the login node" bash -c "[ -z \"\$(ls '$USER_HOME/.mlw/runs' 2>/dev/null)\" ]"
check "the content store, every project's, stays" test -d "$USER_HOME/.mlw/objects"
run_mlw -o json experiment clean -c one --all-projects
expect_eq "clean --all-projects" "$CODE" 0
check "the content store removed" test ! -e "$USER_HOME/.mlw/objects"

finish
