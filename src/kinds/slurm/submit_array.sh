#!/bin/sh
# Joins an mlw run to a Slurm job array, in the run folder (a sweep's points, docs/sweeps.md):
#   sh ./submit.sh RETRY ARRAY_DIR INDEX SIZE LIMIT WAIT SBATCH_OPTION...
# Standard input holds job.sh and run.env as for submit.sh. The run's folder is noted in
# ARRAY_DIR under its INDEX; the run that makes SIZE members (or, after WAIT seconds, the first
# that finds the array not submitted) submits one `sbatch --array=INDEXES%LIMIT`, whose element
# i runs job.sh in member i's folder, and gives each member its element's id (JOBID_i). Prints
# this run's element id; a refusal writes 125 to exit_code and exits non-zero with sbatch's words.
set -u
retry=$1 dir=$2 index=$3 size=$4 limit=$5 wait=$6
shift 6
for f in job.sh run.env; do
  read -r n || exit 125
  head -c "$n" >"$f" || exit 125
done
echo "$retry" >slurm_retry
mkdir -p "$dir" || exit 125
run=$PWD
# submit SBATCH_OPTION…: the array of the members that joined (under the lock).
submit() {
  [ -e "$dir/job_id" ] && return 0
  indexes=
  : >"$dir/runs.list"
  i=0
  while [ "$i" -lt "$size" ]; do
    if [ -e "$dir/member.$i" ]; then
      indexes="$indexes${indexes:+,}$i"
      cat "$dir/member.$i" >>"$dir/runs.list"
    else
      echo >>"$dir/runs.list"
    fi
    i=$((i + 1))
  done
  cat >"$dir/array.sh" <<'SH'
#!/bin/bash
# One element of an mlw job array: job.sh in the folder of the run that is this element.
run=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" runs.list)
[ -n "$run" ] && cd "$run" || exit 125
exec bash ./job.sh >>driver_log.txt 2>&1
SH
  spec=$indexes
  [ "$limit" -gt 0 ] && spec="$spec%$limit"
  if ! id=$(sbatch --parsable --array="$spec" --chdir="$dir" --output="$dir/slurm-%a.out" "$@" \
    "$dir/array.sh" </dev/null 2>"$dir/sbatch.err"); then
    echo refused >"$dir/job_id"
    return 1
  fi
  id=${id%%;*}
  for i in $(echo "$indexes" | tr , ' '); do
    member=$(cat "$dir/member.$i")
    echo "${id}_$i" >"$member/job_id.tmp" && mv "$member/job_id.tmp" "$member/job_id"
  done
  echo "$id" >"$dir/job_id"
}
# join SBATCH_OPTION…: notes this run; the member that completes the array submits it.
join() {
  (
    flock 9 || exit 1
    echo "$run" >"$dir/member.$index"
    n=$(find "$dir" -maxdepth 1 -name 'member.*' | wc -l)
    if [ "$n" -ge "$size" ]; then submit "$@"; fi
  ) 9>"$dir/lock"
}
join "$@"
waited=0
while [ ! -e job_id ] && [ "$(cat "$dir/job_id" 2>/dev/null)" != refused ]; do
  if [ "$waited" -ge $((wait * 10)) ]; then
    ( flock 9 || exit 1; submit "$@" ) 9>"$dir/lock"
    waited=0
    wait=1000000
  fi
  sleep 0.1
  waited=$((waited + 1))
done
if [ ! -e job_id ]; then
  echo 125 >exit_code
  cat "$dir/sbatch.err" >&2
  exit 1
fi
cat job_id
