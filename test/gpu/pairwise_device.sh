#!/usr/bin/env bash
# gpu_pairwise on the GPU machine in one call, from the repository root: the PairwiseGpu tests of
# test_gpu, then test/gpu/bench_pairwise.sh (engine level beside PyTorch, launch-parameter sweep,
# l1 threshold join, SQL 1,000 x 1,000,000). Needs test/gpu/build/test_gpu and bench_pairwise
# (make -C test/gpu all bench) and .device with the extension staged in .device/stage
# (make install DESTDIR=$PWD/.device/stage). Writes $OUT/test_gpu-pairwise.log,
# $OUT/bench_pairwise.md and $OUT/info.txt. SKIP_SQL=1: no PostgreSQL (engine-level steps only).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 test/gpu/build/test_gpu --gtest_filter='PairwiseGpu.*' > "$OUT/test_gpu-pairwise.log" 2>&1
echo "test_gpu PairwiseGpu.*: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_gpu-pairwise.log" | tr '\n' ' ')"
if [ "${SKIP_SQL:-0}" != 1 ]; then
  export PG_OPTS="-c shared_buffers=8GB -c work_mem=256MB"
  source .device/pg-up.sh > "$OUT/pg-up.log" 2>&1 || { cat "$OUT/pg-up.log"; exit 1; }
  psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" || exit 1
  psql -X -qtA -c "SELECT name, value FROM gpu2bs_info()" > "$OUT/info.txt"
fi
timeout 480 bash test/gpu/bench_pairwise.sh > "$OUT/bench_pairwise.md" 2>&1
echo "bench_pairwise.sh rc=$?"
