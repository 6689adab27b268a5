#!/usr/bin/env bash
# The tensor-core kNN path on the GPU machine in one call, from the repository root: builds
# test_gpu (PairwiseGpu tests only) and bench_pairwise, runs the PairwiseGpu tests, then the self
# kNN l2 benchmark at n = 100,000, d = 768, k = 10 (exact, exact through the SIMT kernel alone,
# fast with the default GEMM, with the FP16 GEMM of rows scaled one by one, with the TF32
# GEMM, and with equal chunks and the lists handed over after the last one; median of 3), the fast path's time split under alternatives (GEMM type, selection,
# overlap, upload threads, GEMM chunk), PyTorch beside (PEERS=0: left out), every list compared
# with a float64 reference. Writes $OUT/build.log,
# $OUT/test_gpu-pairwise.log and $OUT/bench.txt. PREBUILT=1: no build, the binaries already in
# test/gpu/build (built elsewhere for sm_90 and carried) run.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
if [ "${PREBUILT:-0}" = 1 ]; then
  ls -l test/gpu/build/test_gpu test/gpu/build/bench_pairwise > "$OUT/build.log" 2>&1
else
  make -C test/gpu -j16 TEST_SRC=test_pairwise_gpu.cpp build/test_gpu build/bench_pairwise > "$OUT/build.log" 2>&1
fi
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc = 0 ] || { grep -B2 -A6 -E 'error|Error' "$OUT/build.log" | head -60; exit 1; }
W=/tmp/pw; mkdir -p "$W"; N=${N_KNN:-100000}; D=768; K=10
python3 test/gpu/bench_pairwise.py gen "$W/x.f32" "$N" $D 1 &
gen=$!
t0=$(date +%s)
timeout 150 test/gpu/build/test_gpu --gtest_filter='PairwiseGpu.*' > "$OUT/test_gpu-pairwise.log" 2>&1
echo "test_gpu PairwiseGpu.* in $(( $(date +%s) - t0 )) s: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/test_gpu-pairwise.log" | tr '\n' ' ')"
wait $gen
{
  echo "GPU: $(cat "$OUT/gpu.txt"), $(date -u '+%F %T UTC')"
  echo "== self kNN l2, n = $N, d = $D, k = $K"
  timeout 120 test/gpu/build/bench_pairwise knn "$W/x.f32" "$N" $D $K 3 "$W/ours" gpu l2
  for m in simt fast fp16 tf32 batch; do
    cmp -s "$W/ours.exact.i32" "$W/ours.$m.i32" && echo "lists: exact and $m identical" \
      || echo "lists: exact and $m DIFFER"
  done
  echo "== fast path alternatives"
  timeout 120 test/gpu/build/bench_pairwise sweep "$W/x.f32" "$N" $D $K 3 fast
  peers=()
  if [ "${PEERS:-1}" = 1 ]; then
    timeout 120 python3 test/gpu/bench_pairwise.py peers "$W/x.f32" "$N" $D $K
    peers=("$W/x.f32.torch_cdist_fp32.i32" "$W/x.f32.torch_matmul_fp32.i32" \
      "$W/x.f32.torch_matmul_tf32.i32")
  fi
  timeout 120 python3 test/gpu/bench_pairwise.py compare "$W/x.f32" "$N" $D $K "$W/ours.exact.i32" \
    "$W/ours.simt.i32" "$W/ours.fast.i32" "$W/ours.fp16.i32" "$W/ours.tf32.i32" \
    "$W/ours.batch.i32" "${peers[@]}"
} > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"
cat "$OUT/bench.txt"
