# shellcheck shell=sh
# What `mlw computetarget gpus` reads of a machine's GPUs (docs/gpus.md), before queue.sh's
# tickets: tab-separated lines
#   now EPOCH
#   gpu INDEX NAME UTIL MEMORY_USED MEMORY_TOTAL UUID
#   app UUID PID NAME MEMORY_USED USER
# (MiB, %), the two nvidia-smi queries at once (20 s at most each); "none TEXT" where nvidia-smi
# lists no GPU (or hangs).
# Another user's process is named by its owner only (stat of /proc/PID, one process for all).
echo "now	$(date +%s)"
mlw_apps=$(mktemp 2>/dev/null) || mlw_apps=/dev/null
timeout 20 nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory \
  --format=csv,noheader,nounits >"$mlw_apps" 2>/dev/null &
if mlw_g=$(timeout 20 nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,uuid \
  --format=csv,noheader,nounits 2>&1); then
  echo "$mlw_g" | head -n 64 | sed 's/, */	/g; s/^/gpu	/'
else
  echo "none	$(echo "$mlw_g" | head -n 1 | tr -c ' -~' ' ' | cut -c 1-200)"
fi
wait
mlw_p=$(head -n 256 "$mlw_apps" | sed 's/, */	/g')
[ "$mlw_apps" = /dev/null ] || rm -f "$mlw_apps"
if [ -n "$mlw_p" ]; then
  mlw_u=$(echo "$mlw_p" | cut -f 2 | grep -E '^[0-9]+$' | sed 's,^,/proc/,' |
    xargs -r stat -c '%n %U' 2>/dev/null)
  echo "$mlw_p" | while IFS='	' read -r u p n m; do
    o=$(echo "$mlw_u" | sed -n "s,^/proc/$p ,,p")
    printf 'app\t%s\t%s\t%s\t%s\t%s\n' "$u" "$p" "$n" "$m" "${o:--}"
  done
fi
