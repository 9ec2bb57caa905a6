#!/bin/bash
# An mlw run as a Slurm batch job: sbatch runs it from the run folder (its options are on
# sbatch's command line). run.env, written by mlw, holds the run's variables (exported), the
# node count and GPUs, the share folder, the checkpoint signal (requeue) and two arrays: srun's
# extra options and the command each node runs. Every rank records its own exit code and when it
# ended; when one fails srun stops the others (143), and the job's code is the first failure, not
# the last.
# What run.env sets, empty until it does.
mlw_share='' mlw_nodes=1 mlw_gpus_per_node=0 mlw_checkpoint_signal='' mlw_checkpoint_lead=0
mlw_sample_every=1 mlw_sample_warn=10
srun_options=()
command=()
# shellcheck source=/dev/null
. ./run.env || exit 125
# The checkpoint signal may come as soon as the job starts (Slurm warns a requeued job again at
# its first look): from here on it is only noted (a signal with no trap would end this shell,
# 138), and the loop below passes it on or not. A wait it cuts short is waited again.
warning=
cut=
[[ -z "$mlw_checkpoint_signal" ]] || trap 'warning=1 cut=1' "$mlw_checkpoint_signal"
run=$PWD
mkdir -p "$mlw_share" 2>/dev/null
# Each start of the job is an attempt (Slurm runs this script again in the same folder after a
# requeue, ours or the cluster's): counted, marked in the log, and given MLW_RESTART_COUNT; an
# earlier attempt's codes are not this one's.
attempt=$(($(cat attempts 2>/dev/null || echo 0) + 1))
echo "$attempt" >attempts.tmp && mv attempts.tmp attempts
export MLW_RESTART_COUNT=$((attempt - 1))
if ((attempt > 1)); then
  rm -f exit_code.job rank_exit.* script.pid
  echo "mlw: attempt $attempt (restart $MLW_RESTART_COUNT): job ${SLURM_JOB_ID:-} was requeued"
fi
# The checkpoint folder as this node sees it: a container's /mlw/share/… is the share folder here.
ckpt=${MLW_CHECKPOINT_DIR:-}
[[ "$ckpt" != /mlw/share/* ]] || ckpt=$mlw_share/${ckpt#/mlw/share/}
[[ -z "$ckpt" ]] || mkdir -p "$ckpt" 2>/dev/null
# MLW_RESUME=1: a checkpoint is there to go on from; a later attempt that finds none says so
# (given to a container by name, as MLW_RESTART_COUNT: kinds/slurm/batch.cpp).
MLW_RESUME=0
if [[ -n "$ckpt" && -n "$(ls -A "$ckpt" 2>/dev/null)" ]]; then
  MLW_RESUME=1
elif [[ -n "$ckpt" ]] && ((MLW_RESTART_COUNT > 0)); then
  echo "mlw: restart $MLW_RESTART_COUNT starts from scratch: nothing in MLW_CHECKPOINT_DIR ($MLW_CHECKPOINT_DIR)"
fi
export MLW_RESUME
export MLW_NUM_NODES="${SLURM_JOB_NUM_NODES:-$mlw_nodes}"
export MLW_GPUS_PER_NODE="$mlw_gpus_per_node"
# The first node of the job (Slurm sets SLURM_JOB_NODELIST in every job), else this one.
MASTER_ADDR=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | head -n 1) || true
export MASTER_ADDR="${MASTER_ADDR:-$(hostname)}"
export MASTER_PORT=$((20000 + ${SLURM_JOB_ID:-0} % 20000))
# A container runs as the job's user.
for i in "${!command[@]}"; do
  if [[ "${command[$i]}" = @MLW_USER@ ]]; then
    uid=$(id -u) && gid=$(id -g) && command[i]=$uid:$gid
  fi
done
cd snapshot || exit 125
# What each rank runs: sh -c of this with RUN SIGNAL EVERY WARN COMMAND…. Each rank (one a node)
# where Slurm gave the job GPUs (CUDA_VISIBLE_DEVICES, as nvidia-smi there numbers them) starts
# the run's GPU sampler (exec/sampler.sh, docs/gpus.md) for the processes under this shell, in a
# session of its own, and ends it when the script ends; the script is this shell's child. Rank 0
# samples into the run folder; another node N into node.N/ (its series named sys/nodeN/…), which
# this script adds to the run's files once the step has ended (no two nodes append to one file
# of a shared filesystem).
# shellcheck disable=SC2016
rank_program='MLW_NODE_RANK="$SLURM_NODEID"; export MLW_NODE_RANK
[ -z "$1" ] || trap : "$1"
e=$2 w=$3
shift 3
sp=
case "${CUDA_VISIBLE_DEVICES:-}" in
  "" | *[!0-9,]*) ;;
  *)
    d=$0
    [ "$MLW_NODE_RANK" = 0 ] || d=$0/node.$MLW_NODE_RANK
    if [ -s "$0/sampler.sh" ] && command -v nvidia-smi >/dev/null 2>&1 && mkdir -p "$d"; then
      (cd "$d" && MLW_SAMPLE_NODE=${MLW_NODE_RANK#0} MLW_NVML=$(cat "$0/sampler.nvml" 2>/dev/null) exec setsid sh "$0/sampler.sh" "$(cat "$0/sampler.awk")" "$CUDA_VISIBLE_DEVICES" "$e" "$w" "" "" "$$" metrics.jsonl) </dev/null >/dev/null 2>&1 &
      sp=$!
      echo "$sp" >"$d/gpu.pid"
    fi ;;
esac
# The first rank names its script for `experiment shell` (kinds/slurm/shell.sh): a shell that
# writes its pid and becomes the script.
[ "$MLW_NODE_RANK" != 0 ] || set -- /bin/sh -c "echo \$\$ >\"\$0\"; exec \"\$@\"" "$0/script.pid" "$@"
"$@"
c=$?
if [ -n "$sp" ] && kill -s TERM -- "-$sp" 2>/dev/null; then
  i=0
  while [ "$i" -lt 50 ] && kill -0 -- "-$sp" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
fi
echo "$c $(date +%s%N)" >"$0/rank_exit.$MLW_NODE_RANK"
exit "$c"'
# The step runs in the background so that the checkpoint signal (sent to this shell only,
# --signal=B:) is passed on to it while it runs: srun gives it to every process of the step.
# Each rank's shell outlives the signal (a trap that does nothing); the script gets it.
srun --kill-on-bad-exit=1 "${srun_options[@]}" sh -c "$rank_program" "$run" "$mlw_checkpoint_signal" \
  "${mlw_sample_every:-1}" "${mlw_sample_warn:-10}" "${command[@]}" </dev/null &
step=$!
signalled=
# The seconds of squeue's time left (D-HH:MM:SS, HH:MM:SS, MM:SS), or nothing.
seconds_of() {
  local t="$1" days=0 total=0 part
  [[ "$t" =~ ^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$ ]] || return 0
  if [[ "$t" == *-* ]]; then days=${t%%-*} t=${t#*-}; fi
  for part in ${t//:/ }; do total=$((total * 60 + 10#$part)); done
  echo $((total + 10#$days * 86400))
}
# Slurm may warn a requeued job again as soon as it starts: a warning while more than the lead
# time and a minute (the resolution of Slurm's warnings) are left is not passed on. One that comes
# early within that minute (Slurm sends it at its first look once the lead and its period of 30 s
# are left) is held until the lead is left: a timer gives it to this shell again then, and a
# warning once that time has come is passed on whatever squeue says (its seconds are rounded).
holder=
held_until=
pass_warning() {
  local left
  left=$(squeue -h -j "$SLURM_JOB_ID" -o %L 2>/dev/null)
  left=$(seconds_of "$left")
  if [[ -n "$left" ]] && ((left > mlw_checkpoint_lead + 60)); then
    echo "mlw: $mlw_checkpoint_signal came with ${left} s of the time limit left; not passed on"
    return 0
  fi
  if [[ -n "$held_until" ]]; then
    ((SECONDS >= held_until)) || return 0 # Slurm again, while one is held
    held_until=
  elif [[ -n "$left" ]] && ((left > mlw_checkpoint_lead)); then
    held_until=$((SECONDS + left - mlw_checkpoint_lead))
    (sleep $((left - mlw_checkpoint_lead)) && kill -s "$mlw_checkpoint_signal" $$) &
    holder=$!
    return 0
  fi
  kill -s "$mlw_checkpoint_signal" "$step" 2>/dev/null && signalled=1
}
# The trap only notes the warning (one may have come before the step started); wait returns
# early (128+N) for it, and the loop passes it on, then waits again for the step's own code (a
# wait after its end gives it; 127 where bash has forgotten it, then the first wait had it).
code=
while [[ -z "$code" ]]; do
  cut=
  if [[ -n "$warning" ]]; then
    warning=
    pass_warning
  fi
  wait "$step"
  c=$?
  if [[ -n "$cut" ]]; then
    kill -0 "$step" 2>/dev/null && continue
    wait "$step"
    again=$?
    ((again == 127)) || c=$again
  fi
  code=$c
done
[[ -z "$holder" ]] || kill "$holder" 2>/dev/null
# The step has ended: so does its sampler (each rank ends its own; this one, where a rank's shell
# was killed: it would end at its next sample, with no process left). Other nodes' samples and
# lines join the run's.
if [[ -s "$run/gpu.pid" ]] && read -r sampler <"$run/gpu.pid"; then
  kill -s TERM -- "-$sampler" 2>/dev/null
  rm -f "$run/gpu.pid"
fi
for node in "$run"/node.*; do
  [[ -d "$node" && ! -L "$node" ]] || continue
  n=${node##*.}
  [[ ! -f "$node/metrics.jsonl" ]] || cat "$node/metrics.jsonl" >>"$run/metrics.jsonl"
  [[ ! -f "$node/driver_log.txt" ]] ||
    head -c 65536 "$node/driver_log.txt" | sed -E "s/^mlw: (warning: )?/&node $n: /"
  [[ ! -f "$node/gpu_notes" ]] || head -n 20 "$node/gpu_notes" | sed "s/^/node $n: /" >>"$run/gpu_notes"
  rm -rf "$node"
done
# The first rank that failed, by when it ended.
failed=()
for f in "$run"/rank_exit.*; do
  [[ -e "$f" ]] && read -r c t <"$f" && [[ "$c" != 0 ]] && failed+=("$t $c")
done
if ((${#failed[@]} > 0)); then
  first=$(printf '%s\n' "${failed[@]}" | sort -n | head -n 1) || true
  code=${first#* }
fi
# Warned, and ended other than 0 (a checkpoint taken): back in the queue, for the next attempt.
# Where Slurm refuses (MaxBatchRequeue reached, requeue not allowed), the run ends here.
if [[ -n "$signalled" && "$code" != 0 ]]; then
  echo "mlw: the script ended with exit code $code after $mlw_checkpoint_signal; requeueing job $SLURM_JOB_ID"
  if why=$(scontrol requeue "$SLURM_JOB_ID" 2>&1); then
    sleep 30 # Slurm ends this attempt now
    exit "$code"
  fi
  echo "mlw: error: Slurm did not requeue job $SLURM_JOB_ID: $why"
fi
echo "$code" >"$run/exit_code.job.tmp" && mv "$run/exit_code.job.tmp" "$run/exit_code.job"
exit "$code"
