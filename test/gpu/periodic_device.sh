#!/usr/bin/env bash
# Device check of the joins over a periodic box (kernels/periodic.cu): builds test/gpu's
# test_gpu with test_periodic.cpp only (every kernels/**/*.cu: ~140 s with 16 cores on the H100
# machine), then runs the PeriodicGpu and RdfGpu tests. Run from the repository root:
#   bash test/gpu/periodic_device.sh          logs: $OUT/build.log, $OUT/test.log
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
if [ ! -f /usr/include/gtest/gtest.h ]; then echo "no system gtest"; exit 3; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s)
make -C test/gpu -j16 TEST_SRC=test_periodic.cpp build/test_gpu >"$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc = 0 ] || { grep -E "error" "$OUT/build.log" | head -20; tail -5 "$OUT/build.log"; exit 1; }
t1=$(date +%s)
test/gpu/build/test_gpu --gtest_filter='PeriodicGpu*:RdfGpu*' >"$OUT/test.log" 2>&1
rc=$?
echo "tests rc=$rc in $(( $(date +%s) - t1 )) s"
tail -30 "$OUT/test.log"
exit $rc
