#!/bin/sh
# An mlw run as a Grid Engine job: qsub runs it in the run folder (-cwd), its output into
# driver_log.txt. run.env, written by mlw, exports the run's variables and sets the command's
# words. The script's exit code goes to exit_code.job; the job exits with it, except 99 and 100,
# which Grid Engine takes as "run again" and "hold in error" (exit 1 instead).
# qdel sends SIGUSR2 first (qsub -notify), and so does the hard time limit h_rt: recorded as 143. SIGUSR1 is
# Grid Engine's warning (the soft time limit s_rt, a suspend coming): every process of the job
# gets it, this shell notes it. A rerunnable job (requeue: MLW_CHECKPOINT_SIGNAL is set) whose
# script then ends other than 0 — it saved a checkpoint — exits 99: Grid Engine runs it again.
canceled=
warned=
cut=
began=$(date +%s)
folder=$PWD
# USR2 comes before Grid Engine's SIGKILL, from qdel or from a limit (h_rt): when, in seconds after
# the start, goes to stopped_after so that mlw can say which (it knows whether it asked).
# shellcheck disable=SC2317 # run by the trap below
stopped() {
  canceled=1 cut=1
  echo $(($(date +%s) - began)) >"$folder/stopped_after"
}
trap stopped USR2
trap 'warned=1 cut=1' USR1
# shellcheck source=/dev/null
. ./run.env || exit 125
mkdir -p "$MLW_SHARE_DIR" 2>/dev/null
# The node, for `experiment forward` and `shell` (kinds/sge/forward.sh, shell.sh).
hostname >node.tmp 2>/dev/null && mv node.tmp node
# Each start of the job is an attempt (a rerunnable job that Grid Engine rescheduled runs again in
# the same folder): counted, marked in the log, given MLW_RESTART_COUNT; an earlier attempt's
# code is not this one's.
attempt=$(($(cat attempts 2>/dev/null || echo 0) + 1))
echo "$attempt" >attempts.tmp && mv attempts.tmp attempts
MLW_RESTART_COUNT=$((attempt - 1))
export MLW_RESTART_COUNT
if [ "$attempt" -gt 1 ]; then
  rm -f exit_code.job stopped_after script.pid
  echo "mlw: attempt $attempt (restart $MLW_RESTART_COUNT): job ${JOB_ID:-} was rescheduled"
fi
[ -z "${MLW_CHECKPOINT_DIR:-}" ] || mkdir -p "$MLW_CHECKPOINT_DIR" 2>/dev/null
# MLW_RESUME=1: a checkpoint is there to go on from; a later attempt that finds none says so.
MLW_RESUME=0
if [ -n "${MLW_CHECKPOINT_DIR:-}" ] && [ -n "$(ls -A "$MLW_CHECKPOINT_DIR" 2>/dev/null)" ]; then
  MLW_RESUME=1
elif [ -n "${MLW_CHECKPOINT_DIR:-}" ] && [ "$MLW_RESTART_COUNT" -gt 0 ]; then
  echo "mlw: restart $MLW_RESTART_COUNT starts from scratch: nothing in MLW_CHECKPOINT_DIR ($MLW_CHECKPOINT_DIR)"
fi
export MLW_RESUME
cd snapshot || exit 125
"$@" </dev/null &
child=$!
echo "$child" >../script.pid # for `experiment shell` (kinds/sge/shell.sh)
# The run's GPU sampler (exec/sampler.sh, docs/gpus.md) for the processes under this shell, where
# the site gave the job GPUs as CUDA_VISIBLE_DEVICES (a prolog or starter method: Grid Engine
# itself names none), in a session of its own.
sampler=
case "${CUDA_VISIBLE_DEVICES:-}" in
  '' | *[!0-9,]*) ;;
  *)
    if [ -s "$folder/sampler.sh" ] && command -v nvidia-smi >/dev/null 2>&1; then
      (cd "$folder" && MLW_NVML=$(cat sampler.nvml 2>/dev/null) exec setsid sh ./sampler.sh "$(cat sampler.awk)" "$CUDA_VISIBLE_DEVICES" \
        "${mlw_sample_every:-1}" "${mlw_sample_warn:-10}" "" "" "$$" metrics.jsonl) \
        </dev/null >/dev/null 2>&1 &
      sampler=$!
    fi
    ;;
esac
# wait returns early (128+N) when a trapped signal arrives: wait again until the command has
# ended, and take its own code (a wait after its end gives it; 127 where the shell has forgotten
# it, then the first wait had it).
while :; do
  cut=
  wait "$child"
  code=$?
  [ -n "$cut" ] || break
  kill -0 "$child" 2>/dev/null && continue
  wait "$child"
  again=$?
  [ "$again" = 127 ] || code=$again
  break
done
[ -z "$canceled" ] || code=143
[ -z "$sampler" ] || kill -s TERM -- "-$sampler" 2>/dev/null
cd .. || exit 125
if [ -n "$warned" ] && [ -z "$canceled" ] && [ "$code" != 0 ] && [ -n "${MLW_CHECKPOINT_SIGNAL:-}" ]; then
  echo "mlw: Grid Engine warned the job (SIGUSR1) and the script ended with $code: it runs again"
  exit 99
fi
echo "$code" >exit_code.job.tmp && mv exit_code.job.tmp exit_code.job
case "$code" in 99 | 100) exit 1 ;; esac
exit "$code"
