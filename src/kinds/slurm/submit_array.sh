#!/bin/sh
# Joins an mlw run to a Slurm job array, in the run folder (a sweep's points, docs/sweeps.md),
# after exec/array_join.sh:
#   sh ./submit.sh RETRY ARRAY_DIR INDEX SIZE LIMIT WAIT SBATCH_OPTION...
# Standard input holds job.sh, run.env and the sampler as for submit.sh. The array is one
# `sbatch --array=INDEXES%LIMIT` whose element i runs job.sh in member i's folder; each member's
# id is JOBID_i. Prints this run's; a refusal writes 125 to exit_code and exits non-zero.
set -u
# shellcheck disable=SC2034 # array, index, size and wait are array_join.sh's
retry=$1 array=$2 index=$3 size=$4 limit=$5 wait=$6
shift 6
for f in job.sh run.env sampler.sh sampler.awk sampler.nvml; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >slurm_retry
# mlw_array_submit SBATCH_OPTION…: the array of the members that joined (under the lock).
mlw_array_submit() {
  spec=$(mlw_array_list)
  cat >"$array/array.sh" <<'SH'
#!/bin/bash
# One element of an mlw job array: job.sh in the folder of the run that is this element.
run=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" runs.list)
[ -n "$run" ] && cd "$run" || exit 125
exec bash ./job.sh >>driver_log.txt 2>&1
SH
  [ "$limit" -gt 0 ] && spec="$spec%$limit"
  if ! id=$(sbatch --parsable --array="$spec" --chdir="$array" --output="$array/slurm-%a.out" "$@" \
    "$array/array.sh" </dev/null 2>"$array/submit.err"); then
    echo refused >"$array/job_id"
    return 1
  fi
  mlw_array_give "${id%%;*}" _ 0
}
mlw_array_join "$@"
