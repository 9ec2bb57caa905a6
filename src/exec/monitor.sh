# shellcheck shell=sh disable=SC2154 # the mlw_ variables and `s` come from the preamble
# The monitor of an mlw run on a target (the remote, docker and remotedocker kinds), started
# detached in the run folder by the supervisor's launch: it outlives the SSH connection, runs the
# script or the container with its output appended to driver_log.txt, and writes its exit code
# into exit_code (and `oom` where the kernel killed the container for memory).
# Run after the preamble monitor_script writes (exec/container.cpp): the run's exported
# variables, and
#   mlw_run, mlw_share   the run folder and the share folder
#   mlw_mode             process: "$@" is the script's command;
#                        container: "$@" are docker's words that create the container, @USER@
#                        standing for the user's ids, the run folder mounted at /mlw/run;
#                        copy: the same, with the run folder copied in and the results out
#   mlw_docker           the words that run docker (docker, sudo -n docker, nvidia-docker)
#   mlw_create_json      the container's create body for the engine's API ("" where the docker
#                        command must create it), with engine.sh's functions, mlw_engine_pl
#                        and `s`, the engine's socket that mlw_engine found
#   mlw_container_name   its name
#   mlw_engine_retry     how long the engine may not answer before the run is lost (s)
#   mlw_lease_want       the run's lease (exec/lease.sh: gpu:N or slot:M; "" for none), with
#                        mlw_lease_sh (lease.sh), mlw_lease_dir, mlw_lease_run, mlw_lease_who,
#                        mlw_lease_foreign and, for a process, mlw_gpus_sh (gpus.sh), for a
#                        container mlw_hold_sh (hold.sh)
#   mlw_reboot           restartAfterReboot: the most restarts (empty: not), with mlw_reboot_sh
#                        (exec/reboot.sh), whose boot hook starts this file again after a restart
#   mlw_data_uses        the data store's marker of the data sets the run mounts (data/data.sh;
#                        a leading ~/ is this login's home), or empty
#   mlw_sample_sh        for a run leasing GPUs or given them unleased, exec/sampler.sh (else
#                        empty), with mlw_sample_awk, mlw_sample_every, mlw_sample_warn,
#                        mlw_sample_policy, mlw_sample_nvml (MLW_NVML of the sampler) and
#                        mlw_sample_gpus, an unleased container's GPUs
#                        (all, or indexes or UUIDs: "0,2"; empty for a lease's)
cd "$mlw_run" || exit 125
# The run's data sets: the marker is held by a shared lock (fd 9) as long as this monitor or
# what it started lives, however they end; `data.held` says the lock was taken, so that the
# store's rm and gc know a run gone without its end written (data.sh mlw_data_live).
if [ -n "$mlw_data_uses" ]; then
  case $mlw_data_uses in \~/*) mlw_data_uses=$HOME/${mlw_data_uses#\~/} ;; esac
  if [ -f "$mlw_data_uses" ] && exec 9<"$mlw_data_uses" && flock -s 9; then
    : >data.held
  fi
fi
# The GPU sampler (exec/sampler.sh), in a session of its own: mlw_sample ROOT STOP… starts it for
# the run's processes under ROOT; mlw_sample_end ends it, saying in gpu_notes where it had been
# killed (no gpu.end: it did not stop by itself) before the run ended.
mlw_sample() {
  mlw_sg=${mlw_sample_gpus:-${gpus:-}}
  [ -n "${mlw_sample_sh:-}" ] && [ -n "$mlw_sg" ] || return 0
  mlw_st=
  [ -n "${mlw_sample_gpus:-}" ] || mlw_st=$ticket
  (
    cd "$mlw_run" || exit 0
    m=metrics.jsonl
    [ "$mlw_mode" = copy ] && m=gpu_metrics.jsonl
    r=$1
    shift
    MLW_NVML=${mlw_sample_nvml:-} exec setsid sh -c "$mlw_sample_sh" mlw-sample "$mlw_sample_awk" "$mlw_sg" \
      "$mlw_sample_every" "$mlw_sample_warn" "$mlw_sample_policy" "$mlw_st" "$r" "$m" "$@" 9>&- 8>&- 6>&-
  ) </dev/null >/dev/null 2>&1 &
  echo $! >"$mlw_run/gpu.pid"
}
mlw_sample_end() {
  [ -s "$mlw_run/gpu.pid" ] || return 0
  read -r sp <"$mlw_run/gpu.pid"
  rm -f "$mlw_run/gpu.pid"
  if ! kill -s TERM -- "-$sp" 2>/dev/null && [ ! -e "$mlw_run/gpu.end" ] &&
    [ ! -e "$mlw_run/gpu_stop" ]; then
    b=
    [ ! -f "$mlw_run/gpu.beat" ] || { read -r _ b <"$mlw_run/gpu.beat"; } 2>/dev/null
    b=$(date -u -d "@${b:-0}" +%H:%M:%S 2>/dev/null)
    echo "GPU sampling stopped${b:+ at $b UTC}: its sampler was killed; the run went on" \
      "without samples" >>"$mlw_run/gpu_notes"
  fi
}
# The exit code; the lease (fd 8) ends with the script; the boot hook with the last run it keeps.
finish() {
  [ -z "${holder:-}" ] || kill -9 "$holder" 2>/dev/null
  mlw_sample_end
  exec 8>&- 6>&-
  echo "$1" >exit_code.tmp && mv exit_code.tmp exit_code
  [ -z "$mlw_reboot" ] || mlw_hook_remove
}
# restartAfterReboot: the boot hook, installed where this run starts (and again where the hook
# started it after a restart); a machine without a way to run it is said in the log.
if [ -n "$mlw_reboot" ]; then
  # shellcheck source=/dev/null
  mkdir -p "$HOME/.mlw" && printf '%s' "$mlw_reboot_sh" >"$HOME/.mlw/reboot.sh.$$" &&
    mv "$HOME/.mlw/reboot.sh.$$" "$HOME/.mlw/reboot.sh" && . "$HOME/.mlw/reboot.sh"
  # The hook starts it with what this login had for docker (sshd's SetEnv, ~/.profile): cron's
  # environment is bare.
  export -p | grep -E '^export (PATH|DOCKER_[A-Z_]+)=' >boot.env
  if ! command -v mlw_hook_install >/dev/null 2>&1 ||
    ! e=$(mlw_hook_install "$mlw_reboot" 2>&1); then
    rm -f reboot
    echo "mlw: error: cannot install the boot hook of restartAfterReboot on $(uname -n): $e" \
      >>driver_log.txt
    mlw_reboot=
    finish 125
    exit 0
  fi
fi
if [ ! -d snapshot/outputs ] || [ ! -d "$mlw_share" ]; then
  mkdir -p snapshot/outputs "$mlw_share"
fi
# mlw_lease_take FD DIR WANT FOREIGN SAID: starts lease.sh (exec/lease.sh) on DIR for WANT, its
# stdin a fifo that fd FD of this shell holds (6: the sweep's turn, 8: the lease; closed for every
# other command it starts), its pid in lease.pid; reads its answers into `a` up to the first that
# is neither "queued" nor "notice", each of those given to the function SAID. Status 1 where the
# fifos cannot be made.
mlw_lease_take() {
  rm -f lease.in lease.out
  mkfifo lease.in lease.out || return 1
  setsid sh -c "$mlw_lease_sh" mlw-lease "$2" "$3" "$mlw_lease_run" "$mlw_lease_who" "$4" \
    <lease.in >lease.out 2>>lease.log 9>&- 6>&- &
  echo $! >lease.pid
  eval "exec $1>lease.in 7<lease.out"
  # A stop that came before lease.pid was written (steps.sh's mlw_stop_lease).
  [ -e stopped ] && { kill -s TERM -- "-$!" || kill -s TERM "$!"; } 2>/dev/null
  rm -f lease.in lease.out
  a=
  while IFS= read -r a <&7; do
    case "$a" in
      queued\ * | notice\ *) "$5" "$a" ;;
      *) break ;;
    esac
  done
  exec 7<&-
}
# mlw_lease_end WHAT: the run ends without its grant: 125 after an error (said in the log:
# "cannot WHAT: …"), else 143, as a script stopped (a cancel ended the wait).
mlw_lease_end() {
  case "$a" in
    error\ *)
      echo "mlw: error: cannot $1: ${a#error }" >>driver_log.txt
      finish 125
      ;;
    *)
      echo stopped >>lease.log
      finish 143
      ;;
  esac
  exit 0
}
# A sweep's point that waits here for its turn (docs/sweeps.md "The laptop may close";
# mlw_gate_want slot:K, mlw_gate_dir own:FOLDER, the sweep's own): one of the sweep's K slots,
# taken first come, first served (in the points' order) before the lease below and held by fd 6,
# so that the next point starts here as one ends, whatever the machine that started the sweep
# does. Its place in line goes into lease.log as "queued N"; its grant only where no lease
# follows (the run starts then).
mlw_turn_said() {
  case "$1" in queued\ *) echo "$1" >>lease.log ;; esac
}
if [ -n "${mlw_gate_want:-}" ]; then
  mlw_lease_take 6 "$mlw_gate_dir" "$mlw_gate_want" ignore mlw_turn_said || {
    finish 125
    exit 0
  }
  case "$a" in
    granted\ *) [ -n "$mlw_lease_want" ] || echo "$a" >>lease.log ;;
    error\ *)
      echo "error the sweep's turn: ${a#error }" >>lease.log
      mlw_lease_end "take the sweep's turn"
      ;;
    *) mlw_lease_end "take the sweep's turn" ;;
  esac
fi
# The lease: lease.sh holds it while its stdin (fd 8, which the script keeps too) is open: the
# kernel ends it when both have ended, however they end. Its answers go into lease.log, which
# the follow steps read; the run waits here (Queued) until granted.
mlw_lease_said() {
  echo "$1" >>lease.log
  case "$1" in notice\ *) echo "mlw: warning: ${1#notice }" >>driver_log.txt ;; esac
}
gpus=
ticket=
if [ -n "$mlw_lease_want" ]; then
  mlw_lease_take 8 "$mlw_lease_dir" "$mlw_lease_want" "$mlw_lease_foreign" mlw_lease_said || {
    finish 125
    exit 0
  }
  [ -z "$a" ] || echo "$a" >>lease.log
  case "$a" in
    granted\ *)
      # The GPUs, then the ticket's folder (exec/lease.sh).
      gpus=${a#granted }
      case "$gpus" in *\ *) ticket=${gpus#* } gpus=${gpus%% *} ;; esac
      ;;
    *) mlw_lease_end lease ;;
  esac
  case "$mlw_lease_want" in slot:*) gpus= ;; esac
fi
# Stopped before the script or container started: nothing is started.
if [ -e stopped ]; then
  finish 143
  exit 0
fi
if [ "$mlw_mode" = process ]; then
  cd snapshot || {
    finish 125
    exit 0
  }
  if [ -n "$gpus" ]; then
    export CUDA_VISIBLE_DEVICES="$gpus" NVIDIA_VISIBLE_DEVICES="$gpus"
    set -- /bin/sh -c "$mlw_gpus_sh" mlw-gpus --only "$gpus" "$@"
  fi
  # The script keeps the lease's fd 8 too: its GPUs stay leased while it runs, even where this
  # monitor is killed.
  "$@" </dev/null >>../driver_log.txt 2>&1 &
  echo $! >../script.pid
  [ -e ../stopped ] && kill -TERM $! 2>/dev/null
  script=$!
  mlw_sample "$script" kill -TERM "$script"
  wait "$script"
  code=$?
  cd ..
  finish "$code"
  exit 0
fi
# docker as the compute file asks for it: its words have no space in them.
# shellcheck disable=SC2086
mlw_d() { $mlw_docker "$@" 8>&- 6>&-; }
# The lease outlives this monitor while the container's main process lives (exec/hold.sh, in a
# session of its own, keeping fd 8): a kill -9 of the monitor does not free the GPUs of a
# container that goes on. finish stops it, so that the next run is not kept waiting. The GPU
# sampler starts there too, once the container's process is known (an unleased one's as well).
holder=
mlw_hold() {
  [ -n "${mlw_hold_sh:-}" ] || [ -n "${mlw_sample_gpus:-}" ] || return 0
  (
    i=0
    p=
    while [ "$i" -lt 300 ]; do
      p=$(mlw_d inspect -f '{{.State.Pid}}' "$cid" 2>/dev/null)
      case "$p" in '' | 0 | *[!0-9]*) p= ;; *) break ;; esac
      sleep 0.2
      i=$((i + 1))
    done
    [ -n "$p" ] || exit 0
    # shellcheck disable=SC2086 # docker's words have no space in them
    mlw_sample "$p" $mlw_docker stop -t 10 "$cid"
    [ -n "${mlw_hold_sh:-}" ] || exit 0
    exec setsid sh -c "$mlw_hold_sh" mlw-hold "$p"
  ) </dev/null >/dev/null 2>&1 &
  [ -z "${mlw_hold_sh:-}" ] || holder=$!
}
# The user's ids, read by the shell itself (every process costs a few ms on the target).
u=
g=
{ while read -r k _ f _; do case "$k" in Uid:) u=$f ;; Gid:) g=$f ;; esac; done; } \
  </proc/self/status 2>/dev/null
case "$u$g" in '' | *[!0-9]*) u=$(id -u) g=$(id -g) ;; esac
n=$#
for w in "$@"; do
  [ "$w" = @USER@ ] && w=$u:$g
  [ "$w" = device=@GPUS@ ] && w="\"device=$gpus\""
  [ "$w" = @GPUS@ ] && w=$gpus
  set -- "$@" "$w"
done
shift "$n"
oom() {
  [ "$code" = 137 ] && [ "$(mlw_d inspect -f '{{.State.OOMKilled}}' "$cid" 2>/dev/null)" = true ] &&
    echo oom >oom
}
# settle: the container's end as the engine records it, where what ended may have been the docker
# command's connection rather than the container (its failure looks like an exit code). Asked
# again each second while the engine does not answer, at most mlw_engine_retry s: then `lost` (the
# container may go on) and a false return. A container that goes on is attached to again; what
# it printed while the engine was away is said to be missing (the file `outage`).
settle() {
  t=0
  while :; do
    if st=$(mlw_d inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$cid" 2>/dev/null); then
      case "$st" in
        exited\ * | dead\ *)
          code=${st#* }
          return 0
          ;;
        running\ * | paused\ * | restarting\ *)
          : >outage
          mlw_d attach --no-stdin --sig-proxy=false "$cid" >>driver_log.txt 2>&1
          sleep 1
          t=0
          ;;
        *) return 0 ;;
      esac
    else
      [ "$t" -ge "${mlw_engine_retry:-60}" ] && : >lost && return 1
      : >outage
      sleep 1
      t=$((t + 1))
    fi
  done
}
# Started again after the machine restarted (exec/reboot.sh): the engine may still be starting;
# the container of the earlier boot, stopped by the restart, gives its name to the new one.
if [ -e rebooted ]; then
  i=0
  until mlw_d info >/dev/null 2>&1 || [ "$i" -ge "${mlw_engine_retry:-60}" ]; do
    sleep 1
    i=$((i + 1))
  done
  mlw_d rm -f "$mlw_container_name" >/dev/null 2>&1
  rm -f container
fi
cid=
e=
if [ "$mlw_mode" = copy ]; then
  if ! cid=$(mlw_d "$@" 2>docker_run.err); then
    cat docker_run.err >>driver_log.txt
    finish 125
    exit 0
  fi
  echo "$cid" >container
  r=
  [ -s restarts ] && r=./restarts
  # shellcheck disable=SC2086 # r is empty or one word
  if ! tar -cf - --transform 's,^\./,mlw/run/,' ./snapshot ./helper $r |
    mlw_d cp - "$cid:/" 2>>driver_log.txt; then
    finish 125
    exit 0
  fi
  if ! mlw_d start "$cid" >/dev/null 2>>driver_log.txt; then
    finish 125
    exit 0
  fi
  mlw_hold
  mlw_d logs -f "$cid" >>driver_log.txt 2>&1 &
  logs=$!
  code=$(mlw_d wait "$cid") || settle || exit 0
  wait $logs
  oom
  mlw_d cp "$cid:/mlw/run/snapshot/outputs" - 2>/dev/null | tar -C snapshot -xf - 2>/dev/null
  mlw_d cp "$cid:/mlw/run/metrics.jsonl" - 2>/dev/null | tar -xf - 2>/dev/null
  mlw_d cp "$cid:/mlw/run/restarts" - 2>/dev/null | tar -xf - 2>/dev/null
  mlw_sample_end
  [ ! -s gpu_metrics.jsonl ] || cat gpu_metrics.jsonl >>metrics.jsonl
  finish "${code:-125}"
  (mlw_d rm "$cid" >/dev/null 2>&1 &)
  exit 0
fi
# The container is created through the engine's unix socket where it is sure to be the engine
# the docker command would ask (one docker CLI start, ~60 ms, less), else by the docker command
# (which says why it cannot).
if [ -n "$mlw_create_json" ] && mlw_engine; then
  j=${mlw_create_json%%@USER@*}$u:$g${mlw_create_json#*@USER@}
  # The leased GPUs' indexes in DeviceIDs (["@GPUS@"] becomes ["1","3"]) and in the run
  # header's words (--machine @GPUS@ becomes "1,3").
  while :; do
    case "$j" in
      *'"@GPUS@"]'*) j=${j%%\"@GPUS@\"]*}\"$(echo "$gpus" | sed 's/,/","/g')\"]${j#*\"@GPUS@\"]} ;;
      *@GPUS@*) j=${j%%@GPUS@*}$gpus${j#*@GPUS@} ;;
      *) break ;;
    esac
  done
  printf '%s' "$j" >create.json
  a=$(mlw_http 60 POST "/containers/create?name=$mlw_container_name" create.json create.out) ||
    a=
  o=
  [ "$a" = 201 ] && { IFS= read -r o || :; } <create.out
  if [ -n "$o" ]; then
    o=${o#*\"Id\"}
    o=${o#*\"}
    cid=${o%%\"*}
    case "$cid" in *[!0-9a-f]* | '') cid= ;; ????????????*) e=1 ;; *) cid= ;; esac
  fi
  [ -n "$cid" ] && echo "$cid" >container
fi
if [ -z "$cid" ] && ! cid=$(mlw_d "$@" 2>docker_run.err); then
  cat docker_run.err >>driver_log.txt
  finish 125
  exit 0
fi
# Stopped while the container was made (before `container` was there to stop): not started.
if [ -e stopped ]; then
  finish 143
  (mlw_d rm -f "$cid" >/dev/null 2>&1 &)
  exit 0
fi
mlw_hold
# One process attaches, starts, streams and waits (as `docker run` does, without -d, logs -f and
# wait beside it): engine.pl where the engine made the container, else `docker start -a`. Where
# Perl did not tell the end, the container's state says what is left: still `created`, the
# docker command starts it (and says why it cannot); else its end is waited for (never started
# twice).
if [ -n "$e" ] && command -v perl >/dev/null 2>&1; then
  if ! perl -e "$mlw_engine_pl" attach "$s" "$cid" engine_code </dev/null >>driver_log.txt \
    2>/dev/null 8>&- || ! { read -r code <engine_code; } 2>/dev/null; then
    code=
    case "$(mlw_d inspect -f '{{.State.Status}}' "$cid" 2>/dev/null)" in
      created)
        mlw_d start -a "$cid" >>driver_log.txt 2>&1
        code=$?
        ;;
      *) code=$(mlw_d wait "$cid" 2>/dev/null) || settle || exit 0 ;;
    esac
  fi
else
  mlw_d start -a "$cid" >>driver_log.txt 2>&1
  code=$?
  # 0 is the container's own; another code may be the docker command's failure.
  [ "$code" = 0 ] || settle || exit 0
fi
oom
finish "${code:-125}"
# A container the engine made is removed through its socket (not the docker command's ~60 ms of a
# core while the results are read).
if [ -n "$e" ]; then
  (mlw_http 60 DELETE "/containers/$cid" >/dev/null 2>&1 &)
else
  (mlw_d rm "$cid" >/dev/null 2>&1 &)
fi
