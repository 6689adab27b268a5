#!/usr/bin/env bash
# The relation read of the relation forms with gpu2bs.direct_scan on (direct heap reader) and
# off (the SQL query through SPI): gpu2bs_info()'s last_scan_ms of a call that reads TABLES and
# does little engine work (count(*) of gpu_simjoin with eps EPS, default 0.001, pushed down), median of RUNS
# after a warm-up in one session, the two settings alternating; beside it PostgreSQL's own
# floor, SELECT count(*) and count(<last column>) over the table (psql \timing, median).
# Needs a running server (PGHOST etc.) and the tables, e.g. u2 / u3 of test/data/prepare.py:
#   TABLES="u2 u3" RUNS=9 bash test/bench/direct_scan.sh
# Prints a markdown table.
set -uo pipefail
RUNS=${RUNS:-9}
TABLES=${TABLES:-u2 u3}
DEV=${DEV:-cpu}
EPS=${EPS:-0.001}
med() { sort -n | awk '{a[NR] = $1} END {if (NR) printf "%.1f", a[int((NR + 1) / 2)]; else print "-"}'; }
# scan ms of RUNS calls in one session with direct_scan = $2 over table $1
scan_ms() {
  { echo "SET gpu2bs.device = $DEV; SET gpu2bs.direct_scan = $2;"
    echo "SELECT count(*) FROM gpu_simjoin('$1', $EPS);"
    for ((r = 0; r < RUNS; r++)); do
      echo "SELECT count(*) FROM gpu_simjoin('$1', $EPS);"
      echo "SELECT 'scan', value, (SELECT value FROM gpu2bs_info() WHERE name = 'last_scan_path') FROM gpu2bs_info() WHERE name = 'last_scan_ms';"
    done; } | psql -X -q -At -F ' ' -v ON_ERROR_STOP=1 | awk '$1 == "scan" {print $2, $3}'
}
# psql \timing ms of RUNS runs of statement $1 (after a warm-up)
sql_ms() {
  { echo "$1;"; echo '\timing on'; for ((r = 0; r < RUNS; r++)); do echo "$1;"; done; } |
    psql -X -q -At -v ON_ERROR_STOP=1 | grep -oE '^Time: [0-9.]+' | awk '{print $2}' | med
}
echo "Relation read, gpu2bs.device = $DEV, median of $RUNS (ms); $(uptime | sed 's/.*load/load/')"
echo
echo "| table | rows | direct scan ms | SPI scan ms | SPI / direct | count(*) ms | count(last column) ms |"
echo "|---|---|---|---|---|---|---|"
for t in $TABLES; do
  rows=$(psql -X -q -At -c "SELECT count(*) FROM $t")
  last=$(psql -X -q -At -c "SELECT quote_ident(attname) FROM pg_attribute WHERE attrelid = '$t'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum DESC LIMIT 1")
  on=""; off=""
  for round in 1 2; do  # alternate the settings so load changes hit both
    on+=$(scan_ms "$t" on | tee /dev/stderr | awk '$2 == "direct" {print $1}')$'\n'
    off+=$(scan_ms "$t" off | tee /dev/stderr | awk '$2 == "spi" {print $1}')$'\n'
  done 2>/dev/null
  mon=$(grep -v '^$' <<<"$on" | med)
  moff=$(grep -v '^$' <<<"$off" | med)
  ratio=$(awk -v a="$mon" -v b="$moff" 'BEGIN{ if (a > 0) printf "%.2fx", b / a; else print "-" }')
  echo "| $t | $rows | $mon | $moff | $ratio | $(sql_ms "SELECT count(*) FROM $t") | $(sql_ms "SELECT count($last) FROM $t") |"
done
