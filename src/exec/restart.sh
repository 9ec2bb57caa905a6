# shellcheck shell=sh
# A run's restart policy (compute key `restart`, docs/reproduce.md), around its script in the run's
# own process on the target (`sh -c` of this file's body, then "mlw-restart", the exit codes that
# restart it ("any": every code but 0), the most restarts, the seconds between, and the script's
# words). Run in the run folder's snapshot/ (a process) or at /mlw/run/snapshot (a container).
# Each attempt gets MLW_RESTART_COUNT (0 first), MLW_CHECKPOINT_DIR, a folder in the share
# folder that outlives the attempts, and MLW_RESUME (1 where that folder has something in it); a
# line in the log marks each restart; ../restarts holds how many there were. A stop (SIGTERM,
# SIGINT, or ../stopped) is passed to the script and ends it all: a stopped script is never
# restarted. The exit code is the last attempt's. Started again after the machine restarted
# (restartAfterReboot, exec/reboot.sh), it counts on from ../restarts.
codes=$1
max=$2
backoff=$3
shift 3
MLW_CHECKPOINT_DIR=${MLW_SHARE_DIR:-../share/}checkpoints/${MLW_RUN_ID:-run}
mkdir -p "$MLW_CHECKPOINT_DIR" 2>/dev/null
export MLW_CHECKPOINT_DIR
n=0
[ -s ../restarts ] && { read -r n <../restarts || n=0; }
child=
stop=
cut=
trap 'stop=1 cut=1; [ -n "$child" ] && kill -s TERM "$child" 2>/dev/null' TERM INT
while :; do
  MLW_RESTART_COUNT=$n
  # MLW_RESUME=1: a checkpoint is there to go on from; a restart that finds none says so.
  MLW_RESUME=0
  if [ -n "$(ls -A "$MLW_CHECKPOINT_DIR" 2>/dev/null)" ]; then
    MLW_RESUME=1
  elif [ "$n" -gt 0 ]; then
    echo "mlw: restart $n starts from scratch: nothing in MLW_CHECKPOINT_DIR ($MLW_CHECKPOINT_DIR)"
  fi
  export MLW_RESTART_COUNT MLW_RESUME
  "$@" &
  child=$!
  # A stop that came as the attempt started (after the pause's check, before child was set) ends
  # it at once: the trap had no child to pass it to.
  if [ -n "$stop" ] || [ -e ../stopped ]; then kill -s TERM "$child" 2>/dev/null; fi
  # wait returns early (128+N) when a signal's trap ran: the script's own end is waited for
  # again, and its own code taken (a wait after its end gives it; 127 where the shell has
  # forgotten it, then the first wait had it).
  code=
  while [ -z "$code" ]; do
    cut=
    wait "$child"
    c=$?
    if [ -n "$cut" ]; then
      kill -0 "$child" 2>/dev/null && continue
      wait "$child"
      again=$?
      [ "$again" = 127 ] || c=$again
    fi
    code=$c
  done
  child=
  [ -n "$stop" ] || [ -e ../stopped ] && exit "$code"
  [ "$code" = 0 ] && exit 0
  [ "$n" -ge "$max" ] && exit "$code"
  case " $codes " in *" any "* | *" $code "*) ;; *) exit "$code" ;; esac
  n=$((n + 1))
  echo "$n" >../restarts.tmp && mv ../restarts.tmp ../restarts
  echo "mlw: restart $n of $max after exit code $code (in $backoff s)"
  sleep "$backoff" &
  child=$!
  wait "$child"
  child=
  if [ -n "$stop" ] || [ -e ../stopped ]; then exit "$code"; fi
done
