# shellcheck shell=sh disable=SC2154 # d comes from the preamble
# What `mlw experiment queue` reads of a machine's leases (exec/lease.sh), after the preamble
# d=FOLDER (the lease folder asked for) and exec/lease_dir.sh: the shared folder where it is one
# (mlw_lease_shared), and this user's own. A line per live ticket, in its order (first come, first served),
#   ticket NAME HELD HELD_SINCE RUN WHO WANT SINCE FOREIGN OWNER MINE USE
# tab-separated; HELD is the GPUs (or slot) it holds, "-" while it waits; FOREIGN the GPUs it
# waits for that a process without a lease uses; OWNER the machine's user whose ticket it is (RUN
# and WHO are what that user wrote), MINE 1 where that is this user; USE what the run's GPU
# sampler wrote (exec/sampler.awk: "GPU LAST_BUSY UTIL MEMORY" items, ";"-separated). A ticket whose lock is free
# is dead: skipped. Another user's files are read without following links or waiting (a FIFO),
# 4 KB at most each; a ticket that cannot be opened within a second is skipped.
mlw_read() { dd if="$1" iflag=nofollow,nonblock bs=4096 count=1 2>/dev/null; }
mlw_tickets() {
  for q in "$1"/q.*; do
    if [ -L "$q" ] || [ ! -d "$q" ]; then continue; fi
    if [ -O "$q" ]; then
      if { flock -n 6; } 6<"$q" 2>/dev/null; then continue; fi
      mine=1
    else
      timeout 1 flock -n "$q" true 2>/dev/null
      [ $? = 1 ] || continue
      mine=0
    fi
    run=
    who=
    want=
    since=
    while IFS='=' read -r k v; do
      case "$k" in run) run=$v ;; who) who=$v ;; want) want=$v ;; since) since=$v ;; esac
    done <<EOF
$(mlw_read "$q/info")
EOF
    held=
    at=
    read -r held at <<EOF
$(mlw_read "$q/held")
EOF
    f=$(mlw_read "$q/foreign" | tr '\n' ',')
    use=
    [ "$held" = "" ] || use=$(mlw_read "$q/use" | tr '\t\n' ' ;')
    printf 'ticket\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${q##*/}" "${held:--}" \
      "${at:--}" "$run" "$who" "$want" "$since" "${f%,}" "$(stat -c %U "$q" 2>/dev/null)" "$mine" \
      "$use"
  done
}
asked=$d
mlw_lease_shared "$asked" && mlw_tickets "$asked"
own=${HOME:-/nonexistent}/.mlw/leases
if [ "$own" != "$asked" ] && [ -d "$own" ] && [ ! -L "$own" ] && [ -O "$own" ]; then
  mlw_tickets "$own"
fi
exit 0
