#!/usr/bin/env bash
# Resolution of cell pairs on the H100 (device_suite.sh step `resolve`), engine level:
#   1. test_gpu Resolve.*: GPU resolve = GPU brute = CPU resolve on small shapes and every stop
#      size, GPU resolve = GPU brute at N = 4,194,304 (2-D uniform, 3-D clustered, 3-D lattice)
#   2. bench_resolve: 2-D 100 buckets and 3-D 50 buckets at N = 1e7 (with the stop sizes of the
#      sweep), 2-D at 3e7, 3-D clustered at 1e7, the map at N = 1e6 (10 .. 5,000 buckets) and
#      1e7 (10 buckets). Each run at N > BRUTE_MAX prints its subset row first (resolve ==
#      brute on the subset, brute's time extrapolated by N^2). Resolution runs are stopped at
#      BENCH_RESOLVE_CAP x brute's time.
#   bash test/gpu/resolve_device.sh [BIN_DIR]     (BIN_DIR: test_gpu and bench_resolve; default
#   test/gpu/build, built when missing). Output: $OUT/resolve-*.txt / .md.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=${1:-test/gpu/build}
[ -x $B/test_gpu ] && [ -x $B/bench_resolve ] || make -C test/gpu -j16 all bench > "$OUT/resolve-build.log" 2>&1
source test/gpu/run_step.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve-gpu.txt"
M="$OUT/resolve-bench.md"
run 100 "$OUT/resolve-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
export BENCH_RESOLVE_CAP=1.2
run 30 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
run 30 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
run 20 "$M" $B/bench_resolve gpu map 2 uniform 1e6 10,100,1000,5000
run 20 "$M" $B/bench_resolve gpu map 3 uniform 1e6 10,100,1000,5000
run 30 "$M" $B/bench_resolve gpu sdh 3 clustered 1e7 50 2097152
export BENCH_RESOLVE_CAP=0.5
run 30 "$M" $B/bench_resolve gpu sdh 2 uniform 3e7 100 2097152
PRE="BENCH_RESOLVE_MIN_PAIRS=1024 " BENCH_RESOLVE_MIN_PAIRS=1024 run 20 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
PRE="BENCH_RESOLVE_MIN_PAIRS=65536 " BENCH_RESOLVE_MIN_PAIRS=65536 run 20 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
run 20 "$M" $B/bench_resolve gpu map 2 uniform 1e7 10 2097152
run 20 "$M" $B/bench_resolve gpu map 3 uniform 1e7 10 2097152
grep -E "PASSED|FAILED|OK \]" "$OUT/resolve-test_gpu.txt" | tail -6
grep -E "^\| |stopped|^\\$|rc=" "$M" | grep -v "^| engine\|^|---"
