#!/usr/bin/env bash
# The GPU correctness pass of a tree on the GPU machine (device tool), from the repository root
# with .device, .devdata and .whl carried: builds the extension and test/gpu there, then runs
# test_gpu (every family; EXCLUDE drops slow cases already run elsewhere), test_sliding, and the
# pg_regress suite + isolation specs with gpu2bs.device = gpu. Each step has its own time limit
# so that the whole fits one device call. Logs under $OUT; a summary in $OUT/check.txt.
#   EXCLUDE='Resolve.MillionsBitIdenticalToBrute' bash test/gpu/device_check.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S="$OUT/check.txt"
t0=$(date +%s)
bash test/gpu/device_build.sh >"$OUT/device_build.txt" 2>&1 || { cat "$OUT/device_build.txt"; exit 1; }
echo "build: $(tr '\n' ';' <"$OUT/steps.log") at $(( $(date +%s) - t0 )) s" | tee "$S"
filter="*"
[ -n "${EXCLUDE:-}" ] && filter="*-${EXCLUDE}"
timeout "${TEST_GPU_S:-240}" test/gpu/build/test_gpu --gtest_filter="$filter" >"$OUT/test_gpu.log" 2>&1
echo "test_gpu rc=$? at $(( $(date +%s) - t0 )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_gpu.log" | tr '\n' ' ')" | tee -a "$S"
grep -E '^\[  FAILED  \]' "$OUT/test_gpu.log" | sort -u | tee -a "$S"
timeout 60 test/gpu/build/test_sliding >"$OUT/test_sliding.log" 2>&1
echo "test_sliding rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_sliding.log" | tr '\n' ' ')" | tee -a "$S"
GPU_ONLY=1 timeout "${REGRESS_S:-200}" bash test/gpu/device_suite.sh regress >"$OUT/regress.txt" 2>&1
echo "regress (gpu) rc=$? at $(( $(date +%s) - t0 )) s: $(tr '\n' ' ' <"$OUT/summary.txt" 2>/dev/null)" | tee -a "$S"
grep -E 'FAILED|failed' "$OUT/regress-gpu.log" "$OUT/isolation-gpu.log" 2>/dev/null | tee -a "$S"
