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

finish
