#!/usr/bin/env bash
# Resolution of cell pairs on the H100 (device_suite.sh step `resolve`), engine level.
#   bash test/gpu/resolve_device.sh [dev|measure|all]
#   dev:     test_gpu Resolve.* (GPU resolve = GPU brute = CPU resolve on small shapes, every
#            stop size, and = GPU brute at N = 4,194,304), the stop-size sweep
#            (GPU2BS_RESOLVE_MIN_PAIRS) at N = 1e7, and the map at N = 1e6, 2-D and 3-D
#   measure: 2-D uniform N = 1e8, 100 buckets (the 4,194,304-point subset first: resolve ==
#            brute and brute's time, extrapolated by N^2), 3-D uniform and clustered N = 1e7 and
#            3e7 at 50 buckets, the map at N = 1e7 (2-D, 3-D), the pair count at r = 1% (3-D)
#   all:     both
# Map cells where resolution loses by far are stopped at BENCH_RESOLVE_CAP x brute's time.
# Needs test/gpu built: make -C test/gpu -j16 all bench. Output: $OUT/resolve-*.txt / .md.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
STEP=${1:-all}
B=test/gpu/build
[ -x $B/test_gpu ] && [ -x $B/bench_resolve ] || make -C test/gpu -j16 all bench > "$OUT/resolve-build.log" 2>&1
run() {  # run LIMIT_S FILE CMD...: appends the output, notes a timeout
  local lim=$1 file=$2; shift 2
  echo "\$ $*" >> "$file"
  local t0=$(date +%s.%N)
  timeout "$lim" "$@" >> "$file" 2>&1
  local rc=$?
  [ $rc = 124 ] && echo "(stopped after $lim s)" >> "$file"
  echo "(rc=$rc, $(echo "$(date +%s.%N) - $t0" | bc) s)" >> "$file"
  return 0
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve-gpu.txt"
M="$OUT/resolve-bench.md"
export BENCH_RESOLVE_CAP=2
if [[ $STEP == dev || $STEP == all ]]; then
  run 100 "$OUT/resolve-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
  for mp in 16384 1024 65536; do
    echo "GPU2BS_RESOLVE_MIN_PAIRS=$mp" >> "$M"
    GPU2BS_RESOLVE_MIN_PAIRS=$mp BENCH_RESOLVE_CAP=0.5 run 20 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100 2097152
    GPU2BS_RESOLVE_MIN_PAIRS=$mp BENCH_RESOLVE_CAP=0.5 run 20 "$M" $B/bench_resolve gpu sdh 3 uniform 1e7 50 2097152
  done
  run 20 "$M" $B/bench_resolve gpu map 2 uniform 1e6 10,100,1000,5000
  run 20 "$M" $B/bench_resolve gpu map 3 uniform 1e6 10,100,1000,5000
fi
if [[ $STEP == measure || $STEP == all ]]; then
  run 300 "$M" $B/bench_resolve gpu sdh 2 uniform 1e8 100
  run 60 "$M" $B/bench_resolve gpu sdh 3 uniform 3e7 50 2097152
  run 60 "$M" $B/bench_resolve gpu sdh 3 clustered 3e7 50 2097152
  run 60 "$M" $B/bench_resolve gpu map 2 uniform 1e7 10,100,1000,5000 2097152
  run 60 "$M" $B/bench_resolve gpu map 3 uniform 1e7 10,100,1000,5000 2097152
  run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01
fi
grep -E "PASSED|FAILED|OK \]" "$OUT/resolve-test_gpu.txt" 2>/dev/null | tail -6
grep -E "^\| |stopped|^GPU2BS|rc=" "$M" | grep -v "^| engine\|^|---"
