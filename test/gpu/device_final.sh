#!/usr/bin/env bash
# The GPU pass of a merged tree in two device calls on one warm machine (build outputs and the
# installed extension stay between the calls), from the repository root with .device, .devdata
# and .whl carried. Logs under $OUT, a summary in $OUT/final.txt.
#   bash test/gpu/device_final.sh build-regress   extension and test/gpu built side by side
#                                                  (16 cores), pg_regress + isolation with
#                                                  gpu2bs.device = gpu, then the 32-session run
#   bash test/gpu/device_final.sh families [FILTER] test/gpu built alone (no extension), then
#                                                  test_gpu on the families given (a gtest
#                                                  filter) and test_sliding: the check of a
#                                                  merge when device time is short
#   bash test/gpu/device_final.sh merge [FILTER]    the extension and test/gpu built side by
#                                                  side, test_gpu on the families given,
#                                                  test_sliding, then pg_regress + isolation
#                                                  with gpu2bs.device = gpu: one call
#                                                  (REGRESS_FIRST=1: pg_regress before the tests)
#   bash test/gpu/device_final.sh engine           test_gpu (every family), test_sliding,
#                                                  bench_sliding, the peer tests (freud) on the
#                                                  GPU engine, then the non-engine shares
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S="$OUT/final.txt"
phase=${1:?build-regress, families, merge or engine}
t0=$(date +%s)
at() { echo "$(( $(date +%s) - t0 )) s"; }
# Builds the extension (installed into the bundle) and test/gpu side by side on 16 cores; sets
# ext_rc and tests_rc and starts the summary.
build_both() {
  EXT_ONLY=1 bash test/gpu/device_build.sh >"$OUT/device_build.txt" 2>&1 &
  local ext=$!
  make -C test/gpu -j16 all sliding >"$OUT/build-gpu-tests.log" 2>&1
  tests_rc=$?
  wait $ext
  ext_rc=$?
  echo "build: extension rc=$ext_rc, test/gpu rc=$tests_rc at $(at)" | tee "$S"
}
# test_gpu on the gtest filter $2 within $1 s, then test_sliding within $3 s; lines to the summary.
gpu_tests() {
  timeout "$1" test/gpu/build/test_gpu --gtest_filter="$2" >"$OUT/test_gpu.log" 2>&1
  echo "test_gpu $2 rc=$? at $(at): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_gpu.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E '^\[  FAILED  \]' "$OUT/test_gpu.log" | sort -u | tee -a "$S"
  timeout "$3" test/gpu/build/test_sliding >"$OUT/test_sliding.log" 2>&1
  echo "test_sliding rc=$? at $(at): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_sliding.log" | tr '\n' ' ')" | tee -a "$S"
}
# pg_regress and isolation with gpu2bs.device = gpu within $1 s; lines to the summary.
gpu_regress() {
  GPU_ONLY=1 timeout "$1" bash test/gpu/device_suite.sh regress >"$OUT/regress.txt" 2>&1
  echo "regress (gpu) rc=$? at $(at): $(tr '\n' ' ' <"$OUT/regress.txt" | grep -oE 'regress\(gpu\).*' | cut -c1-300)" | tee -a "$S"
  grep -E 'FAILED|failed' "$OUT/regress-gpu.log" "$OUT/isolation-gpu.log" 2>/dev/null | tee -a "$S"
}
if [ "$phase" = families ]; then
  make -C test/gpu -j16 all sliding >"$OUT/build-gpu-tests.log" 2>&1
  rc=$?
  echo "build: test/gpu rc=$rc at $(at)" | tee "$S"
  [ $rc = 0 ] || { grep -E "error" "$OUT/build-gpu-tests.log" | head -20 | tee -a "$S"; exit 1; }
  gpu_tests "${TEST_GPU_S:-300}" "${2:-*}" 120
elif [ "$phase" = merge ]; then
  build_both
  [ $tests_rc = 0 ] || grep -E "error" "$OUT/build-gpu-tests.log" | head -20 | tee -a "$S"
  # REGRESS_FIRST=1: pg_regress before the test families (when the call's time is short)
  if [ "${REGRESS_FIRST:-0}" = 1 ] && [ $ext_rc = 0 ]; then gpu_regress "${REGRESS_S:-180}"; fi
  [ $tests_rc = 0 ] && gpu_tests "${TEST_GPU_S:-200}" "${2:-*}" "${SLIDING_S:-100}"
  if [ $ext_rc != 0 ]; then
    tail -30 "$OUT/device_build.txt" | tee -a "$S"
  elif [ "${REGRESS_FIRST:-0}" != 1 ]; then
    gpu_regress "${REGRESS_S:-180}"
  fi
elif [ "$phase" = build-regress ]; then
  build_both
  [ $ext_rc = 0 ] || { tail -30 "$OUT/device_build.txt" "$OUT/build-ext.log"; exit 1; }
  [ $tests_rc = 0 ] || tail -30 "$OUT/build-gpu-tests.log"
  gpu_regress "${REGRESS_S:-240}"
  timeout "${SESSIONS_S:-150}" bash test/gpu/sessions_device.sh "${CLIENTS:-32}" "${SECONDS_RUN:-60}" >"$OUT/sessions.txt" 2>&1
  echo "sessions rc=$? at $(at)" | tee -a "$S"
  tail -25 "$OUT/sessions.md" 2>/dev/null | tee -a "$S"
else
  : >"$S"
  gpu_tests "${TEST_GPU_S:-330}" '*' 200
  if [ -x test/gpu/build/bench_sliding ]; then
    timeout 90 test/gpu/build/bench_sliding 5 >"$OUT/bench_sliding.txt" 2>&1
    echo "bench_sliding rc=$? at $(at)" | tee -a "$S"
  fi
  # peers on the GPU engine: freud from the carried wheels (numpy and scipy are on the machine)
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
  source test/gpu/device_env.sh || exit 1
  pg_stop_left
  # the shares (test/gpu/share_device.sh) need the server too: both run before it stops
  ( source .device/pg-up.sh >/dev/null && psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" &&
    PYTHONPATH=/tmp/site GPU2BS_TEST_DEVICE=gpu timeout 120 python3 -m pytest -q -rs -p no:cacheprovider \
      test/reliability/test_peers.py >"$OUT/peers-gpu.log" 2>&1
    if [ "${SHARE:-1}" = 1 ]; then
      timeout "${SHARE_S:-170}" bash test/gpu/share_device.sh gpu >"$OUT/share.txt" 2>&1
      echo "share rc=$?" >>"$OUT/share.txt"
    fi
    pg_down >/dev/null )
  echo "peers (gpu) at $(at): $(tail -1 "$OUT/peers-gpu.log")" | tee -a "$S"
  grep -E '^(FAILED|SKIPPED)' "$OUT/peers-gpu.log" | cut -c1-200 | tee -a "$S"
  [ -f "$OUT/share.txt" ] && tail -32 "$OUT/share.txt" | tee -a "$S"
fi
