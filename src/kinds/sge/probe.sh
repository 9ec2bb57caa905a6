# shellcheck shell=sh
# The sge kind's lines of the probe (run inside it, after `set -- QUEUE PE`): Grid Engine's
# commands, whether the qmaster answers, the queues with their slots, the parallel environments.
# Prints sge_missing=CMD, sge_error=TEXT, sge_queue=NAME TOTAL AVAILABLE, sge_pe=NAME.
for c in qsub qstat qdel qacct qconf; do
  command -v "$c" >/dev/null 2>&1 || echo "sge_missing=$c"
done
if ! out=$(qconf -sql 2>&1); then
  echo "sge_error=$(printf '%s\n' "$out" | tail -n 1)"
else
  # qstat -g c: CLUSTER QUEUE, CQLOAD, USED, RES, AVAIL, TOTAL, …
  qstat -g c 2>/dev/null | awk 'NR > 2 && NF >= 6 { print "sge_queue=" $1 " " $6 " " $5 }'
  qconf -spl 2>/dev/null | sed 's/^/sge_pe=/'
fi
