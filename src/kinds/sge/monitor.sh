#!/bin/sh
# The monitor of an mlw run on Grid Engine, started detached in the run folder: it polls qstat
# until the job (job_id) has left it, marking `started` once it runs, then reads the job's end
# from qacct into sge_acct ("EXIT_STATUS FAILED"), and writes batch_state last: "done", or
# "LOST" when the qmaster did not answer for sge_retry seconds. A job held in error (Eqw) is
# deleted, its reason kept in sge_error.
job=$(cat job_id) || exit 0
retry=$(cat sge_retry 2>/dev/null) || retry=300
down=
while :; do
  if list=$(qstat 2>qstat.err); then
    down=
    # qstat: job-ID, prior, name, user, state, …
    state=$(printf '%s\n' "$list" | awk -v j="$job" '$1 == j { print $5; exit }')
    case "$state" in
      '') break ;;
      *E*)
        qstat -j "$job" 2>/dev/null | sed -n 's/^error reason *[0-9]*: *//p' | head -n 1 >sge_error
        qdel "$job" >/dev/null 2>&1
        ;;
      *q*) ;;
      *r* | *t*) [ -e started ] || : >started ;;
    esac
  else
    [ -n "$down" ] || down=$(date +%s)
    if [ $(($(date +%s) - down)) -ge "$retry" ]; then
      echo LOST >batch_state.tmp && mv batch_state.tmp batch_state
      exit 0
    fi
  fi
  sleep 0.2
done
[ -e started ] || : >started
# Accounting can lag the job's end by a moment: asked again for up to 10 s.
n=0
until acct=$(qacct -j "$job" 2>/dev/null); do
  n=$((n + 1))
  [ "$n" -lt 50 ] || break
  sleep 0.2
done
# One record per run of the job: the last one counts.
printf '%s\n' "$acct" | awk '$1 == "exit_status" { e = $2 } $1 == "failed" { f = $2 }
  END { if (e != "") print e " " f }' >sge_acct
echo "done" >batch_state.tmp && mv batch_state.tmp batch_state
