#!/usr/bin/env bash
# Upgrade check against a running server (PGHOST/PGPORT/PGUSER from the environment):
#   1. CREATE EXTENSION gpu2bs VERSION '0.1' and objects that use it (before.sql)
#   2. ALTER EXTENSION gpu2bs UPDATE (to default_version)
#   3. the objects still work and return what they returned before (results.sql)
#   4. the upgraded extension's objects equal a fresh install's (objects.sql)
#   5. pg_regress tests against the upgraded database
# Prints one "ok - ..." or "not ok - ..." line per check (test/run counts them).
# Usage: test/upgrade/check.sh OUTDIR "REGRESS TESTS"
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?output directory}; tests=${2:-}
mkdir -p "$out"
up=gpu2bs_upgraded; fresh=gpu2bs_fresh
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
from_version=0.1
to_version=$(sed -nE "s/^default_version *= *'([^']+)'.*/\1/p" "$here/../../gpu2bs.control")

q -d postgres -c "DROP DATABASE IF EXISTS $up" -c "DROP DATABASE IF EXISTS $fresh" -c "CREATE DATABASE $up" -c "CREATE DATABASE $fresh" >"$out/setup.log" 2>&1 \
  || { cat "$out/setup.log"; notok "create databases"; exit 0; }

if q -d $up -c "CREATE EXTENSION gpu2bs VERSION '$from_version'" -f "$here/before.sql" >"$out/before.log" 2>&1 &&
   q -d $up -f "$here/results.sql" >"$out/results-before.txt" 2>&1 &&
   [ "$(q -d $up -c "SELECT extversion FROM pg_extension WHERE extname = 'gpu2bs'")" = "$from_version" ]; then
  ok "install $from_version and create a table, a view over gpu_simjoin, SQL functions over gpu_sdh and gpu_pair_count, a materialized view"
else
  cat "$out/before.log" "$out/results-before.txt" 2>/dev/null | tail -20; notok "install $from_version and create objects that use it"
fi

if q -d $up -c "ALTER EXTENSION gpu2bs UPDATE" >"$out/update.log" 2>&1 &&
   [ "$(q -d $up -c "SELECT extversion FROM pg_extension WHERE extname = 'gpu2bs'")" = "$to_version" ]; then
  ok "ALTER EXTENSION gpu2bs UPDATE: $from_version -> $to_version"
else
  cat "$out/update.log"; notok "ALTER EXTENSION gpu2bs UPDATE to $to_version"
fi

if q -d $up -f "$here/results.sql" >"$out/results-after.txt" 2>&1 &&
   diff -u "$out/results-before.txt" "$out/results-after.txt" >"$out/results.diff"; then
  ok "objects created on $from_version work after the upgrade, with the same results"
else
  head -40 "$out/results.diff" "$out/results-after.txt"; notok "objects created on $from_version after the upgrade"
fi

if q -d $fresh -c "CREATE EXTENSION gpu2bs" >"$out/fresh.log" 2>&1 &&
   q -d $up -f "$here/objects.sql" >"$out/objects-upgraded.txt" 2>&1 &&
   q -d $fresh -f "$here/objects.sql" >"$out/objects-fresh.txt" 2>&1 &&
   diff -u "$out/objects-fresh.txt" "$out/objects-upgraded.txt" >"$out/objects.diff"; then
  ok "upgraded extension equals a fresh $to_version install ($(wc -l <"$out/objects-fresh.txt") objects, definitions and comments)"
else
  cat "$out/fresh.log"; head -60 "$out/objects.diff"; notok "upgraded extension equals a fresh $to_version install (diff: $out/objects.diff)"
fi

if [ -n "$tests" ]; then
  # the regression tests against the upgraded database (the before.sql objects stay in schema upg)
  "$(dirname "$(pg_config --pgxs)")/../test/regress/pg_regress" --bindir="$(pg_config --bindir)" \
    --inputdir="$here/.." --use-existing --dbname=$up --outputdir="$out/regress" $tests >"$out/regress.log" 2>&1
  grep -E '^(ok|not ok) |\.\.\. (ok|FAILED)' "$out/regress.log" | while read -r line; do
    name=$(sed -E 's/^(ok|not ok) +[0-9]+ +(- )?\+? *//; s/^test //; s/ +\.\.\..*//; s/ +[0-9]+ ms$//' <<<"$line")
    case "$line" in
      "not ok"*|*FAILED*) notok "regress $name on the upgraded install" ;;
      *) ok "regress $name on the upgraded install" ;;
    esac
  done
  grep -qE '^(ok|not ok) |\.\.\. (ok|FAILED)' "$out/regress.log" || { tail -20 "$out/regress.log"; notok "pg_regress on the upgraded install"; }
  [ -f "$out/regress/regression.diffs" ] && grep -qE '^not ok|FAILED' "$out/regress.log" && head -60 "$out/regress/regression.diffs"
fi
q -d postgres -c "DROP DATABASE IF EXISTS $up" -c "DROP DATABASE IF EXISTS $fresh" >/dev/null 2>&1
exit 0
