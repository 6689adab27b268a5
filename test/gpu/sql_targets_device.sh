#!/usr/bin/env bash
# Issue 17's targets through SQL on the GPU machine (device tool), in one call, from the
# repository root with .device and .devdata carried: builds and installs the extension
# (device_build.sh, EXT_ONLY=1), starts the bundled PostgreSQL (shared_buffers 4GB, work_mem
# 256MB), then
#   dbscan: test/bench/dbscan.sh, 1e6 points, gpu_dbscan on the GPU and the CPU engine (custom
#           scan, and the function scan for the lean form) beside one ST_ClusterDBSCAN run
#   xi:     test/bench/xi_sql.sh, gpu_xi of 1e6 data + 1e6 randoms, 30 log bins to 0.02
#   rdf:    test/bench/rdf_freud.py on every core: the CPU engine (RDF_BIN, a CPU-only link of
#           test/bench/bench_rdf.cpp) against freud density.RDF (wheels in .whl, installed to
#           /tmp/site), RDF_N atoms (default 200000), r_max 14.99, 500 bins
# Steps: STEPS (default "dbscan xi rdf"). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
steps=${STEPS:-"dbscan xi rdf"}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  grep -m1 'model name' /proc/cpuinfo; python3 -c 'import numpy, scipy; print("numpy", numpy.__version__, "scipy", scipy.__version__)' 2>&1; } | tee "$OUT/machine.txt"
EXT_ONLY=1 bash test/gpu/device_build.sh || exit 1
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=8"
source .device/pg-up.sh || exit 1
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" -c "CREATE EXTENSION IF NOT EXISTS postgis" || exit 1
psql -X -At -c "SELECT name || ' ' || value FROM gpu2bs_info() WHERE name IN ('version', 'engine', 'gpu', 'cpu_threads', 'cpu_kernels')" | tee -a "$OUT/machine.txt"
if [[ $steps == *dbscan* ]]; then
  t0=$(date +%s)
  ENGINES="gpu cpu" PG_RUNS=${PG_RUNS:-1} FSCAN=1 bash test/bench/dbscan.sh 1000000 0.003 10 1 > "$OUT/dbscan_sql.md" 2> "$OUT/dbscan_sql.err"
  echo "dbscan rc=$? in $(( $(date +%s) - t0 )) s"; cat "$OUT/dbscan_sql.md" "$OUT/dbscan_sql.err"
  psql -X -At -c "EXPLAIN (COSTS OFF) SELECT count(*), count(cluster) FROM gpu_dbscan('bench_dbscan', 0.003, 10, '{x,y}')" | tee -a "$OUT/dbscan_sql.md"
fi
if [[ $steps == *xi* ]]; then
  t0=$(date +%s)
  ENGINES="gpu cpu" bash test/bench/xi_sql.sh 1000000 1000000 > "$OUT/xi_sql.md" 2>&1
  echo "xi rc=$? in $(( $(date +%s) - t0 )) s"; cat "$OUT/xi_sql.md"
fi
if [[ $steps == *rdf* ]]; then
  if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  fi
  zcat .devdata/atoms.csv.gz > /tmp/atoms.csv
  t0=$(date +%s)
  python3 test/bench/rdf_freud.py /tmp/atoms.csv "${RDF_BIN:-build/bench_rdf_cpu}" "${RDF_N:-200000}" 14.99 500 "$(nproc)" > "$OUT/rdf_freud.txt" 2>&1
  echo "rdf rc=$? in $(( $(date +%s) - t0 )) s"; cat "$OUT/rdf_freud.txt"
fi
{ grep -c "terminated by signal" /tmp/pg.log || true; } | sed 's/^/backends terminated by a signal: /'
