#!/usr/bin/env bash
# Where the non-kernel time of `SELECT gpu_sdh(x, y, z, 500) FROM t` (1,048,576 rows) goes, on
# the GPU machine (device tool, carry .device): the query with and without a parallel plan,
# gpu_sdh_width (the same scan and aggregate, no engine call) and count(*) as the scan floor,
# EXPLAIN ANALYZE of each plan, and the gpu2bs_info() split. Usage: bash test/gpu/sdh_split.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=8 -c max_worker_processes=32 -c max_parallel_workers=16"
source test/gpu/device_env.sh || exit 1
pg_stop_left
source .device/pg-up.sh >/dev/null || exit 1
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" \
  -c "DROP TABLE IF EXISTS s1m" -c "SELECT setseed(0.1)" \
  -c "CREATE TABLE s1m AS SELECT g AS id, random() x, random() y, random() z FROM generate_series(1, 1048576) g" \
  -c "VACUUM ANALYZE s1m" >/dev/null
# "table" = the planner's own worker count (2 for this 46 MB table); N = ALTER TABLE SET
# (parallel_workers = N), a per-table storage parameter; 0 = max_parallel_workers_per_gather 0.
for workers in ${WORKERS:-table 4 8 12 0}; do
  echo "## parallel workers: $workers"
  if [ "$workers" = table ]; then
    psql -X -q -c "ALTER TABLE s1m RESET (parallel_workers)"
  elif [ "$workers" != 0 ]; then
    psql -X -q -c "ALTER TABLE s1m SET (parallel_workers = $workers)"
  fi
  psql -X -q <<SQL
SET gpu2bs.device = gpu; SET max_parallel_workers_per_gather = $([ "$workers" = 0 ] && echo 0 || echo 16);
SELECT (gpu_sdh(x, y, z, 500))[1] FROM s1m;
\timing on
SELECT count(*) FROM s1m;
SELECT count(*) FROM s1m;
SELECT gpu_sdh_width(x, y, z, 500) FROM s1m;
SELECT gpu_sdh_width(x, y, z, 500) FROM s1m;
SELECT (gpu_sdh(x, y, z, 500))[1] FROM s1m;
SELECT (gpu_sdh(x, y, z, 500))[1] FROM s1m;
SELECT (gpu_sdh(x, y, z, 500))[1] FROM s1m;
\timing off
SELECT name, value FROM gpu2bs_info() WHERE name LIKE 'last%ms';
EXPLAIN (ANALYZE, TIMING OFF) SELECT gpu_sdh(x, y, z, 500) FROM s1m;
SQL
done
