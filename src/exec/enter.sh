# shellcheck shell=sh
# `mlw experiment shell` on the run's machine (src/exec/join.cpp): a terminal or one command inside
# a running run, seeing what its script sees. Called, joined to mlw's terminal, as
#   mlw_enter RUN_ID FOLDER CONTAINER DOCKER TTY PID [COMMAND…]
# FOLDER: the run's folder there (relative: to $HOME); CONTAINER: the run's container ("": none);
# DOCKER: the compute file's docker words, space-separated; TTY: 1 for `docker exec -t`; PID: the
# run's script where mlw knows it (a local run), else "" (script.pid in the folder, written by
# monitor.sh). Without COMMAND: bash where there is one, else sh (in a container), or $SHELL. The
# command replaces this shell: its exit code is mlw's. A run it cannot enter is one line on
# stderr and 125.

# mlw_no RUN_ID WHY: the line and 125.
mlw_no() {
  echo "mlw: error: cannot enter run $1: $2" >&2
  exit 125
}

# mlw_parent PID: the parent of process PID ("" once it is gone).
mlw_parent() {
  read -r _ _ _ ppid _ <"/proc/$1/stat" 2>/dev/null && echo "$ppid"
}

# What ends an exec'd command inside the container, run there as `sh -c "$mlw_end_inside" MARK
# SIGNAL`: MARK holds the command's pid. A command without a terminal leads no process group of
# its own (`sh -c 'a; sleep 300; b'`: the sleep would stay), so the processes under it are found
# first (by their parents, in /proc) and all are signalled, with its group where it leads one.
# shellcheck disable=SC2016 # the words of the shell there
mlw_end_inside='p=$(cat "$0") || exit 0
sig=$1 all=$p new=$p
while [ -n "$new" ]; do
  next=
  for f in /proc/[0-9]*/stat; do
    read -r s <"$f" 2>/dev/null || continue
    q=${s%% *}
    set -f
    set -- ${s##*) } # the fields after the name: state, parent, ...
    set +f
    case " $new " in *" $2 "*) case " $all " in *" $q "*) ;; *) next="$next $q" ;; esac ;; esac
  done
  all="$all$next" new=${next# }
done
kill -"$sig" -- "-$p" 2>/dev/null
kill -"$sig" $all 2>/dev/null
rm -f "$0"'

mlw_enter() {
  id=$1 folder=$2 container=$3 docker=$4 tty=$5 pid=$6
  shift 6
  cd "$HOME" 2>/dev/null || :
  if [ -n "$container" ]; then
    [ $# -gt 0 ] || set -- /bin/sh -c 'command -v bash >/dev/null 2>&1 && exec bash; exec sh'
    flags=-i
    if [ "$tty" = 1 ]; then
      flags=-it
      # docker sizes the terminal of an exec a moment after it starts (0×0 until then): it is
      # sized first here, as this one is.
      size=$(stty size 2>/dev/null) || size=
      case "$size" in
      [1-9]*" "[1-9]*)
        # shellcheck disable=SC2016,SC2086 # the inner sh's words; the size is two numbers
        set -- /bin/sh -c 'stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"' mlw-size $size "$@"
        ;;
      esac
    fi
    # docker does not end an exec whose client went away (the SSH session dropped, mlw killed,
    # its terminal closed): the exec'd process keeps its pid in the container, and is signalled
    # from here when this shell is (HUP, TERM, INT: Ctrl-C without a terminal) or loses its
    # parent. A hang-up that reaches the terminal before mlw's death does neither the client nor
    # this shell: the watcher below sees the parent gone within a second.
    mark="/tmp/.mlw-shell-$$"
    # shellcheck disable=SC2016 # the inner sh's words
    set -- /bin/sh -c 'echo "$$" >"$0" 2>/dev/null; exec "$@"' "$mark" "$@"
    sig=
    trap 'sig=HUP' HUP
    trap 'sig=TERM' TERM
    trap 'sig=INT' INT
    # The client runs beside this shell (which waits, and so hears its signals at once), with
    # this shell's input (an asynchronous command's would be /dev/null).
    exec 3<&0
    # docker as the compute file asks for it: its words have no space in them.
    # shellcheck disable=SC2086
    $docker exec $flags "$container" "$@" <&3 3<&- &
    client=$!
    exec 3<&-
    parent=$PPID me=$$ watcher=
    if [ "$(mlw_parent "$me")" = "$parent" ]; then
      (
        while [ "$(mlw_parent "$me")" = "$parent" ]; do sleep 1; done
        kill -HUP "$me" 2>/dev/null
      ) </dev/null >/dev/null 2>&1 &
      watcher=$!
    fi
    code=
    while [ -z "$code" ]; do
      wait "$client"
      code=$?
      if [ -n "$sig" ]; then
        kill -TERM "$client" 2>/dev/null
        # The clean-up must outlive the hang-up's rest (a terminal closed right after mlw died
        # hangs up its group again): it, and this shell, ignore HUP from here on.
        trap '' HUP
        # shellcheck disable=SC2086
        $docker exec "$container" /bin/sh -c "$mlw_end_inside" "$mark" "$sig" </dev/null >/dev/null 2>&1
        wait "$client"
        code=$?
      elif kill -0 "$client" 2>/dev/null; then
        code=  # a signal that was not one of the trapped ones interrupted the wait
      fi
    done
    [ -z "$watcher" ] || kill "$watcher" 2>/dev/null
    exit "$code"
  fi
  cd "$folder" 2>/dev/null || mlw_no "$id" "its folder $folder is not on $(hostname)"
  [ -n "$pid" ] || pid=$(cat script.pid 2>/dev/null)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null || ! [ -r "/proc/$pid/environ" ]; then
    mlw_no "$id" "its script is not running on $(hostname)"
  fi
  cd "/proc/$pid/cwd" 2>/dev/null || mlw_no "$id" "its working folder is gone"
  cd "$(pwd -P)" || mlw_no "$id" "its working folder is gone"
  [ $# -gt 0 ] || set -- "${SHELL:-/bin/sh}"
  # This terminal's kind goes with it (the run's variables come first; env takes the last).
  set -- /bin/sh -c 'exec "$@"' mlw-shell "$@"
  [ -n "${TERM:-}" ] && set -- "TERM=$TERM" "$@"
  # The script's own variables (MLW_RUN_ID, the visible GPUs, …) and nothing else: xargs appends
  # them to the words, so the words are turned round behind them, then run by env -i (through sh:
  # a first word with '=' in it is not taken for a variable). -x: never a second run. xargs says
  # 123 for every failure, so the command's own code comes back on fd 3.
  exec 4>&1
  # shellcheck disable=SC2016
  code=$(xargs -0 -x -a "/proc/$pid/environ" /bin/sh -c '
n=$1
shift
while [ "$n" -gt 0 ]; do
  set -- "$@" "$1"
  shift
  n=$((n - 1))
done
env -i "$@" 3>&-
echo "$?" >&3' mlw-enter "$#" "$@" 3>&1 1>&4 4>&-)
  exit "${code:-125}"
}
