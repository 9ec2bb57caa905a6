#!/usr/bin/env bash
# The Docker engine killed (kill -9) during a docker-target run that goes through the Engine
# API, on an engine of this suite's own (tests/fixtures/servers.sh engine: no bridge, its own
# network namespace, the local test image), killed and started again on the same data:
# - with --live-restore the container goes on: mlw asks the engine again, follows the log from
#   the byte where it broke (no line lost or doubled), records the script's own exit code and
#   removes the container;
# - without it the engine stops the container when it starts: the run ends as the engine says
#   (143), the lines printed before are all kept, the container is removed;
# - an engine that stays away longer than MLW_ENGINE_RETRY: the run is Lost (the container goes
#   on); once the engine is back, `history logs -f` takes the run over and follows it to its end;
# - where a monitor runs the container with the docker command (dockerRunArgs), the run's end is
#   the engine's record of the container (143), not the docker command's failure; an engine away
#   longer than MLW_ENGINE_RETRY leaves it Lost.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_IMAGE
[ "$(id -u)" -eq 0 ] || { echo "FAIL: this suite starts a Docker engine: run it as root"; exit 1; }
SERVERS_SH="$MLW_SOURCE_DIR/tests/fixtures/servers.sh"
ENGINES=$(mktemp -d /tmp/mlw-fe-XXXXXX)
export DOCKER_HOST="unix://$ENGINES/dockerd.sock"
trap '"$SERVERS_SH" stop "$ENGINES" >/dev/null 2>&1; rm -rf "$ENGINES"; cleanup' EXIT

start_engine() { "$SERVERS_SH" engine "$ENGINES" dockerd "$@" 2>"$WORK/engine.log" ||
  { cat "$WORK/engine.log" >&2; exit 1; }; }
stop_engine() { "$SERVERS_SH" stop "$ENGINES" >/dev/null 2>&1; }
# kill_engine: kill -9 of dockerd, then waits (at most 10 s) until it is reaped, so that a new
# one does not find its pid file still naming a live process.
kill_engine() {
  local pid
  pid=$(cat "$ENGINES/dockerd.pid")
  kill -9 "$pid"
  for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
}

cd "$WORK" || exit 1
"$MLW" -q project create -n faults >/dev/null
cd faults || exit 1
"$MLW" -q computetarget attach docker -n d --base-image "$MLW_TEST_IMAGE" >/dev/null
cat >ticks.py <<'PY'
import sys, time
for i in range(int(sys.argv[1])):
    print(f"tick {i}", flush=True)
    time.sleep(0.3)
sys.exit(3)
PY

# submit_until_tick TICKS: submits ticks.py in the background (SUBMIT_PID, its output in
# $WORK/submit.out, its exit code in $WORK/submit.rc) and waits (at most 60 s) for "tick 3".
submit_until_tick() {
  rm -f "$WORK/submit.out" "$WORK/submit.rc"
  ("$MLW" experiment submit -c d ticks.py "$1" >"$WORK/submit.out" 2>&1 </dev/null
   echo $? >"$WORK/submit.rc") &
  SUBMIT_PID=$!
  for _ in $(seq 1 300); do grep -q '^tick 3$' "$WORK/submit.out" 2>/dev/null && return 0; sleep 0.2; done
  fail "the run printed no tick 3 within 60 s: $(cat "$WORK/submit.out")"
}

# wait_submit: waits (at most 120 s) for the background submit; CODE its exit code.
wait_submit() {
  for _ in $(seq 1 600); do [ -s "$WORK/submit.rc" ] && break; sleep 0.2; done
  CODE=$(cat "$WORK/submit.rc" 2>/dev/null || echo none)
  [ "$CODE" = none ] && kill "$SUBMIT_PID" 2>/dev/null
  wait "$SUBMIT_PID" 2>/dev/null
  RUN=$(sed -n 's/^RunId: //p' "$WORK/submit.out")
}

# ticks_from FILE: "first-last count" of the tick lines in FILE, "doubled" or "gap" if a line
# repeats or is missing between the first and the last.
ticks_from() {
  python3 - "$1" <<'PY'
import re, sys
n = [int(m.group(1)) for m in re.finditer(r"^tick (\d+)$", open(sys.argv[1]).read(), re.M)]
if not n: print("none")
elif len(set(n)) != len(n): print("doubled")
elif n != list(range(n[0], n[-1] + 1)): print("gap")
else: print(f"{n[0]}-{n[-1]} {len(n)}")
PY
}

containers() { docker ps -aq | wc -l; }

# kill_mid_run [DOCKERD-ARGS...]: an engine with those arguments; a 30-tick run killed -9 at
# tick 3, the engine started again 2 s later; the submit's exit code in SUBMIT_CODE, the run's
# record (JSON) in OUT.
kill_mid_run() {
  stop_engine
  start_engine "$@"
  submit_until_tick 30
  kill_engine
  sleep 2
  start_engine "$@"
  wait_submit
  SUBMIT_CODE=$CODE
  run_mlw history info -r "$RUN" -o json
}

# --- 1. --live-restore: the container goes on while the engine is away -------------------------
kill_mid_run --live-restore
expect_eq "live-restore: submit exits with the script's own code" "$SUBMIT_CODE" 3
expect_eq "live-restore: the run is Failed with exit code 3" \
  "$(json_get "$OUT" 'd["status"], d["exit_code"]')" "Failed 3"
expect_contains "live-restore: the record says the engine stopped answering" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "stopped answering during the run"
expect_eq "live-restore: every line once in driver_log.txt" \
  "$(ticks_from ".mlw/runs/$RUN/driver_log.txt")" "0-29 30"
expect_eq "live-restore: every line once on the terminal" "$(ticks_from "$WORK/submit.out")" "0-29 30"
expect_eq "live-restore: the container is removed" "$(containers)" 0

# --- 2. no live-restore: the engine stops the container when it starts --------------------------
kill_mid_run
expect_eq "no live-restore: submit exits 143 (the engine stopped the container)" "$SUBMIT_CODE" 143
expect_eq "no live-restore: the run is Failed with 143, not 125" \
  "$(json_get "$OUT" 'd["status"], d["exit_code"]')" "Failed 143"
expect_contains "no live-restore: the record explains 143" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "without live-restore"
LOG_TICKS=$(ticks_from ".mlw/runs/$RUN/driver_log.txt")
check "no live-restore: the lines before the stop are kept, none doubled ($LOG_TICKS)" \
  python3 -c "import sys; a, n = sys.argv[1].split(' '); sys.exit(not (a.startswith('0-') and int(n) >= 4))" "$LOG_TICKS"
expect_eq "no live-restore: the container is removed" "$(containers)" 0

# --- 3. away longer than MLW_ENGINE_RETRY: Lost, then followed again -----------------------------
stop_engine
start_engine --live-restore
export MLW_ENGINE_RETRY=2
submit_until_tick 40
kill_engine
wait_submit
expect_eq "engine away: submit exits 125 (the run's end is not known)" "$CODE" 125
run_mlw history info -r "$RUN" -o json
expect_eq "engine away: the run is Lost" "$(json_get "$OUT" 'd["status"]')" "Lost"
expect_contains "engine away: the record says what to do" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "follow the run with history logs -f"
unset MLW_ENGINE_RETRY
start_engine --live-restore
timeout -k 5 90 "$MLW" history logs -r "$RUN" -f >"$WORK/follow.out" 2>"$WORK/follow.err" </dev/null
expect_eq "engine back: history logs -f follows to the end" "$?" 0
expect_eq "engine back: every line once in what logs -f printed" "$(ticks_from "$WORK/follow.out")" "0-39 40"
expect_eq "engine back: every line once in driver_log.txt" \
  "$(ticks_from ".mlw/runs/$RUN/driver_log.txt")" "0-39 40"
run_mlw history info -r "$RUN" -o json
expect_eq "engine back: the run is Failed with the script's exit code 3" \
  "$(json_get "$OUT" 'd["status"], d["exit_code"]')" "Failed 3"
expect_not_contains "engine back: the Lost problem is gone" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "did not answer"
expect_eq "engine back: the container is removed" "$(containers)" 0

# --- 4. the docker command's path (a monitor runs `docker start -a`: dockerRunArgs) --------------
# An engine that stops answering ends the docker command with its own failure; the run's end is
# the engine's record of the container, not that code.
"$MLW" -q computetarget attach docker -n m --base-image "$MLW_TEST_IMAGE" >/dev/null
sed -i 's#^dockerRunArgs:.*#dockerRunArgs: ["--label", "mlw.test=monitor"]#' aml_config/m.compute
submit_until_tick_on() { # TARGET TICKS
  rm -f "$WORK/submit.out" "$WORK/submit.rc"
  ("$MLW" experiment submit -c "$1" ticks.py "$2" >"$WORK/submit.out" 2>&1 </dev/null
   echo $? >"$WORK/submit.rc") &
  SUBMIT_PID=$!
  for _ in $(seq 1 300); do grep -q '^tick 3$' "$WORK/submit.out" 2>/dev/null && return 0; sleep 0.2; done
  fail "the run printed no tick 3 within 60 s: $(cat "$WORK/submit.out")"
}
stop_engine
start_engine
submit_until_tick_on m 30
kill_engine
sleep 2
start_engine
wait_submit
expect_eq "docker command: submit exits 143 (the engine stopped the container), not the command's 1" \
  "$CODE" 143
run_mlw history info -r "$RUN" -o json
expect_eq "docker command: the run is Failed with 143" \
  "$(json_get "$OUT" 'd["status"], d["exit_code"]')" "Failed 143"
expect_contains "docker command: the record says the engine stopped answering" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "stopped answering during the run"
docker ps -aq --filter label=mlw.test=monitor | xargs -r docker rm -f >/dev/null 2>&1

export MLW_ENGINE_RETRY=2
submit_until_tick_on m 40
kill_engine
wait_submit
unset MLW_ENGINE_RETRY
expect_eq "docker command, engine away: submit exits 125 (the run's end is not known)" "$CODE" 125
run_mlw history info -r "$RUN" -o json
expect_eq "docker command, engine away: the run is Lost" "$(json_get "$OUT" 'd["status"]')" "Lost"
expect_contains "docker command, engine away: the record names where the container is" \
  "$(json_get "$OUT" '" ".join(d["problems"])')" "docker ps -a --filter label=mlw.run=$RUN"

finish
