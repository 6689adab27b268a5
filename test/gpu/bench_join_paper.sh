#!/usr/bin/env bash
# Similarity-join benchmark on synthetic sets like the load-imbalance paper's (Table I: 2,000,000
# points, uniform in the unit cube and exponential with lambda = 40, here in 3-D and 6-D), eps
# giving about 30 neighbours per point (exponential: eps / 20, the same expected result size,
# since the pair density of Exp(40) is 20x the uniform one per dimension), through SQL with the
# custom scan: GPU and CPU engines, the GPU join's load-balancing settings, and PostGIS
# ST_3DDWithin + GiST (gist_geometry_ops_nd) in the same server for 3-D. Run on the GPU machine
# after `source .device/pg-up.sh` (device_suite.sh step "paper"); prints markdown.
set -uo pipefail
RUNS=${PAPER_RUNS:-1}  # after a warm-up run; the sets are large and device time is scarce
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
N=${PAPER_N:-2000000}
load() {  # table dims dist
  local t=$1 d=$2 dist=$3 cols="" k
  for ((k = 1; k <= d; k++)); do cols+=", c$k float8"; done
  python3 test/data/prepare.py synth --out /tmp --n "$N" --dims "$d" --dist "$dist" --lambda 40 --seed 1 --file "$t.csv" >/dev/null || return 1
  q -c "DROP TABLE IF EXISTS $t" -c "CREATE TABLE $t (id bigint PRIMARY KEY$cols)" \
    -c "\copy $t FROM '/tmp/$t.csv' WITH (FORMAT csv, HEADER true)" -c "VACUUM ANALYZE $t" >/dev/null
}
rate() { awk -v p="$res" -v us="$med" 'BEGIN{ if (us > 0 && p ~ /^[0-9]+$/) printf "%.3g", p / (us / 1e6); else print "-" }'; }
echo "Synthetic sets like the paper's (N = $N, seed 1), SELECT count(*) FROM gpu_simjoin(t, eps), custom scan, median of $RUNS"
echo
echo "| set | eps | method | pairs | ms | rows/s out | kernel / merge / prepare / scan / transfer ms |"
echo "|---|---|---|---|---|---|---|"
for spec in "u3 3 uniform 0.0156" "e3 3 exponential 0.00078" "u6 6 uniform 0.12" "e6 6 exponential 0.006"; do
  set -- $spec
  [[ " ${PAPER_SETS:-u3 e3 u6 e6} " == *" $1 "* ]] || continue
  t=$1 d=$2 dist=$3 eps=$4
  load "$t" "$d" "$dist" || { echo "| $t | $eps | data generation failed | | | | |"; continue; }
  for dev in gpu cpu; do
    bench $dev "SELECT count(*) FROM gpu_simjoin('$t', $eps)"
    echo "| $t | $eps | gpu_simjoin device=$dev | $res | $(( med / 1000 )) | $(rate) | $split |"
  done
  # GPU load balancing other than the default (the full strategy x k grid is measured at
  # engine level: bench_kernels joinlb).
  for b in ${PAPER_BALANCE-workqueue sortbywl}; do
    bench gpu "SELECT count(*) FROM gpu_simjoin('$t', $eps)" "SET gpu2bs.join_balance = $b;"
    echo "| $t | $eps | device=gpu, join_balance=$b | $res | $(( med / 1000 )) | $(rate) | $split |"
  done
  if [ "$d" = 3 ] && q -c "SELECT 1 FROM pg_extension WHERE extname = 'postgis'" | grep -q 1; then
    q -c "ALTER TABLE $t ADD COLUMN geom geometry(PointZ)" -c "UPDATE $t SET geom = ST_MakePoint(c1, c2, c3)" \
      -c "CREATE INDEX ON $t USING gist (geom gist_geometry_ops_nd)" -c "VACUUM ANALYZE $t" >/dev/null
    sql="SELECT count(*) FROM $t a JOIN $t b ON ST_3DDWithin(a.geom, b.geom, $eps) AND a.id < b.id"
    t0=$(date +%s%N); res=$(q -c "SET statement_timeout = '${POSTGIS_TIMEOUT:-150}s'" -c "$sql" 2>&1 | tail -1); t1=$(date +%s%N)
    [[ $res =~ ^[0-9]+$ ]] || res="not finished: ${res//|/ }"
    echo "| $t | $eps | PostGIS, one run: \`$sql\` | $res | $(( (t1 - t0) / 1000000 )) | - | - |"
  fi
  q -c "DROP TABLE $t" >/dev/null
done
