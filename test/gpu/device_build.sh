#!/usr/bin/env bash
# Builds and installs the extension ON the GPU machine (16 cores, its own nvcc and g++) into the
# PostgreSQL bundle, instead of staging a build made elsewhere. Run from the repository root
# with .device carried (pg15.tar.xz and pg-up.sh from ../shared/device/pg-bundle.sh, plus
# pginc.tar.xz: `tar -C / -cJf .device/pginc.tar.xz usr/include/postgresql`).
#   bash test/gpu/device_build.sh            then: bash test/gpu/device_suite.sh "STEPS"
# Also builds test/gpu (test_gpu, bench_kernels) unless EXT_ONLY=1. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source test/gpu/device_env.sh || exit 1
t0=$(date +%s)
make -j16 PG_CONFIG="$PG_CONFIG" CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" >"$OUT/build-ext.log" 2>&1 &&
  make PG_CONFIG="$PG_CONFIG" install >>"$OUT/build-ext.log" 2>&1
rc=$?
echo "extension build+install rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
[ $rc = 0 ] || { tail -40 "$OUT/build-ext.log"; exit 1; }
[ "${EXT_ONLY:-0}" = 1 ] && exit 0  # the extension alone
t0=$(date +%s)
make -C test/gpu -j16 all bench >"$OUT/build-gpu-tests.log" 2>&1
rc=$?
echo "test/gpu build rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
[ $rc = 0 ] || { tail -40 "$OUT/build-gpu-tests.log"; exit 1; }
