# shellcheck shell=sh
# Keeps a run's lease while its container's main process lives (issue 45): `sh -c` of this body,
# then "mlw-hold" and that process's pid on this machine. Started by a docker run's supervisor
# with the lease's pipe as a descriptor it keeps (SpawnOptions::keep_fd): a supervisor killed
# with -9 leaves the GPUs leased until the container ends. The process is known by its pid and
# its start time (field 22 of /proc/PID/stat, counted after the command's closing parenthesis),
# so that a pid used again is not taken for it. Ends within a second of the process; the
# supervisor stops it at once when it ends the run itself.
stat_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
started=$(stat_start "$1")
[ -n "$started" ] || exit 0
exec </dev/null >/dev/null 2>&1
while [ "$(stat_start "$1")" = "$started" ]; do sleep 1; done
