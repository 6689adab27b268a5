#!/usr/bin/env bash
# A similarity self-join whose result is ~1e9 pairs, through SQL, with
# device and host memory bounded by settings (gpu2bs.gpu_memory_limit, work_mem).
#
# Runs on the GPU machine (device tool) from the repository root, with .device carried (the
# PostgreSQL bundle and the extension staged by `make install DESTDIR=$PWD/.device/stage`), as
# test/gpu/device_suite.sh does:
#   bash test/gpu/join_1e9.sh
# Environment (defaults): N=2000000 points (uniform in the unit cube), PAIRS=1e9 (target result
# size; eps is derived from it), GPU_MEM_MB=2048 (gpu2bs.gpu_memory_limit), WORK_MEM=64MB.
# Reports to stdout and $OUT/join_1e9.txt: eps, rows, time, rows/s, the backend's peak RSS
# (VmHWM of /proc/<pg_backend_pid()>/status, reset just before the join), temp bytes
# (pg_stat_database and the server log with log_temp_files = 0), the peak GPU memory seen by
# nvidia-smi, and the gpu2bs_info() split of the join.
set -uo pipefail
N=${N:-2000000}
PAIRS=${PAIRS:-1e9}
GPU_MEM_MB=${GPU_MEM_MB:-2048}
WORK_MEM=${WORK_MEM:-64MB}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
REPORT="$OUT/join_1e9.txt"
: >"$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$REPORT"
# Temporary files are logged (size per file) so temp bytes are known even if the statistics
# lag; no parallel workers: the join runs in one backend, whose RSS is measured.
export PG_OPTS="-c shared_buffers=1GB -c work_mem=$WORK_MEM -c max_parallel_workers_per_gather=0 -c log_temp_files=0 -c temp_file_limit=-1"
# a server left by an earlier call on a warm machine is stopped first
source test/gpu/device_env.sh || exit 1
pg_stop_left
# shellcheck disable=SC1091
source .device/pg-up.sh || exit 1
df -h /tmp | tail -1 | awk '{print "disk free on /tmp: " $4}' | tee -a "$REPORT"

# eps for ~PAIRS unordered pairs among N uniform points in the unit cube: N^2/2 * 4/3 pi eps^3
# times the share of the ball inside the cube, 1 - 9 eps / 8 to first order (one correction step).
EPS=$(awk -v n="$N" -v p="$PAIRS" 'BEGIN {
  pi = atan2(0, -1); e = (2 * p / (n * n * 4 / 3 * pi)) ^ (1 / 3);
  e = e / (1 - 9 * e / 8) ^ (1 / 3); printf "%.6f", e }')
say "N = $N, target pairs = $PAIRS, eps = $EPS, gpu2bs.gpu_memory_limit = ${GPU_MEM_MB}MB, work_mem = $WORK_MEM"

psql -X -q -v ON_ERROR_STOP=1 <<SQL || { say "table setup failed"; exit 1; }
CREATE EXTENSION IF NOT EXISTS gpu2bs;
DROP TABLE IF EXISTS t;
SELECT setseed(0.5);
CREATE TABLE t AS SELECT g::bigint AS id, random() AS x, random() AS y, random() AS z
  FROM generate_series(1, $N) g;
ALTER TABLE t ADD PRIMARY KEY (id);
VACUUM ANALYZE t;
SQL

# GPU memory as nvidia-smi sees it (all processes), every 200 ms, while the join runs.
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$OUT/gpu_mem.csv" 2>/dev/null &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

temp_before=$(psql -X -At -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
# One session: warm-up (CUDA initializes once per backend; the table is read once), then the
# backend's peak RSS is reset (clear_refs 5, as root) and the join runs with \timing.
psql -X -v ON_ERROR_STOP=1 >"$OUT/join_1e9.log" 2>&1 <<SQL
SET gpu2bs.device = gpu;
SET gpu2bs.gpu_memory_limit = '${GPU_MEM_MB}MB';
SET work_mem = '$WORK_MEM';
SET gpu2bs.max_result_rows = 0;
SELECT count(*) AS warmup FROM gpu_simjoin('t', 0.001);
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
\! echo "backend pid \$PID"; grep -E '^(VmHWM|VmRSS|RssAnon|RssShmem)' /proc/\$PID/status | sed 's/^/before: /'
\! echo 5 > /proc/\$PID/clear_refs && echo "peak RSS reset"
\timing on
SELECT count(*) AS pairs FROM gpu_simjoin('t', $EPS);
\timing off
\! grep -E '^(VmHWM|VmRSS|RssAnon|RssShmem)' /proc/\$PID/status | sed 's/^/after: /'
SELECT name, value FROM gpu2bs_info()
  WHERE name LIKE 'last_%' OR name LIKE 'gpu_memory%' OR name IN ('engine', 'gpu_device');
SELECT pg_stat_force_next_flush();
SQL
rc=$?
kill $SMI 2>/dev/null
cat "$OUT/join_1e9.log"
[ $rc -eq 0 ] || say "join session failed (rc $rc); see join_1e9.log and server.log"

sleep 1.5  # statistics are flushed at most once a second
temp_after=$(psql -X -At -c "SELECT pg_stat_clear_snapshot(); SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" | tail -1)
pairs=$(awk '/^ *pairs *$/ {getline; getline; print $1; exit}' "$OUT/join_1e9.log")
ms=$(grep -oE '^Time: [0-9.]+' "$OUT/join_1e9.log" | tail -1 | awk '{print $2}')
hwm=$(grep -E '^after: VmHWM' "$OUT/join_1e9.log" | awk '{print $3}')
hwm0=$(grep -E '^before: VmRSS' "$OUT/join_1e9.log" | awk '{print $3}')
log_temp=$(grep -oE 'temporary file: path "[^"]*", size [0-9]+' /tmp/pg.log | awk '{s += $NF} END {printf "%.0f", s}')
gpu_peak=$(sort -n "$OUT/gpu_mem.csv" 2>/dev/null | tail -1)
say "pairs: ${pairs:-?}"
say "time: ${ms:-?} ms"
[ -n "${pairs:-}" ] && [ -n "${ms:-}" ] &&
  say "rows/s: $(awk -v p="$pairs" -v ms="$ms" 'BEGIN { printf "%.3e", p / (ms / 1000) }')"
say "backend RSS before the join: ${hwm0:-?} kB; peak during the join (VmHWM after reset): ${hwm:-?} kB"
say "temp bytes (pg_stat_database delta): $(( ${temp_after:-0} - ${temp_before:-0} ))"
say "temp bytes (server log, log_temp_files = 0): ${log_temp:-0}"
say "GPU memory used, peak seen by nvidia-smi (MiB, all processes, CUDA context included): ${gpu_peak:-?}"
grep -E '^ *(last_|gpu_memory)' "$OUT/join_1e9.log" | sed 's/^ */info: /' | tee -a "$REPORT" >/dev/null
grep -E '^ *(last_|gpu_memory)' "$OUT/join_1e9.log"
cp /tmp/pg.log "$OUT/server.log"
pg_down >/dev/null 2>&1
exit $rc
