# shellcheck shell=sh
# How an mlw run on Grid Engine ended, for the submitting side (run in the run folder): the
# script's exit code, the monitor's state, qacct's exit status and failure, the error reason, and
# how many times the job started again (rescheduled: job.sh counts its starts), and when
# Grid Engine's SIGUSR2 came (qdel, or the time limit); "gpu-note TEXT"s of its GPU sampler.
printf 'job_code=%s\nbatch_state=%s\nsge_acct=%s\nsge_error=%s\n' \
  "$(cat exit_code.job 2>/dev/null)" "$(cat batch_state 2>/dev/null)" \
  "$(cat sge_acct 2>/dev/null)" "$(cat sge_error 2>/dev/null)"
read -r s <stopped_after 2>/dev/null && echo "stopped_after=$s"
read -r a <attempts 2>/dev/null && [ "$a" -gt 1 ] 2>/dev/null && echo "restarts=$((a - 1))"
[ -s gpu_notes ] && head -n 20 gpu_notes | sed 's/^/gpu-note /'
exit 0
