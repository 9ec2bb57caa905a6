#!/bin/sh
# Submits an mlw run to Grid Engine, in the run folder:
#   sh ./submit.sh JOB_NAME QUEUE PE SLOTS RETRY_SECONDS GPUS RERUN LIMITS [ARRAY_DIR INDEX SIZE LIMIT WAIT]
# Standard input holds job.sh, end.sh, run.env and the GPU sampler (exec/sampler.sh, sampler.awk,
# and sampler.nvml: the NVML reader as sampler.sh takes it in MLW_NVML),
# each after a line with its length in bytes.
# RERUN is y (requeue: a job Grid Engine reschedules runs again) or n; LIMITS is qsub's -l of the
# time limit ("h_rt=S[,s_rt=S]"; "" for none). Prints the job id (and
# nothing else on stdout); a refusal exits non-zero with qsub's words.
# With ARRAY_DIR the run is element INDEX (from 0) of a sweep's job array of SIZE, joined as
# exec/array_join.sh (which precedes this file) does: one `qsub -t 1-SIZE -tc LIMIT`, whose task t
# runs job.sh in member t-1's folder; each member's id is JOBID.t.
set -u
name=$1 queue=$2 pe=$3 slots=$4 retry=$5 gpus=${6:-0} rerun=${7:-n} limits=${8:-}
# shellcheck disable=SC2034 # index and wait are array_join.sh's
array=${9:-} index=${10:-0} size=${11:-1} limit=${12:-0} wait=${13:-300}
for f in job.sh end.sh run.env sampler.sh sampler.awk sampler.nvml; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >sge_retry
out=driver_log.txt
[ -z "$array" ] || out=/dev/null # each task appends to its run's driver_log.txt itself
set -- -terse -cwd -N "$name" -o "$out" -j y -S /bin/sh -r "$rerun" -notify
[ -z "$queue" ] || set -- "$@" -q "$queue"
[ -z "$pe" ] || set -- "$@" -pe "$pe" "$slots"
[ "$gpus" = 0 ] || set -- "$@" -l "gpu=$gpus"
[ -z "$limits" ] || set -- "$@" -l "$limits"
if [ -n "$array" ]; then
  # The array of the members that joined (under the lock); a task without one exits 125.
  mlw_array_submit() {
    mlw_array_list >/dev/null
    cat >"$array/array.sh" <<'SH'
# One task of an mlw job array: job.sh in the folder of the run that is this task.
run=$(sed -n "${SGE_TASK_ID}p" runs.list)
[ -n "$run" ] && cd "$run" || exit 125
exec sh ./job.sh >>driver_log.txt 2>&1
SH
    tc=
    [ "$limit" -gt 0 ] && tc="-tc $limit"
    # shellcheck disable=SC2086 # tc is empty or two words
    if ! id=$(cd "$array" && qsub "$@" -t "1-$size" $tc array.sh </dev/null 2>submit.err); then
      echo refused >"$array/job_id"
      return 1
    fi
    mlw_array_give "${id%%.*}" . 1
  }
  mlw_array_join "$@"
fi
if ! id=$(qsub "$@" job.sh </dev/null 2>qsub.err); then
  echo 125 >exit_code # never queued: an ended run, for `experiment clean`
  cat qsub.err >&2
  exit 1
fi
# -terse prints the id ("12", or "12.1-4:1" for an array).
id=${id%%.*}
case "$id" in '' | *[!0-9]*)
  echo "qsub answered \"$id\" where a job id was expected" >&2
  exit 1
  ;;
esac
echo "$id" >job_id
echo "$id"
