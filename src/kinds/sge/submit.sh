#!/bin/sh
# Submits an mlw run to Grid Engine, in the run folder:
#   sh ./submit.sh JOB_NAME QUEUE PE SLOTS RETRY_SECONDS GPUS
# Standard input holds job.sh, end.sh and run.env, each after a line with its length in bytes.
# Prints the job id (and nothing else on stdout); a refusal exits non-zero with qsub's words.
set -u
name=$1 queue=$2 pe=$3 slots=$4 retry=$5 gpus=${6:-0}
for f in job.sh end.sh run.env; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >sge_retry
set -- -terse -cwd -N "$name" -o driver_log.txt -j y -S /bin/sh -r n -notify
[ -z "$queue" ] || set -- "$@" -q "$queue"
[ -z "$pe" ] || set -- "$@" -pe "$pe" "$slots"
[ "$gpus" = 0 ] || set -- "$@" -l "gpu=$gpus"
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
