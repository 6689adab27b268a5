#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root with .device carried: builds
# and installs the extension (sm_90 only), starts PostgreSQL with gpu2bs in
# shared_preload_libraries (the admission's preloaded shared memory), and checks and times:
#   1. blocks: gpu_sdh(x, y, z, 500) over 4,194,304 uniform 3-D points, brute force, in memory
#      and with gpu2bs.gpu_memory_limit at 1/8 of the in-memory need (blocks), twice each:
#      histograms equal, times (SQL wall, engine kernel); gpu_pair_count likewise;
#   2. equality of the CPU engine, the GPU in memory and the GPU in blocks at 300,000 points
#      (SDH 3-D float4 and float8, 2-D float4; pair count 3-D);
#   3. the admission regression test and isolation spec with gpu2bs.device = gpu;
#   4. 8 concurrent gpu_sdh over 1,000,000 points under gpu2bs.gpu_memory_total = 100MB: every
#      result equal to the serial one, the admission's peak never above the budget.
# Usage: bash test/gpu/scale_device.sh      (logs and the results file under $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R="$OUT/scale.md"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
EXT_ONLY=1 bash test/gpu/device_build.sh || exit 1
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=0 -c shared_preload_libraries=gpu2bs"
# a fresh cluster: a server or data left by an earlier call on a warm machine would keep its
# tables, functions and server-wide settings
source test/gpu/device_env.sh || exit 1
pg_stop_left
rm -rf /tmp/pgdata
source .device/pg-up.sh || exit 1
export PGOPTIONS="-c gpu2bs.device=gpu"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
{
  echo "# Scale on one GPU: blocks and admission"
  echo
  echo "Date: $(date -u '+%F %H:%M UTC'); machine: $(cat "$OUT/gpu.txt"), 16 cores; command: \`bash test/gpu/scale_device.sh\`"
  echo "(PostgreSQL 15, shared_preload_libraries = gpu2bs, gpu2bs.device = gpu, gpu2bs.sdh_method = brute)."
  echo
} > "$R"
q <<'SQL' >> "$R" 2>&1
CREATE EXTENSION gpu2bs;
SELECT '* admission: ' || value FROM gpu2bs_info() WHERE name = 'admission';
SELECT setseed(0.25);
CREATE TABLE p4m AS SELECT random() AS x, random() AS y, random() AS z FROM generate_series(1, 4194304);
CREATE TABLE p300k AS SELECT * FROM p4m LIMIT 300000;
CREATE TABLE p1m AS SELECT * FROM p4m LIMIT 1000000;
VACUUM ANALYZE p4m, p300k, p1m;
SQL
echo "data loaded at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"

# 1. blocks against in memory, N = 4,194,304
q >> "$R" 2>&1 <<'SQL'
SET gpu2bs.sdh_method = brute;
SELECT gpu_sdh(x, y, z, 500) IS NOT NULL FROM p300k;  -- warm-up (CUDA context, module)
CREATE TEMP TABLE t(run text, mode text, limit_mb int, ms float8, kernel_ms float8, engine_ms float8,
                    block_points bigint, block_pairs bigint, h bigint[]);
CREATE FUNCTION run_sdh(run text, lim int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; h bigint[]; ms float8;
BEGIN
  PERFORM set_config('gpu2bs.gpu_memory_limit', lim || 'MB', true);
  t0 := clock_timestamp();
  SELECT gpu_sdh(x, y, z, 500) INTO h FROM p4m;
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
  INSERT INTO t SELECT run, CASE WHEN lim = 0 THEN 'in memory' ELSE 'blocks' END, lim, ms,
    (SELECT value::float8 FROM gpu2bs_info() WHERE name = 'last_kernel_ms'),
    (SELECT sum(value::float8) FROM gpu2bs_info() WHERE name IN ('last_prepare_ms', 'last_transfer_ms', 'last_kernel_ms', 'last_merge_ms')),
    (SELECT value::bigint FROM gpu2bs_info() WHERE name = 'last_block_points'),
    (SELECT value::bigint FROM gpu2bs_info() WHERE name = 'last_block_pairs'), h;
END $$;
-- the in-memory need: 4,194,304 x 3 x 4 B + 500 x 16 B + 1 MiB = 49.0 MB; 1/8 = 6 MB
DO $$ BEGIN PERFORM run_sdh('1', 0); PERFORM run_sdh('1', 6); PERFORM run_sdh('2', 0); PERFORM run_sdh('2', 6); END $$;
\echo
\echo ## 1. SDH, N = 4,194,304 uniform 3-D points in the unit cube, 500 buckets, float4
\echo
\echo | run | mode | gpu_memory_limit MB | SQL ms | kernel ms | engine ms | points per block | block pairs | pairs/s (kernel) |
\echo |---|---|---|---|---|---|---|---|---|
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s |', run, mode, limit_mb, round(ms::numeric, 1),
  round(kernel_ms::numeric, 1), round(engine_ms::numeric, 1), block_points, block_pairs,
  to_char(4194304::float8 * 4194303 / 2 / (kernel_ms / 1000), '9.99EEEE')) FROM t ORDER BY run, mode DESC;
\echo
SELECT '* every histogram equal to run 1 in memory: ' || bool_and(h = (SELECT h FROM t WHERE run = '1' AND mode = 'in memory')) ||
       ' (sum ' || (SELECT sum(v) FROM unnest((SELECT h FROM t LIMIT 1)) v) || ' = N(N-1)/2 = ' || 4194304::bigint * 4194303 / 2 || ')' FROM t;
SELECT format('* blocks / in memory throughput: SQL %s, kernel %s, engine %s (mean of the two runs)',
  round((avg(ms) FILTER (WHERE mode = 'in memory') / avg(ms) FILTER (WHERE mode = 'blocks'))::numeric, 3),
  round((avg(kernel_ms) FILTER (WHERE mode = 'in memory') / avg(kernel_ms) FILTER (WHERE mode = 'blocks'))::numeric, 3),
  round((avg(engine_ms) FILTER (WHERE mode = 'in memory') / avg(engine_ms) FILTER (WHERE mode = 'blocks'))::numeric, 3)) FROM t;
-- pair count, r = 0.01: in memory (the engine's choice, the grid) and in blocks (tiles)
CREATE TEMP TABLE c(mode text, ms float8, kernel_ms float8, n bigint);
DO $$
DECLARE t0 timestamptz; n bigint;
BEGIN
  FOREACH n IN ARRAY ARRAY[0, 6] LOOP
    PERFORM set_config('gpu2bs.gpu_memory_limit', n || 'MB', true);
    t0 := clock_timestamp();
    INSERT INTO c SELECT CASE WHEN n = 0 THEN 'in memory' ELSE 'blocks (6 MB)' END, 0, 0, gpu_pair_count(x, y, z, 0.01) FROM p4m;
    UPDATE c SET ms = extract(epoch FROM clock_timestamp() - t0) * 1000,
                 kernel_ms = (SELECT value::float8 FROM gpu2bs_info() WHERE name = 'last_kernel_ms') WHERE ms = 0;
  END LOOP;
END $$;
\echo
\echo ## gpu_pair_count(x, y, z, 0.01), same points
\echo
SELECT format('* %s: %s pairs, SQL %s ms, kernel %s ms', mode, n, round(ms::numeric, 1), round(kernel_ms::numeric, 1)) FROM c;
SELECT '* counts equal: ' || (count(DISTINCT n) = 1) FROM c;
SQL
echo "blocks done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"

# 2. CPU engine = GPU in memory = GPU in blocks at 300,000 points
q >> "$R" 2>&1 <<'SQL'
SET gpu2bs.sdh_method = brute;
\echo
\echo ## 2. CPU engine, GPU in memory, GPU in blocks (gpu2bs.gpu_memory_limit = 2MB), 300,000 points
\echo
CREATE FUNCTION three(q text, prec text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; c text;
BEGIN
  PERFORM set_config('gpu2bs.precision', prec, true);
  PERFORM set_config('gpu2bs.device', 'cpu', true); EXECUTE q INTO a;
  PERFORM set_config('gpu2bs.device', 'gpu', true); PERFORM set_config('gpu2bs.gpu_memory_limit', '0', true); EXECUTE q INTO b;
  PERFORM set_config('gpu2bs.gpu_memory_limit', '2MB', true); EXECUTE q INTO c;
  RETURN format('* %s, %s: cpu = gpu in memory: %s, = gpu blocks: %s (block pairs %s)', q, prec, a = b, a = c,
                (SELECT value FROM gpu2bs_info() WHERE name = 'last_block_pairs'));
END $$;
SELECT three('SELECT gpu_sdh(x, y, z, 500)::text FROM p300k', 'float4');
SELECT three('SELECT gpu_sdh(x, y, z, 500)::text FROM p300k', 'float8');
SELECT three('SELECT gpu_sdh(x, y, 100)::text FROM p300k', 'float4');
SELECT three('SELECT gpu_pair_count(x, y, z, 0.02)::text FROM p300k', 'float4');
SELECT three('SELECT gpu_pair_count(x, y, 0.01)::text FROM p300k', 'float8');
SQL
echo "equality done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"

# 3. admission tests with the GPU engine
"$PG_REGRESS" --bindir="$PGBIN" --inputdir=test --load-extension=gpu2bs --outputdir="$OUT/regress" \
  --dbname=scale_regress admission > "$OUT/regress.log" 2>&1
/opt/pg/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/pg_isolation_regress --bindir="$PGBIN" \
  --inputdir=test --load-extension=gpu2bs --outputdir="$OUT/isolation" --dbname=scale_iso admission_wait > "$OUT/isolation.log" 2>&1
{ echo; echo "## 3. admission tests with gpu2bs.device = gpu"; echo
  echo "* pg_regress admission: $(grep -E 'admission' "$OUT/regress.log" | head -1 | tr -s ' ')"
  echo "* isolation admission_wait: $(grep -E "admission_wait" "$OUT/isolation.log" | head -1 | tr -s ' ')"; } >> "$R"
echo "tests done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"

# 4. 8 concurrent sessions under a 100 MB budget
# a fresh server (the admission table's peak starts at 0) with the budget set
q -c "ALTER SYSTEM SET gpu2bs.gpu_memory_total = '100MB'" >/dev/null
pg_down >/dev/null; source .device/pg-up.sh >/dev/null || exit 1
serial=$(q -c "SET gpu2bs.sdh_method = brute" -c "SELECT gpu_sdh(x, y, z, 500) FROM p1m")
ts=$(date +%s.%N)
for i in 1 2 3 4 5 6 7 8; do
  (q -c "SET gpu2bs.sdh_method = brute" -c "SELECT gpu_sdh(x, y, z, 500) FROM p1m" > "$OUT/conc.$i" 2>&1) &
done
wait
te=$(date +%s.%N)
same=0; for i in 1 2 3 4 5 6 7 8; do [ "$(cat "$OUT/conc.$i")" = "$serial" ] && same=$((same + 1)); done
{ echo; echo "## 4. 8 concurrent gpu_sdh(x, y, z, 500) over 1,000,000 points, gpu2bs.gpu_memory_total = 100MB"; echo
  echo "* results equal to the serial one: $same of 8; wall $(awk -v a="$ts" -v b="$te" 'BEGIN { printf "%.2f", b - a }') s"
  q -c "SELECT '* ' || string_agg(name || ' = ' || value, ', ') FROM gpu2bs_info() WHERE name IN ('admission_total_mb', 'admission_peak_mb', 'admission_grants', 'admission_waits', 'admission_block_grants')"; } >> "$R" 2>&1
echo "all done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.log"
cat "$R"
