#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .device (PostgreSQL
# bundle + the extension staged by `make install DESTDIR=$PWD/.device/stage`), .devdata (real
# data: stars3d.csv.gz, atoms.csv.gz from build/data) and .whl (psycopg wheels) carried. Steps, each logged under $OUT:
#   1. pg_regress suite and isolationtester specs with gpu2bs.device = gpu
#   2. reliability tests (pytest) with gpu2bs.device = gpu
#   3. CPU vs GPU differential test inside PostgreSQL on random and real data
#   4. end-to-end SQL benchmark (test/gpu/bench_sql.sh)
#   5. paper: synthetic sets like the load-imbalance paper's (test/gpu/bench_join_paper.sh)
#   6. join1e9: a self-join of ~1e9 pairs with memory bounded by settings (test/gpu/join_1e9.sh)
#   7. pushdown: the pushdown targets on u2, eps 0.01, pushdown on vs off (test/gpu/bench_pushdown.sh);
#      split: where the time of each pushed-down shape goes (test/gpu/pushdown_split.sh)
#   8. engine: test/gpu's metamorphic, memory and cancel tests (builds test/gpu/build/test_gpu;
#      the whole test_gpu with test/gpu/device_run.sh)
#   9. pairwise: gpu_pairwise kNN / threshold / SQL benchmark beside PyTorch (test/gpu/bench_pairwise.sh;
#      needs test/gpu/build/bench_pairwise, built here with make -C test/gpu all bench, carried)
#   9. sliding: builds and runs test/gpu/build/test_sliding (in-place data sliding vs CUB and std)
#      and test/gpu/build/bench_sliding (writes $OUT/2026-11-23-h100-sliding.txt, to be stored in
#      test/bench/results/); needs no PostgreSQL, and runs alone when it is the only step
#  10. prep: non-engine share of gpu_sdh / gpu_pair_count at 1e6 rows, aggregate and relation
#      forms (test/gpu/paircount_prep.sh)
#  11. resolve: resolution of cell pairs vs brute force at engine level, ~5 min of GPU time
#      (test/gpu/resolve_device.sh; needs test/gpu built)
# Usage: bash test/gpu/device_suite.sh [steps, default "regress pytest diff bench"]
set -uo pipefail
steps=${1:-"regress pytest diff bench"}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if [[ $steps == *sliding* ]]; then
  make -C test/gpu -j16 sliding > "$OUT/sliding-build.log" 2>&1 || tail -30 "$OUT/sliding-build.log"
  timeout ${SLIDING_TIMEOUT:-300} test/gpu/build/test_sliding > "$OUT/test_sliding.log" 2>&1
  echo "test_sliding: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/test_sliding.log" | tr '\n' ' ')"
  { echo "# $(date -u +%F) $(head -1 "$OUT/gpu.txt"), command: test/gpu/build/bench_sliding 5"
    timeout ${SLIDING_TIMEOUT:-300} test/gpu/build/bench_sliding 5; } > "$OUT/2026-11-23-h100-sliding.txt" 2>&1
  tail -5 "$OUT/2026-11-23-h100-sliding.txt"
  [[ $steps == sliding ]] && exit 0
fi
export PG_OPTS="-c shared_buffers=4GB -c work_mem=256MB -c max_parallel_workers_per_gather=8"
# a server left by an earlier call on a warm machine is stopped first
source test/gpu/device_env.sh || exit 1
pg_stop_left
source .device/pg-up.sh || exit 1
rm -rf /tmp/src; cp -r . /tmp/src 2>/dev/null; chmod -R a+rX /tmp/src; cd /tmp/src
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpu2bs" -c "CREATE EXTENSION IF NOT EXISTS postgis"
psql -X -c "SELECT * FROM gpu2bs_info()" | tee "$OUT/info.txt"
summary=""
if [[ $steps == *regress* ]]; then
  tests=$(sed -nE 's/^REGRESS *= *//p' Makefile)
  PGOPTIONS="-c gpu2bs.device=gpu" "$PG_REGRESS" --bindir="$PGBIN" --inputdir=test --load-extension=gpu2bs \
    --outputdir=/tmp/regress-gpu --user=pgdev $tests > "$OUT/regress-gpu.log" 2>&1
  [ -f /tmp/regress-gpu/regression.diffs ] && cp /tmp/regress-gpu/regression.diffs "$OUT/regress-gpu.diffs"
  summary+="regress(gpu): $(grep -E 'tests (passed|failed)' "$OUT/regress-gpu.log" | tr -d '=')\n"
  # isolationtester specs (concurrent DDL while a call waits), on the GPU engine
  iso="$(dirname "$PG_REGRESS")/../isolation/pg_isolation_regress"
  if [ -x "$iso" ]; then
    specs=$(sed -nE 's/^ISOLATION *= *//p' Makefile)
    PGOPTIONS="-c gpu2bs.device=gpu" "$iso" --bindir="$PGBIN" --inputdir=test --load-extension=gpu2bs \
      --outputdir=/tmp/isolation-gpu --user=pgdev $specs > "$OUT/isolation-gpu.log" 2>&1
    [ -f /tmp/isolation-gpu/regression.diffs ] && cp /tmp/isolation-gpu/regression.diffs "$OUT/isolation-gpu.diffs"
    summary+="isolation(gpu): $(grep -E 'tests (passed|failed)' "$OUT/isolation-gpu.log" | tr -d '=')\n"
  else
    summary+="isolation(gpu): pg_isolation_regress not in the bundle\n"
  fi
fi
if [[ $steps == *pytest* ]]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
  PYTHONPATH=/tmp/site GPU2BS_TEST_DEVICE=gpu GPU2BS_SOAK_SECONDS=${SOAK:-30} GPU2BS_SERVER_LOG=/tmp/pg.log \
    python3 -m pytest -q -p no:cacheprovider test/reliability > "$OUT/pytest-gpu.log" 2>&1
  summary+="pytest(gpu): $(tail -1 "$OUT/pytest-gpu.log")\n"
fi
if [[ $steps == *diff* || $steps == *bench* || $steps == *pushdown* || $steps == *split* ]]; then
  psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
DROP TABLE IF EXISTS u3, u6, dup, stars, atoms, atoms_scaled, u2;
SELECT setseed(0.25);
CREATE TABLE u3 AS SELECT g::bigint AS id, random() x, random() y, random() z FROM generate_series(1, 100000) g;
ALTER TABLE u3 ADD PRIMARY KEY (id);
CREATE TABLE u6 AS SELECT g::bigint AS id, random() a, random() b, random() c, random() d, random() e, random() f FROM generate_series(1, 50000) g;
ALTER TABLE u6 ADD PRIMARY KEY (id);
CREATE TABLE dup AS SELECT g::bigint AS id, 1.5::float8 x, -2.0::float8 y, 0.25::float8 z FROM generate_series(1, 1000) g;
ALTER TABLE dup ADD PRIMARY KEY (id);
CREATE TABLE stars (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE atoms (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE u2 (id bigint PRIMARY KEY, x float8, y float8);
SQL
  psql -X -q -c "\copy stars FROM PROGRAM 'gzip -dc .devdata/stars3d.csv.gz' WITH (FORMAT csv, HEADER true)" \
             -c "\copy atoms FROM PROGRAM 'gzip -dc .devdata/atoms.csv.gz' WITH (FORMAT csv, HEADER true)"
  python3 test/data/prepare.py synth --out /tmp --n 1000000 --dims 2 --dist uniform --seed 1 --file u2.csv >/dev/null
  python3 test/data/prepare.py synth --out /tmp --n 1000000 --dims 2 --dist exponential --lambda 40 --seed 1 --file e2.csv >/dev/null
  psql -X -q -c "DROP TABLE IF EXISTS e2" -c "CREATE TABLE e2 (id bigint PRIMARY KEY, x float8, y float8)" \
    -c "\copy e2 FROM '/tmp/e2.csv' WITH (FORMAT csv, HEADER true)"
  psql -X -q -c "\copy u2 FROM '/tmp/u2.csv' WITH (FORMAT csv, HEADER true)" \
    -c "CREATE TABLE atoms_scaled AS SELECT id, x / 110 AS x, y / 110 AS y, z / 110 AS z FROM atoms WHERE id <= 50000" \
    -c "ALTER TABLE atoms_scaled ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE"
fi
if [[ $steps == *diff* ]]; then
  psql -X -f test/gpu/differential.sql > "$OUT/differential.log" 2>&1
  summary+="differential: $(grep -A2 identical_cases "$OUT/differential.log" | tail -1)\n"
fi
if [[ $steps == *bench* ]]; then
  bash test/gpu/bench_sql.sh > "$OUT/bench_sql.md" 2>&1
  summary+="bench: see bench_sql.md\n"
fi
if [[ $steps == *paper* ]]; then
  bash test/gpu/bench_join_paper.sh > "$OUT/bench_join_paper.md" 2>&1
  summary+="paper sets: see bench_join_paper.md\n"
fi
if [[ $steps == *pushdown* ]]; then
  DEV=gpu EPS=0.01 TABLE=u2 bash test/gpu/bench_pushdown.sh > "$OUT/bench_pushdown.md" 2>&1
  [ "${GPU_ONLY:-0}" = 1 ] || DEV=cpu EPS=0.0025 TABLE=u2 bash test/gpu/bench_pushdown.sh >> "$OUT/bench_pushdown.md" 2>&1
  summary+="pushdown: see bench_pushdown.md\n"
fi
if [[ $steps == *split* ]]; then
  bash test/gpu/pushdown_split.sh > "$OUT/pushdown_split.txt" 2>&1
  summary+="split: see pushdown_split.txt\n"
fi
if [[ $steps == *join1e9* ]]; then
  bash test/gpu/join_1e9.sh > "$OUT/join_1e9.txt" 2>&1
  summary+="1e9-pair join: see join_1e9.txt\n"
fi
if [[ $steps == *engine* ]]; then
  make -C test/gpu -j"$(nproc)" all > "$OUT/test_gpu-build.log" 2>&1
  test/gpu/build/test_gpu --gtest_filter='Metamorphic.*:Memory.*:Cancel.*' > "$OUT/test_gpu-engine.log" 2>&1
  summary+="engine (metamorphic, memory, cancel): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/test_gpu-engine.log" | tr '\n' ' ')\n"
fi
if [[ $steps == *pairwise* ]]; then
  timeout 300 bash test/gpu/bench_pairwise.sh > "$OUT/bench_pairwise.md" 2>&1
  summary+="pairwise: see bench_pairwise.md\n"
fi
if [[ $steps == *prep* ]]; then
  bash test/gpu/paircount_prep.sh gpu > "$OUT/paircount_prep.md" 2>&1
  summary+="prep: see paircount_prep.md\n"
fi
if [[ $steps == *resolve* ]]; then
  bash test/gpu/resolve_device.sh > "$OUT/resolve-summary.txt" 2>&1
  summary+="resolve: see resolve-summary.txt, resolve-bench.md\n"
fi
grep -c 'terminated by signal' /tmp/pg.log | sed 's/^/server log "terminated by signal" lines: /' | tee -a "$OUT/gpu.txt"
cp /tmp/pg.log "$OUT/server.log"
printf "%b" "$summary" | tee "$OUT/summary.txt"
