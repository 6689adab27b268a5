#!/usr/bin/env bash
# Plain SQL distance joins planned onto the engine (the gpu2bs join of the planner hook) against
# gpu_simjoin and PostGIS ST_DWithin with a GiST index, on the same points in the same server.
# Table u2(id bigint PRIMARY KEY, x, y float8, geom geometry(Point)): N uniform points in the
# unit square from PostgreSQL's random() after setseed(0.25); GiST index on geom; eps = 0.0025.
# Needs a running server with gpu2bs and postgis (PGHOST/PGPORT/PGDATABASE set). Prints a
# markdown table with the median of RUNS runs of each query (wall time of psql -c, ms).
# Usage: test/bench/planner_join.sh [N] [EPS] [RUNS] [prepare: 1 to (re)create u2] [postgis peer: 1 to run it]
set -euo pipefail
n=${1:-1000000}; eps=${2:-0.0025}; runs=${3:-3}; prep=${4:-1}; gis_peer=${5:-1}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
if [ "$prep" = 1 ]; then
q <<SQL
CREATE EXTENSION IF NOT EXISTS gpu2bs; CREATE EXTENSION IF NOT EXISTS postgis;
DROP TABLE IF EXISTS u2;
SELECT setseed(0.25);
CREATE TABLE u2 (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO u2 SELECT g, random(), random() FROM generate_series(1, $n) g;
ALTER TABLE u2 ADD COLUMN geom geometry(Point);
UPDATE u2 SET geom = ST_MakePoint(x, y);
CREATE INDEX ON u2 USING gist (geom);
VACUUM ANALYZE u2;
SQL
fi
# Runs "$2" (after the settings "$1") $runs times: sets $out (the result) and $t (median ms).
med() {
  local ts=() t0 t1
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N); out=$(q -c "LOAD 'gpu2bs'; $1 $2" | tail -1); t1=$(date +%s%N)
    ts+=($(( (t1 - t0) / 1000000 )))
  done
  t=$(printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  all=$(IFS=,; echo "${ts[*]}")
}
sqlq="SELECT count(*) FROM u2 a JOIN u2 b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= $eps^2 AND a.id < b.id"
gisq="SELECT count(*) FROM u2 a JOIN u2 b ON ST_DWithin(a.geom, b.geom, $eps) AND a.id < b.id"
simq="SELECT count(*) FROM gpu_simjoin('u2', $eps, '{x,y}')"
# the rows themselves, counted above the join (OFFSET 0 keeps the count out of it)
rowq="SELECT count(*) FROM (SELECT a.id, b.id AS bid FROM u2 a JOIN u2 b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= $eps^2 AND a.id < b.id OFFSET 0) s"
simrowq="SELECT count(*) FROM (SELECT id1, id2 FROM gpu_simjoin('u2', $eps, '{x,y}') OFFSET 0) s"
echo "| query | precision | plan | pairs | median ms | runs (ms) |"
echo "|---|---|---|---|---|---|"
for prec in float4 float8; do
  set_="SET gpu2bs.precision = $prec;"
  med "$set_" "$sqlq"; echo "| plain SQL \`(a.x-b.x)^2 + (a.y-b.y)^2 <= $eps^2 AND a.id < b.id\` | $prec | gpu2bs join (count pushed) | $out | $t | $all |"
  med "$set_" "$simq"; echo "| \`gpu_simjoin('u2', $eps, '{x,y}')\` count | $prec | custom scan (count pushed) | $out | $t | $all |"
  med "$set_" "$gisq"; echo "| \`ST_DWithin(a.geom, b.geom, $eps) AND a.id < b.id\` | $prec | gpu2bs join (count pushed) | $out | $t | $all |"
  med "$set_" "$rowq"; echo "| rows of the plain SQL join, counted above it | $prec | gpu2bs join (rows) | $out | $t | $all |"
  med "$set_" "$simrowq"; echo "| rows of \`gpu_simjoin('u2', $eps, '{x,y}')\`, counted above it | $prec | custom scan (rows) | $out | $t | $all |"
done
[ "$gis_peer" = 1 ] || { q -c "SELECT name, value FROM gpu2bs_info() WHERE name IN ('engine', 'cpu_isa', 'cpu_threads', 'cpu_cores')" | sed 's/^/    /'; exit 0; }
med "SET gpu2bs.enable_join = off;" "$gisq"; echo "| \`ST_DWithin(a.geom, b.geom, $eps) AND a.id < b.id\` | - | PostGIS, GiST index nested loop (enable_join = off) | $out | $t | $all |"
plan=$(q -c "LOAD 'gpu2bs'; SET gpu2bs.enable_join = off; EXPLAIN (COSTS OFF) $gisq" | tr '\n' ' ' | sed 's/  */ /g')
echo; echo "PostGIS plan: $plan"
q -c "SELECT name, value FROM gpu2bs_info() WHERE name IN ('engine', 'cpu_isa', 'cpu_threads', 'cpu_cores')" | sed 's/^/    /'
