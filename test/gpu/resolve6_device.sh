#!/usr/bin/env bash
# The host's share of the pair count and the SDH on the H100 in one call of the device tool:
# the bounds pass (make_pair_count / make_sdh) and the float conversion of the upload on the
# engine's threads. Runs the Resolve.* tests (GPU resolve = GPU brute = CPU resolve, float64
# reference; the threaded upload against the CPU engine; the work entry beyond 2^32 pairs; the
# 4,194,304-point test and BothWorkPaths left out), then bench_resolve rows, each followed by
# its "phases" line (where the wall time went):
#   * pair count at r = 0.01 of the box, 3-D 1e8 uniform, resolution and the grid path 3 times
#     each alternately (medians), with every core (BENCH_RESOLVE_THREADS unset) and with one
#     host thread (the bounds pass and the conversion as before); 2-D 1e8 once; 3-D 1e7 uniform
#     and clustered 3 times each; 3-D 1e8 at the walk's stop sizes 4,096 and 65,536 pairs;
#   * SDH 3-D 1e7 x 50 buckets, uniform and clustered (brute force extrapolated from the
#     2,097,152-point subset, resolution stopped at 0.6 x that), with MODE=sdh2 the 2-D 1e7 x 100
#     buckets row (the 1e8 row's proxy) too.
#   With CALL=2 (the second call): the same tests; the 3-D 1e8 count 3 times each way with every
#   core, with one host thread and with 16 upload workers (BENCH_RESOLVE_UPLOAD_WORKERS); 3-D
#   1e7 uniform and clustered 3 times; 2-D 1e8 once; SDH 3-D 1e6 x 50 buckets uniform and
#   clustered (brute force measured) and 2-D 1e7 x 100 buckets.
#   bash test/gpu/resolve6_device.sh BIN   BIN: a folder with prebuilt test_gpu and bench_resolve
#   Output: $OUT/resolve6-*.txt / .md
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
B=$1
STEPS="$OUT/resolve6-steps.txt"
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve6-gpu.txt"
nproc >> "$OUT/resolve6-gpu.txt"
M="$OUT/resolve6-bench.md"
run 100 "$OUT/resolve6-test_gpu.txt" $B/test_gpu \
  --gtest_filter='Resolve.SmallEveryShape:Resolve.StopSizes:Resolve.MapDepthFollowsTheWalk:Resolve.ThreadedUploadEqualsCpu:Resolve.EntriesBeyond32BitPairs'
if [ "${CALL:-1}" = 2 ]; then
  export BENCH_RESOLVE_REPEAT=3
  run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  PRE="BENCH_RESOLVE_THREADS=1 " BENCH_RESOLVE_THREADS=1 run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  PRE="BENCH_RESOLVE_UPLOAD_WORKERS=16 " BENCH_RESOLVE_UPLOAD_WORKERS=16 run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  run 20 "$M" $B/bench_resolve gpu count 3 uniform 1e7 0.01 10000000
  run 20 "$M" $B/bench_resolve gpu count 3 clustered 1e7 0.01 10000000
  export BENCH_RESOLVE_REPEAT=1
  run 30 "$M" $B/bench_resolve gpu count 2 uniform 1e8 0.01 100000000
  for d in uniform clustered; do run 20 "$M" $B/bench_resolve gpu sdh 3 $d 1e6 50 1000000; done
  run 25 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
else
  export BENCH_RESOLVE_REPEAT=3
  run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  PRE="BENCH_RESOLVE_THREADS=1 " BENCH_RESOLVE_THREADS=1 run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  run 20 "$M" $B/bench_resolve gpu count 3 uniform 1e7 0.01 10000000
  run 20 "$M" $B/bench_resolve gpu count 3 clustered 1e7 0.01 10000000
  export BENCH_RESOLVE_REPEAT=1
  run 30 "$M" $B/bench_resolve gpu count 2 uniform 1e8 0.01 100000000
  for mp in 4096 65536; do
    PRE="BENCH_RESOLVE_MIN_PAIRS=$mp " BENCH_RESOLVE_MIN_PAIRS=$mp run 25 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01 100000000
  done
  export BENCH_RESOLVE_CAP=0.6
  for d in uniform clustered; do run 35 "$M" $B/bench_resolve gpu sdh 3 $d 1e7 50 2097152; done
  [ "${MODE:-}" = sdh2 ] && run 25 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
fi
grep -E "PASSED|FAILED|OK \]|Failure|map levels|examined|count [0-9]" "$OUT/resolve6-test_gpu.txt" | tail -24
grep -E "^\| |^phases|^times|stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
cat "$STEPS"
