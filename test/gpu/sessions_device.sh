#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root with .device carried, after
# test/gpu/device_build.sh installed the extension into /opt/pg: a fresh cluster with gpu2bs in
# shared_preload_libraries (the device memory admission), then test/bench/sessions.sh with
# gpu2bs.device = gpu (CLIENTS sessions for SECONDS against one session), with the device's
# memory in use sampled every 200 ms by nvidia-smi. Writes $OUT/sessions.md.
#   bash test/gpu/sessions_device.sh [CLIENTS=32] [SECONDS=60]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
clients=${1:-32}; secs=${2:-60}
source test/gpu/device_env.sh || exit 1
pg_stop_left
rm -rf /tmp/pgdata
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_connections=100 -c shared_preload_libraries=gpu2bs"
source .device/pg-up.sh >/dev/null || exit 1
R="$OUT/sessions.md"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits -lms 200 > "$OUT/gpu_memory.csv" 2>&1 &
smi=$!
{
  echo "# $clients concurrent sessions on one GPU, mixed functions, $secs s"
  echo
  echo "Date: $(date -u '+%F %H:%M UTC'); machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader), $(nproc) cores;"
  echo "command: \`bash test/gpu/sessions_device.sh $clients $secs\` (test/bench/sessions.sh with PGOPTIONS='-c gpu2bs.device=gpu';"
  echo "PostgreSQL 15, shared_preload_libraries = gpu2bs, gpu2bs.gpu_memory_total default: 90 % of the device)."
  echo
  echo '```'
  PGOPTIONS='-c gpu2bs.device=gpu' SESSIONS_LOGS="$OUT" bash test/bench/sessions.sh "$clients" "$secs" 1 2>&1 | grep -v NOTICE
  echo "rc=${PIPESTATUS[0]}"
  echo '```'
} > "$R"
kill $smi 2>/dev/null
awk -F', ' '{ if ($1 + 0 > m) m = $1 + 0; t = $2 } END { printf "\nDevice memory in use (nvidia-smi, every 200 ms, all processes and CUDA contexts): peak %d MiB of %d MiB.\n", m, t }' "$OUT/gpu_memory.csv" >> "$R"
cat "$R"
