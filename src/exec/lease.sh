# shellcheck shell=sh
# A run's lease of GPUs (or of a run slot, maxConcurrentRuns) on the machine it runs on
# (docs/gpus.md): `sh -c` of lease_dir.sh's and this file's bodies, then "mlw-lease" and
#   DIR      the machine-wide lease folder: shared where it is root's with mode 1777 and its lock
#            files root's, else this user's own ~/.mlw/leases (lease_dir.sh); own:FOLDER, that
#            folder of this user's (~/ its home), for a sweep's turn (exec/monitor.sh)
#   WANT     gpu:N (N GPUs) or slot:M (one of M run slots)
#   RUN WHO  the run's id and user@host, shown by `mlw experiment queue`
#   FOREIGN  wait: GPUs that nvidia-smi shows in use by processes without a lease are not handed
#            out; ignore: they are
# Run as a process group leader (setsid) by the run's own process (its monitor, its
# supervisor), with its stdin a pipe that process holds: the lease lasts until that pipe ends,
# that is until the process ends, however it ends. Answers on stdout, one line each:
# "notice TEXT" (the folder is not shared: why, and the administrator's command), "queued
# POSITION" (it waits; first come, first served across users), then "granted LIST TICKET" (the GPU
# indexes or the slot, comma-separated, then its ticket's folder, where the run's GPU sampler
# says how it uses them) or "error TEXT"; nothing more where it was stopped.
#
# The folder holds a directory per GPU (gpu.K) or slot (slot.K), flock(1)ed by whoever holds it,
# and a ticket per run (q.<ns since 1970>.<pid>: info, `held` once granted) flock(1)ed for the
# ticket's life; its `w` is flock(1)ed while it waits. A waiter blocks on the `w` of the waiter
# just ahead of it (woken by the kernel when that one leaves the queue); the first in line blocks
# on the locks of the GPUs held now (nap). The kernel frees every lock when its holder ends:
# nothing is ever cleaned up from pids, and a ticket whose lock is free is dead.
# Another user's files are never trusted: a lock file that is not root's (or, in the user's own
# folder, the user's) is not used; another user's ticket that is not a folder with a `w` folder
# of its own, whose want cannot be read, or that is opened only after a second (a FIFO put in its
# place) is named once and passed over, as is one that stays first in line while the GPUs it
# wants are free (MLW_LEASE_STALL seconds: a real waiter takes them at once).
d=$1
want=$2
run=$3
who=$4
foreign=$5
kind=${want%%:*}
n=${want#*:}
fail() {
  echo "error $*"
  exit 0
}
case "$kind:$n" in gpu:[1-9]* | slot:[1-9]*) ;; *) fail "bad lease request: $want" ;; esac
case "$n" in *[!0-9]*) fail "bad lease request: $want" ;; esac
read -r _ _ _ _ group _ </proc/$$/stat
[ "$group" = $$ ] || fail "the lease must run as a process group leader (setsid)"
command -v flock >/dev/null 2>&1 || fail "flock (util-linux) is not installed on $(hostname)"
asked=$d
case $asked in
  own:*)
    # A folder of this user's own (a sweep's turn, exec/monitor.sh): made 0700 where missing,
    # used only where it is a folder of this user's, not a link.
    d=${asked#own:}
    case $d in \~/*) d=${HOME:-/nonexistent}/${d#\~/} ;; esac
    [ -d "$d" ] || { mkdir -p "${d%/*}" && mkdir -m 700 "$d"; } 2>/dev/null
    { [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ]; } || fail "$d is not a folder of this user's"
    shared=
    note=
    ;;
  *) mlw_lease_folder "$asked" || fail "cannot lease: $note" ;;
esac
me=$(id -u)
stall=${MLW_LEASE_STALL:-5}
# The GPUs: their indexes and UUIDs (foreign use is reported by UUID).
if [ "$kind" = gpu ]; then
  gpus=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null) ||
    fail "nvidia-smi lists no GPU on $(hostname): gpusPerRun needs NVIDIA GPUs"
  all=$(echo "$gpus" | sed 's/,.*//' | tr '\n' ' ')
  [ "$(echo "$all" | wc -w)" -ge "$n" ] ||
    fail "$n GPUs asked for; $(hostname) has $(echo "$all" | wc -w)"
else
  all=$(seq 0 $((n - 1)) | tr '\n' ' ')
  n=1
fi
# lock_ok PATH: a lock of this folder's owner (root's in the shared folder), not a link, a file
# or folder; root makes a missing one in the shared folder, the user in its own.
lock_ok() {
  if [ ! -e "$1" ] && [ ! -L "$1" ] && { [ -z "$shared" ] || [ "$me" = 0 ]; }; then
    mkdir -m 755 "$1" 2>/dev/null
  fi
  [ ! -L "$1" ] && { [ -f "$1" ] || [ -d "$1" ]; } &&
    [ "$(stat -c %u "$1")" = "$([ -n "$shared" ] && echo 0 || echo "$me")" ]
}
for k in $all; do
  lock_ok "$d/$kind.$k" && continue
  [ -n "$shared" ] || fail "$d/$kind.$k is not a lock of this user's: remove it"
  note="the shared lease folder $d has no $kind.$k of root's"
  mlw_lease_own || fail "cannot lease: $note"
  lock_ok "$d/$kind.$k" || fail "$d/$kind.$k is not a lock of this user's: remove it"
done
if [ -n "$note" ]; then
  echo "notice $note: GPUs are leased among this user's runs only; to share them between the" \
    "machine's users, an administrator runs once: $(mlw_lease_admin "$asked")"
fi
# The ticket, made and locked under a name no reader takes for a ticket, then put in line.
id=$(date +%s%N).$$
t=$d/n.$id
{ mkdir -m 755 "$t" && mkdir -m 755 "$t/w"; } || fail "cannot write in the lease folder $d"
printf 'run=%s\nwho=%s\nwant=%s\nsince=%s\n' "$run" "$who" "$want" "$(date +%s)" >"$t/info"
exec 3<"$t" 4<"$t/w"
{ flock -x 3 && flock -x 4; } || fail "cannot lock $t"
mv "$t" "$d/q.$id" || fail "cannot write in the lease folder $d"
t=$d/q.$id
exec 5<&0

# free: the GPUs (slots) no one holds (u), less those in foreign use (f); 1 when too few.
free() {
  f=
  for k in $all; do
    if { flock -n 6; } 6<"$d/$kind.$k" 2>/dev/null; then f="$f $k"; fi
  done
  u=$f
  g=
  if [ "$kind" = gpu ] && [ "$foreign" = wait ] && [ "$(echo "$f" | wc -w)" -ge "$n" ]; then
    busy=$(nvidia-smi --query-compute-apps=gpu_uuid --format=csv,noheader 2>/dev/null)
    for x in $busy; do
      k=$(echo "$gpus" | sed -n "s/^\([0-9]*\), *$x\$/\1/p")
      [ -n "$k" ] && case " $f " in *" $k "*)
        f=$(echo " $f " | sed "s/ $k / /")
        g="$g$k
"
        ;;
      esac
    done
  fi
  # What it waits for, for `experiment queue` (replaced whole: a reader never sees it half).
  if [ -n "$g" ]; then
    printf '%s' "$g" >"$t/foreign.new" && mv "$t/foreign.new" "$t/foreign"
  elif [ -e "$t/foreign" ]; then
    rm -f "$t/foreign"
  fi
  [ "$(echo "$f" | wc -w)" -ge "$n" ]
}

# take: holds the first n free ones until the owner's pipe ends; 75 when one was taken meanwhile.
# A flock(1) per GPU holds it (the chain, in the background, without fd 4); only once they all
# hold (the chain's "ok" on a fifo) does the ticket say `held` and leave the line (fd 4 closed),
# so that no run behind it takes a GPU it is about to hold.
take() {
  set --
  picked=
  ids=
  for k in $f; do
    [ "$#" -ge $((n * 5)) ] && break
    set -- "$@" flock -n -E 75 "$d/$kind.$k"
    picked=${picked:+$picked,}$k
    ids="$ids $(stat -c %d:%i:%u "$d/$kind.$k")"
  done
  rm -f "$t/got"
  mkfifo "$t/got" || return 75
  # Once locked, each lock must still be the file its path names (none put in its place).
  # shellcheck disable=SC2016 # the holder's own words
  "$@" sh -c 'now=; IFS=,; for k in $4; do now="$now $(stat -c %d:%i:%u "$2/$3.$k")"; done
    [ "$now" = "$1" ] || exit 75; echo ok; exec cat >/dev/null' mlw-hold "$ids" "$d" "$kind" \
    "$picked" <&5 4<&- >"$t/got" &
  c=$!
  ok=
  read -r ok <"$t/got" || :
  rm -f "$t/got"
  if [ "$ok" != ok ]; then
    wait "$c"
    return 75
  fi
  echo "$picked $(date +%s)" >"$t/held"
  exec 4<&-
  echo "granted $picked $t"
  wait "$c"
}

# nap: the first in line waits until a GPU (slot) held now is let go, woken by the kernel, or 1 s
# at most (foreign use is looked at again then): a flock(1) per held one blocks on its lock and
# names it on a fifo; the first name read (or the end of them all) ends the nap.
nap() {
  rm -f "$t/nap"
  mkfifo "$t/nap" 2>/dev/null || {
    sleep 0.1
    return
  }
  pids=
  for k in $all; do
    case " $u " in *" $k "*) continue ;; esac # not held (free, or in foreign use)
    (
      exec 3<&- 4<&- 5<&- 2>/dev/null
      exec flock -s -w 1 "$d/$kind.$k" echo "$k"
    ) >"$t/nap" &
    pids="$pids $!"
  done
  if [ -n "$pids" ]; then
    # None said a name: they all gave up (1 s, or a lock that is gone): not at once again.
    read -r _ <"$t/nap" || sleep 0.1
    # shellcheck disable=SC2086 # the pids
    kill $pids 2>/dev/null
  else
    sleep 1
  fi
  rm -f "$t/nap"
}

# foreign Q: another user's ticket Q, read with care (lease.sh's header); sets qn (what it wants,
# a count) and answers 0 when it is a live ticket to wait behind, 1 when it is dead or passed over.
passed=
foreign() {
  case " $passed " in *" ${1##*/} "*) return 1 ;; esac
  o=$(stat -c %u "$1")
  why=
  if [ -L "$1/w" ] || [ ! -d "$1/w" ] || [ "$(stat -c %u "$1/w")" != "$o" ]; then
    why="it is not a ticket of mlw's"
  else
    qw=$(dd if="$1/info" iflag=nofollow,nonblock bs=4096 count=1 2>/dev/null | sed -n 's/^want=//p')
    qn=${qw#*:}
    case "${qw%%:*}:$qn" in
      gpu:[1-9] | gpu:[1-9][0-9])
        [ "$kind" = gpu ] || qn=
        [ "$kind" != gpu ] || [ "$qn" -le "$(echo "$all" | wc -w)" ] || why="it wants $qw"
        ;;
      slot:[1-9] | slot:[1-9][0-9]) [ "$kind" = slot ] && qn=1 || qn= ;;
      *) why="its want cannot be read" ;;
    esac
  fi
  if [ -z "$why" ]; then
    timeout 1 flock -n "$1" true 2>/dev/null
    case $? in 0) return 1 ;; 1) return 0 ;; *) why="it could not be opened within a second" ;; esac
  fi
  [ -e "$1" ] || return 1 # it has just left the line
  passed="$passed ${1##*/}"
  echo "notice passing over $1 of user $(stat -c %U "$1" 2>/dev/null): $why"
  return 1
}

# stalled Q: Q, another user's ticket first in line, has waited MLW_LEASE_STALL s while what it
# wants was free (a real waiter takes it at once): passed over from then on.
stalled() {
  [ -n "$qn" ] || return 1
  free || :
  if [ "$(echo "$f" | wc -w)" -lt "$qn" ]; then
    first=
    return 1
  fi
  now=$(date +%s)
  [ "$first" = "$1" ] || {
    first=$1
    first_at=$now
  }
  [ $((now - first_at)) -ge "$stall" ] || return 1
  passed="$passed ${1##*/}"
  echo "notice passing over $1 of user $(stat -c %U "$1" 2>/dev/null): first in line for" \
    "${stall} s with what it wants free"
}

wait_turn() {
  said=
  first=
  while :; do
    ahead=0
    prev=
    for q in "$d"/q.*; do
      [ "$q" = "$t" ] && break
      if [ -L "$q" ] || [ ! -d "$q" ] || [ -e "$q/held" ]; then continue; fi
      if [ -O "$q" ]; then
        if { flock -n 6; } 6<"$q" 2>/dev/null; then
          # dead: its holder is gone; out of line at once, then removed
          if mv "$q" "$d/x.${q#"$d"/q.}" 2>/dev/null; then rm -rf "$d/x.${q#"$d"/q.}"; fi
          continue
        fi
      else
        foreign "$q" || continue
        if [ "$ahead" = 0 ] && stalled "$q"; then continue; fi
      fi
      ahead=$((ahead + 1))
      prev=$q
    done
    if [ "$ahead" -gt 0 ]; then
      [ "$said" = "$ahead" ] || echo "queued $((ahead + 1))"
      said=$ahead
      if [ -O "$prev" ]; then
        { flock -s 6; } 6<"$prev/w" 2>/dev/null
      else
        # Another user's: looked at again each second (it may stall, or be made a FIFO).
        timeout 2 flock -s -w 1 "$prev/w" true 2>/dev/null || sleep 0.05
      fi
      continue
    fi
    if free; then
      take
      [ $? = 75 ] || exit 0
      continue
    fi
    [ "$said" = 0 ] || echo "queued 1"
    said=0
    nap
  done
}

wait_turn </dev/null &
exec 4<&- 5<&- >/dev/null
while read -r _; do :; done
# Out of line at once (a reader never sees it half removed), then removed.
mv "$t" "$d/x.$id" && rm -rf "$d/x.$id"
kill -TERM 0
