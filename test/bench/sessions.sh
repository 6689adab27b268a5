#!/usr/bin/env bash
# Many sessions sharing one engine: CLIENTS concurrent sessions run a mix of gpu2bs functions
# (Type-I pair count, Type-II SDH and RDF, Type-III similarity join with a pushed-down count, and
# DBSCAN) for SECONDS, and the same mix runs in one session for comparison (pgbench, random
# choice of the query per transaction). Every result is checked against the one computed first in
# a single session: a client whose result differs stops with an error, and pgbench reports it as
# aborted. Prints the throughput of both runs, their ratio, the aborted clients and, with
# gpu2bs in shared_preload_libraries, the device memory admission's peak against its budget.
# Against a running server (PGHOST, PGPORT, PGUSER, PGDATABASE); PGOPTIONS picks the engine
# (for example PGOPTIONS='-c gpu2bs.device=gpu'). SCALE multiplies the row counts (1: 300,000
# 3-D points, 1,000,000 2-D points, 200,000 DBSCAN points).
#   bash test/bench/sessions.sh [CLIENTS=32] [SECONDS=60] [SCALE=1] [SERIAL_SECONDS=SECONDS/3]
set -uo pipefail
clients=${1:-32}; secs=${2:-60}; scale=${3:-1}; serial_secs=${4:-$(( secs / 3 > 5 ? secs / 3 : 5 ))}
work=$(mktemp -d)
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
n3=$(awk -v s="$scale" 'BEGIN { printf "%d", 300000 * s }')
n2=$(awk -v s="$scale" 'BEGIN { printf "%d", 1000000 * s }')
nd=$(awk -v s="$scale" 'BEGIN { printf "%d", 200000 * s }')
q <<SQL || exit 1
CREATE EXTENSION IF NOT EXISTS gpu2bs;
DROP TABLE IF EXISTS sess_p3, sess_u2, sess_d2;
SELECT setseed(0.125);
CREATE TABLE sess_p3 AS SELECT g AS id, random() AS x, random() AS y, random() AS z FROM generate_series(1, $n3) g;
CREATE TABLE sess_u2 AS SELECT g AS id, random() AS x, random() AS y FROM generate_series(1, $n2) g;
-- DBSCAN data: 50 Gaussian blobs and 10 % uniform noise in the unit square
CREATE TABLE sess_d2 AS
  SELECT g AS id,
         CASE WHEN g % 10 = 0 THEN random() ELSE (g % 50) / 50.0 + 0.004 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) END AS x,
         CASE WHEN g % 10 = 0 THEN random() ELSE ((g * 7) % 50) / 50.0 + 0.004 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) END AS y
  FROM generate_series(1, $nd) g;
VACUUM ANALYZE sess_p3, sess_u2, sess_d2;
SQL
# The mix: one query per kind, each returning one text value (a digest or a count).
queries=(
  "SELECT md5(gpu_sdh(x, y, z, 500)::text) FROM sess_p3"
  "SELECT gpu_pair_count(x, y, z, 0.05)::text FROM sess_p3"
  "SELECT count(*)::text FROM gpu_simjoin('sess_u2', 0.0025) WHERE dist > 0.00125"
  "SELECT md5(string_agg(pairs::text, ',' ORDER BY r_lo)) FROM gpu_rdf('sess_p3', 'sess_p3', 100, 0.1)"
  "SELECT md5(string_agg(id || ':' || coalesce(cluster::text, '-'), ',' ORDER BY id)) FROM gpu_dbscan('sess_d2', 0.01, 10)"
)
defs=()
script="$work/mix.sql"
echo "\\set q random(1, ${#queries[@]})" > "$script"
for i in "${!queries[@]}"; do
  k=$((i + 1))
  t0=$(date +%s.%N)
  expect=$(q -c "${queries[$i]}") || { echo "not ok - query $k failed: ${queries[$i]}"; exit 1; }
  t1=$(date +%s.%N)
  printf 'query %d (%.0f ms single): %s -> %s\n' "$k" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) * 1000 }')" "${queries[$i]}" "$expect"
  defs+=(-D "e$k=$expect")
  if [ "$k" = 1 ]; then echo "\\if :q = 1" >> "$script"; else echo "\\elif :q = $k" >> "$script"; fi
  echo "SELECT (${queries[$i]}) = :e$k AS ok \\gset" >> "$script"
done
cat >> "$script" <<'EOF'
\endif
\if :ok
\else
SELECT 'result differs from the single-session result'::int;
\endif
EOF
run() {  # run CLIENTS SECONDS LOG
  pgbench -n -M extended -c "$1" -j "$(( $1 < 8 ? $1 : 8 ))" -T "$2" -f "$script" "${defs[@]}" > "$3" 2>&1
  echo "rc=$?" >> "$3"
}
run 1 "$serial_secs" "$work/serial.log"
tps1=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$work/serial.log")
n1=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$work/serial.log")
run "$clients" "$secs" "$work/conc.log"
tpsn=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$work/conc.log")
nn=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$work/conc.log")
aborted=$(grep -c "aborted" "$work/conc.log" "$work/serial.log" | awk -F: '{s += $2} END {print s}')
echo "one session, ${serial_secs} s: ${n1:-0} queries, ${tps1:-0} queries/s"
echo "$clients sessions, ${secs} s: ${nn:-0} queries, ${tpsn:-0} queries/s"
awk -v a="${tps1:-0}" -v b="${tpsn:-0}" 'BEGIN { if (a > 0) printf "throughput ratio (concurrent / one session): %.2f\n", b / a }'
echo "aborted clients or differing results: $aborted"
grep -hE "aborted|ERROR|error" "$work/conc.log" "$work/serial.log" | sort | uniq -c | head -10
q -c "SELECT string_agg(name || ' = ' || value, ', ') FROM gpu2bs_info() WHERE name LIKE 'admission%'"
cp "$work/serial.log" "$work/conc.log" "${SESSIONS_LOGS:-$work}/" 2>/dev/null
q -c "DROP TABLE sess_p3, sess_u2, sess_d2"
[ "$aborted" = 0 ] && grep -q "rc=0" "$work/conc.log"
