#!/usr/bin/env bash
# Resolution of cell pairs on the H100 in one call of the device tool: the work kernel's cost
# per entry (next entry prefetched into L1, integer warp reductions for the staged points' box
# and the entry's counts) against the previous kernel on the same rows, and the pair count
# against the grid path. Runs the Resolve.* tests (GPU resolve = GPU brute = CPU resolve,
# float64 reference), then bench_resolve rows: 2-D uniform 1e7 with 100 buckets, 2-D uniform
# 2.5e7 with 50 buckets (the geometry of the 1e8 row with 100 buckets at 1/16 of its work
# entries: the walk stops at cells of ~95 points, bucket width / cell side ~14.5 in both),
# 2-D / 3-D 1e6 with 10 buckets, the pair count at r = 0.01 at 1e7 and 1e8 in 2-D and 3-D (the grid path measured
# on the whole set), each row with the new kernel and, where BIN holds bench_resolve_base (the
# previous resolve.cu) and bench_resolve_lb4 (the new one with __launch_bounds__(256, 4) on the
# work kernel: 4 blocks of 256 threads per SM), with those.
#   bash test/gpu/resolve4_device.sh [BIN [1e8]]  BIN: a folder with prebuilt test_gpu (Resolve.*)
#                                                 and bench_resolve (default or "": built here)
# With 1e8: the Resolve.* tests but the 4,194,304-point one, then only the 2-D 1e8 row with 100
# buckets (brute force extrapolated from the 2,097,152-point subset, whose histogram must equal
# resolution's), stopped by a timeout before 330 s.
#   Output: $OUT/resolve4-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
B=${1:-}
if [ -z "$B" ]; then
  B=test/gpu/build
  make -C test/gpu -j16 TEST_SRC=test_resolve.cpp build/test_gpu build/bench_resolve \
    > "$OUT/resolve4-build.log" 2>&1 || { tail -40 "$OUT/resolve4-build.log"; exit 1; }
fi
echo "binaries in $B, ready after $(( $(date +%s) - T0 )) s" | tee "$OUT/resolve4-steps.txt"
STEPS="$OUT/resolve4-steps.txt"
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve4-gpu.txt"
M="$OUT/resolve4-bench.md"
if [ "${2:-}" = 1e8 ]; then
  run 90 "$OUT/resolve4-test_gpu.txt" $B/test_gpu \
    --gtest_filter='Resolve.*-Resolve.MillionsBitIdenticalToBrute'
  left=$(( 325 - ($(date +%s) - T0) ))
  export BENCH_RESOLVE_CAP=$(awk -v l="$left" 'BEGIN{printf "%.4f", (l - 10) / 2000}')
  PRE="BENCH_RESOLVE_CAP=$BENCH_RESOLVE_CAP " run "$left" "$M" $B/bench_resolve gpu sdh 2 uniform 1e8 100 2097152
  grep -E "PASSED|FAILED|OK \]" "$OUT/resolve4-test_gpu.txt"
  grep -E "^\| |stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
  cat "$OUT/resolve4-steps.txt"
  exit 0
fi
run 150 "$OUT/resolve4-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
V="bench_resolve"
[ -x $B/bench_resolve_base ] && V="$V bench_resolve_base"
[ -x $B/bench_resolve_lb4 ] && V="$V bench_resolve_lb4"
export BENCH_RESOLVE_CAP=1.5
for v in $V; do
  run 60 "$M" $B/$v gpu sdh 2 uniform 1e7 100 2097152
done
for v in $V; do
  run 90 "$M" $B/$v gpu sdh 2 uniform 2.5e7 50 2097152
done
for v in $V; do
  [ $v = bench_resolve_lb4 ] && continue
  run 20 "$M" $B/$v gpu sdh 2 uniform 1e6 10
  run 20 "$M" $B/$v gpu sdh 3 uniform 1e6 10
  for d in 2 3; do run 30 "$M" $B/$v gpu count $d uniform 1e7 0.01 10000000; done
done
for d in 2 3; do run 60 "$M" $B/bench_resolve gpu count $d uniform 1e8 0.01 100000000; done
grep -E "PASSED|FAILED|OK \]|work entries|resolved fraction" "$OUT/resolve4-test_gpu.txt" | tail -12
grep -E "^\| |stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
cat "$OUT/resolve4-steps.txt"
