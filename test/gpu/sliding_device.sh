#!/usr/bin/env bash
# Sliding checks and timings on the GPU machine: test_sliding, test_gpu's PushdownGpu tests,
# bench_sliding sweep (launch shapes) and bench_sliding (primitives vs CUB and the D2D copy).
# Uses the binaries in $B (default test/gpu/build) when they run there, else builds them (sm_90).
#   bash test/gpu/sliding_device.sh [steps]     steps: any of "test pushdown sweep bench"
# Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
STEPS=${1:-"test pushdown sweep bench"}
export PATH=/usr/local/cuda/bin:$PATH
B=${B:-test/gpu/build}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
  >"$OUT/gpu.txt" 2>&1
if ! timeout 60 "$B/bench_sliding" 1 1 >"$OUT/probe.txt" 2>&1; then
  t0=$(date +%s)
  make -C test/gpu -j16 CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" build/test_sliding \
    build/bench_sliding build/test_gpu >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  echo "built on the device in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
fi
step() {  # name, command...
  local name=$1; shift
  local t0=$(date +%s)
  timeout 300 "$@" >"$OUT/$name.txt" 2>&1
  echo "$name rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
}
for s in $STEPS; do
  case $s in
    test) step test_sliding "$B/test_sliding" ;;
    pushdown) step test_gpu_pushdown "$B/test_gpu" --gtest_filter='PushdownGpu.*' ;;
    sweep) step sweep "$B/bench_sliding" sweep 5 ;;
    bench) step bench "$B/bench_sliding" 5 ;;
  esac
done
tail -3 "$OUT/test_sliding.txt" "$OUT/test_gpu_pushdown.txt" 2>/dev/null
