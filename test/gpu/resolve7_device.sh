#!/usr/bin/env bash
# The work kernel's pair loop with a predicated increment per pair (setp + @p add instead of the
# compiler's setp + two adds) on the H100 in one call of the device tool: every Resolve.* test
# with the new build (GPU resolution = GPU brute force = CPU engine, float64 reference), then the
# 2-D SDH proxy row (1e7 uniform points, 100 buckets; brute force on the 2,097,152-point subset)
# with the previous and the new kernel alternately (old, new, old, new), and the 2-D pair count
# at r = 0.01 of the box, N = 1e8, once each while the time allows.
#   bash test/gpu/resolve7_device.sh OLD NEW   OLD, NEW: folders with bench_resolve (NEW also
#   test_gpu), the same tree except kernels/resolve.cu
#   Output: $OUT/resolve7-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
OLD=$1
NEW=$2
STEPS="$OUT/resolve7-steps.txt"
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve7-gpu.txt"
nproc >> "$OUT/resolve7-gpu.txt"
M="$OUT/resolve7-bench.md"
run 150 "$OUT/resolve7-test_gpu.txt" $NEW/test_gpu --gtest_filter='Resolve.*'
export BENCH_RESOLVE_REPEAT=1
for k in 1 2; do
  PRE="old: " run 30 "$M" $OLD/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
  PRE="new: " run 30 "$M" $NEW/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
done
if [ $(( $(date +%s) - T0 )) -lt 140 ]; then
  PRE="old: " run 30 "$M" $OLD/bench_resolve gpu count 2 uniform 1e8 0.01 100000000
  PRE="new: " run 30 "$M" $NEW/bench_resolve gpu count 2 uniform 1e8 0.01 100000000
fi
grep -E "PASSED|FAILED|OK \]|Failure|work entries|examined" "$OUT/resolve7-test_gpu.txt" | tail -30
grep -E "^\| |^phases|^times|stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
cat "$STEPS"
