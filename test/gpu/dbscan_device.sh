#!/usr/bin/env bash
# DBSCAN on the GPU machine (device tool), from the repository root with .device carried, the
# extension staged in .device/stage (pg-up.sh lays it over the bundle) and the programs built
# for sm_90 (make -C test/gpu build/test_gpu build/bench_dbscan, or copies named by TEST_BIN and
# BENCH_BIN). Steps (STEPS, default all), logs under $OUT:
#   test:  test_gpu's DbscanGpu.* cases (GPU labels equal to the CPU engine's; lattices equal
#          to a float64 reference)
#   bench: bench_dbscan at 1e5 and 1e6 points, eps 0.003, minpoints 10, every core: CPU and
#          CUDA engine without PostgreSQL
#   sql:   test/bench/dbscan.sh with ENGINES="gpu cpu": gpu_dbscan on both engines beside
#          PostGIS ST_ClusterDBSCAN in one server, 1e6 points (and 1e5 with SMALL=1)
# Usage: STEPS="test bench sql" bash test/gpu/dbscan_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
steps=${STEPS:-"test bench sql"}
TEST_BIN=${TEST_BIN:-test/gpu/build/test_gpu}
BENCH_BIN=${BENCH_BIN:-test/gpu/build/bench_dbscan}
threads=$(nproc)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if [[ $steps == *test* ]]; then
  t0=$(date +%s)
  "$TEST_BIN" --gtest_filter='DbscanGpu.*' > "$OUT/test_dbscan.log" 2>&1
  echo "test DbscanGpu.* rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_dbscan.log" | tr '\n' ' ')"
fi
if [[ $steps == *bench* ]]; then
  for n in 100000 1000000; do
    "$BENCH_BIN" "$n" 0.003 10 "$threads" 1 cpu,gpu 2>&1 | tee -a "$OUT/bench_dbscan.log"
  done
fi
if [[ $steps == *sql* ]]; then
  export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=8"
  source .device/pg-up.sh || exit 1
  psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" -c "CREATE EXTENSION IF NOT EXISTS postgis" || exit 1
  sizes="1000000"; [ "${SMALL:-0}" = 1 ] && sizes="100000 1000000"
  for n in $sizes; do
    t0=$(date +%s)
    ENGINES="gpu cpu" bash test/bench/dbscan.sh "$n" 0.003 10 1 > "$OUT/sql_dbscan_$n.md" 2> "$OUT/sql_dbscan_$n.err"
    echo "sql n=$n rc=$? in $(( $(date +%s) - t0 )) s"
    cat "$OUT/sql_dbscan_$n.md" "$OUT/sql_dbscan_$n.err"
  done
  grep -c "terminated by signal" /tmp/pg.log | sed 's/^/backends terminated by a signal: /'
fi
