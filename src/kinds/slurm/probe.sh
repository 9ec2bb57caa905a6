# shellcheck shell=sh
# The slurm kind's lines of the probe (run inside it, after `set -- PARTITION`): Slurm's
# commands, the partition (the compute file's, else the default one) with its nodes, or why the
# controller did not answer. Prints slurm_missing=CMD, slurm_partition=NAME,
# slurm_node=NAME|STATE|GRES, slurm_error=TEXT.
for c in sbatch squeue scontrol sinfo; do
  command -v "$c" >/dev/null 2>&1 || echo "slurm_missing=$c"
done
p=$1
[ -n "$p" ] || p=$(sinfo -h -o %P 2>/dev/null | sed -n 's/\*$//p' | head -n 1)
if [ -n "$p" ]; then
  if out=$(scontrol show partition "$p" 2>&1); then
    echo "slurm_partition=$p"
    sinfo -h -p "$p" -N -o '%N|%T|%G' 2>/dev/null | sort -u | sed 's/^/slurm_node=/'
  elif ! printf '%s' "$out" | grep -qi 'not found'; then
    echo "slurm_error=$(printf '%s' "$out" | tail -n 1)"
  fi
elif ! out=$(sinfo -h -o %P 2>&1); then
  echo "slurm_error=$(printf '%s' "$out" | tail -n 1)"
fi
