#!/usr/bin/env bash
# History: list/last/info/logs/download/compare in every format, a locked or damaged database,
# and a disk that fills up during a run.
source "$(dirname "$0")/lib.sh"

new_project hist
cat >m.py <<'PY'
import sys
from mlw import log_metric
lr = float(sys.argv[1])
for step in range(1, 6):
    log_metric("loss", round(1.0 / (step * lr), 4), step=step)
log_metric("lr", lr)
print("trained with", lr)
PY
printf 'import sys\nsys.exit(2)\n' >bad.py
"$MLW" -q computetarget attach local -n second >/dev/null
"$MLW" -q experiment submit -c local m.py 1 >/dev/null
"$MLW" -q experiment submit -c local m.py 2 >/dev/null
"$MLW" -q experiment submit -c second bad.py >/dev/null

run_mlw -o json history list
expect_eq "list newest first" "$(json_get "$OUT" '[r["script"] for r in d]')" "['bad.py', 'm.py', 'm.py']"
run_mlw -o json history list --status Failed
expect_eq "--status filter" "$(json_get "$OUT" '[r["exit_code"] for r in d]')" "[2]"
run_mlw -o json history list -c second
expect_eq "-c filter" "$(json_get "$OUT" 'len(d)')" "1"
run_mlw -o json history list --top 1
expect_eq "--top" "$(json_get "$OUT" 'len(d)')" "1"
expect_error "bad --status" 2 'did you mean "Failed"' history list --status Faild
run_mlw -o tsv history list
expect_eq "tsv has one line per run" "$(wc -l <<<"$OUT")" "3"
run_mlw -o yaml history list
expect_contains "yaml list" "$OUT" 'status: "Failed"'
run_mlw history list
expect_contains "table header" "$OUT" "RUN ID"

IDS=($("$MLW" -o tsv history list | cut -f1))
run_mlw history last
expect_contains "last is the newest" "$OUT" "${IDS[0]}"
run_mlw -o json history info -r "${IDS[1]}"
expect_eq "info has metrics (last values)" "$(json_get "$OUT" '(d["metrics"]["loss"], d["metrics"]["lr"])')" "(0.1, 2.0)"
expect_eq "info has the snapshot hash" "$(json_get "$OUT" 'len(d["snapshot_hash"])')" "64"
expect_eq "info has UTC times" "$(json_get "$OUT" 'd["created"].endswith("Z")')" "True"
run_mlw history info -r "${IDS[1]}"
expect_contains "info table lists metric series" "$OUT" "loss"
run_mlw history logs -r "${IDS[1]}"
expect_eq "logs print the driver log" "$OUT" "trained with 2.0"
run_mlw -o json history compare "${IDS[1]}" "${IDS[2]}"
expect_eq "compare puts metrics side by side" "$(json_get "$OUT" '[r for r in d if r["field"] == "lr"][0]["'"${IDS[2]}"'"]')" "1.0"
expect_error "compare needs two" 2 "compare needs at least two run ids" history compare "${IDS[1]}"
expect_error "unknown run" 1 "no run" history info -r hist_1
expect_error "path as run id" 1 "no run" history logs -r ../../etc

# A locked database: a clear message after the (shortened) timeout, and nothing lost.
# The locker says when it holds the lock (a ready file), and holds it until told to let go.
python3 - "$PWD/.mlw/history.db" "$WORK/locked" "$WORK/unlock" <<'PY' &
import os, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
for _ in range(600):
    if os.path.exists(sys.argv[3]):
        break
    time.sleep(0.1)
PY
LOCKER=$!
STARTED_PIDS+=("$LOCKER")
check "the locker holds the lock" wait_for 20 test -e "$WORK/locked"
run_mlw -o json history list
expect_eq "reading works while another process writes (WAL)" "$(json_get "$OUT" 'len(d)')" "3"
expect_error "locked database stops a submit cleanly" 125 "locked by another process" experiment submit -c local m.py 3
touch "$WORK/unlock"
wait "$LOCKER"
run_mlw -o json history list
expect_eq "all runs still there after the lock" "$(json_get "$OUT" 'len(d)')" "3"

# A damaged database: a clear message; moving it away rebuilds the index from the run folders.
cp .mlw/history.db "$WORK/good.db"
rm -f .mlw/history.db-wal .mlw/history.db-shm
head -c 16384 /dev/urandom >.mlw/history.db
expect_error "damaged database" 1 "is damaged" history list
mv .mlw/history.db .mlw/history.db.damaged
run_mlw -o json history list
expect_eq "index rebuilt from run folders" "$(json_get "$OUT" 'sorted(r["run_id"] for r in d)')" "$(python3 -c 'import sys; print(sorted(sys.argv[1:]))' "${IDS[@]}")"

# A run folder that turns read-only during a run: the index still records how it ended.
cd "$WORK/hist"
printf 'import time\nfor i in range(15):\n    print(i, flush=True)\n    time.sleep(0.1)\n' >ro.py
run_mlw experiment submit -c local -a ro.py
RUN=$(sed -n 's/^RunId: //p' <<<"$OUT")
RUNDIR="$PWD/.mlw/runs/$RUN"
if mount --bind "$RUNDIR" "$RUNDIR" && mount -o remount,bind,ro "$RUNDIR"; then
  RO_MOUNT="$RUNDIR"
  check "read-only run ends" wait_for 30 bash -c "'$MLW' -o tsv history list | grep -q \"^$RUN.*Completed\""
  run_mlw -o json history info -r "$RUN"
  expect_eq "status and exit code from the index" "$(json_get "$OUT" '(d["status"], d["exit_code"])')" "('Completed', 0)"
  expect_contains "the record says what happened" "$(json_get "$OUT" 'd["problems"]')" "Read-only file system"
  umount "$RUNDIR"
  RO_MOUNT=""
else
  fail "cannot make a read-only bind mount (needs root)"
fi

# A disk that fills up during a run: the record says what happened.
mkdir -p "$WORK/tmpfs"
run_mlw -o json history list --status failed
expect_eq "--status in any case (as az's enumerations)" "$(json_get "$OUT" '[r["exit_code"] for r in d]')" "[2]"

# --- issue 33: a FIFO where metrics.jsonl should be never hangs a reader; a damaged run.json
# costs that run only, and is named
printf 'import os\nos.mkfifo(os.environ["MLW_METRICS_FILE"])\nprint("made a fifo")\n' >fifo.py
timeout -k 5 60 "$MLW" experiment submit -c local fifo.py >"$WORK/o" 2>"$WORK/e" </dev/null
expect_eq "a FIFO as metrics.jsonl: the run ends (not stuck Running)" "$?" 0
FIFO_RUN=$("$MLW" history last -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
check "… the FIFO is there" test -p ".mlw/runs/$FIFO_RUN/metrics.jsonl"
timeout -k 5 30 "$MLW" history info -r "$FIFO_RUN" >"$WORK/o" 2>"$WORK/e" </dev/null
expect_eq "a FIFO as metrics.jsonl: history info answers" "$?" 0
expect_contains "… with the record" "$(cat "$WORK/o")" "Completed"
ALL=$("$MLW" history list -o json)
TOTAL=$(json_get "$ALL" 'len(d)')
DAMAGED=$(json_get "$ALL" 'd[1]["run_id"]')
printf '{"run_id": "%s", "status": ' "$DAMAGED" >".mlw/runs/$DAMAGED/run.json"
run_mlw -o json history list
expect_eq "one damaged run.json: list -o json still succeeds" "$CODE" 0
expect_eq "… with every other run" "$(json_get "$OUT" 'len(d)')" "$((TOTAL - 1))"
expect_contains "… and names the damaged one on stderr" "$ERR" "$DAMAGED"
mv .mlw/history.db "$WORK/history.db.away"
rm -f .mlw/history.db-wal .mlw/history.db-shm
run_mlw -o json history list
expect_eq "an index rebuilt from the run folders: the others listed" "$(json_get "$OUT" 'len(d)')" "$((TOTAL - 1))"
expect_contains "… and the damaged record named, not dropped without a word" "$ERR" "$DAMAGED"

if mount -t tmpfs -o size=3m tmpfs "$WORK/tmpfs"; then
  (cd "$WORK/tmpfs" && "$MLW" -q project create -n full >/dev/null)
  cd "$WORK/tmpfs/full"
  printf 'import sys\nfor i in range(60000):\n    print("x" * 100)\nprint("end")\n' >flood.py
  run_mlw experiment submit -c local flood.py
  expect_eq "the script itself succeeds" "$CODE" 0
  run_mlw -o json history last
  expect_eq "recorded Completed" "$(json_get "$OUT" 'd["status"]')" "Completed"
  expect_contains "record says the log could not be written" "$(json_get "$OUT" 'd["problems"]')" "No space left on device"
  # A disk with 200 KiB left: the snapshot cannot be stored; the submit says what the history
  # holds (issue 33: it said "recorded as Failed" of a run that then read Lost).
  avail=$(df -k --output=avail . | tail -1)
  dd if=/dev/zero of=fill bs=1k count=$((avail - 200)) 2>/dev/null
  run_mlw experiment submit -c local flood.py
  check "a full disk: submit fails" test "$CODE" -ne 0
  said=$(sed -n 's/.*(run \([^ ]*\) \(recorded as [A-Za-z]*\|its record could not be written\).*/\1 \2/p' <<<"$ERR")
  check "… and says what became of the run [$ERR]" test -n "$said"
  if [[ "$said" == *"recorded as "* ]]; then
    expect_eq "… what it says is what history says" \
      "recorded as $("$MLW" history info -r "${said%% *}" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" \
      "${said#* }"
  fi
  rm -f fill
  cd "$WORK"
else
  fail "cannot mount a tmpfs for the disk-full test (needs root)"
fi

finish
