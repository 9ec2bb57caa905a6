# shellcheck shell=sh disable=SC2154 # the mlw_ variables come from the preamble
# One follow step of a run that a detached monitor runs (MonitorDriver, exec/driver_monitor.cpp),
# after the preamble: mlw_run (the run folder), mlw_offset (the first byte of its driver_log.txt
# not yet received, counted from 1), mlw_pid (the monitor's pid; empty: start the monitor first,
# monitor.sh on the step's stdin, after the run folder's tree when mlw_tree is 1: "T\n" and T
# bytes of tar, its objects in the store), mlw_reboot_wait (how long after a boot a run that
# restartAfterReboot keeps may wait for its boot hook, s), mlw_end (prints how the run ended,
# run in the run folder), mlw_lease (1: the run waits for its lease), mlw_metrics (the first byte of its
# metrics.jsonl not yet received, counted from 1), mlw_handover (1: end once the run started or
# queued) and the results' settings (results.sh follows this file).
# Prints the log from mlw_offset on until the monitor ends, then on stderr: the new monitor's
# "mlw-pid=N", the lease's "mlw-lease=LINE"s, the metrics' "mlw-metric=LINE"s, then "mlw-state=running" (the monitor goes on: the
# step was cut short) or "mlw-state=ended", the end's lines, "mlw-results" and the run's results.
if [ -z "$mlw_pid" ]; then
  # The run folder from the tree, unless an earlier try made it; a failure ends the step with
  # an empty pid, after what went wrong.
  if [ -n "$mlw_tree" ]; then
    read -r t
    if [ -d "$mlw_run" ]; then
      head -c "$t" >/dev/null
    elif ! { { [ ! -e "$mlw_run.tmp" ] || rm -rf "$mlw_run.tmp"; } && mkdir -m 700 "$mlw_run.tmp" &&
      head -c "$t" | tar -x -P -C "$mlw_run.tmp" && : >"$mlw_run.tmp/driver_log.txt" &&
      mv "$mlw_run.tmp" "$mlw_run"; }; then
      echo mlw-pid= >&2
      exit 0
    fi
  fi
  mlw_launch "$mlw_run"
  echo "mlw-pid=$p" >&2
  case "$p" in '' | *[!0-9]*) exit 0 ;; esac
  mlw_pid=$p
fi
# A run that restartAfterReboot keeps (RUN/reboot, exec/reboot.sh): its monitor is the one that
# monitor.pid names for this boot (the hook may have started it again).
# mlw_mpid: true where monitor.pid names a monitor of this boot, whose pid goes to mlw_pid.
mlw_rb=
mlw_mpid() {
  [ -n "$mlw_rb" ] || { read -r mlw_rb </proc/sys/kernel/random/boot_id; } 2>/dev/null || return 1
  o=
  m=
  { read -r o m || :; } <"$mlw_run/monitor.pid" 2>/dev/null
  [ "$o" = "$mlw_rb" ] && [ -n "$m" ] && mlw_pid=$m
  [ "$o" = "$mlw_rb" ]
}
# A pid of another boot names some other process now: none to follow (no pid is that high).
if [ -n "$mlw_pid" ] && [ -f "$mlw_run/reboot" ]; then
  mlw_mpid || [ ! -s "$mlw_run/monitor.pid" ] || mlw_pid=2147483647
fi
# A detached run's launch through the kept connection (mlw_handover=1) ends here, once the run
# started or (mlw_lease=1) the lease answered first (its notices passed on, not waited after): the connection is free for the next
# command, and the run is followed by steps that log in on their own.
if [ -n "$mlw_handover" ]; then
  if [ -n "$mlw_lease" ]; then
    : >>"$mlw_run/lease.log"
    tail -n +1 -s 0.05 --pid="$mlw_pid" -f "$mlw_run/lease.log" 2>/dev/null |
      sed -u -n 's/^/mlw-lease=/p; /^mlw-lease=notice /!q' >&2
  fi
  echo mlw-state=running >&2
  exit 0
fi
# A run waiting for its lease (mlw_lease=1): the lease's answers, on stderr as mlw-lease=LINE,
# until it is granted, refused or stopped (the monitor appends them to lease.log).
if [ -n "$mlw_lease" ]; then
  : >>"$mlw_run/lease.log"
  tail -n +1 -s 0.05 --pid="$mlw_pid" -f "$mlw_run/lease.log" 2>/dev/null |
    sed -u -n 's/^/mlw-lease=/p; /^mlw-lease=[ges]/q' >&2
fi
# The run's metrics as the script writes them (a sweep's early stopping reads them): each whole
# line of metrics.jsonl from byte mlw_metrics on, up to 4000 bytes, on stderr as mlw-metric=LINE;
# for a longer or empty one, mlw-metric-skip=N, its N bytes with the newline (its text comes back
# with the results), so that the next step starts where this one ended. Its tail is stopped by
# pid when the log's ends, so that the step ends then too; what it had not sent comes with the
# results, which replace the copy. (awk in the C locale: lengths in bytes. mawk reads a pipe a
# block at a time unless -W interactive; other awks take lines as they come.)
mlw_mtail=
if [ -n "$mlw_metrics" ]; then
  mlw_awk='awk'
  awk -W interactive 'BEGIN { }' </dev/null >/dev/null 2>&1 && mlw_awk='awk -W interactive'
  rm -f "$mlw_run/metrics.tail"
  # shellcheck disable=SC2086,SC2016 # mlw_awk is one or three words; $0 is awk's
  {
    tail -c "+$mlw_metrics" -s 0.2 --pid="$mlw_pid" -F "$mlw_run/metrics.jsonl" 2>/dev/null &
    echo $! >"$mlw_run/metrics.tail"
    wait
  } |
    LC_ALL=C $mlw_awk '{
      if (length($0) > 0 && length($0) <= 4000) print "mlw-metric=" $0
      else print "mlw-metric-skip=" (length($0) + 1)
      fflush()
    }' >&2 2>/dev/null &
  mlw_mtail=$!
fi
tail -c "+$mlw_offset" -s 0.01 --pid="$mlw_pid" -f "$mlw_run/driver_log.txt" 2>/dev/null
if [ -n "$mlw_mtail" ]; then
  kill "$(cat "$mlw_run/metrics.tail" 2>/dev/null)" 2>/dev/null
  wait "$mlw_mtail" 2>/dev/null
fi
exec >&2
kill -0 "$mlw_pid" 2>/dev/null && echo mlw-state=running && exit 0
# Its monitor gone with no end: where the machine restarted since it started (another boot's id
# in monitor.pid), the run waits for the boot hook to start it again (up to 20 s a step, and
# MLW_REBOOT_WAIT s of the machine's uptime); a stop while it waits ends it (143).
if [ -f "$mlw_run/reboot" ] && [ ! -f "$mlw_run/exit_code" ] && [ -s "$mlw_run/monitor.pid" ] &&
  ! mlw_mpid; then
  if [ -e "$mlw_run/stopped" ]; then
    echo 143 >"$mlw_run/exit_code"
  else
    i=0
    while [ "$i" -lt 20 ] && ! mlw_mpid && [ ! -f "$mlw_run/exit_code" ]; do
      sleep 1
      i=$((i + 1))
    done
    read -r up _ </proc/uptime 2>/dev/null || up=0
    if mlw_mpid || [ "${up%.*}" -lt "$mlw_reboot_wait" ]; then
      echo mlw-state=running
      exit 0
    fi
    : >"$mlw_run/no_relaunch"
  fi
  # Ended here: a later boot does not start it, and the hook goes with the last run it keeps.
  # shellcheck source=/dev/null
  [ ! -f "$HOME/.mlw/reboot.sh" ] ||
    (. "$HOME/.mlw/reboot.sh" && cd "$mlw_run" && mlw_hook_remove) 2>/dev/null
fi
echo mlw-state=ended
cd "$mlw_run" || exit 0
eval "$mlw_end"
printf '\nmlw-results\n'
exec 2>/dev/null
