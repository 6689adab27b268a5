#!/usr/bin/env bash
# Pushdown into gpu_simjoin's custom scan, end to end in SQL: the four target shapes with
# gpu2bs.enable_pushdown on and off (median of RUNS after a warm-up, in one session each; rows
# go to the client). Run by device_suite.sh (step "pushdown", table u2 = 1,000,000 uniform 2-D
# points of test/data/prepare.py, seed 1) or anywhere with a running server:
#   DEV=cpu EPS=0.0025 TABLE=u2 bash test/gpu/bench_pushdown.sh
# OFF=0 times pushdown on only (the off column then shows "-"). PM_PID=<postmaster pid> (server
# on this machine) adds the backend's CPU seconds per statement (bench_lib.sh).
# Prints a markdown table.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
DEV=${DEV:-gpu}
OFF=${OFF:-1}
EPS=${EPS:-0.01}
TABLE=${TABLE:-u2}
half=$(awk -v e="$EPS" 'BEGIN{print e / 2}')
echo "Pushdown benchmark: gpu2bs.device = $DEV, table $TABLE ($(q -c "SELECT count(*) FROM $TABLE") rows), eps $EPS, median of $RUNS"
echo
echo "| query | pushdown on ms | pushdown off ms | speedup | CPU s on | CPU s off | result (on) | result (off) |"
echo "|---|---|---|---|---|---|---|---|"
shape() {  # label sql
  bench "$DEV" "$2" "SET gpu2bs.enable_pushdown = on;"
  local on=$med ron=$res con=$cpu
  local off=0 roff=- coff=-
  if [ "$OFF" = 1 ]; then
    bench "$DEV" "$2" "SET gpu2bs.enable_pushdown = off;"
    off=$med roff=$res coff=$cpu
  fi
  local x; x=$(awk -v a="$on" -v b="$off" 'BEGIN{ if (a > 0 && b > 0) printf "%.1fx", b / a; else print "-" }')
  echo "| \`$1\` | $(awk -v us="$on" 'BEGIN{printf "%.1f", us/1000}') | $(awk -v us="$off" 'BEGIN{if (us > 0) printf "%.1f", us/1000; else print "-"}') | $x | $con | $coff | ${ron:0:40} | ${roff:0:40} |"
}
shape "SELECT count(*) FROM gpu_simjoin('$TABLE', $EPS) WHERE dist > $half" \
      "SELECT count(*) FROM gpu_simjoin('$TABLE', $EPS) WHERE dist > $half"
shape "SELECT id1, count(*) FROM gpu_simjoin('$TABLE', $EPS) GROUP BY id1 (rows to the client; result: last row)" \
      "SELECT id1, count(*) FROM gpu_simjoin('$TABLE', $EPS) GROUP BY id1 ORDER BY id1"
shape "SELECT * FROM gpu_simjoin('$TABLE', $EPS) ORDER BY dist LIMIT 10 (result: last row)" \
      "SELECT * FROM gpu_simjoin('$TABLE', $EPS) ORDER BY dist, id1, id2 LIMIT 10"
shape "SELECT * FROM gpu_simjoin('$TABLE', $EPS) LIMIT 10 (result: last row)" \
      "SELECT * FROM gpu_simjoin('$TABLE', $EPS) LIMIT 10"
echo
echo "Split of the last pushed-down run (kernel / merge / prepare / scan / transfer ms): $split"
