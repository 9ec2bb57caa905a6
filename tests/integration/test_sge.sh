#!/usr/bin/env bash
# Grid Engine targets against the real cell of tests/fixtures/servers.sh (sge_qmaster and
# sge_execd of Debian's gridengine packages, on loopback; queue all.q with 2 slots and the
# parallel environment smp), reached through the loopback sshd as the user mlwsge: attach in both
# syntaxes and its refusals, doctor, runs with their exit codes, hostile arguments through qsub,
# outputs and metrics, the log followed live and again after the connection dropped, Queued
# while the slots are busy, cancel through qdel, experiment forward and shell into a job, the
# qmaster going away mid-run, and clean.
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/shell_checks.sh
source "$(dirname "$0")/shell_checks.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_SGE_USER \
  MLW_TEST_SGE_ROOT MLW_TEST_SGE_PORTS
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
GUSER=$MLW_TEST_SGE_USER
USER_HOME=$(getent passwd "$GUSER" | cut -d: -f6)
export MLW_RECONNECT_TIMEOUT=60
rm -rf "$USER_HOME/.mlw" "$USER_HOME/.ssh"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
# The cell's own commands, as the test user's sessions have them (qstat, qacct for the checks).
read -r QPORT EPORT <<<"$MLW_TEST_SGE_PORTS"
export SGE_ROOT=$MLW_TEST_SGE_ROOT SGE_CELL=default SGE_QMASTER_PORT=$QPORT SGE_EXECD_PORT=$EPORT

new_project gproj
cat >args.py <<'PY'
import json, os, sys
os.makedirs("outputs", exist_ok=True)
json.dump(sys.argv[1:], open("outputs/args.json", "w", encoding="utf-8"), ensure_ascii=False)
print("ARGS", json.dumps(sys.argv[1:]), os.environ.get("JOB_ID"), os.environ.get("NSLOTS"))
PY
cat >exit_with.py <<'PY'
import sys
print("exiting with", sys.argv[1], flush=True)
sys.exit(int(sys.argv[1]))
PY
cat >slow.py <<'PY'
import sys, time
from mlw import log_metric
for i in range(int(sys.argv[1])):
    print("line", i, flush=True)
    log_metric("step", i)
    time.sleep(float(sys.argv[2]))
print("done", flush=True)
PY
job_of() { "$MLW" -o json history info -r "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("job_id", ""))'; }
in_qstat() { qstat -u '*' 2>/dev/null | awk -v j="$1" '$1 == j { f = 1 } END { exit !f }'; }

# --- attach, both syntaxes, and its refusals ----------------------------------------------------
attach() { "$MLW" computetarget attach sge -a "$ADDR" -u "$GUSER" --password-stdin --accept-host-key "$@" <"$WORK/pw" >"$WORK/o" 2>"$WORK/e"; }
attach -n nope --queue nope.q
expect_eq "an unknown queue is refused" "$?" 1
expect_contains "the refusal names the queue" "$(cat "$WORK/e")" 'no queue "nope.q"'
check "nothing written for an unknown queue" test ! -e aml_config/nope.compute
attach -n nope --pe nope --slots 2
expect_eq "an unknown parallel environment is refused" "$?" 1
expect_contains "the refusal names it" "$(cat "$WORK/e")" 'no parallel environment "nope"'
attach -n big --pe smp --slots 3
expect_eq "more slots than the queue has is refused" "$?" 1
expect_contains "the refusal gives both counts" "$(cat "$WORK/e")" "asks for 3 slots but any queue"
attach -n bad --queue 'all.q;touch${IFS}PWNED'
expect_eq "a queue that is not a Grid Engine name is a usage error" "$?" 2
check "nothing ran for it" test ! -e "$USER_HOME/PWNED"
attach -n grid -k --queue all.q
expect_eq "attach sge with -k" "$?" 0
expect_contains "attach names the kind" "$(cat "$WORK/o")" "sge"
for key in queue pe slots pythonLocation; do
  check "the compute file documents $key" grep -q "^$key:" aml_config/grid.compute
done
KEY=$(sed -n 's/^privateKeyFile: "\(.*\)"/\1/p' aml_config/grid.compute | sed "s#^~#$HOME#")
"$MLW" computetarget attach --type sge --name wide --address "$ADDR" --username "$GUSER" \
  --private-key-file "$KEY" --pe smp --slots 2 >/dev/null 2>"$WORK/e"
expect_eq "the 2017 form: attach --type sge with --pe and --slots" "$?" 0
expect_eq "the slots are in the file" "$(grep '^slots:' aml_config/wide.compute)" "slots: 2"
run_mlw computetarget attach remote -n r -a "$ADDR" --queue all.q
expect_eq "--queue on another kind is a usage error" "$CODE" 2
run_mlw -o json computetarget show -n wide
expect_eq "show types the own keys" "$(json_get "$OUT" 'd["slots"], d["pe"]')" "2 smp"

# --- doctor -----------------------------------------------------------------------------------
run_mlw computetarget doctor -n grid
expect_eq "doctor on a working cell" "$CODE" 0
for row in "Grid Engine commands" qmaster queue slots python; do
  expect_contains "doctor has the $row row" "$OUT" "$row"
done
expect_contains "doctor gives the queue's slots" "$OUT" "all.q (2 slots"
sed 's/^queue:.*/queue: "gone.q"/' aml_config/grid.compute >aml_config/gone.compute
cp aml_config/grid.runconfig aml_config/gone.runconfig
sed -i 's/^Target:.*/Target: gone/' aml_config/gone.runconfig
run_mlw computetarget doctor -n gone
expect_eq "doctor fails on a queue that is gone" "$CODE" 1
run_mlw experiment submit -c gone exit_with.py 0
expect_eq "submit refuses a queue that is gone" "$CODE" 125
expect_contains "with the fix" "$ERR" "list them with: qconf -sql"

# --- runs: exit codes, hostile arguments, outputs, metrics --------------------------------------
run_mlw experiment submit -c grid exit_with.py 0
expect_eq "a run that exits 0" "$CODE" 0
expect_contains "submit says the job" "$ERR$OUT" "Grid Engine job"
run_mlw experiment submit -c grid exit_with.py 3
expect_eq "the script's exit code is submit's" "$CODE" 3
run_mlw experiment submit -c grid exit_with.py 99
expect_eq "99 (Grid Engine's 'run again') is the script's code, run once" "$CODE" 99
expect_eq "it ran once" "$(grep -c 'exiting with' ".mlw/runs/$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')/driver_log.txt")" 1
ARGS=('a b' '' '$(touch PWNED)' "it's" '"q"' '-N' 'x;y' 'ü')
run_mlw experiment submit -c grid args.py "${ARGS[@]}"
expect_eq "hostile arguments" "$CODE" 0
RID=$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')
"$MLW" history download -r "$RID" >/dev/null 2>&1
expect_eq "every argument arrives whole" "$(json_file "outputs/$RID/args.json")" "$(json_of_args "${ARGS[@]}")"
check "nothing ran from the arguments" test ! -e "$USER_HOME/PWNED"
# The job's files on the shared filesystem hold its -e values: the user's alone (issue 45).
check "the job's run folder is the user's alone" test "$(stat -c %a "$USER_HOME/.mlw/runs/$RID")" = 700
for f in job.sh run.env; do
  check "… another user cannot read its $f" bash -c "! runuser -u nobody -- cat '$USER_HOME/.mlw/runs/$RID/$f' >/dev/null 2>&1"
done
run_mlw experiment submit -c wide args.py
expect_contains "the parallel environment's slots reach the job" "$OUT" " 2"
run_mlw experiment submit -c grid --gpus 2 args.py
expect_eq "submit --gpus 2 asks Grid Engine for -l gpu=2 (no such resource here)" "$CODE" 125
expect_contains "qsub refused the GPU request" "$ERR" "gpu"
run_mlw -o json experiment submit -c grid slow.py 3 0
expect_eq "a run with metrics" "$CODE" 0
RID=$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')
expect_contains "its metrics came back" "$("$MLW" -o json history info -r "$RID")" '"step"'

# --- the time limit (h_rt) stops a run: Failed 143, and the record says so (issue 45) ------------
"$MLW" computetarget attach sge -n lim -a "$ADDR" -u "$GUSER" --password-stdin -k --queue all.q \
  --time 00:00:06 <"$WORK/pw" >/dev/null 2>"$WORK/e"
expect_eq "attach a Grid Engine target with a 6-second limit" "$?" 0
run_mlw -o json experiment submit -c lim slow.py 600 0.2
expect_eq "a run past its time limit ends 143" "$CODE" 143
RID=$(json_get "$("$MLW" -o json history last)" 'd["run_id"]')
expect_eq "… recorded Failed 143" "$(run_state "$RID")" "Failed 143"
expect_contains "… with the time limit as its reason" "$("$MLW" history info -r "$RID" 2>&1)" \
  "at its time limit (6 s, h_rt; timeLimit in the compute file)"

# --- Queued while the slots are busy, then cancel through qdel -----------------------------------
run_mlw -o json experiment submit -c wide -a slow.py 600 0.2
BUSY=$(json_get "$OUT" 'd["run_id"]')
check "the busy run printed" wait_for 60 grep -q "line 1" ".mlw/runs/$BUSY/driver_log.txt"
run_mlw -o json experiment submit -c grid -a exit_with.py 0
WAITING=$(json_get "$OUT" 'd["run_id"]')
expect_eq "a run shows Queued while the slots are busy" "$(run_state "$WAITING")" "Queued None"
BUSY_JOB=$(job_of "$BUSY")
check "the busy run has a job id" test -n "$BUSY_JOB"
run_mlw experiment cancel -r "$BUSY"
expect_eq "cancel a Grid Engine run" "$CODE" 0
expect_eq "the cancelled run is Canceled with 143" "$(run_state "$BUSY")" "Canceled 143"
check "qdel took the job away" wait_for 30 bash -c "! qstat -u '*' | awk '{print \$1}' | grep -qx '$BUSY_JOB'"
check "the queued run ended" wait_for 60 run_is "$WAITING" Completed
expect_eq "the queued run ran once the slots were free" "$(run_state "$WAITING")" "Completed 0"
# A run canceled while it waits in the queue never runs.
run_mlw -o json experiment submit -c wide -a slow.py 600 0.2
BUSY=$(json_get "$OUT" 'd["run_id"]')
check "the busy run printed" wait_for 60 grep -q "line 1" ".mlw/runs/$BUSY/driver_log.txt"
run_mlw -o json experiment submit -c grid -a exit_with.py 0
WAITING=$(json_get "$OUT" 'd["run_id"]')
run_mlw experiment cancel -r "$WAITING"
expect_eq "cancel a queued run exits 0" "$CODE" 0
expect_eq "cancel a queued run" "$(run_state "$WAITING")" "Canceled 143"
check "it never printed" bash -c "! grep -q 'exiting with' '.mlw/runs/$WAITING/driver_log.txt'"
expect_eq "a run canceled while it waited has no start in its record" \
  "$(json_get "$("$MLW" -o json history info -r "$WAITING")" '[d["started"], d["duration_s"]]')" "[None, None]"
# A notebook kernel queued behind it whose mlw process is killed (Jupyter's SIGKILL): its job
# leaves the queue, its run is Canceled, saying why (issue 48).
queued_kernel grid
QJOB=$(job_of "$QRUN")
check "… its job is queued" in_qstat "$QJOB"
job_gone() { ! in_qstat "$QJOB"; }
queued_kernel_killed job_gone
"$MLW" experiment cancel -r "$BUSY" >/dev/null 2>&1

# --- the SSH connection killed mid-run: the run goes on, logs -f has every line once ----------
run_mlw -o json experiment submit -c grid -a slow.py 30 0.1
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run printed before its SSH sessions are killed" wait_for 60 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
KILLED=0
for child in $(ssh_sessions_of "$GUSER"); do kill "$child" && KILLED=$((KILLED + 1)); done
check "an SSH session of the run was killed" test "$KILLED" -gt 0
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "logs -f after a dropped connection" "$?" 0
expect_lines "logs -f after the drop" "$WORK/follow.txt" 30 ".mlw/runs/$RID/driver_log.txt"
expect_eq "completed after the drop" "$(run_state "$RID")" "Completed 0"

# --- experiment forward: from the login host to the node job.sh named, at its name's address ----
# (this machine's name is loopback here: nothing listens on another network)
NODE_ADDR=$(getent hosts "$(hostname)" | awk '{print $1; exit}')
case "$NODE_ADDR" in 127.*) ;; *) fail "this machine's name must be a loopback address (it is [$NODE_ADDR])" ;; esac
forward_check grid "$NODE_ADDR"

# --- a notebook kernel: in a job on the login host, its loopback reached by the forward -----------
# (the job's node is this machine, whose name is 127.0.0.1 here: the check below covers a name of
# another address)
kernel_check grid
# A job that Grid Engine started on another node (its submit host, 192.0.2.1, none of this
# machine's addresses): the kernel says where, and what to do, at once.
out=$(cd "$WORK" && JOB_ID=7 SGE_O_HOST=192.0.2.1 MLW_KERNEL_KEY=k \
  PYTHONPATH="$MLW_SOURCE_DIR/python" timeout 30 python3 -m mlw.kernel remote:hmac-sha256 2>&1)
expect_eq "a kernel's job on another node: exit 125" "$?" 125
expect_contains "… naming the node, the login host and what to do" "$out" \
  "the kernel's Grid Engine job runs on $(hostname), not on 192.0.2.1 where mlw logs in"
expect_contains "… the queue to set" "$out" "queue: QUEUE@192.0.2.1"
# The forward tries the login host's loopback first when the job runs there, as a kernel listens
# only there. This machine's name is 127.0.0.1, which hides the difference; on Debian's default
# (127.0.1.1) or a cluster address it is not: a name of no address stands in for one here.
mkdir -p "$WORK/fake-host" "$WORK/fwd-run"
printf '#!/bin/sh\necho mlw-node.invalid\n' >"$WORK/fake-host/hostname"
chmod +x "$WORK/fake-host/hostname"
echo mlw-node.invalid >"$WORK/fwd-run/node"
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept(); c.sendall(b"KERNEL-LOOPBACK\n"); c.close()' >"$WORK/fwd-port" &
STARTED_PIDS+=("$!")
wait_for 10 test -s "$WORK/fwd-port"
out=$(PATH="$WORK/fake-host:$PATH" timeout 20 sh -c '. "$1"; mlw_forward 7 "$2" "$3" "$(cat "$4")"' \
  forward "$MLW_SOURCE_DIR/src/kinds/sge/forward.sh" "$WORK/fwd-run" "$(cat "$WORK/fwd-port")" \
  "$MLW_SOURCE_DIR/src/exec/relay.sh" </dev/null 2>&1)
expect_eq "forward to a job on the login host: its loopback is reached" "$out" "KERNEL-LOOPBACK"

# --- experiment shell: on the login host, which is the job's node here ----------------------------
write_wait_py
shell_checks grid

# --- the qmaster away mid-run: Lost after a bounded retry, then logs -f resumes -----------------
export MLW_BATCH_RETRY=2
run_mlw -o json experiment submit -c grid -a slow.py 40 0.2
RID=$(json_get "$OUT" 'd["run_id"]')
check "the run printed before the qmaster is killed" wait_for 60 grep -q "line 3" ".mlw/runs/$RID/driver_log.txt"
kill "$(cat "$MLW_TEST_SGE_ROOT/spool/qmaster/qmaster.pid")"
wait_for 60 run_is "$RID" Lost  # asserted on the next line, with the state seen
expect_eq "an unanswering qmaster makes the run Lost" "$(run_state "$RID" | cut -d' ' -f1)" "Lost"
expect_contains "Lost says why" "$("$MLW" -o json history info -r "$RID")" "qmaster"
check "the qmaster is gone" wait_for 30 bash -c "! qstat >/dev/null 2>&1"
"$MLW_SOURCE_DIR/tests/fixtures/sge.sh" "$MLW_TEST_SGE_ROOT" "$QPORT" "$EPORT" qmaster
check "the restarted qmaster answers" wait_for 30 bash -c 'qstat >/dev/null 2>&1'
unset MLW_BATCH_RETRY
timeout -k 5 300 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "logs -f follows the run again" "$?" 0
expect_lines "logs -f after the qmaster came back" "$WORK/follow.txt" 40 ".mlw/runs/$RID/driver_log.txt"
expect_eq "the run completed" "$(run_state "$RID")" "Completed 0"
[ "$(run_state "$RID")" = "Completed 0" ] || cat "$WORK/follow.err" ".mlw/runs/$RID/supervisor.log" >&2

# --- clean -----------------------------------------------------------------------------------
run_mlw -o json experiment clean -c grid
expect_eq "clean a Grid Engine target" "$CODE" 0
check "finished run folders removed on the host" bash -c "[ -z \"\$(ls '$USER_HOME/.mlw/runs' 2>/dev/null)\" ]"
check "the content store, every project's, stays" test -d "$USER_HOME/.mlw/objects"
run_mlw -o json experiment clean -c grid --all-projects
expect_eq "clean --all-projects" "$CODE" 0
check "the content store removed" test ! -e "$USER_HOME/.mlw/objects"

finish
