#!/bin/sh
# An mlw run as a Grid Engine job: qsub runs it in the run folder (-cwd), its output into
# driver_log.txt. run.env, written by mlw, exports the run's variables and sets the command's
# words. The script's exit code goes to exit_code.job; the job exits with it, except 99 and 100,
# which Grid Engine takes as "run again" and "hold in error" (exit 1 instead).
# qdel sends SIGUSR2 first (qsub -notify): the run is being canceled, recorded as 143.
canceled=
trap 'canceled=1' USR2
# shellcheck source=/dev/null
. ./run.env || exit 125
mkdir -p "$MLW_SHARE_DIR" 2>/dev/null
# Each start of the job is an attempt (a rerunnable job that Grid Engine rescheduled runs again in
# the same folder): counted, marked in the log, given MLW_RESTART_COUNT; an earlier attempt's
# code is not this one's.
attempt=$(($(cat attempts 2>/dev/null || echo 0) + 1))
echo "$attempt" >attempts.tmp && mv attempts.tmp attempts
MLW_RESTART_COUNT=$((attempt - 1))
export MLW_RESTART_COUNT
if [ "$attempt" -gt 1 ]; then
  rm -f exit_code.job
  echo "mlw: attempt $attempt (restart $MLW_RESTART_COUNT): job ${JOB_ID:-} was rescheduled"
fi
[ -z "${MLW_CHECKPOINT_DIR:-}" ] || mkdir -p "$MLW_CHECKPOINT_DIR" 2>/dev/null
cd snapshot || exit 125
"$@" </dev/null &
child=$!
# wait returns early when a signal arrives: wait again until the command has ended.
while :; do
  wait "$child"
  code=$?
  kill -0 "$child" 2>/dev/null || break
done
[ -z "$canceled" ] || code=143
cd .. || exit 125
echo "$code" >exit_code.job.tmp && mv exit_code.job.tmp exit_code.job
case "$code" in 99 | 100) exit 1 ;; esac
exit "$code"
