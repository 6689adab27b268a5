#!/usr/bin/env bash
# gpu_xi end to end through SQL: N data and NR random points (float8 columns x, y, z, uniform in
# the unit cube from setseed(0.5) and random()), 30 log bins from 0.0002 to 0.02 (2 % of the box
# side), Landy-Szalay, no periodic box: median of 3 runs (psql \timing in one session after one
# untimed warm-up run) for each value of gpu2bs.device in ENGINES (default: the server's) and
# each precision in PRECS (default "float4 float8"); prints the split of the last run
# (gpu2bs_info) and checks that every engine's rows equal the first engine's in each precision.
# Needs a running server with gpu2bs (PGHOST/PGPORT set).
# Usage: test/bench/xi_sql.sh [N] [NR]
set -euo pipefail
n=${1:-1000000}; nr=${2:-1000000}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
q <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpu2bs;
DROP TABLE IF EXISTS xi_d, xi_r;
SELECT setseed(0.5);
CREATE TABLE xi_d AS SELECT g AS id, random() AS x, random() AS y, random() AS z FROM generate_series(1, $n) g;
CREATE TABLE xi_r AS SELECT g AS id, random() AS x, random() AS y, random() AS z FROM generate_series(1, $nr) g;
VACUUM ANALYZE xi_d; VACUUM ANALYZE xi_r;
SQL
edges="ARRAY(SELECT 0.0002 * 100 ^ (k / 30.0) FROM generate_series(0, 30) k)"
call="gpu_xi('xi_d', 'xi_r', $edges, coords => '{x,y,z}')"
echo "| engine (gpu2bs_info of the last run) | precision | N | N_R | bins | sum dd / dr / rr | median ms (3 runs) | runs ms |"
echo "|---|---|---|---|---|---|---|---|"
engines=${ENGINES:-default}
for engine in $engines; do
  set_dev=""; [ "$engine" = default ] || set_dev="SET gpu2bs.device = $engine;"
  for prec in ${PRECS:-float4 float8}; do
    text=$( { echo "$set_dev SET gpu2bs.precision = $prec;"; echo "SELECT count(*) FROM $call;"; echo '\timing on'
              for r in 1 2 3; do echo "SELECT sum(dd) || ' / ' || sum(dr) || ' / ' || sum(rr) FROM $call;"; done; echo '\timing off'
              echo "SELECT 'split ' || string_agg(name || ' ' || value, ', ' ORDER BY name) FROM gpu2bs_info() WHERE name IN ('last_engine', 'cpu_threads', 'last_scan_ms', 'last_prepare_ms', 'last_transfer_ms', 'last_kernel_ms', 'last_merge_ms');"
              echo "DROP TABLE IF EXISTS xi_${engine}_$prec; CREATE TABLE xi_${engine}_$prec AS SELECT * FROM $call;"; } | q 2>&1 )
    ts=$(grep -oE '^Time: [0-9.]+' <<<"$text" | awk '{print $2}')
    med=$(sort -n <<<"$ts" | sed -n 2p); all=$(tr '\n' ' ' <<<"$ts")
    sums=$(grep -E '^[0-9]+ / ' <<<"$text" | tail -1)
    split=$(grep -E '^split' <<<"$text" | cut -c7-)
    echo "| $split | $prec | $n | $nr | 30 | $sums | $med | $all |"
  done
done
first=${engines%% *}
for engine in $engines; do
  [ "$engine" = "$first" ] && continue
  for prec in ${PRECS:-float4 float8}; do
    q -c "SELECT 'rows $engine vs $first ($prec): ' || count(*) || ' bins compared, ' ||
                 count(*) FILTER (WHERE a IS DISTINCT FROM b) || ' differ'
          FROM (SELECT row(r_lo, r_hi, dd, dr, rr, xi) AS a, r_lo FROM xi_${engine}_$prec) x
          FULL JOIN (SELECT row(r_lo, r_hi, dd, dr, rr, xi) AS b, r_lo FROM xi_${first}_$prec) y USING (r_lo)"
  done
done
