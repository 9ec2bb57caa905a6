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
    # docker does not end an exec whose client went away (the SSH session dropped, mlw killed):
    # the exec'd process keeps its pid in the container, and is hung up from here when this
    # shell was (SIGHUP) or docker ended by a signal.
    mark="/tmp/.mlw-shell-$$"
    # shellcheck disable=SC2016 # the inner sh's words
    set -- /bin/sh -c 'echo "$$" >"$0" 2>/dev/null; exec "$@"' "$mark" "$@"
    hung=0
    trap 'hung=1' HUP
    # docker as the compute file asks for it: its words have no space in them.
    # shellcheck disable=SC2086
    $docker exec $flags "$container" "$@"
    code=$?
    if [ "$hung" = 1 ] || [ "$code" -gt 128 ]; then
      # shellcheck disable=SC2016,SC2086
      $docker exec "$container" /bin/sh -c 'p=$(cat "$0") && { kill -HUP -- "-$p" || kill -HUP "$p"; }
rm -f "$0"' "$mark" >/dev/null 2>&1
    fi
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
