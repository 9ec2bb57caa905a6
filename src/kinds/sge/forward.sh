# shellcheck shell=sh
# `mlw experiment forward` into a running Grid Engine job (src/exec/forward.cpp): one connection
# to PORT on the job's node, carried over this program's stdin and stdout. Grid Engine starts
# nothing inside a job from outside it (qrsh -inherit works only within the job), so the relay
# runs here, on the machine mlw logs in to, and connects to the node that job.sh named in the
# run's folder: the run's server must listen on an address of the node that this machine
# reaches (its name's, not only its loopback's) — or, when the job runs on this machine itself (a
# cell whose login host executes jobs), on its loopback, which is tried first (a notebook kernel
# listens only there).
#   mlw_forward JOB_ID RUN_FOLDER PORT RELAY
# RELAY: exec/relay.sh's program. A job that has not started: one line and 111.
mlw_forward() {
  node=$(cat "$2/node" 2>/dev/null) || node=
  case "$node" in
  "" | *[!A-Za-z0-9.-]*)
    echo "mlw: warning: job $1 has not named its node yet: this connection is closed" >&2
    exit 111
    ;;
  esac
  hosts=$node
  [ "$node" != "$(hostname)" ] || hosts="localhost,$node"
  exec /bin/sh -c "$4" mlw-relay "$3" "$hosts"
}
