#!/usr/bin/env bash
# Similarity-join benchmark against the in-database peers, on the same data in the same server:
# PostGIS ST_DWithin with a GiST index (the issue's reference query), a plain SQL join on a
# subset, and gpu_simjoin (engine chosen by gpu2bs.device). Uniform 2-D points from
# numpy default_rng(1).random((N, 2)) (test/data/prepare.py synth), eps = 0.0025.
# Needs a running server with gpu2bs and postgis installed (PGHOST/PGPORT set); prints a
# markdown table. Usage: test/bench/simjoin_peers.sh CSV [N] [EPS]
set -euo pipefail
csv=${1:?csv from prepare.py synth --dims 2}; n=${2:-1000000}; eps=${3:-0.0025}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# Runs $1, sets $out (the last result line) and $t (milliseconds).
ms() { local t0 t1; t0=$(date +%s%N); out=$(q -c "$1" | tail -1); t1=$(date +%s%N); t=$(( (t1 - t0) / 1000000 )); }
q <<SQL
CREATE EXTENSION IF NOT EXISTS gpu2bs; CREATE EXTENSION IF NOT EXISTS postgis;
DROP TABLE IF EXISTS bench_pts;
CREATE TABLE bench_pts (id bigint PRIMARY KEY, x float8, y float8);
\copy bench_pts FROM '$csv' WITH (FORMAT csv, HEADER true)
ALTER TABLE bench_pts ADD COLUMN geom geometry(Point);
UPDATE bench_pts SET geom = ST_MakePoint(x, y);
CREATE INDEX ON bench_pts USING gist (geom);
VACUUM ANALYZE bench_pts;
DROP TABLE IF EXISTS bench_sub; CREATE TABLE bench_sub AS SELECT id, x, y FROM bench_pts WHERE id <= 20000;
ALTER TABLE bench_sub ADD PRIMARY KEY (id); ANALYZE bench_sub;
SQL
echo "| query | engine / method | rows | pairs | time (ms) |"
echo "|---|---|---|---|---|"
ms "SELECT count(*) FROM bench_pts a JOIN bench_pts b ON ST_DWithin(a.geom, b.geom, $eps) AND a.id < b.id"; echo "| PostGIS ST_DWithin + GiST | postgis | $n | $out | $t |"
for prec in float4 float8; do
  ms "SET gpu2bs.precision = $prec; SELECT count(*) FROM gpu_simjoin('bench_pts', $eps, coords => '{x,y}')"
  eng=$(q -c "SELECT value FROM gpu2bs_info() WHERE name = 'engine'")
  echo "| gpu_simjoin ($prec) | $eng | $n | $out | $t |"
done
ms "SELECT count(*) FROM bench_sub a JOIN bench_sub b ON a.id < b.id AND (a.x-b.x)^2 + (a.y-b.y)^2 <= $eps^2"; echo "| plain SQL join | nested loop | 20000 | $out | $t |"
ms "SET gpu2bs.precision = float8; SELECT count(*) FROM gpu_simjoin('bench_sub', $eps)"; echo "| gpu_simjoin (float8) | same engine | 20000 | $out | $t |"
