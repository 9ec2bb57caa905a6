# shellcheck shell=sh
# The short steps of a run a detached monitor runs (MonitorDriver, exec/driver_monitor.cpp): each a
# function, called on the line after this file with its words quoted. RUN is the run folder.

# mlw_stop_lease: in a run folder, ends the lease a run still waits for (its monitor then ends
# the run as stopped, 143). The file `stopped` comes first: a monitor that had not yet written
# lease.pid (or script.pid, or container) reads it after writing them, and stops itself.
mlw_stop_lease() {
  : >stopped
  if [ -s lease.pid ] && ! grep -q '^granted' lease.log 2>/dev/null; then
    # Its group, and itself where it had not yet made its group (setsid).
    kill -s TERM -- "-$(cat lease.pid)" 2>/dev/null
    kill -TERM "$(cat lease.pid)" 2>/dev/null
  fi
}

# mlw_stop_container RUN DOCKER…: stops the run's container (its id in RUN/container), 10 s grace.
mlw_stop_container() {
  cd "$1" || exit 0
  mlw_stop_lease
  shift
  [ -s container ] && "$@" stop -t 10 "$(cat container)" >/dev/null 2>&1
  exit 0
}

# mlw_stop_process RUN: SIGTERM to the run's script (RUN/script.pid), SIGKILL after 10 s.
mlw_stop_process() {
  cd "$1" || exit 0
  mlw_stop_lease
  [ -s script.pid ] || exit 0
  p=$(cat script.pid)
  kill -TERM "$p"
  i=0
  while kill -0 "$p" 2>/dev/null && [ "$i" -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$p" 2>/dev/null
  exit 0
}

# mlw_submit_job RUN ARGUMENT…: the batch system's submit script from stdin (its length on the
# first line, then its bytes) into RUN/submit.sh, run with the arguments; the rest of stdin is its.
mlw_submit_job() {
  cd "$1" || exit 1
  shift
  read -r n && head -c "$n" >submit.sh && sh ./submit.sh "$@"
}

# mlw_monitor_alive RUN PID STALE…: "alive" while the monitor PID runs; else removes the files it
# left that a new monitor must not read (STALE, in RUN).
mlw_monitor_alive() {
  cd "$1" || exit 1
  pid=$2
  shift 2
  if kill -0 "$pid" 2>/dev/null; then echo alive; else rm -f "$@"; fi
}

# mlw_wait_started RUN PID: returns once the run has started (RUN/started) or its monitor ended;
# prints "started" when the run did start (a batch job deleted while it waited never did).
mlw_wait_started() {
  cd "$1" || exit 1
  while [ ! -e started ] && kill -0 "$2" 2>/dev/null; do sleep 0.2; done
  [ ! -e started ] || echo started
  exit 0
}

# mlw_print FILE: prints the file, nothing where there is none.
mlw_print() {
  cat "$1" 2>/dev/null
  exit 0
}
