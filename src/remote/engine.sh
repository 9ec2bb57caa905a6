# shellcheck shell=sh
# Two shell functions for a step that asks a target's Docker engine directly, run after
# `mlw_engine_pl=TEXT` (engine.pl, beside this file). mlw_engine sets `s` to the engine's unix
# socket and succeeds where the engine can be asked directly: DOCKER_HOST=unix://PATH, or the
# default socket where no docker context is chosen (as local_engine_socket in docker_engine.cpp);
# the socket writable, perl or curl installed. `mlw_http SECONDS METHOD PATH [BODY [ANSWER]]` then
# sends one request on it (Perl's builtins, else curl where Perl is missing or could not connect)
# and prints the answer's status code.
mlw_engine() {
  case "${DOCKER_HOST:-}" in
    unix://*) s=${DOCKER_HOST#unix://} ;;
    '')
      case "${DOCKER_CONTEXT:-default}" in default) ;; *) return 1 ;; esac
      c=$(sed -n 's/.*"currentContext" *: *"\([^"]*\)".*/\1/p' \
        "${DOCKER_CONFIG:-$HOME/.docker}/config.json" 2>/dev/null)
      case "$c" in '' | default) s=/var/run/docker.sock ;; *) return 1 ;; esac
      ;;
    *) return 1 ;;
  esac
  [ -S "$s" ] && [ -w "$s" ] && { command -v perl || command -v curl; } >/dev/null 2>&1
}
# shellcheck disable=SC2154 # mlw_engine_pl is set before this file
mlw_http() {
  if command -v perl >/dev/null 2>&1; then
    perl -e "$mlw_engine_pl" http "$1" "$s" "$2" "$3" "${4:-}" "${5:-}" </dev/null 2>/dev/null &&
      return 0
    [ $? = 4 ] && return 1
  fi
  command -v curl >/dev/null 2>&1 || return 1
  if [ -n "${4:-}" ]; then
    curl -s --max-time "$1" --unix-socket "$s" -X "$2" -H 'Content-Type: application/json' \
      --data-binary "@$4" -o "${5:-/dev/null}" -w '%{http_code}' "http://docker$3" </dev/null \
      2>/dev/null
  else
    curl -s --max-time "$1" --unix-socket "$s" -X "$2" -o "${5:-/dev/null}" -w '%{http_code}' \
      "http://docker$3" </dev/null 2>/dev/null
  fi
}
