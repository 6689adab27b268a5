#!/usr/bin/env bash
# Where the time of the pushed-down shapes goes, run by device_suite.sh (step "split", after the
# table u2 is loaded): each query with its rows to the client (median of 3 in the timing lines),
# the GROUP BY's groups counted in the server, and gpu2bs_info()'s split of the last run
# (kernel / merge / prepare / scan / transfer ms).
EPS=${EPS:-0.01}
split="SELECT string_agg(name || '=' || value, ' ' ORDER BY name) FROM gpu2bs_info() WHERE name LIKE 'last_%ms';"
for q in "SELECT id1, count(*) FROM gpu_simjoin('u2', $EPS) GROUP BY id1" \
         "SELECT count(*) FROM (SELECT id1, count(*) FROM gpu_simjoin('u2', $EPS) GROUP BY id1) s" \
         "SELECT id1, min(dist) FROM gpu_simjoin('u2', $EPS) GROUP BY id1" \
         "SELECT count(*) FROM gpu_simjoin('u2', $EPS) WHERE dist > $EPS / 2"; do
  echo "== $q"
  { echo "SET gpu2bs.device = gpu;"; echo "$q;" ; echo '\timing on'; echo '\o /dev/null';
    for r in 1 2 3; do echo "$q;"; done; echo '\o'; echo '\timing off'; echo "$split"; } | psql -X -q -At 2>&1 | grep -v '^[0-9]*|'
done
