#!/usr/bin/env bash
# Runs on a GPU machine with two or more GPUs (device tool kind nvidia-h200-x2) from the
# repository root: builds test_gpu and bench_multigpu for sm_90, runs the MultiGpu tests with
# the shares on real devices (G2_TEST_DEVICES) and the multi-device bench at the sizes
# (SDH and pair count of 4,194,304 points, join of 4,000,000 2-D points with about 1e8 pairs):
# one device against the listed devices, same machine, same run, results checked equal.
# Usage: bash test/gpu/multigpu_device.sh [devices, default 0,1] [reps, default 3]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
DEVS=${1:-0,1}; REPS=${2:-3}
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m; } 2>&1 | tee "$OUT/gpus.txt"
t0=$(date +%s)
make -C test/gpu -j"$(nproc)" CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" build/test_gpu build/bench_multigpu >"$OUT/build.log" 2>&1
rc=$?; echo "build rc=$rc in $(( $(date +%s) - t0 )) s" | tee "$OUT/steps.log"
[ $rc = 0 ] || { grep -E "error" "$OUT/build.log" | head -20; tail -20 "$OUT/build.log"; exit 1; }
G2_TEST_DEVICES="$DEVS" timeout 300 test/gpu/build/test_gpu --gtest_filter='MultiGpu.*' >"$OUT/test_multigpu.log" 2>&1
echo "MultiGpu tests on devices $DEVS rc=$?" | tee -a "$OUT/steps.log"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/test_multigpu.log" | tee -a "$OUT/steps.log"
timeout 400 test/gpu/build/bench_multigpu "$DEVS" "$REPS" large 2>&1 | tee "$OUT/bench_multigpu.log"
echo "bench rc=$? total $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
