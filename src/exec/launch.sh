# shellcheck shell=sh
# `mlw_launch RUN_DIR`: writes the step's stdin to monitor.sh in the run folder and starts it
# detached (a subshell of a waiting parent reads it: no shell started for it); sets $p to its
# pid, read whole before the step goes on (the started shell prints it a moment later). The
# waiting parent reaps the monitor at once, so `tail --pid` sees it end even where init reaps
# orphans late; it prints the monitor's pid, then lets go of the pipe (its stdout), which ends
# the reading. The monitor's own output goes to monitor.log; its pid, after this boot's id, to
# monitor.pid (a pid of an earlier boot names another process: exec/reboot.sh).
# shellcheck disable=SC2034 # p is the caller's
mlw_launch() {
  # shellcheck disable=SC2016 # the started shell expands $!
  p=$(cd "$1" && (umask 077 && cat >monitor.sh) && {
    setsid sh -c '( . ./monitor.sh ) >monitor.log 2>&1 </dev/null & echo $!
      { read -r b </proc/sys/kernel/random/boot_id; } 2>/dev/null || b=; echo "$b $!" >monitor.pid
      exec >/dev/null 2>&1; wait' </dev/null &
  })
}
# `mlw_launch_pid RUN_DIR`: mlw_launch, then prints the pid.
mlw_launch_pid() {
  mlw_launch "$1"
  echo "$p"
}
