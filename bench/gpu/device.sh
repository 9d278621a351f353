#!/bin/sh
# The whole device run, on the machine with the GPU (CUDA driver and PyTorch;
# no LLVM): from the repository root, with build/gpu-device carried over
# (bench/gpu/prepare.py builds it where Lamina is). Results land in $OUT as
# they are measured; about a minute of GPU time, capped at five.
set -eu
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
timeout 300 python3 bench/gpu/run_device.py --artefacts build/gpu-device \
    --out "$OUT" 2>&1 | tee "$OUT/run_device.log"
