#!/usr/bin/env bash
# `mlw experiment shell` (issue 48, point 2) against real parts: a run on this machine (local), in
# a container of the servers' Docker engine (docker), and over the real sshd as mlwtest in a
# container (remotedocker) and as a process (remote). On each: one command's output and exit code,
# with the run's variables, in its folder (the command releases the waiting run); a terminal driven
# through tmux (tty answers a /dev/pts, the window's size and a change of it are seen, the shell's
# exit code is mlw's); then the refusals (an ended run, another user's run, a bad flag pair).
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
command -v tmux >/dev/null || {
  echo "tmux is required (scripts/setup installs it)"
  exit 1
}
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
# Every session gets a tmux server of its own: a new session on the socket of a server that was
# just killed can reach that server while it exits ("server exited unexpectedly", seen in CI).
SESSIONS=0
TMUX_SOCKET="mlw-shell-$$-0"
tmux_() { tmux -L "$TMUX_SOCKET" -f /dev/null "$@"; }
trap 'tmux_ kill-server 2>/dev/null; cleanup' EXIT
# new_session COMMAND: a 100x30 tmux session running COMMAND on a server of its own; the pane
# stays when COMMAND ends, so that what it printed can be shown.
new_session() {
  tmux_ kill-server 2>/dev/null
  SESSIONS=$((SESSIONS + 1))
  TMUX_SOCKET="mlw-shell-$$-$SESSIONS"
  tmux_ start-server \; set-option -g remain-on-exit on \; new-session -d -s s -x 100 -y 30 "$1"
}

new_project shellp
"$MLW" -q computetarget attach docker -n d --base-image "$MLW_TEST_IMAGE" >/dev/null
"$MLW" -q computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
"$MLW" -q computetarget attach remote -n rm -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null
check "the three targets are attached" test -f aml_config/d.compute -a -f aml_config/rd.compute \
  -a -f aml_config/rm.compute
# Waits (300 s at most) for a file named `release` in its working folder, which only a command
# run inside the run can make.
cat >wait.py <<'PY'
import os, time
print("waiting in", os.getcwd(), flush=True)
for _ in range(3000):
    if os.path.exists("release"):
        print("released", flush=True)
        break
    time.sleep(0.1)
PY

# in_run KIND RUN TEXT MORE: a process of the run's machine (its container's, for a container
# kind) has TEXT and MORE, joined, in its command line (given apart, so that no check's own
# command line has them).
in_run() {
  local cmdlines
  case "$1" in
  d | rd) cmdlines=$(docker exec "mlw-$2" sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " "' 2>/dev/null) ;;
  *) cmdlines=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ') ;;
  esac
  [[ "$cmdlines" == *"$3$4"* ]]
}
export -f in_run

# type_until KEYS TEXT: types KEYS and Enter in the pane until it shows TEXT (30 s at most):
# what is typed while the shell there starts may be dropped (docker's client flushes the input
# when it makes the terminal raw), so it is typed again every 3 s.
type_until() {
  local i
  for ((i = 0; i < 10; i++)); do
    tmux_ send-keys -t s "$1" Enter
    wait_for 3 shows "$2" && return 0
  done
  return 1
}

# screen: what the tmux pane shows now.
screen() { tmux_ capture-pane -p -t s -S -50; }
shows() { [[ "$(screen)" == *"$1"* ]]; }

for t in local d rd rm; do
  run_mlw experiment submit -c "$t" -a wait.py
  RID=$(sed -n 's/^RunId: //p' <<<"$OUT")
  check "$t: the run started (-a)" test -n "$RID"
  check "$t: … and is Running" wait_for 90 run_is "$RID" Running
  check "$t: … its script waits" wait_for 60 bash -c "'$MLW' history logs -r '$RID' | grep -q 'waiting in'"

  # A terminal: tmux gives mlw a real one (100×30), then changes its size.
  rm -f "$WORK/tmux.exit"
  check "$t: a terminal session starts" new_session \
    "cd '$PWD' && '$MLW' experiment shell -r '$RID'; echo \$? >'$WORK/tmux.exit'; sleep 30"
  check "$t: a terminal there (tty answers a /dev/pts)" \
    type_until 'echo "T=$(tty) S=$(stty size) R=$MLW_RUN_ID"' "T=/dev/pts/"
  check "$t: … of the window's size (30 rows, 100 columns)" shows "S=30 100 R=$RID"
  shows "S=30 100 R=$RID" || screen >&2
  tmux_ resize-window -t s -x 120 -y 40
  sleep 0.5
  tmux_ send-keys -t s 'echo "Z=$(stty size)"' Enter
  check "$t: … that follows the window (40 rows, 120 columns)" wait_for 20 shows "Z=40 120"
  tmux_ send-keys -t s 'exit 3' Enter
  check "$t: the shell's exit code is mlw's" wait_for 30 grep -qx 3 "$WORK/tmux.exit"
  [ -s "$WORK/tmux.exit" ] || screen >&2
  tmux_ kill-server 2>/dev/null

  # mlw killed (-9) while its shell runs a command: nothing it started stays in the run.
  check "$t: a second terminal session starts" new_session \
    "cd '$PWD' && exec '$MLW' experiment shell -r '$RID'"
  check "$t: a shell again" type_until 'echo "R=$((6 * 7))"' "R=42"
  shows "R=42" || screen >&2
  tmux_ send-keys -t s "sleep 12345" Enter
  check "$t: a shell's command runs there" wait_for 30 in_run "$t" "$RID" "sleep 1234" 5
  kill -KILL "$(tmux_ display -p -t s '#{pane_pid}')"
  tmux_ kill-server 2>/dev/null
  check "$t: … and ends when mlw is killed (not left in the run)" wait_for 20 bash -c \
    "! in_run '$t' '$RID' 'sleep 1234' 5"

  # One command, no terminal: the run's variables and folder, its output and exit code.
  run_mlw experiment shell -r "$RID" -- sh -c \
    'echo "id=$MLW_RUN_ID"; if [ -t 0 ]; then echo tty; else echo notty; fi; touch release; exit 7'
  expect_eq "$t: a command's exit code is mlw's" "$CODE" 7
  [ "$CODE" = 7 ] || echo "$t: shell said: $ERR" >&2
  expect_contains "$t: … it sees the run's MLW_RUN_ID" "$OUT" "id=$RID"
  expect_contains "$t: … with no terminal unless -t" "$OUT" "notty"
  check "$t: … in the run's folder (its file released the run)" wait_for 90 run_is "$RID" Completed
  expect_contains "$t: … as the run's log says" "$("$MLW" history logs -r "$RID")" "released"

  run_mlw experiment shell -r "$RID" -- true
  expect_eq "$t: an ended run cannot be entered (125)" "$CODE" 125
  expect_contains "$t: … saying so, when, and where its output is" "$ERR" \
    "run $RID has ended (Completed, exit 0) at "
  expect_contains "$t: … and where its output is" "$ERR" "mlw history logs -r $RID"
done

# Another user's run in a shared project is refused before anything is reached.
run_mlw experiment submit -c local -a wait.py
RID=$(sed -n 's/^RunId: //p' <<<"$OUT")
check "another user's run: started" wait_for 30 run_is "$RID" Running
as_someone_else "$RID"
run_mlw experiment shell -r "$RID" -- touch release
expect_eq "another user's run is refused (125)" "$CODE" 125
expect_contains "… saying whose it is" "$ERR" "run $RID is someone-else's: experiment shell reaches only your own runs"
check "… and nothing ran there" test ! -e ".mlw/runs/$RID/snapshot/release"
touch ".mlw/runs/$RID/snapshot/release"
wait_for 30 bash -c "! '$MLW' -o json history info -r '$RID' | grep -q '\"Running\"'"

expect_error "-t and -T together" 2 "excludes" experiment shell -r "$RID" -t -T
run_mlw experiment shell -r no_such_run_1 -- true
expect_eq "an unknown run (125)" "$CODE" 125
expect_contains "… named" "$ERR" "no_such_run_1"

finish
