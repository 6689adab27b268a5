#!/usr/bin/env bash
# One batch on the GPU machine (run from the repository root): build test_gpu and bench_kernels,
# run the differential tests, compute-sanitizer on the small cases, and benchmarks. Logs go to
# $OUT (default test/gpu/build/out).
#   test/gpu/device_run.sh [bench modes...]     e.g. test/gpu/device_run.sh privatization quick
set -u
OUT=${OUT:-test/gpu/build/out}
mkdir -p "$OUT"
ROOT=$(pwd)
log() { echo "=== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
{
  log "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
  nvcc --version | tail -2
  g++ --version | head -1
  nproc
  ls -d /usr/include/gtest 2>&1
} > "$OUT/machine.txt" 2>&1
log "build"
timeout 300 make -C test/gpu -j"$(nproc)" all bench > "$OUT/build.log" 2>&1
echo "build rc=$?" | tee -a "$OUT/steps.log"
[ -x test/gpu/build/test_gpu ] || { tail -50 "$OUT/build.log"; exit 1; }
log "test_gpu"
timeout ${TEST_TIMEOUT:-240} test/gpu/build/test_gpu ${GTEST_ARGS:-} --gtest_output=xml:"$OUT/test_gpu.xml" > "$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$?" | tee -a "$OUT/steps.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|tests? (passed|failed)" "$OUT/test_gpu.log" | tail -30
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
     /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
if [ "${SANITIZE:-1}" = 1 ] && [ -n "$CS" ]; then
  log "memcheck"
  timeout ${MEMCHECK_TIMEOUT:-120} "$CS" --tool memcheck --leak-check full --error-exitcode 9 \
    test/gpu/build/test_gpu --gtest_filter='Sanitizer.*' > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/memcheck.log"
  if [ "${RACECHECK:-1}" = 1 ]; then
  log "racecheck"
  timeout ${RACECHECK_TIMEOUT:-90} "$CS" --tool racecheck --error-exitcode 9 \
    test/gpu/build/test_gpu --gtest_filter='Sanitizer.*' > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?" | tee -a "$OUT/steps.log"
  tail -5 "$OUT/racecheck.log"
  fi
fi
for mode in "$@"; do
  log "bench $mode"
  timeout ${BENCH_TIMEOUT:-200} test/gpu/build/bench_kernels $mode > "$OUT/bench_$mode.txt" 2>&1
  echo "bench $mode rc=$?" | tee -a "$OUT/steps.log"
done
log "done"
