#!/usr/bin/env bash
# Resolution of cell pairs on the H100 in one call of the device tool: builds test_gpu (the
# Resolve.* tests alone) and bench_resolve, runs the Resolve.* tests (GPU resolve = GPU brute =
# CPU resolve), then bench_resolve at N = 1e7: 2-D 100 buckets, 3-D 50 buckets uniform and
# clustered, the pair count at r = 0.01 against the grid path (measured on the whole set), the
# walk's stop size at 65536 and 262144 pairs, and, when the 2-D 1e7 run took under
# RESOLVE_1E8_IF s, the 2-D 100-bucket resolution at N = 1e8 (brute force extrapolated from the
# 2,097,152-point subset, whose histogram must equal resolution's).
#   bash test/gpu/resolve2_device.sh        Output: $OUT/resolve2-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
B=test/gpu/build
t0=$(date +%s)
make -C test/gpu -j16 TEST_SRC=test_resolve.cpp build/test_gpu build/bench_resolve \
  > "$OUT/resolve2-build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s" | tee "$OUT/resolve2-steps.txt"
[ $rc = 0 ] || { tail -40 "$OUT/resolve2-build.log"; exit 1; }
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve2-gpu.txt"
run 120 "$OUT/resolve2-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
M="$OUT/resolve2-bench.md"
export BENCH_RESOLVE_CAP=1.0
run 40 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
run 40 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
run 40 "$M" $B/bench_resolve gpu sdh 3 clustered 1e7 50 2097152
run 30 "$M" $B/bench_resolve gpu count 2 uniform 1e7 0.01 1e7
run 30 "$M" $B/bench_resolve gpu count 3 uniform 1e7 0.01 1e7
export BENCH_RESOLVE_CAP=0.6
for k in 65536 262144; do
  PRE="BENCH_RESOLVE_MIN_PAIRS=$k " BENCH_RESOLVE_MIN_PAIRS=$k run 30 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
  PRE="BENCH_RESOLVE_MIN_PAIRS=$k " BENCH_RESOLVE_MIN_PAIRS=$k run 30 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
done
# The 2-D 1e7 100-bucket row's resolution time decides whether N = 1e8 fits the call.
t7=$(grep -E "^\| cuda[^|]*\| 2-D \| uniform \| 10000000 \| 100 \|" "$M" | head -1 | awk -F'|' '{print $7}' | tr -d ' ')
echo "2-D 1e7 100 buckets: resolve ${t7:-?} s" | tee -a "$OUT/resolve2-steps.txt"
if [[ "$t7" =~ ^[0-9.]+$ ]] && awk -v t="$t7" -v lim="${RESOLVE_1E8_IF:-3.0}" 'BEGIN{exit !(t+0 < lim+0)}'; then
  export BENCH_RESOLVE_CAP=0.2
  run 170 "$M" $B/bench_resolve gpu sdh 2 uniform 1e8 100 2097152
fi
grep -E "PASSED|FAILED|OK \]" "$OUT/resolve2-test_gpu.txt" | tail -6
grep -E "^\| |stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
