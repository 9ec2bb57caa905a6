# shellcheck shell=sh disable=SC2154 # d comes from the preamble
# What `mlw experiment queue` reads of a machine's leases (exec/lease.sh), after the preamble
# d=FOLDER (the lease folder): a line per live ticket, in its order (first come, first served),
#   ticket NAME HELD HELD_SINCE RUN WHO WANT SINCE FOREIGN
# tab-separated; HELD is the GPUs (or slot) it holds, "-" while it waits; FOREIGN the GPUs it
# waits for that a process without a lease uses. A ticket whose lock is free is dead: skipped.
[ -d "$d" ] || exit 0
for q in "$d"/q.*; do
  [ -d "$q" ] || continue
  if { flock -n 6; } 6<"$q" 2>/dev/null; then continue; fi
  run=
  who=
  want=
  since=
  while IFS='=' read -r k v; do
    case "$k" in run) run=$v ;; who) who=$v ;; want) want=$v ;; since) since=$v ;; esac
  done <"$q/info"
  held=
  at=
  [ -r "$q/held" ] && read -r held at <"$q/held"
  f=
  [ -r "$q/foreign" ] && f=$(tr '\n' ',' 2>/dev/null <"$q/foreign")
  printf 'ticket\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${q##*/}" "${held:--}" "${at:--}" "$run" \
    "$who" "$want" "$since" "${f%,}"
done
