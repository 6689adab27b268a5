#!/usr/bin/env bash
# gpu_pairwise through SQL on the GPU machine in one call, from the repository root with .device
# carried: builds and installs the extension (test/gpu/device_build.sh, EXT_ONLY), runs the
# pg_regress tests of gpu_pairwise with gpu2bs.device = gpu, loads N_STORED (1,000,000) stored
# and 1,000 query vectors of d = 768 (real[], STORAGE EXTERNAL: out of line, uncompressed, as
# pglz leaves random floats; unlogged tables, loaded by 8 parallel binary COPY streams from
# numpy), then times gpu_pairwise(queries, items, 'e', 'l2', k => 10) median of 3 after a warm
# run, exact and fast, with gpu2bs_info()'s split, the direct reader against the SPI path (same
# rows). Logs under $OUT: steps.log, regress-gpu.log, knn-sql.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NS=${N_STORED:-1000000}; D=768; K=10
EXT_ONLY=1 bash test/gpu/device_build.sh || exit 1
export PG_OPTS="-c shared_buffers=24GB -c work_mem=256MB -c max_parallel_workers_per_gather=0 -c fsync=off -c synchronous_commit=off -c max_wal_size=8GB -c autovacuum=off"
# a server left by an earlier call on a warm machine is stopped first
source test/gpu/device_env.sh || exit 1
pg_stop_left
source .device/pg-up.sh > "$OUT/pg-up.log" 2>&1 || { cat "$OUT/pg-up.log"; exit 1; }
rm -rf /tmp/src; cp -r . /tmp/src 2>/dev/null; chmod -R a+rX /tmp/src; cd /tmp/src
t0=$(date +%s)
PGOPTIONS="-c gpu2bs.device=gpu" "$PG_REGRESS" --bindir="$PGBIN" --inputdir=test --load-extension=gpu2bs \
  --outputdir=/tmp/regress-gpu --user=pgdev setup pairwise_toast > "$OUT/regress-gpu.log" 2>&1
[ -f /tmp/regress-gpu/regression.diffs ] && cp /tmp/regress-gpu/regression.diffs "$OUT/regress-gpu.diffs"
echo "regress (gpu): $(grep -E 'tests (passed|failed)' "$OUT/regress-gpu.log" | tr -d '=') in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
L="$OUT/knn-sql.txt"
{
  echo "# $(date -u '+%F %T') UTC, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nproc) CPU cores"
  echo "# PG_OPTS: $PG_OPTS"
  t0=$(date +%s)
  psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" -c "DROP TABLE IF EXISTS pw_items, pw_queries" \
    -c "CREATE UNLOGGED TABLE pw_items (id bigint PRIMARY KEY, e real[])" \
    -c "CREATE UNLOGGED TABLE pw_queries (id bigint PRIMARY KEY, e real[])" \
    -c "ALTER TABLE pw_items ALTER COLUMN e SET STORAGE EXTERNAL" \
    -c "ALTER TABLE pw_queries ALTER COLUMN e SET STORAGE EXTERNAL" || exit 1
  python3 test/gpu/knn_sql_copy.py 0 1 1000 $D 3 | psql -X -q -v ON_ERROR_STOP=1 -c "\\copy pw_queries FROM pstdin WITH (FORMAT binary)" || exit 1
  for p in 0 1 2 3 4 5 6 7; do
    python3 test/gpu/knn_sql_copy.py $p 8 "$NS" $D 2 | psql -X -q -v ON_ERROR_STOP=1 -c "\\copy pw_items FROM pstdin WITH (FORMAT binary)" &
  done
  wait
  psql -X -q -c "VACUUM ANALYZE pw_items" -c "VACUUM ANALYZE pw_queries"
  echo "loaded in $(( $(date +%s) - t0 )) s"
  psql -X -qtA -F ' ' -c "SELECT 'rows', count(*), 'main', pg_size_pretty(pg_relation_size('pw_items')), 'toast', pg_size_pretty(pg_relation_size(reltoastrelid)) FROM pw_items, pg_class WHERE oid = 'pw_items'::regclass GROUP BY reltoastrelid"
  for prec in exact fast; do
    echo "== $prec"
    psql -X -q <<SQL
SET gpu2bs.device = gpu;
SET gpu2bs.pairwise_precision = $prec;
SET client_min_messages = debug1;
SELECT count(*) AS warm FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
\\timing on
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
SELECT string_agg(name || '=' || value, ' ') FROM gpu2bs_info() WHERE name ~ '^last_(scan|transfer|kernel|merge|prepare|toast)';
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
SELECT string_agg(name || '=' || value, ' ') FROM gpu2bs_info() WHERE name ~ '^last_(scan|transfer|kernel|merge|prepare|toast)';
SELECT count(*) AS rows_$prec FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
SELECT string_agg(name || '=' || value, ' ') FROM gpu2bs_info() WHERE name ~ '^last_(scan|transfer|kernel|merge|prepare|toast)';
SQL
  done
  echo "== direct reader against the SPI path (exact): same rows"
  psql -X -q <<SQL
SET gpu2bs.device = gpu;
SET gpu2bs.pairwise_precision = exact;
\\timing on
CREATE TEMP TABLE on_ AS SELECT * FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
SET gpu2bs.direct_scan = off;
CREATE TEMP TABLE off_ AS SELECT * FROM gpu_pairwise('pw_queries', 'pw_items', 'e', 'l2', k => $K);
SELECT string_agg(name || '=' || value, ' ') FROM gpu2bs_info() WHERE name ~ '^last_(scan|transfer|kernel|merge|prepare|toast)';
\\timing off
SELECT (SELECT count(*) FROM on_) AS rows_on, (SELECT count(*) FROM off_) AS rows_off,
       (SELECT count(*) FROM (SELECT * FROM on_ EXCEPT SELECT * FROM off_) x) AS differing;
SQL
} > "$L" 2>&1
tail -40 "$L"
