#!/usr/bin/env bash
# GPU checks: where this machine has an NVIDIA GPU, examples/pytorch-mnist runs on the local
# target on the GPU and `doctor -n local` names the GPU as nvidia-smi does. Without a GPU the
# suite says that it skipped them (the only checks allowed to skip).
source "$(dirname "$0")/lib.sh"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: GPU checks (no NVIDIA GPU here: nvidia-smi is missing or lists no GPU)"
  finish
  exit $?
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "FAIL: this machine has a GPU but python3 has no CUDA-enabled PyTorch (pip install torch)"
  exit 1
fi

new_project gpu pytorch-mnist
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
run_mlw computetarget doctor -n local
expect_contains "doctor lists the GPU" "$OUT" "name: $GPU_NAME"
expect_contains "doctor gives its memory" "$OUT" "total memory: "
expect_contains "doctor gives the driver" "$OUT" "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
echo "$OUT"

run_mlw experiment submit -c local train.py --epochs 1
expect_eq "pytorch-mnist on the GPU exits 0" "$CODE" 0
expect_contains "the script ran on cuda" "$OUT" "device: cuda ($GPU_NAME)"
expect_contains "metrics recorded" "$("$MLW" -o json history last)" '"accuracy"'
echo "$OUT" | grep -E "device|epoch"

# GPU telemetry on a real GPU (docs/gpus.md): a leased run of a 20-second matmul loop is sampled
# every second; its utilisation series is printed (for docs/benchmarks.md, B15 on a real GPU).
cat >matmul.py <<'PY'
import time, torch
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + 20
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
print("matmul done")
PY
printf 'gpusPerRun: 1\n' >>aml_config/local.compute
run_mlw -o json experiment submit -c local matmul.py
expect_eq "a leased matmul run exits 0" "$CODE" 0
ID=$(json_get "$OUT" 'd["run_id"]')
USE=$("$MLW" -o json history info -r "$ID")
echo "recorded: $(json_get "$USE" 'd["system"]')"
echo "series sys/gpu0/util: $(python3 -c 'import json,sys
print(" ".join(str(json.loads(l)["value"]) for l in open(sys.argv[1]) if "\"sys/gpu0/util\"" in l))' \
  "$PWD/.mlw/runs/$ID/metrics.jsonl")"
check "the matmul loop used its GPU (mean utilisation above 20%)" python3 -c "import sys
sys.exit(0 if $(json_get "$USE" 'd["system"]["gpus"][0]["util_mean"]') > 20 else 1)"
check "… and its memory (over 100 MiB)" python3 -c "import sys
sys.exit(0 if $(json_get "$USE" 'd["system"]["gpus"][0]["mem_peak_mib"]') > 100 else 1)"

finish
