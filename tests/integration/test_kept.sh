#!/usr/bin/env bash
# Kept SSH connections (MLW_SSH_KEPT, issue 15), against the real sshd of
# tests/fixtures/servers.sh, through the link emulator (bench/linkproxy.py) as a user's slow link
# would be: the next command reuses the connection, its folder and socket are this user's only,
# a kept connection whose peer vanished is replaced without a failed command, and killing it
# loses no run.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD
export HOME="$WORK/home"
mkdir -p "$HOME"
export MLW_SSH_KEPT=120 MLW_RECONNECT_TIMEOUT=60
start_link "$MLW_TEST_SSH_PORT"
LINK_LISTEN=$LINK_PORT
ADDR="127.0.0.1:$LINK_PORT"
CONNS="$XDG_CONFIG_HOME/mlw/connections"

# The kept processes of this suite (their socket is in this suite's folder), killed at the end.
kept_pids() {
  local inodes pid fd link
  inodes=$(awk -v d="$CONNS/" 'index($8, d) == 1 {print $7}' /proc/net/unix)
  for pid in $(pgrep -x mlw-ssh-kept); do
    for fd in /proc/"$pid"/fd/*; do
      link=$(readlink "$fd" 2>/dev/null)
      case "$link" in "socket:["*"]")
        link=${link#socket:[}
        if grep -qx "${link%]}" <<<"$inodes"; then echo "$pid"; break; fi ;;
      esac
    done
  done
}
stop_kept() { local pid; for pid in $(kept_pids); do kill "$pid"; done; }
trap 'stop_kept; cleanup' EXIT

new_project kept
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" | "$MLW" -q computetarget attach remote -n rm -a "$ADDR" \
  -u mlwtest --password-stdin -k --accept-host-key >/dev/null 2>"$WORK/e"
expect_eq "attach through the slow link" "$?" 0
check "attach keeps no connection (it checks the login itself)" test ! -e "$CONNS"
cat >hello.py <<'PY'
import sys
print("hello", *sys.argv[1:], flush=True)
PY
cat >slow.py <<'PY'
import sys, time
for i in range(int(sys.argv[1])):
    print("line", i, flush=True)
    time.sleep(float(sys.argv[2]))
PY

"$MLW" -vv experiment submit -c rm hello.py first >"$WORK/o" 2>"$WORK/e"
expect_eq "first submit" "$?" 0
expect_contains "first submit logs in" "$(cat "$WORK/e")" "logged in as mlwtest"
expect_contains "-vv: each command's time and waits" "$(cat "$WORK/e")" "waits for the server: # mlw probe"
expect_contains "-vv: what the connection cost in all" "$(cat "$WORK/e")" "commands on 1 channel(s)"
check "the run's connection is kept: a socket in the folder" wait_for 10 bash -c "ls '$CONNS'/*.sock"
expect_eq "the folder is the user's alone (0700)" "$(stat -c %a "$CONNS")" 700
check "a process named mlw-ssh-kept holds it" test -n "$(kept_pids)"

"$MLW" -vv experiment submit -c rm hello.py second >"$WORK/o" 2>"$WORK/e"
expect_eq "second submit" "$?" 0
expect_contains "second submit prints its output" "$(cat "$WORK/o")" "hello second"
expect_contains "second submit goes through the kept connection" "$(cat "$WORK/e")" "through the kept connection"
expect_not_contains "second submit does not log in" "$(cat "$WORK/e")" "logged in as"

# A detached run gives the kept connection back once it started: a submit while it goes on goes
# through the connection (its supervisor follows it over a login of its own), and the run loses
# no line.
run_mlw -o json experiment submit -c rm -a slow.py 20 0.1
RID=$(json_get "$OUT" 'd["run_id"]')
"$MLW" -vv experiment submit -c rm hello.py beside >"$WORK/o" 2>"$WORK/e"
expect_eq "a submit while a detached run goes on" "$?" 0
expect_contains "it goes through the kept connection" "$(cat "$WORK/e")" "through the kept connection"
expect_not_contains "it does not log in itself" "$(cat "$WORK/e")" "logged in as"
timeout -k 5 120 "$MLW" history logs -r "$RID" -f >"$WORK/follow.txt" 2>"$WORK/follow.err"
expect_eq "the detached run followed to its end" "$?" 0
expect_lines "the detached run lost no line" "$WORK/follow.txt" 20 ".mlw/runs/$RID/driver_log.txt"

# Never another user's: the folder is closed to them, and the kept process answers no other uid
# even where the folder and socket were opened up.
SOCK=$(ls "$CONNS"/*.sock | head -n 1)
ATTACK='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("refused:", e.strerror); sys.exit(0)
try:
    s.sendall(b"conv\n")  # what a client of its own asks
    s.settimeout(10)
    print("answered:", repr(s.recv(100)))
except OSError:
    print("answered:", repr(b""))'
OUT=$(runuser -u nobody -- python3 -c "$ATTACK" "$SOCK" 2>&1)
expect_contains "another user cannot reach the socket" "$OUT" "refused: Permission denied"
chmod 711 "$WORK" "$XDG_CONFIG_HOME" "$XDG_CONFIG_HOME/mlw" "$CONNS"
chmod 777 "$SOCK"
OUT=$(runuser -u nobody -- python3 -c "$ATTACK" "$SOCK" 2>&1)
expect_eq "another user's request gets nothing, not a channel" "$OUT" "answered: b''"
check "the kept process goes on after refusing them" test -n "$(kept_pids)"
"$MLW" experiment submit -c rm hello.py open >"$WORK/o" 2>"$WORK/e"
expect_eq "a submit with the folder opened up still runs" "$?" 0
expect_contains "and says it keeps no connection there" "$(cat "$WORK/e")" "not keeping SSH connections open: $CONNS may be entered by others"
chmod 700 "$WORK" "$XDG_CONFIG_HOME/mlw" "$CONNS"
chmod 755 "$SOCK"
check "the kept process goes on after a submit that could not use it" test -n "$(kept_pids)"

# Killing the kept process mid-run loses nothing: the supervisor of a run followed in the
# foreground (over the kept connection) logs in again.
timeout -k 5 120 "$MLW" experiment submit -c rm slow.py 30 0.1 >"$WORK/follow.txt" 2>"$WORK/follow.err" &
SUBMIT=$!
check "the run printed before the kept connection is killed" wait_for 30 grep -q "line 3" "$WORK/follow.txt"
RID=$(sed -n 's/^RunId: //p' "$WORK/follow.err" "$WORK/follow.txt" | head -n 1)
check "there is a kept process to kill" test -n "$(kept_pids)"
for pid in $(kept_pids); do kill -9 "$pid"; done
wait "$SUBMIT"
expect_eq "the submit after the kept connection was killed" "$?" 0
expect_lines "the run lost no line" "$WORK/follow.txt" 30 ".mlw/runs/$RID/driver_log.txt"
expect_eq "the run completed" "$(json_get "$("$MLW" -o json history info -r "$RID")" 'd["status"]')" "Completed"

# A kept connection whose peer vanished (the link dropped: the emulator killed and started
# again on the same port) is replaced without a failed command.
"$MLW" experiment submit -c rm hello.py before >/dev/null 2>&1
check "a kept connection before the link drops" test -n "$(kept_pids)"
kill "$LINK_PID"
wait "$LINK_PID" 2>/dev/null
start_link "$MLW_TEST_SSH_PORT"
"$MLW" -vv experiment submit -c rm hello.py after >"$WORK/o" 2>"$WORK/e"
expect_eq "the submit after the link dropped" "$?" 0
expect_contains "its output" "$(cat "$WORK/o")" "hello after"
expect_contains "it logged in again" "$(cat "$WORK/e")" "logged in as mlwtest"

# MLW_SSH_KEPT=0: no connection is kept.
stop_kept
rm -f "$CONNS"/*.sock
MLW_SSH_KEPT=0 "$MLW" experiment submit -c rm hello.py none >/dev/null 2>&1
expect_eq "MLW_SSH_KEPT=0 runs" "$?" 0
check "MLW_SSH_KEPT=0 keeps nothing" bash -c "! ls '$CONNS'/*.sock 2>/dev/null"

finish
