#!/usr/bin/env bash
# gpu_pairwise benchmark on the GPU machine (run from the repository root, test/gpu/build built
# with `make -C test/gpu all bench`; the SQL part needs the server of .device/pg-up.sh, as in
# device_suite.sh). Prints a markdown report:
#   1. exact self kNN, n = 100,000, d = 768, k = 10, random normal: gpu2bs exact (certified TF32
#      candidates), exact through the SIMT kernel alone, and fast (engine level, median of 3) beside PyTorch in batches of 8,192 (cdist + topk FP32, matmul form FP32
#      and TF32), every neighbour list compared with a float64 reference (near-ties counted);
#      the same for cosine; 1b: the launch parameters of kernels/tuning.h against alternatives,
#      with the time split (upload, GEMM, selection, re-rank, host);
#   2. l1 self threshold join, n = 20,000, d = 40,000: dimension terms/s vs the FP32 limit;
#   3. through SQL: 1,000 query vectors x 1,000,000 stored (N_STORED), d = 768, k = 10.
# Environment: N_KNN (100000), N_L1 (20000), D_L1 (40000), N_STORED (1000000), SKIP_SQL=1,
# SKIP_SWEEP=1.
set -uo pipefail
B=test/gpu/build
W=${PW_TMP:-/tmp/pw}
mkdir -p "$W"
N=${N_KNN:-100000}; D=768; K=10
PY=${PYTHON:-python3}
echo "# gpu_pairwise on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%F)"
echo
echo '```'
t0=$(date +%s)
$PY test/gpu/bench_pairwise.py gen "$W/x.f32" "$N" $D 1
echo "== 1. self kNN l2, n = $N, d = $D, k = $K (data generated in $(( $(date +%s) - t0 )) s)"
timeout 200 $B/bench_pairwise knn "$W/x.f32" "$N" $D $K 3 "$W/ours" gpu l2
timeout 200 $PY test/gpu/bench_pairwise.py peers "$W/x.f32" "$N" $D $K
for m in simt fast; do
  cmp -s "$W/ours.exact.i32" "$W/ours.$m.i32" && echo "lists: exact (certified) and $m identical" \
    || echo "lists: exact (certified) and $m DIFFER"
done
timeout 200 $PY test/gpu/bench_pairwise.py compare "$W/x.f32" "$N" $D $K "$W/ours.exact.i32" "$W/ours.simt.i32" "$W/ours.fast.i32" \
  "$W/x.f32.torch_cdist_fp32.i32" "$W/x.f32.torch_matmul_fp32.i32" "$W/x.f32.torch_matmul_tf32.i32"
echo "cosine (one FP32 instruction per dimension term, l2 two):"
timeout 100 $B/bench_pairwise knn "$W/x.f32" "$N" $D $K 3 "$W/cos" gpu cosine
if [ "${SKIP_SWEEP:-0}" != 1 ]; then
  echo
  echo "== 1b. launch parameters (kernels/tuning.h) and where the time goes"
  timeout 200 $B/bench_pairwise sweep "$W/x.f32" "$N" $D $K 3
fi
rm -f "$W"/x.f32*
echo
echo "== 2. l1 self threshold join, n = ${N_L1:-20000}, d = ${D_L1:-40000}"
timeout 200 $B/bench_pairwise l1thr "${N_L1:-20000}" "${D_L1:-40000}" 3 gpu
nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader | sed 's/^/max SM clock: /'
echo "FP32 limit of l1: 2 FP32 instructions per dimension term (FSUB, FADD with |.|), 128 lanes x SMs x clock"
if [ "${SKIP_SQL:-0}" != 1 ]; then
  NS=${N_STORED:-1000000}
  echo
  echo "== 3. SQL: 1000 queries x $NS stored, d = $D, k = $K"
  t0=$(date +%s)
  $PY test/gpu/bench_pairwise.py gen "$W/s.f32" "$NS" $D 2
  $PY test/gpu/bench_pairwise.py copy "$W/s.f32" "$NS" $D "$W/items.copy"
  $PY test/gpu/bench_pairwise.py gen "$W/q.f32" 1000 $D 3
  $PY test/gpu/bench_pairwise.py copy "$W/q.f32" 1000 $D "$W/queries.copy"
  chmod a+r "$W"/*.copy
  psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP TABLE IF EXISTS pw_items, pw_queries;
CREATE TABLE pw_items (id bigint PRIMARY KEY, e real[]);
CREATE TABLE pw_queries (id bigint PRIMARY KEY, e real[]);
-- 3 KB arrays stay in the heap (no TOAST lookups per row)
ALTER TABLE pw_items ALTER COLUMN e SET STORAGE PLAIN;
ALTER TABLE pw_queries ALTER COLUMN e SET STORAGE PLAIN;
\copy pw_items FROM '$W/items.copy' WITH (FORMAT binary)
\copy pw_queries FROM '$W/queries.copy' WITH (FORMAT binary)
VACUUM ANALYZE pw_items;
VACUUM ANALYZE pw_queries;
SQL
  echo "data generated and loaded in $(( $(date +%s) - t0 )) s; table $(psql -X -qtA -c "SELECT pg_size_pretty(pg_table_size('pw_items'))")"
  rm -f "$W"/*.f32 "$W"/*.copy
  for prec in exact fast; do
    psql -X -q <<SQL
SET gpu2bs.device = gpu;
SET gpu2bs.pairwise_precision = $prec;
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => 10);  -- warm (cache)
\timing on
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => 10);
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => 10);
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => 10);
\timing off
SELECT name, value FROM gpu2bs_info() WHERE name LIKE 'last_%' OR name = 'cublas';
SQL
  done
  psql -X -q -c "DROP TABLE pw_items, pw_queries"
fi
echo '```'
