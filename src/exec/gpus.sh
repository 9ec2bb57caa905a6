# shellcheck shell=sh
# The run header of a GPU run (spec §6), run in its container before the script (`sh -c` of this
# file's body, then "mlw-gpus" and the script's words): the GPUs the run sees, as nvidia-smi names
# them there.
if gpus=$(nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader \
  2>/dev/null) && [ -n "$gpus" ]; then
  echo "mlw: GPUs seen by this run:"
  echo "$gpus" | sed 's/^/mlw:   GPU /'
else
  echo 'mlw: GPUs seen by this run: none (nvidia-smi lists no GPU in the container)'
fi
exec "$@"
