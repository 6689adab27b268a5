#!/usr/bin/env bash
# Issue 15's targets through SQL on the GPU machine (device tool), in one call, from the
# repository root with .device, .devdata and .whl carried: builds and installs the extension
# (device_build.sh, EXT_ONLY=1), starts the bundled PostgreSQL with PostGIS (shared_buffers 4GB,
# work_mem 256MB, 8 parallel workers per gather), installs psycopg (and TreeCorr) from .whl into
# /tmp/site, then runs test/bench/expr_sql.py STEPS:
#   theta  the plain SQL theta join of 200,000 x 200,000 rows, cold and warm, NVRTC compile time
#          and cache hits, the kernel rate, PostgreSQL's nested loop on a 20,000-row sample
#   u2     the plain SQL distance join and its ST_DWithin form against gpu_simjoin (float4,
#          float8, GPU and CPU engine) and PostGIS ST_DWithin with GiST, 1e6 points
#   gen    generated vs hand-written kernels: SDH, pair count, join
#   stars  the angular histogram of the stars through SQL, then TreeCorr (metric Arc, bin_slop 1,
#          every core) beside it with the histogram compared (test/bench/angular_treecorr.py)
# .whl needs psycopg, psycopg_binary and typing_extensions; TreeCorr runs only where its wheels
# (treecorr, lsstdesc_coord) are there too (with .device and .devdata they exceed the device
# tool's 64 MiB carry limit, so a run usually leaves them out).
# Steps: STEPS (default "theta u2 gen stars"); a step starts only while DEADLINE (seconds from
# the start, default 480) leaves it STEP_MIN seconds (default 60). Everything goes to one log,
# $OUT/expr_sql.log (the device tool returns few files), besides device_build.sh's logs.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); DEADLINE=${DEADLINE:-480}
steps=${STEPS:-"theta u2 gen stars"}
LOG=$OUT/expr_sql.log
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc
  grep -m1 'model name' /proc/cpuinfo; git rev-parse HEAD 2>/dev/null; } | tee "$LOG"
EXT_ONLY=1 bash test/gpu/device_build.sh || exit 1
cat "$OUT/steps.log" >>"$LOG"
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=8"
source .device/pg-up.sh >>"$LOG" 2>&1 || { tail -20 "$LOG"; exit 1; }
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" -c "CREATE EXTENSION IF NOT EXISTS postgis" || exit 1
psql -X -At -c "SELECT name || ' ' || value FROM gpu2bs_info() WHERE name IN ('version', 'engine', 'gpu', 'cpu_threads', 'cpu_isa', 'nvrtc_library')" \
  -c "SELECT 'postgis ' || postgis_lib_version()" | tee -a "$LOG"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>"$LOG" 2>&1
export PYTHONPATH=/tmp/site
for s in $steps; do
  left=$(( DEADLINE - ($(date +%s) - T0) ))
  if [ "$left" -lt "${STEP_MIN:-60}" ]; then echo "step $s skipped: $left s left" | tee -a "$LOG"; continue; fi
  t=$(date +%s)
  timeout "$left" python3 test/bench/expr_sql.py "$s" .devdata/stars3d.csv.gz >>"$LOG" 2>&1
  echo "step $s rc=$? in $(( $(date +%s) - t )) s" | tee -a "$LOG"
  if [ "$s" = stars ] && [ -s /tmp/hist-stars.txt ]; then
    left=$(( DEADLINE - ($(date +%s) - T0) ))
    if [ "$left" -gt 45 ]; then
      t=$(date +%s)
      timeout "$left" python3 test/bench/angular_treecorr.py .devdata/stars3d.csv.gz 1000 "$(nproc)" 1 /tmp/hist-stars.txt >>"$LOG" 2>&1
      echo "treecorr (Arc, bin_slop 1) rc=$? in $(( $(date +%s) - t )) s" | tee -a "$LOG"
    else
      echo "treecorr skipped: $left s left" | tee -a "$LOG"
    fi
  fi
done
{ grep -c "terminated by signal" /tmp/pg.log || true; } | sed 's/^/backends terminated by a signal: /' | tee -a "$LOG"
grep -E "ERROR|FATAL|PANIC" /tmp/pg.log | tail -20 >>"$LOG"
echo "done at $(( $(date +%s) - T0 )) s" | tee -a "$LOG"
