#!/usr/bin/env python3
"""Issue 15's SQL targets on one server (the GPU machine, test/gpu/expr_sql_device.sh): plain SQL
joins planned onto the engine, the pair-expression functions and their hand-written peers.

  expr_sql.py STEPS [STARS.csv.gz]      STEPS: words among theta u2 gen stars

Connects with libpq's environment (PGHOST, PGPORT, PGUSER, PGDATABASE) through psycopg 3 and
prints markdown tables. Every timed call reports its end-to-end time (the statement in an open
session, ms) and gpu2bs_info()'s rows of that call (last_engine, last_kernel_ms, the nvrtc rows).
  theta  ta, tb: 200,000 rows each (x, y, t uniform from random() after setseed), the plain SQL
         theta join `abs(a.x - b.x) + abs(a.y - b.y) <= 0.001 AND a.t < b.t` (count and rows):
         cold (a new connection per run: the module cache is per backend), cold with a new
         program per run (a constant no earlier run used), warm; the CPU engine; PostgreSQL's own
         nested loop (gpu2bs.enable_join = off) on the first 20,000 rows of each side.
  u2     u2: 1,000,000 uniform 2-D points from numpy default_rng(1).random((N, 2)), id 1..N,
         geom = ST_MakePoint(x, y) with a GiST index; u2r: the same points as real columns. The
         plain SQL distance join, the ST_DWithin form and gpu_simjoin (counts; float4 and
         float8; GPU and CPU engine), EXPLAIN ANALYZE of both forms, PostGIS once.
  gen    generated vs hand-written: gpu_pair_histogram of the distance vs gpu_sdh_fixed (same
         buckets), gpu_pair_count / gpu_join of the distance predicate vs gpu_pair_count /
         gpu_simjoin, sdh_method = brute.
  stars  gpu_pair_histogram of angular separations of the stars (1000 bins over [0, pi)),
         written to /tmp/hist-stars.txt for test/bench/angular_treecorr.py.
"""
import gzip
import io
import os
import statistics
import sys
import time

import psycopg

# EXPR_SQL_SCALE=k divides every table size by k (a quick check of the script on a small machine).
SCALE = int(os.environ.get("EXPR_SQL_SCALE", "1"))
# EXPR_SQL_DEVICE=cpu runs the "gpu" rows on the CPU engine (the same check without a GPU).
DEVICE = os.environ.get("EXPR_SQL_DEVICE", "gpu")

INFO = ("last_engine", "last_kernel_ms", "last_scan_ms", "last_prepare_ms", "last_transfer_ms",
        "last_merge_ms", "last_pairs_examined", "nvrtc_modules_compiled", "nvrtc_cache_hits",
        "nvrtc_compile_ms_last", "nvrtc_compile_split_ms_last")


def connect():
    """A new session with the library loaded (the join hook exists from then on)."""
    c = psycopg.connect("", autocommit=True)
    c.execute("LOAD 'gpu2bs'")
    return c


def settings(c, s):
    """Applies `name = value` settings to the session."""
    for k, v in s.items():
        if k == "gpu2bs.device" and v == "gpu":
            v = DEVICE
        c.execute(f"SET {k} = '{v}'")


def info(c):
    """gpu2bs_info()'s rows of the last call, as a dict."""
    return dict(c.execute("SELECT name, value FROM gpu2bs_info()").fetchall())


def timed(c, sql):
    """Runs sql, returns (ms, first column of the first row)."""
    t0 = time.perf_counter()
    rows = c.execute(sql).fetchall()
    ms = (time.perf_counter() - t0) * 1e3
    return ms, (rows[0][0] if rows else None)


def brief(i):
    """The interesting gpu2bs_info() rows, one string."""
    return ", ".join(f"{k.replace('last_', '').replace('nvrtc_', 'nvrtc.')}={i.get(k, '-')}" for k in INFO
                     if k in i and i[k] not in ("", None))


def row(*cells):
    """One markdown table row."""
    print("| " + " | ".join(str(x) for x in cells) + " |", flush=True)


def header(*cols):
    """A markdown table header."""
    print()
    row(*cols)
    row(*["---"] * len(cols))


def cold_runs(sql, s, runs, label, sqls=None):
    """runs fresh connections (cold module cache), each: connect + LOAD + settings + sql."""
    out = []
    for k in range(runs):
        q = sqls[k] if sqls else sql
        t0 = time.perf_counter()
        c = connect()
        settings(c, s)
        ms, v = timed(c, q)
        total = (time.perf_counter() - t0) * 1e3
        i = info(c)
        c.close()
        out.append(ms)
        row(label, f"cold {k + 1}", v, f"{ms:.1f}", f"{total:.1f}", brief(i))
    return statistics.median(out)


def warm_runs(c, sql, runs, label):
    """One discarded call, then runs timed calls in the same session; returns their median."""
    timed(c, sql)
    out = []
    for k in range(runs):
        ms, v = timed(c, sql)
        i = info(c)
        out.append((ms, i))
        row(label, f"warm {k + 1}", v, f"{ms:.1f}", "", brief(i))
    return statistics.median(m for m, _ in out), out


def kernel_ms(i):
    """last_kernel_ms as a float (None when absent)."""
    try:
        return float(i.get("last_kernel_ms"))
    except (TypeError, ValueError):
        return None


def theta():
    c = connect()
    n, ns = 200000 // SCALE, 20000 // SCALE
    t0 = time.perf_counter()
    c.execute("SELECT setseed(0.5)")
    for t in ("ta", "tb"):
        c.execute(f"DROP TABLE IF EXISTS {t}, {t}_s")
        c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, x float8, y float8, t float8)")
        c.execute(f"INSERT INTO {t} SELECT g, random(), random(), random() FROM generate_series(1, {n}) g")
        c.execute(f"CREATE TABLE {t}_s AS SELECT * FROM {t} WHERE id <= {ns}")
        c.execute(f"VACUUM ANALYZE {t}")
        c.execute(f"ANALYZE {t}_s")
    print(f"theta: tables ta, tb ({n} rows), ta_s, tb_s ({ns} rows) in {time.perf_counter() - t0:.1f} s")
    pred = "abs(a.x - b.x) + abs(a.y - b.y) <= {c} AND a.t < b.t"
    q = "SELECT count(*) FROM {l} a JOIN {r} b ON " + pred
    rq = "SELECT count(*) FROM (SELECT a.id, b.id AS bid FROM {l} a JOIN {r} b ON " + pred + " OFFSET 0) s"
    full = q.format(l="ta", r="tb", c="0.001")
    print("\nplan: " + " / ".join(r[0].strip() for r in c.execute("EXPLAIN (COSTS OFF) " + full).fetchall()))
    header("query", "run", "result", "statement ms", "connect+LOAD+statement ms", "gpu2bs_info")
    res = {}
    for prec in ("float4", "float8"):
        s = {"gpu2bs.device": "gpu", "gpu2bs.precision": prec}
        res[prec, "cold"] = cold_runs(full, s, 3, f"count 200k x 200k, {prec}, gpu")
        # a new program per run: a constant that no earlier call compiled
        news = [q.format(l="ta", r="tb", c=f"0.00100000000{k + 1}") for k in range(3)]
        res[prec, "coldnew"] = cold_runs(None, s, 3, f"count, {prec}, gpu, new program per run", news)
        c2 = connect()
        settings(c2, s)
        res[prec, "warm"], w = warm_runs(c2, full, 3, f"count 200k x 200k, {prec}, gpu")
        ks = [kernel_ms(i) for _, i in w if kernel_ms(i)]
        res[prec, "kernel"] = statistics.median(ks) if ks else None
        res[prec, "rows"], _ = warm_runs(c2, rq.format(l="ta", r="tb", c="0.001"), 3, f"rows (counted above the join), {prec}, gpu")
        c2.close()
        c3 = connect()
        settings(c3, {"gpu2bs.device": "cpu", "gpu2bs.precision": prec})
        res[prec, "cpu"], _ = warm_runs(c3, full, 1, f"count 200k x 200k, {prec}, cpu engine")
        res[prec, "sample_cpu"], _ = warm_runs(c3, q.format(l="ta_s", r="tb_s", c="0.001"), 1,
                                               f"count 20k x 20k sample, {prec}, cpu engine")
        c3.close()
    c4 = connect()
    settings(c4, {"gpu2bs.enable_join": "off"})
    sq = q.format(l="ta_s", r="tb_s", c="0.001")
    print("\nPostgreSQL plan (sample): " + " / ".join(r[0].strip() for r in c4.execute("EXPLAIN (COSTS OFF) " + sq).fetchall()))
    header("query", "run", "result", "statement ms", "", "")
    pg = []
    for k in range(1):
        ms, v = timed(c4, sq)
        pg.append(ms)
        row("PostgreSQL nested loop, 20k x 20k sample (enable_join = off)", k + 1, v, f"{ms:.1f}", "", "")
    c4.close()
    pairs = float(n) * n
    print("\nSummary (medians of 3):")
    for prec in ("float4", "float8"):
        k = res[prec, "kernel"]
        print(f"  {prec}: cold {res[prec, 'cold']:.1f} ms, cold new program {res[prec, 'coldnew']:.1f} ms, warm "
              f"{res[prec, 'warm']:.1f} ms, rows {res[prec, 'rows']:.1f} ms, kernel {k} ms"
              + (f" = {pairs / (k / 1e3):.3e} pair evaluations/s" if k else "")
              + f"; cpu engine {res[prec, 'cpu']:.1f} ms")
    pgm = min(pg)
    print(f"  PostgreSQL nested loop 20k x 20k: {pgm:.1f} ms (one run), x{(n / ns) ** 2:.0f} (the ratio of the pairs evaluated) = "
          f"{pgm * (n / ns) ** 2 / 1e3:.1f} s; / gpu warm float4 = {pgm * (n / ns) ** 2 / res['float4', 'warm']:.0f}x, / cold = "
          f"{pgm * (n / ns) ** 2 / res['float4', 'cold']:.0f}x")
    c.close()


def u2():
    import numpy as np
    c = connect()
    n = 1000000 // SCALE
    t0 = time.perf_counter()
    p = np.random.default_rng(1).random((n, 2))
    c.execute("CREATE EXTENSION IF NOT EXISTS postgis")
    c.execute("DROP TABLE IF EXISTS u2, u2r")
    c.execute("CREATE TABLE u2 (id bigint PRIMARY KEY, x float8, y float8)")
    buf = io.StringIO()
    for i, (x, y) in enumerate(p.tolist()):
        buf.write(f"{i + 1}\t{x!r}\t{y!r}\n")
    with c.cursor().copy("COPY u2 FROM STDIN") as cp:
        cp.write(buf.getvalue())
    c.execute("ALTER TABLE u2 ADD COLUMN geom geometry(Point)")
    c.execute("UPDATE u2 SET geom = ST_MakePoint(x, y)")
    c.execute("CREATE INDEX ON u2 USING gist (geom)")
    c.execute("VACUUM ANALYZE u2")
    c.execute("CREATE TABLE u2r AS SELECT id, x::real AS x, y::real AS y FROM u2")
    c.execute("ALTER TABLE u2r ADD PRIMARY KEY (id)")
    c.execute("VACUUM ANALYZE u2r")
    print(f"u2: {n} points (numpy default_rng(1)), geom + GiST, u2r (real columns) in {time.perf_counter() - t0:.1f} s")
    eps = 0.0025
    sqlq = f"SELECT count(*) FROM {{t}} a JOIN {{t}} b ON (a.x-b.x)^2 + (a.y-b.y)^2 <= {eps}^2 AND a.id < b.id"
    gisq = f"SELECT count(*) FROM u2 a JOIN u2 b ON ST_DWithin(a.geom, b.geom, {eps}) AND a.id < b.id"
    castq = (f"SELECT count(*) FROM u2r a JOIN u2r b ON (a.x::float8-b.x::float8)^2 + (a.y::float8-b.y::float8)^2"
             f" <= {eps}^2 AND a.id < b.id")
    simq = f"SELECT count(*) FROM gpu_simjoin('{{t}}', {eps}, '{{{{x,y}}}}')"
    header("query", "engine, precision", "run", "pairs", "statement ms", "gpu2bs_info")
    med = {}
    for dev in ("gpu", "cpu"):
        for prec in ("float4", "float8"):
            cc = connect()
            settings(cc, {"gpu2bs.device": dev, "gpu2bs.precision": prec})
            tabs = ("u2", "u2r") if dev == "gpu" else ("u2",)
            for t in tabs:
                for name, qq in ((f"plain SQL count ({t})", sqlq.format(t=t)), (f"gpu_simjoin('{t}') count", simq.format(t=t)),
                                 ("ST_DWithin count (u2)", gisq if t == "u2" else None),
                                 (f"plain SQL count ({t}, ::float8 casts)", castq if t == "u2r" else None)):
                    if qq is None:
                        continue
                    plan = " / ".join(r[0].strip() for r in cc.execute("EXPLAIN (COSTS OFF) " + qq).fetchall())
                    if "Nested Loop" in plan:
                        # PostgreSQL's own join over every pair (e.g. real - real arithmetic): not timed
                        row(name, f"{dev}, {prec}", "-", "not run", "-", "PostgreSQL's plan: " + plan)
                        continue
                    timed(cc, qq)  # warm-up: module load, the relation in shared buffers
                    ms_all = []
                    for k in range(3):
                        ms, v = timed(cc, qq)
                        i = info(cc)
                        ms_all.append(ms)
                        row(name, f"{dev}, {prec}", k + 1, v, f"{ms:.1f}", brief(i))
                    med[dev, prec, name] = statistics.median(ms_all)
            cc.close()
    print("\nRatios (medians of 3, warm session):")
    for dev in ("gpu", "cpu"):
        for prec in ("float4", "float8"):
            s = med[dev, prec, "gpu_simjoin('u2') count"]
            print(f"  {dev} {prec}: plain / gpu_simjoin = {med[dev, prec, 'plain SQL count (u2)']:.1f} / {s:.1f} = "
                  f"{med[dev, prec, 'plain SQL count (u2)'] / s:.2f}x; ST_DWithin / gpu_simjoin = "
                  f"{med[dev, prec, 'ST_DWithin count (u2)']:.1f} / {s:.1f} = {med[dev, prec, 'ST_DWithin count (u2)'] / s:.2f}x")
            if dev == "gpu" and (dev, prec, "plain SQL count (u2r)") in med:
                sr = med[dev, prec, "gpu_simjoin('u2r') count"]
                print(f"  gpu {prec}, real columns: plain / gpu_simjoin = {med[dev, prec, 'plain SQL count (u2r)'] / sr:.2f}x")
            if dev == "gpu" and (dev, prec, "plain SQL count (u2r, ::float8 casts)") in med:
                sr = med[dev, prec, "gpu_simjoin('u2r') count"]
                print(f"  gpu {prec}, real columns cast to float8: plain / gpu_simjoin = "
                      f"{med[dev, prec, 'plain SQL count (u2r, ::float8 casts)'] / sr:.2f}x")
    for dev in ("gpu", "cpu"):
        cc = connect()
        settings(cc, {"gpu2bs.device": dev, "gpu2bs.precision": "float8"})
        for qq in (sqlq.format(t="u2"), gisq):
            timed(cc, qq)
            print(f"\nEXPLAIN ANALYZE ({dev}, float8): {qq}")
            for r in cc.execute("EXPLAIN (ANALYZE, TIMING OFF) " + qq).fetchall():
                print("    " + r[0])
            print("    info: " + brief(info(cc)))
        cc.close()
    cc = connect()
    settings(cc, {"gpu2bs.enable_join": "off"})
    print("\nPostGIS plan: " + " / ".join(r[0].strip() for r in cc.execute("EXPLAIN (COSTS OFF) " + gisq).fetchall()))
    ms, v = timed(cc, gisq)
    cc.close()
    print(f"PostGIS ST_DWithin + GiST (enable_join = off), one run: {v} pairs, {ms:.1f} ms")
    for prec in ("float4", "float8"):
        print(f"  {prec}: PostGIS / plain SQL (gpu) = {ms / med['gpu', prec, 'plain SQL count (u2)']:.0f}x, "
              f"PostGIS / ST_DWithin form (gpu) = {ms / med['gpu', prec, 'ST_DWithin count (u2)']:.0f}x")


def gen():
    c = connect()
    c.execute("DROP TABLE IF EXISTS u2s")
    c.execute(f"CREATE TABLE u2s AS SELECT id, x, y FROM u2 WHERE id <= {200000 // SCALE}")
    c.execute("ANALYZE u2s")
    nb, w = 1000, 0.0015
    d = "sqrt((a.x-b.x)^2 + (a.y-b.y)^2)"
    cases = [
        ("SDH 1e6 self, 1000 buckets of 0.0015",
         f"SELECT gpu_sdh_fixed('u2'::regclass, {nb}, {w}, '{{x,y}}')",
         f"SELECT gpu_pair_histogram('u2', 'u2', '{d}', 0, {nb} * {w}, {nb})"),
        ("pair count 1e6 self, r = 0.0025",
         "SELECT gpu_pair_count('u2'::regclass, 0.0025, '{x,y}')",
         "SELECT gpu_pair_count('u2'::regclass, 'u2'::regclass, '(a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025^2')"),
        ("join 200k self, eps = 0.0025 (count of the rows)",
         "SELECT count(*) FROM gpu_simjoin('u2s', 0.0025, '{x,y}')",
         "SELECT count(*) FROM gpu_join('u2s', 'u2s', '(a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025^2')"),
        ("join 1e6 self, eps = 0.0025 (count of the rows)",
         "SELECT count(*) FROM gpu_simjoin('u2', 0.0025, '{x,y}')",
         "SELECT count(*) FROM gpu_join('u2', 'u2', '(a.x-b.x)^2 + (a.y-b.y)^2 <= 0.0025^2')"),
    ]
    header("case", "precision", "form", "run", "result", "statement ms", "gpu2bs_info")
    summary = []
    for prec in ("float4", "float8"):
        cc = connect()
        settings(cc, {"gpu2bs.device": "gpu", "gpu2bs.precision": prec, "gpu2bs.sdh_method": "brute"})
        for name, hand, gen_ in cases:
            got = {}
            for form, qq in (("hand-written", hand), ("generated", gen_)):
                timed(cc, qq)
                ms_all, ks = [], []
                for k in range(3):
                    ms, v = timed(cc, qq)
                    i = info(cc)
                    ms_all.append(ms)
                    if kernel_ms(i):
                        ks.append(kernel_ms(i))
                    shown = v if not isinstance(v, list) else f"sum {sum(v)}"
                    row(name, prec, form, k + 1, shown, f"{ms:.1f}", brief(i))
                got[form] = (statistics.median(ms_all), statistics.median(ks) if ks else None, v)
            (hm, hk, hv), (gm, gk, gv) = got["hand-written"], got["generated"]
            diff = ""
            if isinstance(hv, list) and isinstance(gv, list):
                nd = sum(1 for x, y in zip(hv, gv) if x != y)
                diff = f"; buckets differing {nd} of {len(hv)}, sum |diff| {sum(abs(x - y) for x, y in zip(hv, gv))}"
            else:
                diff = f"; results {hv} / {gv}"
            summary.append(f"  {name}, {prec}: statement {gm:.1f} / {hm:.1f} ms = {gm / hm:.3f}x; kernel "
                           + (f"{gk:.2f} / {hk:.2f} ms = {gk / hk:.3f}x" if gk and hk else f"{gk} / {hk}") + diff)
        cc.close()
    print("\nGenerated / hand-written (medians of 3, warm session, sdh_method = brute):")
    print("\n".join(summary))


def stars(path):
    c = connect()
    c.execute("DROP TABLE IF EXISTS stars")
    c.execute("CREATE TABLE stars (id int, x float8, y float8, z float8)")
    with gzip.open(path, "rt") as f, c.cursor().copy("COPY stars FROM STDIN WITH (FORMAT csv, HEADER true)") as cp:
        cp.write(f.read())
    c.execute("ANALYZE stars")
    v = "acos(least(1, greatest(-1, a.x*b.x + a.y*b.y + a.z*b.z)))"
    qq = f"SELECT gpu_pair_histogram('stars', 'stars', '{v}', 0, pi(), 1000)"
    header("case", "precision", "run", "pairs", "statement ms", "gpu2bs_info")
    for prec in ("float4", "float8"):
        cc = connect()
        settings(cc, {"gpu2bs.device": "gpu", "gpu2bs.precision": prec})
        ms, h = timed(cc, qq)
        row("angular histogram of the stars (cold)", prec, 0, sum(h), f"{ms:.1f}", brief(info(cc)))
        for k in range(3):
            ms, h = timed(cc, qq)
            row("angular histogram of the stars", prec, k + 1, sum(h), f"{ms:.1f}", brief(info(cc)))
        if prec == "float8":
            with open("/tmp/hist-stars.txt", "w") as f:
                f.write("\n".join(str(x) for x in h) + "\n")
        cc.close()


def main():
    steps = sys.argv[1].split()
    for s in steps:
        t0 = time.perf_counter()
        print(f"\n## {s}", flush=True)
        if s == "theta":
            theta()
        elif s == "u2":
            u2()
        elif s == "gen":
            gen()
        elif s == "stars":
            stars(sys.argv[2])
        print(f"step {s} done in {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
