# Sourced by the device scripts that time their steps (from the repository root).
# run LIMIT_S FILE CMD...: runs CMD under `timeout LIMIT_S`, appends the command line (prefixed
# by $PRE when set), its output, a note when it was stopped and its rc and wall time to FILE;
# with STEPS set, also "<seconds since T0> s: CMD" to the file $STEPS. Always returns 0, so a
# failed or stopped step does not end the script.
run() {
  local lim=$1 file=$2; shift 2
  echo "\$ ${PRE:-}$*" >> "$file"
  local t0
  t0=$(date +%s%N)
  timeout "$lim" "$@" >> "$file" 2>&1
  local rc=$?
  [ $rc = 124 ] && echo "(stopped after $lim s)" >> "$file"
  echo "(rc=$rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms)" >> "$file"
  [ -n "${STEPS:-}" ] && echo "$(( $(date +%s) - ${T0:-0} )) s: $*" >> "$STEPS"
  return 0
}
# Seconds left before DEADLINE (seconds after T0).
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
# step NAME MAX LOG CMD...: runs CMD with at most min(MAX, time left) seconds, its output to LOG,
# and logs its rc, time and gtest summary to $OUT/steps.log (skipped when 5 s or less are left).
step() {
  local name=$1 max=$2 log=$3; shift 3
  local l; l=$(left); [ "$l" -lt "$max" ] && max=$l
  if [ "$max" -le 5 ]; then echo "$name: skipped (no time left)" | tee -a "$OUT/steps.log"; return; fi
  local t; t=$(date +%s)
  timeout "$max" "$@" >"$log" 2>&1
  local rc=$?
  echo "$name rc=$rc in $(( $(date +%s) - t )) s $(grep -E '^\[  (PASSED|FAILED)' "$log" | tr '\n' ' ')" | tee -a "$OUT/steps.log"
}
