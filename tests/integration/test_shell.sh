#!/usr/bin/env bash
# `mlw experiment shell` (issue 48, point 2) against real parts: a run on this machine (local), in
# a container of the servers' Docker engine (docker), and over the real sshd as mlwtest in a
# container (remotedocker) and as a process (remote). On each: one command's output and exit code,
# with the run's variables, in its folder (the command releases the waiting run); a terminal driven
# through tmux (tty answers a /dev/pts, the window's size and a change of it are seen, the shell's
# exit code is mlw's), mlw killed or its SSH connection cut (nothing it started stays in the run);
# then the refusals (an ended run, another user's run, a bad flag pair).
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/shell_checks.sh
source "$(dirname "$0")/shell_checks.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
new_project shellp
"$MLW" -q computetarget attach docker -n d --base-image "$MLW_TEST_IMAGE" >/dev/null
"$MLW" -q computetarget attach remotedocker -n rd -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null
"$MLW" -q computetarget attach remote -n rm -a "$ADDR" -u mlwtest --password-stdin \
  --accept-host-key <"$WORK/pw" >/dev/null
check "the three targets are attached" test -f aml_config/d.compute -a -f aml_config/rd.compute \
  -a -f aml_config/rm.compute
write_wait_py

for t in local d rd rm; do
  shell_checks "$t"
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
