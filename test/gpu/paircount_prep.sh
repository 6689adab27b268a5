#!/usr/bin/env bash
# Non-engine share of gpu_sdh and gpu_pair_count at 1,000,000 rows, aggregate and relation
# forms (run by device_suite.sh step "prep" on the GPU machine, or anywhere with a running
# server and gpu2bs installed). Table u3m: 1,000,000 uniform 3-D points, numpy
# default_rng(1).random((N, 3)) (test/data/prepare.py synth). For each query: the median end-to-end
# time of RUNS (default 3) after a warm-up in the same session, the gpu2bs_info() split of the
# last run, the engine time (prepare + transfer + kernel + merge) and the non-engine share
# 1 - engine / end-to-end (the scan, the aggregate's transition calls or the relation read,
# planning, the result). count(*) and sum(x + y + z) give the scan floor.
# Usage: bash test/gpu/paircount_prep.sh [device, default gpu]   (prints a markdown table)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
dev=${1:-gpu}
n=1000000
csv=/tmp/u3m.csv
[ -f "$csv" ] || python3 test/data/prepare.py synth --out /tmp --n $n --dims 3 --dist uniform --seed 1 --file u3m.csv >/dev/null
q -c "DROP TABLE IF EXISTS u3m" -c "CREATE TABLE u3m (id bigint PRIMARY KEY, x float8, y float8, z float8)" \
  -c "\copy u3m FROM '$csv' WITH (FORMAT csv, HEADER true)" -c "VACUUM ANALYZE u3m"
echo "u3m: $n rows; device $dev; $(q -c "SELECT value FROM gpu2bs_info() WHERE name = 'engine'" | head -1)"
echo
echo "| query | form | end-to-end ms | kernel / merge / prepare / scan / transfer ms | engine ms | non-engine share |"
echo "|---|---|---|---|---|---|"
row() {  # label form sql
  bench "$dev" "$3"
  local kern merge prep scan xfer
  read -r kern merge prep scan xfer <<<"$(echo "$split" | sed 's| / | |g')"
  local e2e eng share
  e2e=$(awk -v us="$med" 'BEGIN{printf "%.1f", us/1000}')
  eng=$(awk -v a="$kern" -v b="$merge" -v c="$prep" -v d="$xfer" 'BEGIN{printf "%.1f", a+b+c+d}')
  share=$(awk -v us="$med" -v e="$eng" 'BEGIN{ if (us > 0) printf "%.0f %%", 100 * (1 - e * 1000 / us); }')
  echo "| $1 | $2 | $e2e | $split | $eng | $share |"
}
floor() {  # label sql: a plain scan, no engine
  bench "$dev" "$2"
  echo "| $1 | scan floor | $(awk -v us="$med" 'BEGIN{printf "%.1f", us/1000}') | - | - | - |"
}
floor "count(*)" "SELECT count(*) FROM u3m"
floor "sum(x + y + z)" "SELECT sum(x + y + z) FROM u3m"
for nb in 500 5000; do
  row "gpu_sdh $nb buckets" aggregate "SELECT (gpu_sdh(x, y, z, $nb))[1] FROM u3m"
  row "gpu_sdh $nb buckets" relation "SELECT (gpu_sdh('u3m', $nb))[1]"
done
for r in 0.01 0.1 Infinity; do
  row "gpu_pair_count r = $r" aggregate "SELECT gpu_pair_count(x, y, z, '$r') FROM u3m"
  row "gpu_pair_count r = $r" relation "SELECT gpu_pair_count('u3m', '$r')"
done
echo
echo "Plans (planner default):"
q -c "EXPLAIN (COSTS OFF) SELECT gpu_pair_count(x, y, z, 0.01) FROM u3m"
