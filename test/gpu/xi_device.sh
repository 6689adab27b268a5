#!/usr/bin/env bash
# gpu_xi on the GPU machine without the extension build: compiles the engine (src/core, every
# kernel), links test_xi (the XiGpu and RdfGpu families of test/gpu: CUDA counts equal the CPU
# engine's) and bench_xi, runs both. Logs under $OUT. Run from the repository root.
#   bash test/gpu/xi_device.sh [N NR R_MAX NB]      (default 1000000 1000000 0.02 30)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
n=${1:-1000000}; nr=${2:-1000000}; rmax=${3:-0.02}; nb=${4:-30}
t0=$(date +%s)
make -C test/gpu -j16 build/test_xi.o build/test_rdf.o build/bench_xi >"$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s" | tee "$OUT/steps.log"
[ $rc = 0 ] || { tail -30 "$OUT/build.log"; exit 1; }
B=test/gpu/build
g++ -pthread $B/test_xi.o $B/test_rdf.o $B/core_*.o $B/cu_*.o $B/device_link.o -o $B/test_xi \
  -lgtest_main -lgtest -L/usr/local/cuda/lib64 -L/usr/local/cuda/targets/x86_64-linux/lib \
  -lcudart_static -ldl -lrt -lpthread -lm >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/steps.log"
$B/test_xi 2>&1 | tee "$OUT/test_xi.log" | grep -E "^\[  (PASSED|FAILED) |^\[       OK|FAILED|Failure" | tee -a "$OUT/steps.log"
for prec in f32 f64; do
  $B/bench_xi "$n" "$nr" "$rmax" "$nb" $prec 3 2>&1 | tee -a "$OUT/bench_xi.log"
done
