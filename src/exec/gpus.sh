# shellcheck shell=sh
# The run header of a GPU run (spec §6), run before the script (`sh -c` of this file's body, then
# "mlw-gpus", optionally "--only LIST", and the script's words): the GPUs the run sees, as
# nvidia-smi names them there. In a container that is every GPU nvidia-smi lists (with
# "--machine LIST", the machine's GPUs LIST it was given, numbered as the machine numbers them);
# a process run of a lease (local, remote) is shown the leased indexes of LIST (nvidia-smi lists
# the machine's).
only=
machine=
if [ "${1-}" = --only ]; then
  only=$2
  shift 2
elif [ "${1-}" = --machine ]; then
  machine=$2
  shift 2
fi
if [ -n "$only" ]; then
  # The machine's nvidia-smi (NVIDIA_VISIBLE_DEVICES is the container runtime's, not its).
  gpus=$(env -u NVIDIA_VISIBLE_DEVICES nvidia-smi \
    --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader 2>/dev/null |
    awk -F', ' -v only=",$only," 'index(only, "," $1 ",")')
  where="GPUs $only on this machine"
else
  gpus=$(nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader \
    2>/dev/null) || gpus=
  where="GPU in the container"
  # Given chosen GPUs of the machine (a lease, device=LIST): numbered as the machine numbers
  # them, as the run's record does (the container's nvidia-smi lists them in that order).
  [ -z "$machine" ] || gpus=$(echo "$gpus" | awk -F', ' -v map="$machine" \
    'BEGIN { n = split(map, m, ",") } { i = $1 + 1; if (i <= n) sub(/^[0-9]+/, m[i]); print }')
fi
if [ -n "$gpus" ]; then
  echo "mlw: GPUs seen by this run:"
  echo "$gpus" | sed 's/^/mlw:   GPU /'
else
  echo "mlw: GPUs seen by this run: none (nvidia-smi lists no $where)"
fi
exec "$@"
