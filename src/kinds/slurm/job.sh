#!/bin/bash
# An mlw run as a Slurm batch job: sbatch runs it from the run folder (its options are on
# sbatch's command line). run.env, written by mlw, holds the run's variables (exported), the
# node count and GPUs, the share folder, and two arrays: srun's extra options and the command
# each node runs. Every rank records its own exit code and when it ended; when one fails srun
# stops the others (143), and the job's code is the first failure, not the last.
# What run.env sets, empty until it does.
mlw_share='' mlw_nodes=1 mlw_gpus_per_node=0
srun_options=()
command=()
# shellcheck source=/dev/null
. ./run.env || exit 125
run=$PWD
mkdir -p "$mlw_share" 2>/dev/null
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
# shellcheck disable=SC2016
srun --kill-on-bad-exit=1 "${srun_options[@]}" sh -c 'MLW_NODE_RANK="$SLURM_NODEID"; export MLW_NODE_RANK; "$@"; c=$?; echo "$c $(date +%s%N)" > "$0/rank_exit.$MLW_NODE_RANK"; exit "$c"' "$run" "${command[@]}" </dev/null
code=$?
# The first rank that failed, by when it ended.
failed=()
for f in "$run"/rank_exit.*; do
  [[ -e "$f" ]] && read -r c t <"$f" && [[ "$c" != 0 ]] && failed+=("$t $c")
done
if ((${#failed[@]} > 0)); then
  first=$(printf '%s\n' "${failed[@]}" | sort -n | head -n 1) || true
  code=${first#* }
fi
echo "$code" >"$run/exit_code.job.tmp" && mv "$run/exit_code.job.tmp" "$run/exit_code.job"
exit "$code"
