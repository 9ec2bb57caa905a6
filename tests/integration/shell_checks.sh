# shellcheck shell=bash
# shellcheck disable=SC2016 # the words typed into, or run by, the shell in the run
# `mlw experiment shell` checks for a suite (source it after lib.sh): tmux sessions that give
# mlw a real terminal, and shell_checks TARGET, the same checks on each kind. Used by
# test_shell (local, docker, remotedocker, remote), test_slurm and test_sge.

command -v tmux >/dev/null || {
  echo "tmux is required (scripts/setup installs it)"
  exit 1
}

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

# write_wait_py: wait.py in this folder, the run that shell_checks enters.
write_wait_py() {
  cat >wait.py <<'PY'
import os, time
print("waiting in", os.getcwd(), flush=True)
for _ in range(3000):
    if os.path.exists("release"):
        print("released", flush=True)
        break
    time.sleep(0.1)
PY
}

# in_run KIND RUN TEXT MORE: a process of the run's machine (its container's, for a container
# kind) has TEXT and MORE, joined, in its command line (given apart, so that no check's own
# command line has them). 2: the processes could not be read (the container did not answer).
in_run() {
  local cmdlines
  case "$1" in
  d | rd) cmdlines=$(docker exec "mlw-$2" sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " "' 2>/dev/null) ;;
  *) cmdlines=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ') ;;
  esac
  [ -n "$cmdlines" ] || return 2
  [[ "$cmdlines" == *"$3$4"* ]]
}
# not_in_run KIND RUN TEXT MORE: the processes were read, and none has TEXT and MORE.
not_in_run() {
  in_run "$@"
  [ $? = 1 ]
}
export -f in_run not_in_run

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

# shell_checks TARGET [VAR=VALUE]: a run of wait.py on TARGET (a kind's test target: d and rd are entered as
# containers of the servers' engine, any other as processes of this machine), entered through
# a terminal (its size, a change of it, its exit code, mlw killed) and with one command (the
# run's variables and folder, the exit code, which releases the run), then refused once ended.
# VAR=VALUE: a variable the script has (and the process that started it has not).
shell_checks() {
  local t=$1 var=${2:-} RID spid
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
  pane=$(tmux_ display -p -t s '#{pane_pid}')
  kill -KILL "$pane"
  # The window closing hangs its group up again while mlw's clean-up runs (a loaded machine
  # stretches that moment; here it is made certain).
  for _ in 1 2 3 4 5 6 7 8; do
    kill -HUP -- "-$pane" 2>/dev/null
    sleep 0.25
  done
  tmux_ kill-server 2>/dev/null
  # (A docker exec that hangs it up, then one per look: seconds each on a loaded machine.)
  check "$t: … and ends when mlw is killed (not left in the run)" wait_for 40 bash -c \
    "not_in_run '$t' '$RID' 'sleep 1234' 5"

  # mlw killed from elsewhere while its terminal stays open (no hang-up reaches what it started):
  # in a container, docker's client would relay on and the command stay in the run.
  if [ "$t" = d ]; then
    check "$t: a terminal session under a shell starts" new_session \
      "cd '$PWD' && '$MLW' experiment shell -r '$RID'; sleep 300"
    check "$t: a shell again, under a shell" type_until 'echo "R=$((6 * 8))"' "R=48"
    tmux_ send-keys -t s "sleep 23456" Enter
    check "$t: a shell's command runs there again" wait_for 30 in_run "$t" "$RID" "sleep 2345" 6
    kill -KILL "$(pgrep -P "$(tmux_ display -p -t s '#{pane_pid}')" -x mlw)"
    check "$t: … and ends when mlw alone is killed (not left in the run)" wait_for 40 bash -c \
      "not_in_run '$t' '$RID' 'sleep 2345' 6"
    # Ctrl-C while one command runs without a terminal: docker's client alone would end.
    check "$t: a command without a terminal starts" new_session \
      "cd '$PWD' && '$MLW' experiment shell -r '$RID' -- sleep 34567; sleep 300"
    check "$t: … it runs there" wait_for 30 in_run "$t" "$RID" "sleep 3456" 7
    tmux_ send-keys -t s C-c
    check "$t: … and Ctrl-C ends it there" wait_for 40 bash -c \
      "not_in_run '$t' '$RID' 'sleep 3456' 7"
    tmux_ kill-server 2>/dev/null
  fi

  # mlw killed while a command without a terminal runs a process of its own: in a container
  # that command leads no process group (only a terminal's does), and neither may stay there.
  if [ "$t" = d ] || [ "$t" = rd ]; then
    "$MLW" experiment shell -r "$RID" -- sh -c 'sleep 45678; echo never' </dev/null >/dev/null 2>&1 &
    spid=$!
    check "$t: a command without a terminal, and a process under it, run there" \
      wait_for 30 in_run "$t" "$RID" "sleep 4567" 8
    kill -KILL "$spid"
    check "$t: … and both end when mlw is killed (none left in the run)" wait_for 40 bash -c \
      "not_in_run '$t' '$RID' 'sleep 4567' 8"
  fi

  # Its SSH connection cut while a command runs (as a dropped network would): mlw says so (125),
  # and nothing it started stays in the run.
  if [ "$t" = rd ]; then
    "$MLW" experiment shell -r "$RID" -- sh -c 'sleep 56789; echo never' </dev/null >/dev/null \
      2>"$WORK/cut.err" &
    spid=$!
    check "$t: a command runs there again" wait_for 30 in_run "$t" "$RID" "sleep 5678" 9
    drop_logins "$spid"
    check "$t: its SSH connection cut: mlw ends" wait_for 30 bash -c "! kill -0 $spid 2>/dev/null"
    reap "$spid"
    expect_eq "$t: … exit 125" "$REAPED" 125
    expect_contains "$t: … saying the connection was lost" "$(cat "$WORK/cut.err")" \
      "the command's channel: the connection was lost"
    check "$t: … and nothing it started stays in the run" wait_for 40 bash -c \
      "not_in_run '$t' '$RID' 'sleep 5678' 9"
  fi

  # One command, no terminal: the run's variables and folder, its output and exit code.
  run_mlw experiment shell -r "$RID" -- sh -c \
    'echo "id=$MLW_RUN_ID"; env; if [ -t 0 ]; then echo tty; else echo notty; fi; touch release; exit 7'
  expect_eq "$t: a command's exit code is mlw's" "$CODE" 7
  [ "$CODE" = 7 ] || echo "$t: shell said: $ERR" >&2
  expect_contains "$t: … it sees the run's MLW_RUN_ID" "$OUT" "id=$RID"
  [ -z "$var" ] || expect_contains "$t: … and the script's own $var" "$OUT" "$var"
  expect_contains "$t: … with no terminal unless -t" "$OUT" "notty"
  check "$t: … in the run's folder (its file released the run)" wait_for 90 run_is "$RID" Completed
  expect_contains "$t: … as the run's log says" "$("$MLW" history logs -r "$RID")" "released"

  run_mlw experiment shell -r "$RID" -- true
  expect_eq "$t: an ended run cannot be entered (125)" "$CODE" 125
  expect_contains "$t: … saying so, when, and where its output is" "$ERR" \
    "run $RID has ended (Completed, exit 0) at "
  expect_contains "$t: … and where its output is" "$ERR" "mlw history logs -r $RID"
}
