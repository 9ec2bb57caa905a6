# shellcheck shell=sh
# Runs a command some of whose words or environment values are not UTF-8, which docker cannot pass
# (`sh -c` of this file's body, then "mlw-words", NAME=FORMAT for each such value, "--", and a
# FORMAT for each word). A FORMAT is mlw's own printf format of ASCII (\ooo for every byte but
# letters and digits) that prints the bytes and then "x", so that $(…) keeps trailing newlines.
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  # shellcheck disable=SC2059 # the format is the value, as mlw wrote it
  v=$(printf "${1#*=}")
  export "${1%%=*}=${v%x}"
  shift
done
shift
n=$#
while [ "$n" -gt 0 ]; do
  # shellcheck disable=SC2059 # the format is the word, as mlw wrote it
  w=$(printf "$1")
  shift
  set -- "$@" "${w%x}"
  n=$((n - 1))
done
exec "$@"
