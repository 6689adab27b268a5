# Sourced by the device scripts, from the repository root with .device carried: unpacks the
# PostgreSQL 15 bundle (pg15.tar.xz, and pginc.tar.xz for the server headers) into /opt/pg on
# the GPU machine once, and exports PG_CONFIG, LD_LIBRARY_PATH and the CUDA toolkit's PATH.
# Returns non-zero when the bundle is missing or does not unpack.
if [ ! -x /opt/pg/usr/lib/postgresql/15/bin/postgres ]; then
  mkdir -p /opt/pg && tar -C /opt/pg -xJf .device/pg15.tar.xz && chmod 755 /opt/pg || return 1
fi
[ -f /opt/pg/usr/include/postgresql/15/server/postgres.h ] || tar -C /opt/pg -xJf .device/pginc.tar.xz || return 1
export LD_LIBRARY_PATH=/opt/pg/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PG_CONFIG=/opt/pg/usr/lib/postgresql/15/bin/pg_config
export PATH=/usr/local/cuda/bin:$PATH
# Stops a server left in /tmp/pgdata by an earlier call on a warm machine (fast shutdown, waits
# up to 10 s for its pid file to go).
pg_stop_left() {
  [ -f /tmp/pgdata/postmaster.pid ] || return 0
  kill -INT "$(head -1 /tmp/pgdata/postmaster.pid)" 2>/dev/null
  for _ in $(seq 50); do [ -f /tmp/pgdata/postmaster.pid ] || break; sleep 0.2; done
}
