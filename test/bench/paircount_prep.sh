#!/usr/bin/env bash
# Pair count end to end against Corrfunc on the same points and cores, in one run: 1,000,000
# uniform 3-D points from numpy default_rng(1).random((N, 3)), r = 0.01. Each round runs, in
# turn, `SELECT gpu_pair_count(x, y, z, r) FROM t` (aggregate form), `SELECT gpu_pair_count('t', r)`
# (relation form), both with the split of gpu2bs_info() (scan / prepare / kernel ms), and
# Corrfunc.theory.DD (autocorr, nthreads = cores, one bin (1e-12, r], float32 and float64
# inputs; its whole call). Times are psql \timing per statement and time.perf_counter around
# DD; the table gives each median and the best of the rounds. Corrfunc counts ordered pairs,
# so its count is halved for the comparison.
# Needs a running server with gpu2bs (PGHOST/PGPORT set) and a Python with numpy and Corrfunc
# (PYTHON, default build/corrfunc-venv/bin/python: python3 -m venv build/corrfunc-venv &&
# build/corrfunc-venv/bin/pip install numpy Corrfunc; Corrfunc needs libgsl-dev).
# Usage: test/bench/paircount_prep.sh [N=1000000] [R=0.01] [ROUNDS=5]   (prints markdown)
set -euo pipefail
n=${1:-1000000}; r=${2:-0.01}; rounds=${3:-5}
PYTHON=${PYTHON:-build/corrfunc-venv/bin/python}
exec "$PYTHON" - "$n" "$r" "$rounds" <<'PY'
import os, re, subprocess, sys, time, statistics
import numpy as np
n, r, rounds = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
from Corrfunc.theory.DD import DD
cores = os.cpu_count()
pts = np.random.default_rng(1).random((n, 3))
csv = f"/tmp/paircount_prep_u3_{n}.csv"
if not os.path.exists(csv):
    with open(csv + ".tmp", "w") as f:
        f.write("id,x,y,z\n")
        for i, (x, y, z) in enumerate(pts.tolist(), 1):
            f.write(f"{i},{x!r},{y!r},{z!r}\n")
    os.replace(csv + ".tmp", csv)
def psql(script):
    return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"], input=script,
                          capture_output=True, text=True, check=True).stdout
psql(f"""DROP TABLE IF EXISTS pc_u3;
CREATE TABLE pc_u3 (id bigint PRIMARY KEY, x float8, y float8, z float8);
\\copy pc_u3 FROM '{csv}' WITH (FORMAT csv, HEADER true)
VACUUM ANALYZE pc_u3;""")
info = "SELECT name || '=' || value FROM gpu2bs_info() WHERE name IN ('engine','cpu_threads','last_scan_ms','last_prepare_ms','last_kernel_ms','last_merge_ms');"
def sql_run(query):
    out = psql(f"SELECT 1 FROM pc_u3 LIMIT 0;\n\\timing on\n{query};\n\\timing off\n{info}")
    ms = float(re.search(r"^Time: ([0-9.]+)", out, re.M).group(1))
    res = int(out.splitlines()[0])
    kv = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    return ms, res, kv
bins = np.array([1e-12, r])
def corrfunc(dtype):
    x, y, z = (np.ascontiguousarray(pts[:, k], dtype=dtype) for k in range(3))
    t0 = time.perf_counter()
    res = DD(autocorr=1, nthreads=cores, binfile=bins, X1=x, Y1=y, Z1=z, periodic=False)
    return (time.perf_counter() - t0) * 1e3, int(res["npairs"][0]) // 2
rows = {k: [] for k in ("agg", "rel", "cf32", "cf64")}
splits = {"agg": [], "rel": []}
counts = {}
for _ in range(rounds):
    for key, q in (("agg", f"SELECT gpu_pair_count(x, y, z, {r}) FROM pc_u3"),
                   ("rel", f"SELECT gpu_pair_count('pc_u3', {r})")):
        ms, res, kv = sql_run(q)
        rows[key].append(ms); splits[key].append(kv); counts[key] = res
    for key, dt in (("cf32", np.float32), ("cf64", np.float64)):
        ms, res = corrfunc(dt)
        rows[key].append(ms); counts[key] = res
med = {k: statistics.median(v) for k, v in rows.items()}
def split_med(key, name):
    return statistics.median(float(s[name]) for s in splits[key])
eng = splits["agg"][-1]
print(f"N = {n}, r = {r}, {rounds} rounds, {cores} cores; gpu2bs engine: {eng.get('engine')}, "
      f"cpu_threads {eng.get('cpu_threads')}; Corrfunc {__import__('Corrfunc').__version__} nthreads={cores}")
print()
print("| method | pairs | end to end ms (median) | best ms | scan ms | prepare ms | kernel ms | vs Corrfunc f32 | vs Corrfunc f64 |")
print("|---|---|---|---|---|---|---|---|---|")
for key, label in (("agg", f"gpu_pair_count(x, y, z, {r}) FROM t (aggregate, float4)"),
                   ("rel", f"gpu_pair_count('t', {r}) (relation, float4)")):
    print(f"| {label} | {counts[key]} | {med[key]:.0f} | {min(rows[key]):.0f} | "
          f"{split_med(key, 'last_scan_ms'):.0f} | {split_med(key, 'last_prepare_ms'):.0f} | "
          f"{split_med(key, 'last_kernel_ms'):.0f} | {med['cf32'] / med[key]:.2f}x | {med['cf64'] / med[key]:.2f}x |")
for key, label in (("cf32", "Corrfunc DD float32 (whole call)"), ("cf64", "Corrfunc DD float64 (whole call)")):
    print(f"| {label} | {counts[key]} | {med[key]:.0f} | {min(rows[key]):.0f} | - | - | - | - | - |")
print()
print("rounds (ms): " + "; ".join(f"{k} " + " ".join(f"{v:.0f}" for v in vs) for k, vs in rows.items()))
PY
