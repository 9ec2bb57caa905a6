# shellcheck shell=sh
# A PySpark run where no image was built for it (`sh -c` of this file's body, then what to say when
# the run's PATH has no spark-submit, then the script and its arguments): the missing spark-submit
# explained as on the local target, not as tini's failed exec.
command -v spark-submit >/dev/null 2>&1 || {
  echo "mlw: error: $0" >&2
  exit 127
}
exec spark-submit "$@"
