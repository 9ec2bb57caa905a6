# shellcheck shell=sh disable=SC2154 # mlw_max_metrics comes from the preamble
# A run's results for the supervisor (ResultsFetch in exec/results_fetch.cpp), run in the
# target's run folder (or in mlw_results_in, where the preamble sets it) after
# `mlw_max_metrics=BYTES`: metrics.jsonl's size and, when it is not over that bound, its bytes;
# the size and the text of the list of the sockets in outputs/ (tar leaves them out: said, not
# dropped silently; the first 100); then outputs/ as a tar, when it holds anything.
if [ -n "${mlw_results_in-}" ]; then cd "$mlw_results_in" || exit 0; fi
m=0
[ -s metrics.jsonl ] && { m=$(wc -c 2>/dev/null <metrics.jsonl) || m=0; }
# shellcheck disable=SC2086 # another wc may pad the number: echo trims it
echo $m
[ "$m" -gt 0 ] 2>/dev/null && [ "$m" -le "$mlw_max_metrics" ] && head -c "$m" metrics.jsonl
# Whether outputs/ holds anything: the sockets are looked for, and the tar made, only then (a run
# without outputs starts no process for them).
any=
if cd snapshot 2>/dev/null && [ -d outputs ]; then
  for f in outputs/* outputs/.[!.]* outputs/..?*; do
    if [ -e "$f" ] || [ -L "$f" ]; then any=1 && break; fi
  done
fi
s=
[ -z "$any" ] || s=$(find outputs -type s 2>/dev/null | head -n 100)
if [ -n "$s" ]; then
  n=$(printf %s "$s" | wc -c)
  # shellcheck disable=SC2086 # as above
  echo $n
  printf %s "$s"
else
  echo 0
fi
[ -z "$any" ] || exec tar -cf - outputs
exit 0
