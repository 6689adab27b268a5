#!/usr/bin/env bash
# Non-engine share of gpu_sdh / gpu_pair_count over 1,000,000 uniform 3-D rows (u3m, numpy
# default_rng(1).random((N, 3)), test/data/prepare.py synth), relation and aggregate forms, on
# the GPU engine: for each query the median end-to-end time of RUNS (default 3) psql \timing runs
# after a warm-up in one session, the gpu2bs_info() split of the last run (kernel / merge /
# prepare / scan / transfer ms), the engine time (kernel + merge + prepare + transfer) and the
# non-engine share 1 - engine / end-to-end. Then the relation read alone (last_scan_ms, median
# of RUNS) with the reader's worker threads (gpu2bs.cpu_threads = 0), the backend thread alone
# (cpu_threads = 1) and the SQL query (direct_scan = off), beside count(*) over the table.
# Needs a running server with gpu2bs installed (PGHOST etc.); prints markdown tables. KEEP_TABLE=1
# uses the table u3m already there; SCAN_RUNS (default 5) runs for the relation read.
#   bash test/gpu/share_device.sh [device, default gpu]
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
dev=${1:-gpu}
n=1000000
csv=/tmp/u3m.csv
if [ -z "${KEEP_TABLE:-}" ]; then  # KEEP_TABLE=1: use the u3m already loaded
[ -f "$csv" ] || python3 test/data/prepare.py synth --out /tmp --n $n --dims 3 --dist uniform --seed 1 --file u3m.csv >/dev/null
q -c "DROP TABLE IF EXISTS u3m" -c "CREATE TABLE u3m (id bigint PRIMARY KEY, x float8, y float8, z float8)"
if [ -f "$csv" ]; then
  q -c "\copy u3m FROM '$csv' WITH (FORMAT csv, HEADER true)"
else  # without numpy: PostgreSQL's random() after setseed(0.5), the same distribution
  echo "(u3m from SQL random(), numpy missing)"
  q -c "SELECT setseed(0.5)" -c "INSERT INTO u3m SELECT g, random(), random(), random() FROM generate_series(1, $n) g"
fi
q -c "VACUUM ANALYZE u3m"
fi
echo "u3m: $(q -c 'SELECT count(*) FROM u3m') rows, $(q -c "SELECT pg_relation_size('u3m') / 8192") pages; device $dev;" \
  "$(q -c "SELECT string_agg(name || ' = ' || value, ', ') FROM gpu2bs_info() WHERE name IN ('engine', 'cpu_threads', 'version')")"
echo
echo "| query | form | method | end-to-end ms | kernel / merge / prepare / scan / transfer ms | engine ms | non-engine share |"
echo "|---|---|---|---|---|---|---|"
row() {  # label form method sql
  bench "$dev" "$4" "SET gpu2bs.sdh_method = $3;"
  local kern merge prep scan xfer e2e eng share
  read -r kern merge prep scan xfer <<<"$(echo "$split" | sed 's| / | |g')"
  e2e=$(awk -v us="$med" 'BEGIN{printf "%.1f", us/1000}')
  eng=$(awk -v a="$kern" -v b="$merge" -v c="$prep" -v d="$xfer" 'BEGIN{printf "%.1f", a+b+c+d}')
  share=$(awk -v us="$med" -v e="$eng" 'BEGIN{ if (us > 0) printf "%.1f %%", 100 * (1 - e * 1000 / us); }')
  echo "| $1 | $2 | $3 | $e2e | $split | $eng | $share |"
}
bench "$dev" "SELECT count(*) FROM u3m"
echo "| count(*) | scan floor | - | $(awk -v us="$med" 'BEGIN{printf "%.1f", us/1000}') | - | - | - |"
row "gpu_sdh 500 buckets" relation brute "SELECT (gpu_sdh('u3m'::regclass, 500))[1]"
row "gpu_sdh 500 buckets" aggregate brute "SELECT (gpu_sdh(x, y, z, 500))[1] FROM u3m"
row "gpu_pair_count r = Infinity" relation brute "SELECT gpu_pair_count('u3m'::regclass, 'Infinity')"
row "gpu_pair_count r = Infinity" aggregate brute "SELECT gpu_pair_count(x, y, z, 'Infinity') FROM u3m"
row "gpu_pair_count r = 0.1" relation brute "SELECT gpu_pair_count('u3m'::regclass, 0.1)"
row "gpu_pair_count r = 0.1" aggregate brute "SELECT gpu_pair_count(x, y, z, 0.1) FROM u3m"
row "gpu_pair_count r = 0.01" relation auto "SELECT gpu_pair_count('u3m'::regclass, 0.01)"
row "gpu_pair_count r = 0.01" aggregate auto "SELECT gpu_pair_count(x, y, z, 0.01) FROM u3m"
echo
SCAN_RUNS=${SCAN_RUNS:-5}
echo "Relation read of gpu_pair_count('u3m'::regclass, 0.01), last_scan_ms, median of $SCAN_RUNS after a warm-up:"
echo
echo "| reader | scan ms | path |"
echo "|---|---|---|"
scan_row() {  # label setup
  local out
  out=$( { echo "SET gpu2bs.device = $dev; $2"; echo "SELECT gpu_pair_count('u3m'::regclass, 0.01);"
           for ((r = 0; r < SCAN_RUNS; r++)); do
             echo "SELECT gpu_pair_count('u3m'::regclass, 0.01);"
             echo "SELECT 'scan', (SELECT value FROM gpu2bs_info() WHERE name = 'last_scan_ms'), (SELECT value FROM gpu2bs_info() WHERE name = 'last_scan_path');"
           done; } | psql -X -q -At -F ' ' -v ON_ERROR_STOP=1 | awk '$1 == "scan" {print $2, $3}')
  echo "| $1 | $(awk '{print $1}' <<<"$out" | sort -n | sed -n "$(( (SCAN_RUNS + 1) / 2 ))p") | $(awk '{print $2}' <<<"$out" | sort -u | tr '\n' ' ') |"
}
scan_row "direct, worker threads (cpu_threads = 0: one per core)" "SET gpu2bs.cpu_threads = 0;"
scan_row "direct, backend thread alone (cpu_threads = 1)" "SET gpu2bs.cpu_threads = 1;"
scan_row "SQL query through SPI (direct_scan = off)" "SET gpu2bs.direct_scan = off;"
