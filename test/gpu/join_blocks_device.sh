#!/usr/bin/env bash
# The similarity join in slabs on the GPU machine: builds test_gpu and bench_join_blocks
# (test/gpu; PREBUILT=1 runs binaries already in test/gpu/build instead), runs the slab tests
# and the batched join's tests first, then the slab-vs-in-memory benchmark
# (test/bench/bench_join_blocks.cpp), then the other join, slab, block and memory tests.
# Run from the repository root; logs under $OUT.
#   bash test/gpu/join_blocks_device.sh [reps]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${PREBUILT:-0}" = 1 ] && test/gpu/build/test_gpu --gtest_list_tests >/dev/null 2>&1 &&
   [ -x test/gpu/build/bench_join_blocks ]; then
  echo "test/gpu build: prebuilt binaries" | tee -a "$OUT/steps.log"
else
  t0=$(date +%s)
  make -C test/gpu -j16 build/test_gpu build/bench_join_blocks >"$OUT/build.log" 2>&1
  rc=$?
  echo "test/gpu build rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
  [ $rc = 0 ] || { tail -60 "$OUT/build.log"; exit 1; }
fi
# Runs test_gpu under a time limit with a filter; the summary lines to stdout.
run_tests() {
  local name=$1 limit=$2 filter=$3 t0 rc
  t0=$(date +%s)
  timeout "$limit" test/gpu/build/test_gpu --gtest_filter="$filter" >"$OUT/tests-$name.log" 2>&1
  rc=$?
  echo "test_gpu $name rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests? ran|Failure|Expected|Which is|error" \
    "$OUT/tests-$name.log" | head -40
}
SLAB_TESTS='Batch.*:MultiGpu.JoinSlabsOnOneDeviceArriveInSlabOrder:MultiGpu.JoinSlabsEqualOneDeviceAndCpu:MultiGpu.JoinSlabEdgeCases:MultiGpu.JoinInSlabsUnderSmallBudget:MultiGpu.JoinSharesKeepMaxPairs'
run_tests slabs 150 "$SLAB_TESTS"
t0=$(date +%s)
timeout 150 test/gpu/build/bench_join_blocks "${1:-3}" 2>&1 | tee "$OUT/bench.log"
echo "bench rc=${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
run_tests rest 150 "MultiGpu.*:Simjoin.*:Memory.*:Blocks.*:JoinBalance.*:-$SLAB_TESTS"
