#!/usr/bin/env bash
# The device map only as deep as the walk splits, on the H100 in one call of the device tool:
# the Resolve.* tests (GPU resolve = GPU brute = CPU resolve, float64 reference; the
# 4,194,304-point test left out), then bench_resolve rows of the pair count at r = 0.01 in 2-D
# and 3-D at 1e7 and 1e8 (uniform; 3-D clustered 1e7) and SDH rows (2-D 1e6 x 10 buckets,
# 2-D 1e7 x 100 buckets with brute force extrapolated from a 2,097,152-point subset), each with
# the new map and, where BIN holds bench_resolve_base (the previous resolve.cu), the old one.
# Every row is followed by its "phases" line: where the wall time went (the host's bounds pass,
# conversion and map or grid build, transfers, kernels or walk, the rest).
#   bash test/gpu/resolve5_device.sh BIN   BIN: a folder with prebuilt test_gpu and bench_resolve
#   Output: $OUT/resolve5-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
B=$1
STEPS="$OUT/resolve5-steps.txt"
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve5-gpu.txt"
M="$OUT/resolve5-bench.md"
run 40 "$OUT/resolve5-test_gpu.txt" $B/test_gpu \
  --gtest_filter='Resolve.SmallEveryShape:Resolve.StopSizes:Resolve.MapDepthFollowsTheWalk'
V="bench_resolve"
[ -x $B/bench_resolve_base ] && V="$V bench_resolve_base"
for v in $V; do
  for d in 3 2; do run 30 "$M" $B/$v gpu count $d uniform 1e8 0.01 100000000; done
done
for v in $V; do
  for d in 3 2; do run 15 "$M" $B/$v gpu count $d uniform 1e7 0.01 10000000; done
  run 15 "$M" $B/$v gpu count 3 clustered 1e7 0.01 10000000
  run 15 "$M" $B/$v gpu sdh 2 uniform 1e6 10
done
run 20 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
left=$(( 112 - ($(date +%s) - T0) ))
[ $left -gt 36 ] && run $left "$OUT/resolve5-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.BothWorkPaths'
grep -E "PASSED|FAILED|OK \]|Failure|map levels|work entries" "$OUT/resolve5-test_gpu.txt" | tail -20
grep -E "^\| |^phases|stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
cat "$OUT/resolve5-steps.txt"
