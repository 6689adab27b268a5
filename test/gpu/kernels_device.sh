#!/usr/bin/env bash
# Tile-kernel device batch (run from the repository root on the GPU machine, binaries carried in
# test/gpu/build, built here with make -C test/gpu all bench): test_gpu, memcheck of the small
# every-path test, bench_kernels modes with the SM clock sampled, SASS loop mix of the objects.
#   OUT=... bash test/gpu/kernels_device.sh [bench modes...]     (default: tiles)
set -u
OUT=${OUT:-test/gpu/build/out}
mkdir -p "$OUT"
B=test/gpu/build
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv
  nvcc --version 2>/dev/null | tail -1
  nproc
} > "$OUT/machine.txt" 2>&1
echo "=== test_gpu $(date +%T)"
timeout ${TEST_TIMEOUT:-200} $B/test_gpu ${GTEST_ARGS:-} --gtest_output=xml:"$OUT/test_gpu.xml" > "$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|configurations x|FAILED" "$OUT/test_gpu.log" | tail -20
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ "${SANITIZE:-1}" = 1 ] && [ -n "$CS" ]; then
  timeout 120 "$CS" --tool memcheck --leak-check full --error-exitcode 9 $B/test_gpu \
    --gtest_filter='Sanitizer.*' > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
fi
for mode in "${@:-tiles}"; do
  echo "=== bench $mode $(date +%T)"
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 1000 > "$OUT/clocks_$mode.csv" 2>&1 &
  SMI=$!
  timeout ${BENCH_TIMEOUT:-200} $B/bench_kernels $mode ${RUNS:-5} > "$OUT/bench_$mode.txt" 2>&1
  echo "bench $mode rc=$?"
  kill $SMI 2>/dev/null
  grep -E "sdh|count" "$OUT/bench_$mode.txt" | awk '{print $1,$2,$3,$4,$7,$13,$15,$16,$17,$18,$19}' | head -40
  awk -F, '{gsub(/ MHz/,"",$2); s+=$2; n++} END {if (n) printf "mean SM clock %.0f MHz over %d samples\n", s/n, n}' "$OUT/clocks_$mode.csv"
done
if command -v cuobjdump >/dev/null && command -v python3 >/dev/null; then
  for o in sdh pair_count; do
    cuobjdump -sass $B/cu_$o.o | python3 test/gpu/sass_loops.py --match IfLi3E > "$OUT/sass_loops_$o.txt" 2>&1
  done
  echo "sass loops written"
fi
echo "=== done $(date +%T)"
