# shellcheck shell=sh
# `mlw experiment shell` into a running Slurm job (src/exec/join.cpp): a step of the job's own
# (srun --overlap: beside the running step, within its allocation) on the job's first node runs
# exec/enter.sh there, in a pty of Slurm's (srun --pty) when TTY is 1. Called as
#   mlw_shell JOB_ID FOLDER TTY ENTER [COMMAND…]
# FOLDER: the run's folder (relative: to $HOME, on the cluster's shared filesystem); ENTER:
# exec/enter.sh's program. The script is the process job.sh's first rank named in script.pid; a
# run in a docker container is entered by its label (mlw.run=RUN). A job that is not running,
# or a container kind mlw cannot enter: one line and 125.
mlw_shell() {
  job=$1 folder=$2 tty=$3 enter=$4
  shift 4
  run=${folder##*/}
  node=$(squeue -h -j "$job" -t RUNNING -o %B 2>/dev/null) || node=
  if [ -z "$node" ]; then
    echo "mlw: error: cannot enter run $run: its job $job is not running" >&2
    exit 125
  fi
  pty=
  [ "$tty" = 1 ] && pty=--pty
  # The step finds the run's container (if any) on its node, then enters it or the script.
  # shellcheck disable=SC2016 # the step's own words
  step='run=$1 folder=$2 tty=$3 enter=$4
shift 4
container=
if grep -Eq "^(command=\(.?apptainer|srun_options=\(.?--container-image)" "$folder/run.env" 2>/dev/null; then
  echo "mlw: error: cannot enter run $run: mlw enters docker containers, not apptainer or pyxis ones, on Slurm" >&2
  exit 125
elif grep -Eq "^command=\(.?docker.? .?run" "$folder/run.env" 2>/dev/null; then
  container=$(docker ps -q --filter "label=mlw.run=$run" 2>/dev/null | head -n 1)
  [ -n "$container" ] || { echo "mlw: error: cannot enter run $run: its container is not running on $(hostname)" >&2; exit 125; }
fi
exec /bin/sh -c "$enter" mlw-enter "$run" "$folder" "$container" docker "$tty" "" "$@"'
  cd "$HOME" 2>/dev/null || :
  # shellcheck disable=SC2086 # pty is one word or none
  exec srun --jobid="$job" --overlap --nodes=1 --ntasks=1 --nodelist="$node" --quiet $pty \
    /bin/sh -c "$step" mlw-step "$run" "$folder" "$tty" "$enter" "$@"
}
