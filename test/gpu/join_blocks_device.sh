#!/usr/bin/env bash
# The similarity join in slabs on the GPU machine: builds test_gpu and bench_join_blocks
# (test/gpu), runs the slab-vs-in-memory benchmark (test/bench/bench_join_blocks.cpp), then the
# join, slab, batch and memory tests. Run from the repository root; logs under $OUT.
#   bash test/gpu/join_blocks_device.sh [reps]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
make -C test/gpu -j16 build/test_gpu build/bench_join_blocks >"$OUT/build.log" 2>&1
rc=$?
echo "test/gpu build rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
[ $rc = 0 ] || { tail -60 "$OUT/build.log"; exit 1; }
t0=$(date +%s)
timeout 150 test/gpu/build/bench_join_blocks "${1:-3}" 2>&1 | tee "$OUT/bench.log"
echo "bench rc=${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
t0=$(date +%s)
timeout 120 test/gpu/build/test_gpu \
  --gtest_filter='MultiGpu.*:Batch.*:Simjoin.*:Memory.*:Blocks.*:JoinBalance.*' >"$OUT/tests.log" 2>&1
rc=$?
echo "test_gpu rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests? ran|Failure|Expected|Which is|error" "$OUT/tests.log" | head -60
