# shellcheck shell=sh
# `mlw experiment forward` into a running Slurm job (src/exec/forward.cpp): one connection to PORT
# on the job's first node, carried over this program's stdin and stdout. A step of the job's own
# (srun --overlap: beside the running step, with its resources) runs the relay on that node,
# which connects to localhost:PORT there: a server that listens on the node's loopback only (as
# TensorBoard does by default) is reached, and no port is opened on the cluster's network.
#   mlw_forward JOB_ID RUN_FOLDER PORT RELAY
# RELAY: exec/relay.sh's program. A job that is not running: one line and 111.
mlw_forward() {
  node=$(squeue -h -j "$1" -t RUNNING -o %B 2>/dev/null) || node=
  if [ -z "$node" ]; then
    echo "mlw: warning: job $1 is not running: this connection is closed" >&2
    exit 111
  fi
  exec srun --jobid="$1" --overlap --nodes=1 --ntasks=1 --nodelist="$node" --quiet --unbuffered \
    /bin/sh -c "$4" mlw-relay "$3"
}
