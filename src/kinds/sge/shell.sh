# shellcheck shell=sh
# `mlw experiment shell` into a running Grid Engine job (src/exec/join.cpp): exec/enter.sh, run
# here, enters the script that job.sh named in script.pid, when the job runs on this machine (the
# one mlw logs in to: a cell whose login host executes jobs). Grid Engine starts a task inside a
# job from outside it only with `qrsh -inherit` in a parallel environment that allows it
# (control_slaves), which sites seldom grant: a job on another node is one line naming the node.
#   mlw_shell JOB_ID FOLDER TTY ENTER [COMMAND…]
# FOLDER: the run's folder (relative: to $HOME); ENTER: exec/enter.sh's program.
mlw_shell() {
  job=$1 folder=$2 tty=$3 enter=$4
  shift 4
  run=${folder##*/}
  cd "$HOME" 2>/dev/null || :
  node=$(cat "$folder/node" 2>/dev/null) || node=
  if [ -z "$node" ]; then
    echo "mlw: error: cannot enter run $run: its job $job has not started on a node yet" >&2
    exit 125
  fi
  here=$(hostname)
  if [ "$node" != "$here" ]; then
    echo "mlw: error: cannot enter run $run: its job $job runs on $node, not on $here where mlw logs in (ssh $node, then the run's folder ~/$folder)" >&2
    exit 125
  fi
  exec /bin/sh -c "$enter" mlw-enter "$run" "$folder" "" "" "$tty" "" "$@"
}
