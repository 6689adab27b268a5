#!/usr/bin/env bash
# End-to-end SQL benchmark (run by device_suite.sh on the GPU machine, or anywhere with a
# running server): gpu_sdh, gpu_pair_count and gpu_simjoin at several N through SQL, with the
# split reported by gpu2bs_info() (prepare = scan/deform done before, transfer, kernel, merge).
# Prints a markdown table. Pairs/s = N(N-1)/2 / time. Median of RUNS (default 3) after a warm-up.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
echo "| query | N | engine | end-to-end ms | kernel ms | merge / prepare / scan / transfer ms | non-kernel share | pairs/s end-to-end | pairs/s kernel |"
echo "|---|---|---|---|---|---|---|---|---|"
row() {  # dev label n sql pairs
  bench "$1" "$4"
  local kern merge prep scan xfer
  read -r kern merge prep scan xfer <<<"$(echo "$split" | sed 's| / | |g')"
  local e2e; e2e=$(awk -v us="$med" 'BEGIN{printf "%.1f", us/1000}')
  local pps; pps=$(awk -v p="$5" -v us="$med" 'BEGIN{printf "%.3e", p/(us/1e6)}')
  local ppk; ppk=$(awk -v p="$5" -v ms="$kern" 'BEGIN{ if (ms > 0) printf "%.3e", p/(ms/1e3); else print "-"}')
  local share; share=$(awk -v us="$med" -v ms="$kern" 'BEGIN{ if (us > 0) printf "%.0f%%", 100 * (1 - ms * 1000 / us); }')
  echo "| $2 | $3 | $1 | $e2e | $kern | $merge / $prep / $scan / $xfer | $share | $pps | $ppk |"
}
for n in 10000 100000 1000000 4000000; do
  q -c "DROP TABLE IF EXISTS b$n" -c "SELECT setseed(0.1)" -c "CREATE TABLE b$n AS SELECT g AS id, random() x, random() y, random() z FROM generate_series(1, $n) g" -c "VACUUM ANALYZE b$n"
  pairs=$(awk -v n=$n 'BEGIN{printf "%.0f", n*(n-1)/2}')
  row gpu "gpu_sdh 500 buckets" $n "SELECT gpu_sdh(x, y, z, 500) FROM b$n" "$pairs"
  [ $n -le 1000000 ] && row gpu "gpu_sdh 50 buckets" $n "SELECT gpu_sdh(x, y, z, 50) FROM b$n" "$pairs"
  [ $n -le 1000000 ] && row gpu "gpu_sdh 5000 buckets" $n "SELECT gpu_sdh(x, y, z, 5000) FROM b$n" "$pairs"
  row gpu "gpu_pair_count r=inf" $n "SELECT gpu_pair_count(x, y, z, 'Infinity') FROM b$n" "$pairs"
  [ $n -le 100000 ] && row cpu "gpu_sdh 500 buckets" $n "SELECT gpu_sdh(x, y, z, 500) FROM b$n" "$pairs"
done
echo
# Prints a join section: title, then gpu_simjoin on table $2 with eps $3 on both engines (and
# the function scan with $4 = fs), then the PostGIS query $5 over the geometry built by $6, then
# the plain SQL query $7 (limited to PLAIN_SQL_TIMEOUT, default 60 s) after the setup $8.
join_section() {
  echo; echo "$1"; echo
  echo "| method | pairs | ms (median of $RUNS) | rows/s out |"
  echo "|---|---|---|---|"
  local dev
  rate() { awk -v p="$res" -v us="$med" 'BEGIN{ if (us > 0 && p ~ /^[0-9]+$/) printf "%.3g", p / (us / 1e6); else print "-" }'; }
  for dev in gpu cpu; do
    bench $dev "SELECT count(*) FROM gpu_simjoin('$2', $3)"
    echo "| gpu_simjoin device=$dev, custom scan (kernel / merge / prepare / scan / transfer ms: $split) | $res | $(( med / 1000 )) | $(rate) |"
    if [ "$4" = fs ]; then
      # the keys used (count(*) needs no column, so the scan skips the key lookups)
      bench $dev "SELECT count(*), sum(id1 - id2) FROM gpu_simjoin('$2', $3)"
      echo "| gpu_simjoin device=$dev, custom scan, keys used: \`SELECT count(*), sum(id1 - id2) ...\` | ${res%%|*} | $(( med / 1000 )) | $(res=${res%%|*}; rate) |"
      bench $dev "SELECT count(*) FROM gpu_simjoin('$2', $3)" "SET gpu2bs.enable_customscan = off;"
      echo "| gpu_simjoin device=$dev, function scan + tuplestore | $res | $(( med / 1000 )) | $(rate) |"
    fi
  done
  local t0 t1
  if [ -n "$5" ] && q -c "SELECT 1 FROM pg_extension WHERE extname = 'postgis'" | grep -q 1; then
    eval "q $6" >/dev/null
    t0=$(date +%s%N); res=$(q -c "$5"); t1=$(date +%s%N)
    echo "| PostGIS, one run: \`$5\` | $res | $(( (t1 - t0) / 1000000 )) | - |"
  fi
  if [ -n "${7:-}" ]; then
    eval "q $8" >/dev/null
    t0=$(date +%s%N)
    res=$(q -c "SET statement_timeout = '${PLAIN_SQL_TIMEOUT:-60}s'" -c "$7" 2>&1 | tail -1)
    t1=$(date +%s%N)
    [[ $res =~ ^[0-9]+$ ]] || res="not finished: ${res//|/ }"
    echo "| plain SQL, one run: \`$7\` | $res | $(( (t1 - t0) / 1000000 )) | - |"
  fi
}
join_section "Similarity join, 1,000,000 uniform 2-D points (numpy default_rng(1)), eps = 0.0025" u2 0.0025 fs \
  "SELECT count(*) FROM u2 a JOIN u2 b ON ST_DWithin(a.geom, b.geom, 0.0025) AND a.id < b.id" \
  "-c 'ALTER TABLE u2 ADD COLUMN IF NOT EXISTS geom geometry(Point)' -c 'UPDATE u2 SET geom = ST_MakePoint(x, y)' -c 'CREATE INDEX IF NOT EXISTS u2_geom ON u2 USING gist (geom)' -c 'VACUUM ANALYZE u2'" \
  "SELECT count(*) FROM u2 a JOIN u2 b ON b.x BETWEEN a.x - 0.0025 AND a.x + 0.0025 AND (a.x - b.x) ^ 2 + (a.y - b.y) ^ 2 <= 0.0025 ^ 2 AND a.id < b.id" \
  "-c 'CREATE INDEX IF NOT EXISTS u2_x ON u2 (x)' -c 'ANALYZE u2'"
join_section "Skewed data: 1,000,000 2-D points, exponential with lambda = 40 (prepare.py synth --dist exponential --seed 1), eps = 0.000125: about the result size of the uniform join" e2 0.000125 "" "" ""
join_section "3-D: Hipparcos stars as unit vectors (117,955 rows), eps = 0.0087265 (0.5 degree chord)" stars 0.0087265 "" \
  "SELECT count(*) FROM stars a JOIN stars b ON ST_3DDWithin(a.geom, b.geom, 0.0087265) AND a.id < b.id" \
  "-c 'ALTER TABLE stars ADD COLUMN IF NOT EXISTS geom geometry(PointZ)' -c 'UPDATE stars SET geom = ST_MakePoint(x, y, z)' -c 'CREATE INDEX IF NOT EXISTS stars_geom ON stars USING gist (geom gist_geometry_ops_nd)' -c 'VACUUM ANALYZE stars'" \
  "SELECT count(*) FROM stars a JOIN stars b ON b.x BETWEEN a.x - 0.0087265 AND a.x + 0.0087265 AND (a.x - b.x) ^ 2 + (a.y - b.y) ^ 2 + (a.z - b.z) ^ 2 <= 0.0087265 ^ 2 AND a.id < b.id" \
  "-c 'CREATE INDEX IF NOT EXISTS stars_x ON stars (x)' -c 'ANALYZE stars'"

echo
echo "CPU engine join load balancing (gpu2bs.join_balance), uniform u2 (eps 0.0025) and exponential e2 (eps 0.000125)"
echo
echo "| gpu2bs.join_balance | table | pairs | ms (median of $RUNS) | kernel / merge / prepare / scan / transfer ms |"
echo "|---|---|---|---|---|"
for b in auto workqueue cell sortbywl; do
  for t in "u2 0.0025" "e2 0.000125"; do
    set -- $t
    bench cpu "SELECT count(*) FROM gpu_simjoin('$1', $2)" "SET gpu2bs.join_balance = $b;"
    echo "| $b | $1 | $res | $(( med / 1000 )) | $split |"
  done
done
