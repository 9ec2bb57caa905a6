#!/bin/sh
# Submits an mlw run to Grid Engine, in the run folder:
#   sh ./submit.sh JOB_NAME QUEUE PE SLOTS RETRY_SECONDS GPUS [ARRAY_DIR INDEX SIZE LIMIT WAIT]
# Standard input holds job.sh, end.sh and run.env, each after a line with its length in bytes.
# Prints the job id (and nothing else on stdout); a refusal exits non-zero with qsub's words.
# With ARRAY_DIR the run is element INDEX (from 0) of a sweep's job array of SIZE (docs/sweeps.md):
# its folder is noted there; the run that makes SIZE members (or, after WAIT seconds, the first
# that finds the array not submitted) submits one `qsub -t 1-SIZE -tc LIMIT`, whose task t runs
# job.sh in member t-1's folder, and gives each member its task's id (JOBID.t), printed here.
set -u
name=$1 queue=$2 pe=$3 slots=$4 retry=$5 gpus=${6:-0}
array=${7:-} index=${8:-0} size=${9:-1} limit=${10:-0} wait=${11:-300}
for f in job.sh end.sh run.env; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >sge_retry
set -- -terse -cwd -N "$name" -j y -S /bin/sh -r n -notify
[ -z "$queue" ] || set -- "$@" -q "$queue"
[ -z "$pe" ] || set -- "$@" -pe "$pe" "$slots"
[ "$gpus" = 0 ] || set -- "$@" -l "gpu=$gpus"
if [ -n "$array" ]; then
  mkdir -p "$array" || exit 125
  run=$PWD
  # The array of the members that joined (under the lock); a task without one exits 125.
  submit() {
    [ -e "$array/job_id" ] && return 0
    : >"$array/runs.list"
    i=0
    while [ "$i" -lt "$size" ]; do
      cat "$array/member.$i" 2>/dev/null >>"$array/runs.list" || echo >>"$array/runs.list"
      i=$((i + 1))
    done
    cat >"$array/array.sh" <<'SH'
# One task of an mlw job array: job.sh in the folder of the run that is this task.
run=$(sed -n "${SGE_TASK_ID}p" runs.list)
[ -n "$run" ] && cd "$run" || exit 125
exec sh ./job.sh >>driver_log.txt 2>&1
SH
    tc=
    [ "$limit" -gt 0 ] && tc="-tc $limit"
    # shellcheck disable=SC2086 # tc is empty or two words
    if ! id=$(cd "$array" && qsub "$@" -o /dev/null -t "1-$size" $tc array.sh </dev/null 2>qsub.err); then
      echo refused >"$array/job_id"
      return 1
    fi
    id=${id%%.*}
    i=0
    while [ "$i" -lt "$size" ]; do
      if member=$(cat "$array/member.$i" 2>/dev/null); then
        echo "$id.$((i + 1))" >"$member/job_id.tmp" && mv "$member/job_id.tmp" "$member/job_id"
      fi
      i=$((i + 1))
    done
    echo "$id" >"$array/job_id"
  }
  (
    flock 9 || exit 1
    echo "$run" >"$array/member.$index"
    n=$(find "$array" -maxdepth 1 -name 'member.*' | wc -l)
    if [ "$n" -ge "$size" ]; then submit "$@"; fi
  ) 9>"$array/lock"
  waited=0
  while [ ! -e job_id ] && [ "$(cat "$array/job_id" 2>/dev/null)" != refused ]; do
    if [ "$waited" -ge $((wait * 10)) ]; then
      (
        flock 9 || exit 1
        submit "$@"
      ) 9>"$array/lock"
      waited=0
      wait=1000000
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  if [ ! -e job_id ]; then
    echo 125 >exit_code
    cat "$array/qsub.err" >&2
    exit 1
  fi
  cat job_id
  exit 0
fi
set -- "$@" -o driver_log.txt
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
