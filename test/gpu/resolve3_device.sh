#!/usr/bin/env bash
# Resolution of cell pairs on the H100 in one call of the device tool, with the work kernel's
# two tests (one-sided for entries with a cell of fewer than 64 points, two-sided for larger
# ones): builds test_gpu (the Resolve.* tests alone) and bench_resolve, runs the Resolve.*
# tests (GPU resolve = GPU brute = CPU resolve, float64 reference, both work tests taken), then
# bench_resolve rows: 2-D / 3-D uniform at N = 1e6 with 10 buckets (the auto check; 3-D also at
# stop sizes 4096 and 65536, 2-D at 16384), 3-D 1e7 with 50 buckets uniform and clustered (the
# 2,097,152-point subset rows; the full runs stop at BENCH_RESOLVE_CAP), 2-D 1e7 with 100
# buckets, and last the 2-D 1e8 row with 100 buckets under a timeout that ends the call before
# 600 s (brute force at 1e8 extrapolated from the 2,097,152-point subset, whose histogram must
# equal resolution's).
#   bash test/gpu/resolve3_device.sh        Output: $OUT/resolve3-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
B=test/gpu/build
T0=$(date +%s)
make -C test/gpu -j16 TEST_SRC=test_resolve.cpp build/test_gpu build/bench_resolve \
  > "$OUT/resolve3-build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - T0 )) s" | tee "$OUT/resolve3-steps.txt"
[ $rc = 0 ] || { tail -40 "$OUT/resolve3-build.log"; exit 1; }
STEPS="$OUT/resolve3-steps.txt"
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve3-gpu.txt"
run 180 "$OUT/resolve3-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
M="$OUT/resolve3-bench.md"
export BENCH_RESOLVE_CAP=1.5
run 30 "$M" $B/bench_resolve gpu sdh 2 uniform 1e6 10
run 30 "$M" $B/bench_resolve gpu sdh 3 uniform 1e6 10
PRE="BENCH_RESOLVE_MIN_PAIRS=16384 " BENCH_RESOLVE_MIN_PAIRS=16384 run 30 "$M" $B/bench_resolve gpu sdh 2 uniform 1e6 10
for k in 4096 65536; do
  PRE="BENCH_RESOLVE_MIN_PAIRS=$k " BENCH_RESOLVE_MIN_PAIRS=$k run 30 "$M" $B/bench_resolve gpu sdh 3 uniform 1e6 10
done
export BENCH_RESOLVE_CAP=0.3
run 40 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
run 40 "$M" $B/bench_resolve gpu sdh 3 clustered 1e7 50 2097152
export BENCH_RESOLVE_CAP=1.0
run 60 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
# The 1e8 row gets the call's remaining time up to 585 s; resolution stops itself 25 s before
# (BENCH_RESOLVE_CAP of the ~2,000 s of brute force) so that its row is printed.
left=$(( 585 - ($(date +%s) - T0) ))
echo "1e8 row: $left s left" | tee -a "$OUT/resolve3-steps.txt"
if [ "$left" -gt 120 ]; then
  export BENCH_RESOLVE_CAP=$(awk -v l="$left" 'BEGIN{printf "%.4f", (l - 25) / 2000}')
  PRE="BENCH_RESOLVE_CAP=$BENCH_RESOLVE_CAP " run "$left" "$M" $B/bench_resolve gpu sdh 2 uniform 1e8 100 2097152
fi
grep -E "PASSED|FAILED|OK \]|work entries|resolved fraction" "$OUT/resolve3-test_gpu.txt" | tail -12
grep -E "^\| |stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
cat "$OUT/resolve3-steps.txt"
