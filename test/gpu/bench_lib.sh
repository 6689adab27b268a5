# Shared by the SQL benchmark scripts (bench_sql.sh, bench_join_paper.sh): psql helpers and
# the timing of one statement. Source it; needs a running server (PGHOST etc.) and RUNS.
RUNS=${RUNS:-3}
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# Times statement $2 under device $1 (after setup statements $3) in ONE session (a warm-up run first: CUDA initializes once
# per backend, about 0.2 s, as a real connection pays it once): sets $med (microseconds,
# median), $split (kernel / merge / prepare / scan / transfer ms of the last run) and $res.
# With PM_PID (the postmaster's process id, on this machine) also $cpu: CPU seconds (user +
# system) of the session's backend per statement, warm-up included, from the postmaster's
# reaped-children times.
pm_cpu_ticks() { awk '{print $16 + $17}' "/proc/$PM_PID/stat"; }
bench() {
  local dev=$1 sql=$2 setup=${3:-} out t0=0
  cpu=-
  [ -n "${PM_PID:-}" ] && t0=$(pm_cpu_ticks)
  out=$( { echo "SET gpu2bs.device = $dev; $setup"; echo "$sql;"; echo '\timing on';
           for ((r = 0; r < RUNS; r++)); do echo "$sql;"; done; echo '\timing off';
           echo "SELECT 'split', string_agg(value, ' / ' ORDER BY name) FROM gpu2bs_info() WHERE name IN ('last_kernel_ms','last_merge_ms','last_prepare_ms','last_scan_ms','last_transfer_ms');"; } \
         | psql -X -q -At -v ON_ERROR_STOP=1 2>&1 )
  med=$(grep -oE '^Time: [0-9.]+' <<<"$out" | awk '{print int($2 * 1000)}' | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  res=$(grep -vE '^(Time:|split)' <<<"$out" | tail -1)
  split=$(grep -E '^split' <<<"$out" | cut -d'|' -f2)
  if [ -n "${PM_PID:-}" ]; then
    sleep 0.2  # the postmaster reaps the backend after the session ends
    cpu=$(awk -v a="$t0" -v b="$(pm_cpu_ticks)" -v hz="$(getconf CLK_TCK)" -v n="$RUNS" 'BEGIN{printf "%.2f", (b - a) / hz / (n + 1)}')
  fi
  [ -n "$med" ] || { echo "bench failed: $out" >&2; med=0; }
}
