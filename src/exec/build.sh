# shellcheck shell=sh disable=SC2154 # the mlw_ variables come from the preamble
# Builds a run's environment image unless it exists, under a lock on the target so that
# concurrent submits build it once; the build's output is the step's. Run after the preamble
# ensure_image writes (exec/run_session.cpp): mlw_locks (the place's lock folder), mlw_hash,
# mlw_tag, mlw_base (the base image, for the first line), mlw_docker (docker's words) and
# mlw_env_dir (the run folder's env/, the build's context, holding its Dockerfile).
mkdir -p "$mlw_locks" || exit 125
exec 9>"$mlw_locks/$mlw_hash.lock" || exit 125
flock 9 || exit 125
# shellcheck disable=SC2086 # docker's words have no space in them
mlw_d() { $mlw_docker "$@"; }
if mlw_d image inspect "$mlw_tag" >/dev/null 2>&1; then exit 0; fi
echo "Building environment $mlw_tag from $mlw_base"
mlw_d build --force-rm -t "$mlw_tag" -f "$mlw_env_dir/Dockerfile" "$mlw_env_dir" 2>&1
