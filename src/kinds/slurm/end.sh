# shellcheck shell=sh
# How a Slurm job ended, printed in its run folder (exec/follow.sh evaluates it): the job script's
# exit code, the job's state and ExitCode as the monitor recorded them, and every rank's exit code.
printf 'job_code=%s\nslurm_state=%s\nslurm_exit=%s\n' "$(cat exit_code.job 2>/dev/null)" \
  "$(cat slurm_state 2>/dev/null)" "$(cat slurm_exit 2>/dev/null)"
for f in rank_exit.*; do
  [ -e "$f" ] && read -r c _ <"$f" && echo "rank_${f#rank_exit.}=$c"
done
