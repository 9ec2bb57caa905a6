#!/bin/sh
# The monitor of an mlw run on Grid Engine, started detached in the run folder: it polls qstat
# until the job (job_id) has left it, marking `started` once it runs, then reads the job's end
# from qacct into sge_acct ("EXIT_STATUS FAILED"), and writes batch_state last: "done", or
# "LOST" when the qmaster did not answer for sge_retry seconds. A job held in error (Eqw) is
# deleted, its reason kept in sge_error.
job=$(cat job_id) || exit 0
retry=$(cat sge_retry 2>/dev/null) || retry=300
# A task of a job array (JOB.TASK): its lines of qstat (ja-task-ID, the last column, a task or,
# while some wait, a list of ranges "1-4:1,7"), qacct -t and qdel -t.
task=
case "$job" in *.*) task=${job#*.} job=${job%.*} ;; esac
down=
while :; do
  if list=$(qstat 2>qstat.err); then
    down=
    # qstat: job-ID, prior, name, user, state, …, ja-task-ID
    state=$(printf '%s\n' "$list" | awk -v j="$job" -v t="$task" '
      function has(spec, t,   n, i, part, r, step) {
        n = split(spec, part, ",")
        for (i = 1; i <= n; i++) {
          step = 1
          if (split(part[i], r, "[-:]") >= 2) {
            if (r[3] != "") step = r[3]
            if (t + 0 >= r[1] + 0 && t + 0 <= r[2] + 0 && (t - r[1]) % step == 0) return 1
          } else if (part[i] + 0 == t + 0) return 1
        }
        return 0
      }
      $1 == j && (t == "" || has($NF, t)) { print $5; exit }')
    case "$state" in
      '') break ;;
      *E*)
        qstat -j "$job" 2>/dev/null | sed -n 's/^error reason *[0-9]*: *//p' | head -n 1 >sge_error
        if [ -n "$task" ]; then qdel "$job" -t "$task" >/dev/null 2>&1; else qdel "$job" >/dev/null 2>&1; fi
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
# A job that ran and ended between two polls ran job.sh (attempts). One deleted while it waited
# never did: not marked started, and its accounting (there is none) asked for only a moment.
tries=50
if [ ! -e started ] && [ ! -e attempts ]; then tries=5; else : >started; fi
# Accounting can lag the job's end by a moment: asked again for up to 10 s.
n=0
until acct=$(if [ -n "$task" ]; then qacct -j "$job" -t "$task"; else qacct -j "$job"; fi 2>/dev/null); do
  n=$((n + 1))
  [ "$n" -lt "$tries" ] || break
  sleep 0.2
done
# One record per run of the job: the last one counts.
printf '%s\n' "$acct" | awk '$1 == "exit_status" { e = $2 } $1 == "failed" { f = $2 }
  END { if (e != "") print e " " f }' >sge_acct
echo "done" >batch_state.tmp && mv batch_state.tmp batch_state
