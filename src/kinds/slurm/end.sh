# shellcheck shell=sh
# How a Slurm job ended, printed in its run folder (exec/follow.sh evaluates it): the job script's
# exit code, the job's state and ExitCode as the monitor recorded them, every rank's exit code and
# how many times the job started again (requeued: job.sh counts its attempts), and "gpu-note
# TEXT"s of its GPU sampler.
printf 'job_code=%s\nslurm_state=%s\nslurm_exit=%s\n' "$(cat exit_code.job 2>/dev/null)" \
  "$(cat slurm_state 2>/dev/null)" "$(cat slurm_exit 2>/dev/null)"
for f in rank_exit.*; do
  [ -e "$f" ] && read -r c _ <"$f" && echo "rank_${f#rank_exit.}=$c"
done
{ read -r a <attempts && [ "$a" -gt 1 ] && echo "restarts=$((a - 1))"; } 2>/dev/null || :
# The GPU sampler's notes (exec/sampler.sh, started by job.sh on the job's first node).
[ -s gpu_notes ] && head -n 20 gpu_notes | sed 's/^/gpu-note /'
exit 0
