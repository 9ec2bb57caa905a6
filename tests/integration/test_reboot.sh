#!/usr/bin/env bash
# restartAfterReboot (issue 37 point 4, docs/reproduce.md) on the remote and remotedocker targets
# of tests/fixtures/servers.sh (the real sshd and Docker engine, as the user mlwtest, whose
# crontab is Debian's cron's). No suite can restart the machine: a restart is played by what it
# leaves behind — the run's monitor.pid names another boot, its processes (and container) are
# killed with SIGKILL — and by running the @reboot line of the user's crontab as that user, as
# cron does at boot. Checked: doctor's row, the hook while the run goes on and gone after it, the
# run followed across the "restart" with every line of both attempts, one record (restarts 1), a
# cancel while it waits, maxRestarts used up, and a run without the key that is not kept.
source "$(dirname "$0")/lib.sh"

require_env MLW_TEST_SERVERS MLW_TEST_SSH_PORT MLW_TEST_SSH_PASSWORD MLW_TEST_IMAGE DOCKER_HOST
export HOME="$WORK/home"
mkdir -p "$HOME"
ADDR="127.0.0.1:$MLW_TEST_SSH_PORT"
TUSER=mlwtest
THOME=$(getent passwd "$TUSER" | cut -d: -f6)
printf '%s\n' "$MLW_TEST_SSH_PASSWORD" >"$WORK/pw"
# This machine did not restart: its uptime is long past the 600 s a run may wait for its hook
# after a boot. The bound itself is checked last, with the default.
export MLW_REBOOT_WAIT=100000000
command -v crontab >/dev/null || {
  echo "crontab is missing (Debian's cron; scripts/setup installs it)"
  exit 1
}
hook_line() { crontab -u "$TUSER" -l 2>/dev/null | grep '^@reboot .*\.mlw/reboot\.sh' || :; }
# boot: what cron does at boot: each @reboot line of the user's crontab, run as the user.
boot() {
  local line
  while IFS= read -r line; do
    su -s /bin/sh "$TUSER" -c "cd && ${line#@reboot }"
  done < <(crontab -u "$TUSER" -l 2>/dev/null | grep '^@reboot ')
}
# restart_machine RUN: what a restart leaves of RUN on the target: its monitor of another boot,
# its processes and container ended by SIGKILL.
restart_machine() {
  local dir="$THOME/.mlw/runs/$1" pid group last
  read -r _ pid <"$dir/monitor.pid"
  echo "0f0f0f0f-0000-4000-8000-0000000000aa $pid" >"$dir/monitor.pid"
  group=$(ps -o pgid= -p "$pid" | tr -d ' ')
  # Everything stops at once, as in a restart: the container is frozen before its monitor dies
  # (else, on a loaded machine, it printed lines no one was left to read, past its checkpoint).
  if [ -s "$dir/container" ]; then
    docker pause "$(cat "$dir/container")" >/dev/null 2>&1 || :
    # … and what it printed before reaches the run's log through its monitor's `docker attach`
    # (bounded: 5 s), as a restart loses nothing written before the power went (under the
    # sanitizer run the attach stream lagged: a line was printed and checkpointed, never logged).
    last=$(docker logs "$(cat "$dir/container")" 2>/dev/null | tail -n 1)
    for _ in $(seq 50); do
      if [ -z "$last" ] || grep -qxF -- "$last" "$dir/driver_log.txt" 2>/dev/null; then break; fi
      sleep 0.1
    done
  fi
  [ -n "$group" ] && kill -KILL -- "-$group"
  if [ -s "$dir/container" ]; then docker kill "$(cat "$dir/container")" >/dev/null 2>&1 || :; fi
}
# (what an earlier, interrupted run of this suite may have left)
crontab -u "$TUSER" -r 2>/dev/null || :
rm -f "$THOME"/.mlw/runs/*/reboot

new_project reboot
# Counts lines from its checkpoint (the next line's number, saved after each); the first attempt
# prints until it is killed, a later one five more lines and ends.
cat >count.py <<'PY'
import os, time
path = os.path.join(os.environ.get("MLW_CHECKPOINT_DIR", "."), "next")
restart = int(os.environ.get("MLW_RESTART_COUNT", "0"))
start = int(open(path).read()) if os.path.exists(path) else 0
print("attempt", restart, "from line", start, flush=True)
for i in range(start, start + 5 if restart > 0 else 10**6):
    print("line", i, flush=True)
    with open(path + ".tmp", "w") as f:
        f.write(str(i + 1))
    os.replace(path + ".tmp", path)
    time.sleep(0.2)
PY
sed -i '/scipy=1.11/d' aml_config/conda_dependencies.yml # (the test image has no conda)
"$MLW" -q computetarget attach remote -n rem -a "$ADDR" -u "$TUSER" --password-stdin --accept-host-key \
  <"$WORK/pw" >/dev/null 2>&1
"$MLW" -q computetarget attach remotedocker -n rd -a "$ADDR" -u "$TUSER" --password-stdin --accept-host-key \
  --base-image "$MLW_TEST_IMAGE" <"$WORK/pw" >/dev/null 2>&1
echo 'restart: {onFailure: true, maxRestarts: 2, backoffSeconds: 0, restartAfterReboot: true}' \
  >>aml_config/rem.compute
echo 'restart: {onFailure: true, maxRestarts: 2, backoffSeconds: 0, restartAfterReboot: true}' \
  >>aml_config/rd.compute

run_mlw computetarget doctor -n rem
expect_contains "doctor names the boot hook the target has" "$OUT" "crontab: an @reboot line"

# survives NAME KIND: a run on NAME whose machine "restarts" mid-run goes on from its checkpoint.
survives() {
  local run log lines
  run=$("$MLW" -o json experiment submit -a -c "$1" count.py | json_get "$(cat)" 'd["run_id"]')
  check "$2: the run prints" wait_for 90 bash -c "'$MLW' history logs -r $run | grep -q '^line 3$'"
  expect_eq "$2: the boot hook is in the user's crontab while it runs" "$(hook_line)" \
    '@reboot /bin/sh "$HOME/.mlw/reboot.sh" mlw-boot'
  restart_machine "$run"
  sleep 3
  expect_eq "$2: killed by the restart, it waits for the hook (not Lost)" "$(run_state "$run")" "Running None"
  boot
  check "$2: the hook starts it again; it completes" wait_for 90 run_is "$run" Completed
  log=$("$MLW" history logs -r "$run")
  expect_contains "$2: a marker names the restart" "$log" "mlw: restart 1 of 2 after the machine restarted"
  expect_contains "$2: the second attempt goes on from the checkpoint" "$log" "attempt 1 from line"
  # The first attempt's lines, 0 to A, then the second's, S to S+4, from its checkpoint: S >= A
  # (the script checkpoints after it prints, so a restart between the two prints line A again:
  # that is the checkpoint's meaning, not a line given twice), and no more work than what the
  # log shows is lost: S <= A+1 ... except for lines printed in the restart's last moments,
  # which a machine that stops does not get to the log (as a real one would not): at most 2 s
  # of them (10 lines), which a loaded machine (the sanitizer stage) has been seen to need.
  local first second from
  first=$(sed -n '/^attempt 1 from line/q; /^line /p' <<<"$log")
  second=$(sed -n '/^attempt 1 from line/,$p' <<<"$log" | grep '^line ')
  from=$(sed -n 's/^attempt 1 from line \([0-9]*\)$/\1/p' <<<"$log")
  expect_eq "$2: the first attempt's lines, each once, in order" "$first" \
    "$(seq 0 $(($(wc -l <<<"$first") - 1)) | sed 's/^/line /')"
  expect_eq "$2: the second's from its checkpoint, each once" "$second" \
    "$(seq "${from:-x}" $((${from:-0} + 4)) | sed 's/^/line /')"
  check "$2: … with nothing lost between them" test "${from:-x}" -ge "$(($(wc -l <<<"$first") - 1))" \
    -a "${from:-0}" -le "$(($(wc -l <<<"$first") + 10))"
  [ "${from:-0}" -le "$(wc -l <<<"$first")" ] ||
    echo "$2: the first attempt's log ends at line $(($(wc -l <<<"$first") - 1)), the second begins at ${from:-?}" >&2
  expect_eq "$2: one record, restarts 1" \
    "$(json_get "$("$MLW" -o json history info -r "$run")" '(d["status"], d["exit_code"], d["restarts"])')" \
    "('Completed', 0, 1)"
  expect_eq "$2: the hook is gone with the last run it kept" "$(hook_line)" ""
}
# A commented-out copy of the line (the user's own) is not the hook (issue 45): it is kept, and
# the hook is added beside it.
# shellcheck disable=SC2016 # the line as cron reads it
printf '%s\n' '# @reboot /bin/sh "$HOME/.mlw/reboot.sh" mlw-boot' | crontab -u "$TUSER" -
survives rem remote
expect_eq "the user's commented-out line is kept" "$(crontab -u "$TUSER" -l 2>/dev/null)" \
  '# @reboot /bin/sh "$HOME/.mlw/reboot.sh" mlw-boot'
survives rd remotedocker

# A cancel while the run waits for the hook ends it; the hook does not start it again.
R=$("$MLW" -o json experiment submit -a -c rem count.py | json_get "$(cat)" 'd["run_id"]')
check "a third run prints" wait_for 60 bash -c "'$MLW' history logs -r $R | grep -q '^line 1$'"
restart_machine "$R"
sleep 2
run_mlw experiment cancel -r "$R"
expect_eq "cancel while it waits for the hook" "$(run_state "$R")" "Canceled 143"
boot
sleep 2
expect_not_contains "… the hook does not start it again" "$("$MLW" history logs -r "$R")" "after the machine restarted"
expect_eq "… and is gone" "$(hook_line)" ""

# maxRestarts used: the hook does not start it again; the run says why.
sed -i 's/maxRestarts: 2/maxRestarts: 0/' aml_config/rem.compute
R=$("$MLW" -o json experiment submit -a -c rem count.py | json_get "$(cat)" 'd["run_id"]')
check "a fourth run prints" wait_for 60 bash -c "'$MLW' history logs -r $R | grep -q '^line 1$'"
restart_machine "$R"
boot
check "maxRestarts 0: after the restart the run fails" wait_for 60 run_is "$R" Failed
expect_contains "… saying why" "$("$MLW" -o json history info -r "$R")" "restarts (maxRestarts) were used"

# A hook that does not start the run within MLW_REBOOT_WAIT s of the boot: the run fails, saying so.
sed -i 's/maxRestarts: 0/maxRestarts: 2/' aml_config/rem.compute
R=$(MLW_REBOOT_WAIT=600 "$MLW" -o json experiment submit -a -c rem count.py | json_get "$(cat)" 'd["run_id"]')
check "a fifth run prints" wait_for 60 bash -c "'$MLW' history logs -r $R | grep -q '^line 1$'"
restart_machine "$R"
check "no hook ran within MLW_REBOOT_WAIT of the boot: the run fails" wait_for 60 run_is "$R" Failed
expect_contains "… saying why" "$("$MLW" -o json history info -r "$R")" "had not started it again 600 s after the boot"
boot
expect_eq "… and the hook that runs later does not start it" "$(hook_line)" ""

# Without restartAfterReboot no hook is installed and a monitor that ends without an exit code
# ends the run (as before).
sed -i '/^restart:/d' aml_config/rem.compute
R=$("$MLW" -o json experiment submit -a -c rem count.py | json_get "$(cat)" 'd["run_id"]')
check "a run without the key prints" wait_for 60 bash -c "'$MLW' history logs -r $R | grep -q '^line 1$'"
expect_eq "… no hook for it" "$(hook_line)" ""
restart_machine "$R"
check "… killed, it ends, not kept" wait_for 30 run_is "$R" Failed

finish
