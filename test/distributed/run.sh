#!/usr/bin/env bash
# Distributed prototype (docs/distributed.md): a table of 3-D points sharded by id % 3 over three
# local PostgreSQL clusters; the SDH and the pair count of the whole table computed as block
# pairs of shards, each node computing its own shard and one pair of shards (the other shard
# read through postgres_fdw), the coordinator (node 0) collecting the partial results through
# foreign tables with asynchronous foreign scans (async_capable) and combining them by
# inclusion-exclusion of integer counts; compared with the single-node answer on node 0.
# Needs gpu2bs and postgres_fdw installed in the PostgreSQL of `pg_config` (PG_CONFIG).
#   bash test/distributed/run.sh [N [PORT]]   ends with "N passed, N failed"; status 0 when all passed
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-30000}
port0=${2:-${GPU2BS_DIST_PORT:-$((40000 + $$ % 10000))}}
export PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
base=$(mktemp -d /tmp/gpu2bs-dist.XXXXXX); chmod 755 "$base"
cleanup() { for k in 0 1 2; do "$top/scripts/pg-throwaway.sh" stop "$base/n$k" 2>/dev/null; done; rm -rf "$base" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 130' INT
passed=0; failed=0
check() { if [ "$2" = "$3" ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "not ok - $1: got '$2', want '$3'"; failed=$((failed + 1)); fi; }
for k in 0 1 2; do
  PG_OPTS="-c shared_buffers=64MB -c max_parallel_workers_per_gather=0" \
    "$top/scripts/pg-throwaway.sh" start "$base/n$k" $((port0 + k)) >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
done
psqln() { local k=$1; shift; "$PGBIN/psql" -XAtq -v ON_ERROR_STOP=1 -h "$base/n$k" -p $((port0 + k)) -U postgres -d postgres "$@"; }
nb=100; w=0.02; r=0.05
t0=$(date +%s.%N)
# Shards: node k holds the rows with id % 3 = k; every node reaches the others' shards through
# postgres_fdw (servers with async_capable).
for k in 0 1 2; do
  psqln $k <<SQL || { echo "0 passed, 1 failed"; exit 1; }
CREATE EXTENSION gpu2bs;
CREATE EXTENSION postgres_fdw;
CREATE TABLE shard AS
  SELECT id, (id * 0.6180339887) % 1 AS x, (id * 0.7548776662) % 1 AS y, (id * 0.5698402910) % 1 AS z
  FROM generate_series(1, $n) id WHERE id % 3 = $k;
ANALYZE shard;
SQL
  for j in 0 1 2; do
    [ $j = $k ] && continue
    psqln $k <<SQL || { echo "0 passed, 1 failed"; exit 1; }
CREATE SERVER n$j FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$base/n$j', port '$((port0 + j))', dbname 'postgres', async_capable 'true', fetch_size '10000');
CREATE USER MAPPING FOR CURRENT_USER SERVER n$j OPTIONS (user 'postgres');
CREATE FOREIGN TABLE shard_n$j (id int, x float8, y float8, z float8) SERVER n$j OPTIONS (table_name 'shard');
SQL
  done
done
# The partial results of node k: its own shard (single), and the union of its shard with shard
# (k + 1) % 3 (the block pair of shards it owns, read through postgres_fdw).
for k in 0 1 2; do
  j=$(( (k + 1) % 3 ))
  psqln $k <<SQL || { echo "0 passed, 1 failed"; exit 1; }
CREATE VIEW part AS
  SELECT $k AS node, $j AS other,
         (SELECT gpu_sdh_fixed(x, y, z, $nb, $w) FROM shard) AS sdh_single,
         (SELECT gpu_pair_count(x, y, z, $r) FROM shard) AS count_single,
         (SELECT gpu_sdh_fixed(x, y, z, $nb, $w) FROM (SELECT x, y, z FROM shard UNION ALL SELECT x, y, z FROM shard_n$j) u) AS sdh_union,
         (SELECT gpu_pair_count(x, y, z, $r) FROM (SELECT x, y, z FROM shard UNION ALL SELECT x, y, z FROM shard_n$j) u) AS count_union;
SQL
done
# The coordinator (node 0): the three nodes' partial results through foreign tables, read by
# one Append of asynchronous foreign scans (node 0's own through a loopback server).
psqln 0 <<SQL || { echo "0 passed, 1 failed"; exit 1; }
CREATE SERVER n0 FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$base/n0', port '$port0', dbname 'postgres', async_capable 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER n0 OPTIONS (user 'postgres');
CREATE FOREIGN TABLE part_n0 (node int, other int, sdh_single bigint[], count_single bigint, sdh_union bigint[], count_union bigint)
  SERVER n0 OPTIONS (table_name 'part');
CREATE FOREIGN TABLE part_n1 (node int, other int, sdh_single bigint[], count_single bigint, sdh_union bigint[], count_union bigint)
  SERVER n1 OPTIONS (table_name 'part');
CREATE FOREIGN TABLE part_n2 (node int, other int, sdh_single bigint[], count_single bigint, sdh_union bigint[], count_union bigint)
  SERVER n2 OPTIONS (table_name 'part');
CREATE VIEW parts AS
  SELECT * FROM part_n0 UNION ALL SELECT * FROM part_n1 UNION ALL SELECT * FROM part_n2;
-- The whole table's answer: the sum of the singles plus, for every pair of shards (i, j), the
-- union's count minus both singles (the pairs across the two shards).
CREATE FUNCTION combined(OUT sdh bigint[], OUT cnt bigint) LANGUAGE sql AS \$\$
  WITH p AS MATERIALIZED (SELECT * FROM parts),
  cross_h AS (
    SELECT k, sum(u.v) - sum(s1.v) - sum(s2.v) AS v
    FROM p, unnest(p.sdh_union) WITH ORDINALITY u(v, k)
      JOIN LATERAL unnest(p.sdh_single) WITH ORDINALITY s1(v, k1) ON k1 = k
      JOIN LATERAL unnest((SELECT q.sdh_single FROM p q WHERE q.node = p.other)) WITH ORDINALITY s2(v, k2) ON k2 = k
    GROUP BY k),
  single_h AS (
    SELECT k, sum(s.v) AS v FROM p, unnest(p.sdh_single) WITH ORDINALITY s(v, k) GROUP BY k)
  SELECT (SELECT array_agg((c.v + s.v)::bigint ORDER BY k) FROM cross_h c JOIN single_h s USING (k)),
         (SELECT sum(count_single) + sum(count_union - count_single
                   - (SELECT q.count_single FROM p q WHERE q.node = p.other)) FROM p)::bigint
\$\$;
-- The single-node answer, from every row copied to node 0.
CREATE TABLE whole AS
  SELECT * FROM shard UNION ALL SELECT * FROM shard_n1 UNION ALL SELECT * FROM shard_n2;
SQL
plan=$(psqln 0 -c "EXPLAIN (COSTS OFF) SELECT * FROM parts")
asyncs=$(grep -c "Async Foreign Scan" <<<"$plan")
check "the coordinator reads the three partial results with asynchronous foreign scans" "$asyncs" 3
got=$(psqln 0 -c "SELECT sdh::text || ' ' || cnt FROM combined()")
want=$(psqln 0 -c "SELECT (SELECT gpu_sdh_fixed(x, y, z, $nb, $w) FROM whole)::text || ' ' || (SELECT gpu_pair_count(x, y, z, $r) FROM whole)")
check "SDH (N = $n, 3 shards, $nb buckets of width $w) equals the single-node histogram" "${got% *}" "${want% *}"
check "pair count (r = $r) equals the single-node count" "${got##* }" "${want##* }"
rows=$(psqln 0 -c "SELECT count(*) FROM whole")
check "the shards hold every row once" "$rows" "$n"
# nb * w = 2 exceeds the diagonal of the unit cube: every pair is in the histogram.
total=$(psqln 0 -c "SELECT sum(v) FROM unnest((SELECT sdh FROM combined())) v")
check "the combined histogram holds every pair once" "$total" "$(( n * (n - 1) / 2 ))"
echo "# SDH sum over buckets: $total pairs within $nb x $w; pair count within $r: ${got##* }; $(echo "$(date +%s.%N) - $t0" | bc) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
