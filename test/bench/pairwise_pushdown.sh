#!/usr/bin/env bash
# gpu_pairwise with gpu2bs.enable_pushdown on and off: SELECT * ... WHERE value <= C and
# SELECT * ... LIMIT 10 over a self threshold join (l2) of table TABLE (id int, e real[]),
# each run in a fresh session (LOAD 'gpu2bs' first, so the planner hook is there), the two
# settings alternating, REPS rounds. Prints one line per run: query | setting | wall ms (psql
# \timing) | backend CPU seconds (utime + stime of the backend and its engine threads, from
# /proc, so the figure holds on a loaded machine). Needs a running server on this host
# (PGHOST etc.) and the table, e.g. 20,000 random normal 64-d vectors:
#   psql -c "CREATE TABLE bv (id int PRIMARY KEY, e real[])" -c "SELECT setseed(0.125)" \
#        -c "INSERT INTO bv SELECT i, array_agg((sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real ORDER BY k)
#            FROM generate_series(1, 20000) i, generate_series(1, 64) k GROUP BY i"
#   TABLE=bv bash test/bench/pairwise_pushdown.sh
set -uo pipefail
TABLE=${TABLE:-bv}
C=${C:-7}
THRESHOLDS=${THRESHOLDS:-8.5 9.5}
REPS=${REPS:-1 2 3}
# label setting query
run() {
  local out
  out=$(psql -X -q -At <<SQL 2>&1
LOAD 'gpu2bs';
SET gpu2bs.enable_pushdown = $2;
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
\! awk '{print "cpu0", \$14 + \$15}' /proc/\$BPID/stat
\timing on
\o /dev/null
$3;
\o
\timing off
\! awk '{print "cpu1", \$14 + \$15}' /proc/\$BPID/stat
SQL
)
  local ms c0 c1
  ms=$(grep -oE 'Time: [0-9.]+' <<<"$out" | awk '{print $2}')
  c0=$(awk '/^cpu0/ {print $2}' <<<"$out")
  c1=$(awk '/^cpu1/ {print $2}' <<<"$out")
  echo "$1 | $2 | $ms | $(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", (b - a) / hz}')"
}
echo "$(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/')"
for rep in $REPS; do
  for s in on off; do
    for t in $THRESHOLDS; do
      run "threshold $t, value <= $C" $s "SELECT * FROM gpu_pairwise('$TABLE', '$TABLE', 'e', 'l2', threshold => $t) WHERE value <= $C"
      run "threshold $t, LIMIT 10" $s "SELECT * FROM gpu_pairwise('$TABLE', '$TABLE', 'e', 'l2', threshold => $t) LIMIT 10"
    done
    run "k 10, LIMIT 10" $s "SELECT * FROM gpu_pairwise('$TABLE', '$TABLE', 'e', 'l2', k => 10) LIMIT 10"
  done
done
echo "$(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/')"
