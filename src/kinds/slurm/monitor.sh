#!/bin/sh
# The monitor of an mlw run on Slurm, started detached in the run folder: it polls the job
# (job_id) with squeue until it leaves the queue (and scontrol says it ended), marking `started`
# once it runs (or ran), then writes its final state and ExitCode (slurm_state, slurm_exit: from
# scontrol, else sacct) and batch_state last. A controller that does not answer for slurm_retry
# seconds makes the state LOST.
job=$(cat job_id) || exit 0
retry=$(cat slurm_retry 2>/dev/null) || retry=300
down=
while :; do
  if state=$(squeue -h -j "$job" -o %T 2>squeue.err); then
    down=
    if [ -z "$state" ]; then
      # squeue may leave out a job between two attempts (REQUEUED while the first ends, held):
      # it has left only where scontrol calls it ended or no longer knows it.
      case $(scontrol -o show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') in
        PENDING | RUNNING | CONFIGURING | COMPLETING | REQUEUE* | RESIZING | RESV_DEL_HOLD | \
          SIGNALING | STAGE_OUT | STOPPED | SUSPENDED | SPECIAL_EXIT) ;;
        *) break ;;
      esac
    fi
    case "$state" in
      RUNNING | COMPLETING | STAGE_OUT | SIGNALING) [ -e started ] || : >started ;;
    esac
  elif grep -qi 'invalid job id' squeue.err; then
    break
  else
    [ -n "$down" ] || down=$(date +%s)
    if [ $(($(date +%s) - down)) -ge "$retry" ]; then
      echo LOST >slurm_state.tmp && mv slurm_state.tmp slurm_state
      echo LOST >batch_state
      exit 0
    fi
  fi
  sleep 0.2
done
# A job that ran and ended between two polls ran job.sh (attempts); one deleted while it waited
# never did, and is not marked started.
[ -e started ] || [ ! -e attempts ] || : >started
info=$(scontrol -o show job "$job" 2>/dev/null)
state=$(printf '%s\n' "$info" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
exit_field=$(printf '%s\n' "$info" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')
if [ -z "$state" ]; then
  line=$(sacct -n -X -P -j "$job" -o State,ExitCode 2>/dev/null | head -n 1)
  state=${line%%|*}
  state=${state%% *}
  exit_field=${line#*|}
fi
echo "$exit_field" >slurm_exit
echo "${state:-UNKNOWN}" >slurm_state.tmp && mv slurm_state.tmp slurm_state
echo "done" >batch_state
