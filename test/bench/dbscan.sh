#!/usr/bin/env bash
# DBSCAN benchmark: gpu_dbscan (engine chosen by gpu2bs.device, float4 and float8) against
# PostGIS ST_ClusterDBSCAN (a window function over the whole table: SELECT id,
# ST_ClusterDBSCAN(geom, eps, minpoints) OVER () FROM t; it builds its own tree, the GiST index
# on geom is there for a fair setting but is not used by it), on the same data in the same
# server, median of 3 runs each (psql \timing in one session, after a warm-up run for gpu_dbscan).
# Data (numpy default_rng(seed)): 90 % of the points in N/500 Gaussian blobs (centres uniform in
# [0.02, 0.98]^2, sigma uniform in [0.0015, 0.003]), 10 % uniform noise in [0, 1]^2; eps = 0.003,
# minpoints = 10 by default. Also checks that both give the same noise points and the same
# number of clusters, and prints how the clusters of the non-noise points correspond.
# Needs a running server with gpu2bs and postgis (PGHOST/PGPORT set) and python ($PYTHON, else
# python3) with numpy; without numpy the same construction uses Python's random module (other
# numbers; the generator is printed). ENGINES (default: the server's gpu2bs.device) lists the
# values of gpu2bs.device to time, e.g. ENGINES="gpu cpu": each runs both precisions, its last
# run's time split (gpu2bs_info) is printed, and every engine's labels are compared with the
# first engine's, point for point, in each precision.
# PG_RUNS (default 3) sets the number of ST_ClusterDBSCAN runs (median), AGREE=0 skips the
# comparison with ST_ClusterDBSCAN's labels (one more run of it). FSCAN=1 also times the lean
# form through the function scan (gpu2bs.enable_customscan = off: the rows go through a
# tuplestore) beside the custom scan `gpu2bs dbscan`.
# Usage: test/bench/dbscan.sh [N] [EPS] [MINPOINTS] [SEED]
set -euo pipefail
n=${1:-1000000}; eps=${2:-0.003}; minpoints=${3:-10}; seed=${4:-1}
py=${PYTHON:-python3}
csv=$(mktemp /tmp/dbscan-bench.XXXXXX.csv); chmod 644 "$csv"
trap 'rm -f "$csv"' EXIT
gen=$("$py" - "$n" "$seed" "$csv" <<'PY'
import sys
n, seed, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
nnoise = n // 10
nblob = n - nnoise
k = max(1, n // 500)
try:
    import numpy as np
except ImportError:  # the same construction with Python's random (other numbers)
    import random
    rng = random.Random(seed)
    centres = [(rng.uniform(0.02, 0.98), rng.uniform(0.02, 0.98), rng.uniform(0.0015, 0.003)) for _ in range(k)]
    pts = []
    for _ in range(nblob):
        cx, cy, s = centres[rng.randrange(k)]
        pts.append((cx + rng.gauss(0, 1) * s, cy + rng.gauss(0, 1) * s))
    pts += [(rng.random(), rng.random()) for _ in range(nnoise)]
    rng.shuffle(pts)
    with open(path, "w") as f:
        f.write("id,x,y\n")
        f.writelines("%d,%r,%r\n" % (i + 1, x, y) for i, (x, y) in enumerate(pts))
    print("python random.Random(%d)" % seed)
    sys.exit(0)
rng = np.random.default_rng(seed)
centres = rng.uniform(0.02, 0.98, size=(k, 2))
sigma = rng.uniform(0.0015, 0.003, size=k)
which = rng.integers(0, k, size=nblob)
pts = np.concatenate([centres[which] + rng.normal(size=(nblob, 2)) * sigma[which, None],
                      rng.uniform(0, 1, size=(nnoise, 2))])
pts = pts[rng.permutation(n)]
with open(path, "w") as f:
    f.write("id,x,y\n")
    np.savetxt(f, np.column_stack([np.arange(1, n + 1), pts]), fmt=["%d", "%.17g", "%.17g"], delimiter=",")
print("numpy default_rng(%d)" % seed)
PY
)
echo "data: $n points, generator $gen" >&2
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpu2bs; CREATE EXTENSION IF NOT EXISTS postgis;
DROP TABLE IF EXISTS bench_dbscan;
CREATE TABLE bench_dbscan (id bigint PRIMARY KEY, x float8, y float8);
\copy bench_dbscan FROM '$csv' WITH (FORMAT csv, HEADER true)
ALTER TABLE bench_dbscan ADD COLUMN geom geometry(Point);
UPDATE bench_dbscan SET geom = ST_MakePoint(x, y);
CREATE INDEX ON bench_dbscan USING gist (geom);
VACUUM ANALYZE bench_dbscan;
SQL
# Runs query $2 three times (or $4 times) in ONE session (psql \timing: server round trip of each statement)
# after setup statements $1 and, with $3 = 1, one untimed warm-up run (a backend initializes CUDA
# once, about 0.2 s, as a real connection pays it once); sets $out (its last result line), $med
# (median milliseconds), $all (the three) and $split (gpu2bs_info() of the last run).
median3() {
  local text warm="" runs=${4:-3}
  [ "${3:-0}" = 1 ] && warm="$2;"
  text=$( { echo "$1"; echo "$warm"; echo '\timing on'; for ((r = 0; r < runs; r++)); do echo "$2;"; done; echo '\timing off'
            echo "SELECT 'split ' || string_agg(name || ' ' || value, ', ' ORDER BY name) FROM gpu2bs_info() WHERE name IN ('last_engine', 'cpu_threads', 'last_scan_ms', 'last_prepare_ms', 'last_transfer_ms', 'last_kernel_ms', 'last_merge_ms');"; } | q 2>&1 || true)
  local ts; ts=$(grep -oE '^Time: [0-9.]+' <<<"$text" | awk '{print $2}' || true)
  med=$(sort -n <<<"$ts" | sed -n "$(( (runs + 1) / 2 ))p"); all=$(tr '\n' ' ' <<<"$ts")
  out=$(grep -vE '^(Time:|split)' <<<"$text" | tail -1 || true)
  split=$(grep -E '^split' <<<"$text" | cut -c7- || true)
  [ -n "$med" ] || { echo "run failed: $text" >&2; med=0; }
}
summary="count(*) || ' rows, ' || count(DISTINCT c) || ' clusters, ' || (count(*) - count(c)) || ' noise'"
echo "| method | engine (gpu2bs_info of the last run) | points | eps | minpoints | result | median ms (3 runs) | runs ms |"
echo "|---|---|---|---|---|---|---|---|"
median3 "" "SELECT $summary FROM (SELECT ST_ClusterDBSCAN(geom, $eps, $minpoints) OVER () AS c FROM bench_dbscan) s" 0 "${PG_RUNS:-3}"
pg_ms=$med
echo "| ST_ClusterDBSCAN | PostGIS $(q -c 'SELECT postgis_lib_version()') | $n | $eps | $minpoints | $out | $med | $all |"
engines=${ENGINES:-default}
for engine in $engines; do
  set_dev=""; [ "$engine" = default ] || set_dev="SET gpu2bs.device = $engine;"
  for prec in float4 float8; do
    median3 "$set_dev SET gpu2bs.precision = $prec;" "SELECT $summary FROM (SELECT cluster AS c FROM gpu_dbscan('bench_dbscan', $eps, $minpoints, '{x,y}')) s" 1
    echo "| gpu_dbscan ($prec) | $split | $n | $eps | $minpoints | $out | $med | $all |"
    echo "speedup over ST_ClusterDBSCAN ($engine, $prec): $(awk -v a="$pg_ms" -v b="$med" 'BEGIN { printf "%.1fx", a / b }')" >&2
    if [ "$prec" = float4 ]; then  # the lean form: the rows counted, no sort of the labels
      median3 "$set_dev SET gpu2bs.precision = $prec;" "SELECT count(*) || ' rows, ' || count(cluster) || ' clustered' FROM gpu_dbscan('bench_dbscan', $eps, $minpoints, '{x,y}')" 1
      echo "| gpu_dbscan ($prec), count(cluster) | $split | $n | $eps | $minpoints | $out | $med | $all |"
      if [ "${FSCAN:-0}" = 1 ]; then  # the same through the function scan (tuplestore)
        median3 "$set_dev SET gpu2bs.precision = $prec; SET gpu2bs.enable_customscan = off;" "SELECT count(*) || ' rows, ' || count(cluster) || ' clustered' FROM gpu_dbscan('bench_dbscan', $eps, $minpoints, '{x,y}')" 1
        echo "| gpu_dbscan ($prec), count(cluster), function scan | $split | $n | $eps | $minpoints | $out | $med | $all |"
      fi
    fi
    q -c "SET client_min_messages = warning; $set_dev SET gpu2bs.precision = $prec; DROP TABLE IF EXISTS lab_${engine}_$prec; CREATE TABLE lab_${engine}_$prec AS SELECT * FROM gpu_dbscan('bench_dbscan', $eps, $minpoints, '{x,y}')"
  done
done
first=${engines%% *}
for engine in $engines; do
  [ "$engine" = "$first" ] && continue
  for prec in float4 float8; do
    q -c "SELECT 'labels $engine vs $first ($prec): ' || count(*) || ' points compared, ' ||
                 count(*) FILTER (WHERE a.cluster IS DISTINCT FROM b.cluster) || ' differ'
          FROM lab_${engine}_$prec a FULL JOIN lab_${first}_$prec b USING (id)"
  done
done
# Agreement in float8 (the first engine's labels): noise points that differ, clusters on each
# side, and distinct (gpu2bs, postgis) cluster pairs over the non-noise points (equal to both
# cluster counts when the partitions agree; border points that ST_ClusterDBSCAN gave another
# adjacent cluster add to it).
if [ "${AGREE:-1}" = 1 ]; then q <<SQL
CREATE TEMP TABLE cmp AS
  SELECT g.id, g.cluster AS gc, p.c AS pc
  FROM lab_${first}_float8 g
  JOIN (SELECT id, ST_ClusterDBSCAN(geom, $eps, $minpoints) OVER () AS c FROM bench_dbscan) p USING (id);
SELECT 'agreement ($first, float8): noise differs ' || count(*) FILTER (WHERE (gc IS NULL) <> (pc IS NULL))
       || ', clusters gpu2bs ' || count(DISTINCT gc) || ' postgis ' || count(DISTINCT pc)
       || ', distinct (gpu2bs, postgis) cluster pairs ' || count(DISTINCT (gc, pc)) FILTER (WHERE gc IS NOT NULL AND pc IS NOT NULL)
FROM cmp;
SQL
fi
