# shellcheck shell=sh disable=SC2154 # array, index, size, wait: the submit script's
# Joining a sweep's job array (docs/sweeps.md), for a batch system's submit script, which this
# file precedes. The script sets array (the array's folder on the target), index (this run's
# element, from 0), size, wait (seconds) and defines mlw_array_submit ARGUMENT…, which submits
# the array of the members that joined (mlw_array_list, mlw_array_give) and writes its id, or
# "refused" with the system's words in submit.err, to $array/job_id.

# mlw_array_join ARGUMENT…: notes this run (the current folder) as member $index; the member that
# makes $size, or after $wait seconds the first that finds the array not submitted, calls
# mlw_array_submit with the arguments. Prints this run's element id (its job_id) and exits.
mlw_array_join() {
  mkdir -p "$array" || exit 125
  (
    flock 9 || exit 1
    pwd >"$array/member.$index"
    n=$(find "$array" -maxdepth 1 -name 'member.*' | wc -l)
    if [ "$n" -ge "$size" ] && [ ! -e "$array/job_id" ]; then mlw_array_submit "$@"; fi
  ) 9>"$array/lock"
  waited=0
  while [ ! -e job_id ] && [ "$(cat "$array/job_id" 2>/dev/null)" != refused ]; do
    if [ "$waited" -ge $((wait * 10)) ]; then
      (
        flock 9 || exit 1
        [ -e "$array/job_id" ] || mlw_array_submit "$@"
      ) 9>"$array/lock"
      waited=0
      wait=1000000
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  if [ ! -e job_id ]; then
    echo 125 >exit_code # never queued: an ended run, for `experiment clean`
    cat "$array/submit.err" >&2
    exit 1
  fi
  cat job_id
  exit 0
}

# mlw_array_list: $array/runs.list, line i+1 the folder of member i (empty where none joined);
# prints the members' indexes, comma-separated.
mlw_array_list() {
  : >"$array/runs.list"
  i=0 indexes=
  while [ "$i" -lt "$size" ]; do
    if [ -e "$array/member.$i" ]; then
      indexes="$indexes${indexes:+,}$i"
      cat "$array/member.$i" >>"$array/runs.list"
    else
      echo >>"$array/runs.list"
    fi
    i=$((i + 1))
  done
  echo "$indexes"
}

# mlw_array_give ID SEPARATOR FIRST: each member's element id, ID SEPARATOR (its index + FIRST),
# into its folder's job_id; then ID into $array/job_id.
mlw_array_give() {
  i=0
  while [ "$i" -lt "$size" ]; do
    if member=$(cat "$array/member.$i" 2>/dev/null); then
      echo "$1$2$((i + $3))" >"$member/job_id.tmp" && mv "$member/job_id.tmp" "$member/job_id"
    fi
    i=$((i + 1))
  done
  echo "$1" >"$array/job_id"
}
