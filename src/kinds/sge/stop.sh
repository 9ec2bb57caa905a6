# shellcheck shell=sh
# mlw_stop JOB: deletes the Grid Engine job (JOB.TASK: that task of an array): Grid Engine sends
# SIGUSR2 first (qsub -notify), job.sh records 143; SIGKILL follows after the queue's notify time.
mlw_stop() {
  case "$1" in
    *.*) qdel "${1%.*}" -t "${1#*.}" >/dev/null 2>&1 ;;
    *) qdel "$1" >/dev/null 2>&1 ;;
  esac
  exit 0
}
