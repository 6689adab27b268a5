#!/usr/bin/env bash
# Device check of the weighted SDH and pair count, run on the GPU machine from a folder .weights
# that holds the extension staged by `make install DESTDIR=.../.weights/stage` (its usr/ tree)
# and test/sql + test/expected of setup, sdh, pair_count, relation_forms and weights, with
# .device carried: pg_regress of those tests with gpu2bs.device = gpu, a 1e6-row timing of the
# weighted forms beside gpu_sdh, and GPU = CPU in SQL on 20,000 rows. Logs under $OUT.
#   bash .weights/run.sh        (this file copied to .weights/run.sh)
set -u
mkdir -p .device/stage && cp -a .weights/stage/. .device/stage/
source .device/pg-up.sh || exit 1
cp -r .weights/test /tmp/wtest && chmod -R a+rwX /tmp/wtest
cd /tmp/wtest
PGOPTIONS="-c gpu2bs.device=gpu" "$PG_REGRESS" --bindir="$PGBIN" --inputdir=. --load-extension=gpu2bs \
  --outputdir=/tmp/wreg --user=pgdev setup sdh pair_count relation_forms weights > "$OUT/regress-gpu.log" 2>&1
tail -12 "$OUT/regress-gpu.log"
[ -f /tmp/wreg/regression.diffs ] && head -80 /tmp/wreg/regression.diffs
psql -X -d postgres -v ON_ERROR_STOP=1 > "$OUT/sql-gpu.txt" 2>&1 <<'SQL'
CREATE EXTENSION gpu2bs;
CREATE TABLE big AS SELECT random() x, random() y, random() z, random() w FROM generate_series(1, 1000000);
\timing on
SET gpu2bs.device = gpu;
SELECT sum(pairs), sum(weight_sum) FROM gpu_sdh_weighted('big', 500, 'w');
SELECT sum(pairs), sum(weight_sum) FROM gpu_sdh_weighted('big', 500, 'w');
SELECT name, value FROM gpu2bs_info() WHERE name LIKE 'last%';
SELECT sum(c) FROM unnest(gpu_sdh('big', 500, '{x,y,z}')) c;
SELECT sum(c) FROM unnest(gpu_sdh('big', 500, '{x,y,z}')) c;
SELECT * FROM gpu_pair_count_weighted('big', 0.01, 'w');
SELECT * FROM gpu_pair_count_weighted('big', 0.01, 'w');
CREATE TABLE mid AS SELECT random() x, random() y, (random() * 64)::int / 8.0 - 4 w, sin(g) * 1e3 v FROM generate_series(1, 20000) g;
CREATE TEMP TABLE gs AS SELECT * FROM gpu_sdh_weighted('mid', 100, 'v');
CREATE TEMP TABLE gc AS SELECT * FROM gpu_pair_count_weighted('mid', 0.05, 'w');
SET gpu2bs.device = cpu;
SELECT count(*) AS buckets, bool_and(g.pairs = c.pairs AND g.weight_sum = c.weight_sum) AS gpu_equals_cpu
FROM gs g JOIN gpu_sdh_weighted('mid', 100, 'v') c USING (bucket);
SELECT g.pairs = c.pairs AND g.weight_sum = c.weight_sum AS count_gpu_equals_cpu, g.pairs, g.weight_sum
FROM gc g, gpu_pair_count_weighted('mid', 0.05, 'w') c;
SQL
cat "$OUT/sql-gpu.txt"
