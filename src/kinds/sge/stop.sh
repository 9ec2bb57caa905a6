# shellcheck shell=sh
# mlw_stop JOB: deletes the Grid Engine job: Grid Engine sends SIGUSR2 first (qsub -notify), job.sh
# records 143; SIGKILL follows after the queue's notify time.
mlw_stop() {
  qdel "$1" >/dev/null 2>&1
  exit 0
}
