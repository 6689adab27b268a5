#!/usr/bin/env bash
# Device run of the pair-expression GPU engine (kernels/expr/): builds the extension (and checks
# that gpu2bs.so links neither NVRTC nor libcuda) and test/gpu's test_gpu and bench_expr, runs the
# ExprGpu tests, bench_expr (all; the kernels again without --Ofast-compile; every program's
# cold compile; the tile-configuration sweep), then installs the extension and runs the
# pair_expressions and planner_join regression tests with gpu2bs.device = gpu.
# Run from the repository root with .device (and .devdata: the Hipparcos stars for bench_expr
# hist) carried (see device_build.sh); logs under $OUT.
#   bash test/gpu/expr_device.sh
# PREBUILT=<dir with test_gpu and bench_expr built elsewhere from the same tree>: the ExprGpu
# tests first run with those while the builds run (a shorter device session), then again with
# the binaries built here. Every step stops at DEADLINE seconds after the start (default 570).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${DEADLINE:-570}
source test/gpu/run_step.sh
source test/gpu/device_env.sh || exit 1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; cat COMMIT 2>/dev/null || git log -1 --oneline 2>/dev/null; } >"$OUT/steps.log" 2>&1
# The extension and the test binaries build side by side (16 cores).
( make -j8 PG_CONFIG="$PG_CONFIG" CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" >"$OUT/build.log" 2>&1
  echo "extension build rc=$? at $(( $(date +%s) - T0 )) s" >>"$OUT/steps.log" ) &
ext=$!
( make -C test/gpu -j8 build/test_gpu build/bench_expr >"$OUT/build-gpu.log" 2>&1
  echo "test/gpu build rc=$? at $(( $(date +%s) - T0 )) s" >>"$OUT/steps.log" ) &
tg=$!
if [ -n "${PREBUILT:-}" ] && [ -x "$PREBUILT/test_gpu" ]; then
  step "test_gpu(prebuilt) ExprGpu.*" 200 "$OUT/test_expr_prebuilt.log" "$PREBUILT/test_gpu" --gtest_filter='ExprGpu.*'
fi
wait $ext $tg
if [ -f gpu2bs.so ]; then
  echo "gpu2bs.so NEEDED: $(readelf -d gpu2bs.so | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')" >>"$OUT/steps.log"
  readelf -d gpu2bs.so | grep -q -E 'nvrtc|libcuda\.so' && echo "FAIL: gpu2bs.so links nvrtc or libcuda" >>"$OUT/steps.log"
else
  tail -30 "$OUT/build.log" >>"$OUT/steps.log"
fi
B=test/gpu/build
if [ ! -x $B/bench_expr ] || [ ! -x $B/test_gpu ]; then
  tail -30 "$OUT/build-gpu.log" >>"$OUT/steps.log"
  B=${PREBUILT:-$B}
fi
step "test_gpu ExprGpu.*" 150 "$OUT/test_expr.log" $B/test_gpu --gtest_filter='ExprGpu.*'
STARS=.devdata/stars3d.csv.gz
[ -f "$STARS" ] || STARS=
step "bench_expr all" 130 "$OUT/bench_expr.log" env ${STARS:+G2_STARS=$STARS} $B/bench_expr all 3
step "bench_expr kernels without --Ofast-compile" 90 "$OUT/bench_nofast.log" bash -c \
  "export G2_BENCH_FAST=none ${STARS:+G2_STARS=$STARS}; $B/bench_expr euclid 3; $B/bench_expr hist 3; $B/bench_expr manhattan 3"
step "bench_expr programs" 60 "$OUT/bench_programs.log" $B/bench_expr programs 3
step "bench_expr sweep" 110 "$OUT/bench_sweep.log" $B/bench_expr sweep 1
if [ -f gpu2bs.so ] && make PG_CONFIG="$PG_CONFIG" install >"$OUT/install.log" 2>&1; then
  (
    source .device/pg-up.sh >"$OUT/pg-up.log" 2>&1 || exit 1
    cp -r . /tmp/src-expr 2>/dev/null; chmod -R a+rX /tmp/src-expr; cd /tmp/src-expr
    PGOPTIONS="-c gpu2bs.device=gpu" timeout 120 "$PG_REGRESS" --bindir="$PGBIN" --inputdir=test \
      --load-extension=gpu2bs --outputdir=/tmp/regress-expr --user=pgdev pair_expressions planner_join \
      >"$OUT/regress-gpu.log" 2>&1
    [ -f /tmp/regress-expr/regression.diffs ] && cp /tmp/regress-expr/regression.diffs "$OUT/regress-gpu.diffs"
    echo "regress (gpu): $(grep -E 'tests (passed|failed)|^(ok|not ok)' "$OUT/regress-gpu.log" | tr '\n' ' ')" >>"$OUT/steps.log"
  )
else
  echo "install failed: $(tail -5 "$OUT/install.log" 2>/dev/null)" >>"$OUT/steps.log"
fi
cat "$OUT/steps.log"
