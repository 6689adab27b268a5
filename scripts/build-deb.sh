#!/usr/bin/env bash
# Builds the Debian source and binary packages (postgresql-15-gpu2bs) with dpkg-buildpackage in
# a copy of the working tree (the package build runs `make clean`, which would remove build/),
# and copies the results to build/deb/. Installs debhelper and postgresql-server-dev-all when
# missing. Arguments go to dpkg-buildpackage. DEB_BUILD_OPTIONS=nocuda builds CPU-only even
# where nvcc is present; DEB_BUILD_OPTIONS=nocheck skips the pg_regress run on the built package.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
need=()
[ -f /usr/share/perl5/Debian/Debhelper/Sequence/pgxs_loop.pm ] || need+=(postgresql-server-dev-all)
command -v dh >/dev/null || need+=(debhelper)
command -v dpkg-buildpackage >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need[@]}" >/dev/null
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
work=$(mktemp -d /tmp/gpu2bs-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
src="$work/gpu2bs-$version"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
echo "dpkg-buildpackage in $src (DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-})"
(cd "$src" && dpkg-buildpackage -us -uc "$@")
mkdir -p build/deb
find "$work" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.dsc' -o -name '*.tar.*' -o -name '*.changes' -o -name '*.buildinfo' \) -exec cp {} build/deb/ \;
ls -l build/deb
