#!/usr/bin/env bash
# The certified exact kNN on the GPU machine in one call, from the repository root: builds
# test_gpu (PairwiseGpu tests only) and bench_pairwise, runs the PairwiseGpu tests, then the self
# kNN l2 benchmark at n = 100,000, d = 768, k = 10 (exact through the certified TF32 candidates,
# exact through the SIMT kernel alone, fast; median of 3) beside PyTorch, every list compared with
# a float64 reference. Writes $OUT/build.log, $OUT/test_gpu-pairwise.log and $OUT/bench.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
make -C test/gpu -j16 TEST_SRC=test_pairwise_gpu.cpp build/test_gpu build/bench_pairwise > "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc = 0 ] || { tail -40 "$OUT/build.log"; exit 1; }
t0=$(date +%s)
timeout 150 test/gpu/build/test_gpu --gtest_filter='PairwiseGpu.*' > "$OUT/test_gpu-pairwise.log" 2>&1
echo "test_gpu PairwiseGpu.* in $(( $(date +%s) - t0 )) s: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/test_gpu-pairwise.log" | tr '\n' ' ')"
W=/tmp/pw; mkdir -p "$W"; N=${N_KNN:-100000}; D=768; K=10
{
  echo "GPU: $(cat "$OUT/gpu.txt"), $(date -u '+%F %T UTC')"
  python3 test/gpu/bench_pairwise.py gen "$W/x.f32" "$N" $D 1
  echo "== self kNN l2, n = $N, d = $D, k = $K"
  timeout 120 test/gpu/build/bench_pairwise knn "$W/x.f32" "$N" $D $K 3 "$W/ours" gpu l2
  for m in simt fast; do
    cmp -s "$W/ours.exact.i32" "$W/ours.$m.i32" && echo "lists: exact (certified) and $m identical" \
      || echo "lists: exact (certified) and $m DIFFER"
  done
  timeout 120 python3 test/gpu/bench_pairwise.py peers "$W/x.f32" "$N" $D $K
  timeout 120 python3 test/gpu/bench_pairwise.py compare "$W/x.f32" "$N" $D $K "$W/ours.exact.i32" \
    "$W/ours.simt.i32" "$W/ours.fast.i32" "$W/x.f32.torch_cdist_fp32.i32" \
    "$W/x.f32.torch_matmul_fp32.i32" "$W/x.f32.torch_matmul_tf32.i32"
} > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"
cat "$OUT/bench.txt"
