#!/usr/bin/env bash
# Debian package check: builds postgresql-15-gpu2bs with scripts/build-deb.sh (CPU-only unless
# GPU2BS_DEB_CUDA=1: the CUDA build compiles every kernel again) and checks the package's
# contents. Prints one "ok - ..." or "not ok - ..." line per check (test/run counts them).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
log=build/deb-build.log
rm -rf build/deb
opts="nocheck"; [ "${GPU2BS_DEB_CUDA:-0}" = 1 ] || opts="nocuda $opts"
if DEB_BUILD_OPTIONS="$opts" scripts/build-deb.sh >"$log" 2>&1; then
  echo "ok - dpkg-buildpackage builds the source package and postgresql-15-gpu2bs (DEB_BUILD_OPTIONS=$opts)"
else
  grep -v '^g++\|^gcc' "$log" | tail -30
  echo "not ok - dpkg-buildpackage (log: $log)"; exit 0
fi
deb=$(ls build/deb/postgresql-15-gpu2bs_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "not ok - no postgresql-15-gpu2bs .deb in build/deb"; exit 0; }
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
missing=()
for f in usr/lib/postgresql/15/lib/gpu2bs.so usr/share/postgresql/15/extension/gpu2bs.control \
         $(ls sql/gpu2bs--*.sql | sed -E 's|^sql/|usr/share/postgresql/15/extension/|') \
         usr/share/doc/postgresql-15-gpu2bs/copyright; do
  grep -qx "\./$f" <<<"$contents" || missing+=("$f")
done
if [ ${#missing[@]} = 0 ]; then
  echo "ok - $(basename "$deb") holds the library, the control file, every install and upgrade script, the documentation"
else
  echo "not ok - $(basename "$deb") lacks ${missing[*]}"
fi
x=$(mktemp -d); dpkg-deb -x "$deb" "$x"
python3 test/package/check_symbols.py "$x/usr/lib/postgresql/15/lib/gpu2bs.so" \
  sql/gpu2bs--*.sql
rm -rf "$x"
exit 0
