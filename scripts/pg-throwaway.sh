#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for the demo and the tests.
#   scripts/pg-throwaway.sh start DIR [PORT]   initdb (once) and start; prints the env to source
#   scripts/pg-throwaway.sh stop DIR
# The server runs as the invoking user, or as 'postgres' when invoked as root (PostgreSQL
# refuses to run as root). It listens only on a Unix socket in DIR.
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?directory}; port=${3:-55432}
pgbin=${PGBIN:-$(pg_config --bindir)}
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
as_user() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_user "$pgbin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_user "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
      "-k $dir -c listen_addresses= -p $port -c fsync=off -c shared_buffers=256MB -c work_mem=64MB -c max_parallel_workers_per_gather=2 ${PG_OPTS:-}" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres"
    ;;
  stop)
    [ -f "$dir/data/postmaster.pid" ] && as_user "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    ;;
  *) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
