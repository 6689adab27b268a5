#!/usr/bin/env bash
# Resolution of cell pairs on the H100 (device_suite.sh step `resolve`), engine level, about 5
# minutes of GPU time in all (each run has its own time limit; a run that hits it is reported
# as such and the next one starts):
#   1. test_gpu Resolve.*: GPU resolve = GPU brute = CPU resolve (small shapes), and GPU resolve
#      = GPU brute at N = 4,194,304 (2-D uniform 100 buckets, 3-D clustered 50, 3-D lattice
#      width 1, pair counts)                                                      <= 90 s
#   2. 2-D uniform 100 buckets: N = 1e7, then N = 1e8 (brute on a 4,194,304 subset with
#      equality, its time extrapolated by (N / 4194304)^2)                       <= 40 + 100 s
#   (every run at N > 4,194,304 prints its subset row first: resolve vs brute with equality,
#   resolved fraction and per-level counts on the subset, so a run stopped at its limit still
#   reports them)
#   3. 3-D uniform and clustered, 50 buckets, N = 1e8 (same)                     <= 2 x 40 s
#   4. pair count at r = 1% of the box, 3-D uniform N = 1e8: resolve vs today's grid path
#      (brute = the engine's pair count without resolution, on the 4,194,304 subset) <= 40 s
#   5. the N x buckets map, 2-D and 3-D uniform, N = 1e6, 1e7 x buckets 10, 100, 1000, 5000
#      (brute on 1e6-point subsets)                                              <= 2 x 25 s
# Needs test/gpu built: make -C test/gpu -j16 all bench. Output: $OUT/resolve-*.txt / .md.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=test/gpu/build
[ -x $B/test_gpu ] && [ -x $B/bench_resolve ] || make -C test/gpu -j16 all bench > "$OUT/resolve-build.log" 2>&1
run() {  # run LIMIT_S FILE CMD...: appends the output, notes a timeout
  local lim=$1 file=$2; shift 2
  echo "\$ $*" >> "$file"
  timeout "$lim" "$@" >> "$file" 2>&1
  local rc=$?
  [ $rc = 124 ] && echo "(stopped after $lim s)" >> "$file"
  return 0
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/resolve-gpu.txt"
run 90 "$OUT/resolve-test_gpu.txt" $B/test_gpu --gtest_filter='Resolve.*'
M="$OUT/resolve-bench.md"
run 40 "$M" $B/bench_resolve gpu sdh 2 uniform 1e7 100
run 100 "$M" $B/bench_resolve gpu sdh 2 uniform 1e8 100
run 40 "$M" $B/bench_resolve gpu sdh 3 uniform 1e8 50
run 40 "$M" $B/bench_resolve gpu sdh 3 clustered 1e8 50
run 40 "$M" $B/bench_resolve gpu count 3 uniform 1e8 0.01
run 25 "$M" $B/bench_resolve gpu map 2 uniform 1e6,1e7 10,100,1000,5000 1e6
run 25 "$M" $B/bench_resolve gpu map 3 uniform 1e6,1e7 10,100,1000,5000 1e6
grep -E "PASSED|FAILED|OK \]" "$OUT/resolve-test_gpu.txt" | tail -5
grep -E "^\| |stopped" "$M" | grep -v "^| engine\|^|---"
