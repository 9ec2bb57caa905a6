# shellcheck shell=sh disable=SC2154 # the mlw_ variables come from the preamble
# The probe: what one round trip learns about a target's machine, as `key=value` lines for
# parse_probe (remote/probe.cpp). Run after the preamble probe_script writes:
#   mlw_docker        the words that run docker ("" where the kind uses no Docker engine)
#   mlw_image         the environment image to look for ("" for none)
#   mlw_engine_query  1: ask the engine's socket about the image first (engine.sh's functions
#                     are defined), side by side with the ship; its answer is read on fd 4
#   mlw_nvidia        1: the engine's runtimes matter (nvidiaDocker)
#   mlw_disk          1: the free disk under $HOME too (doctor, attach)
#   mlw_python        the interpreter whose --version and path are asked ("" for none)
#   mlw_ship          a ship (exec/ship.sh) that reads the step's stdin: its lines come back as
#                     ship=LINE, its end as `ship=end N`
#   mlw_section       the kind's own lines of the probe
#   mlw_reboot_probe  1: which boot hook restartAfterReboot would use (exec/reboot.sh follows)
#   mlw_lease_probe   the lease folder to look at: is it shared between users (exec/lease_dir.sh
#                     follows)
# shellcheck disable=SC2086 # docker's words have no space in them
mlw_d() { $mlw_docker "$@"; }
mlw_probe() {
  if [ -n "$mlw_ship" ]; then
    { (eval "$mlw_ship"); echo "end $?"; } 2>&1 | sed 's/^/ship=/'
    cd || return
  fi
  {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi \
      --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
      sed 's/^/gpu=/'
    [ -z "$mlw_disk" ] || df -Pk "$HOME" 2>/dev/null | awk 'NR==2{print "disk_free_kb=" $4}'
  } &
  if [ -n "$mlw_docker" ]; then
    if ! command -v docker >/dev/null 2>&1; then
      echo 'docker=fail docker is not installed'
    else
      image=
      if [ -n "$mlw_image" ]; then
        # The engine's own answer where its socket is at hand (a few ms; the docker command
        # ~60); the docker command wherever that is not sure (another host or context, sudo).
        a=
        if [ -n "$mlw_engine_query" ]; then read -r a <&4 || :; fi
        case "$a" in
          200) image=yes ;;
          404) ;;
          *) mlw_d image inspect "$mlw_image" >/dev/null 2>&1 && image=yes ;;
        esac
        [ "$image" = yes ] && echo "image=$mlw_image"
      fi
      # An existing image stands for a working daemon unless the runtimes matter (GPUs).
      if [ -z "$mlw_nvidia" ] && [ "$image" = yes ]; then
        echo docker=ok
      elif v=$(mlw_d info --format '{{.ServerVersion}} {{json .Runtimes}}' 2>&1); then
        echo "docker=ok ${v%% *}"
        case "$v" in *nvidia*) echo nvidia_runtime=yes ;; esac
      else
        echo "docker=fail $(echo "$v" | grep -v '^ *null$' | tail -n 1)"
      fi
    fi
    command -v nvidia-docker >/dev/null 2>&1 && echo nvidia_docker=yes
  fi
  eval "$mlw_section"
  [ -z "${mlw_reboot_probe:-}" ] || echo "reboot_hook=$(mlw_hook_kind)"
  [ -z "${mlw_lease_probe:-}" ] || mlw_lease_probe "$mlw_lease_probe"
  if [ -n "$mlw_python" ]; then
    if v=$("$mlw_python" --version 2>&1); then
      # Where it is, and, for a script (a pyenv or conda shim), the interpreter it runs.
      at=$(command -v "$mlw_python" 2>/dev/null)
      runs=
      if read -r first <"$at" 2>/dev/null && [ "${first#\#!}" != "$first" ]; then
        runs=$("$mlw_python" -S -c 'import sys; print(sys.executable)' 2>/dev/null)
      fi
      echo "python=ok $v at $at${runs:+, a script that runs $runs}"
    else
      echo "python=fail $(echo "$v" | tail -n 1)"
    fi
  fi
  wait
}
echo "home=$HOME"
if [ -n "$mlw_engine_query" ]; then
  # The engine is asked first and its answer read on fd 4 once the ship is done: the two run
  # side by side, the ship on the step's own stdin.
  exec 3<&0
  { mlw_engine && mlw_http 10 GET "/images/$mlw_image/json"; } | {
    exec 4<&0 <&3 3<&-
    mlw_probe
  }
else
  mlw_probe
fi
exit 0
