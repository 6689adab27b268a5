"""Pushdown into gpu_simjoin's custom scan: a randomized query generator comparing every
pushed-down query with the same query under gpu2bs.enable_pushdown = off, and the pipelined
scan's early stop and cancel.

Run by test/run against its throwaway cluster. GPU2BS_TEST_DEVICE=gpu runs every query with
gpu2bs.device = gpu; GPU2BS_PUSHDOWN_QUERIES sets the number of generated queries (default 300),
GPU2BS_PUSHDOWN_SEED the seed (default: a new one each run, printed on failure).
"""
import os
import random
import threading
import time

import psycopg
import pytest

DEVICE = os.environ.get("GPU2BS_TEST_DEVICE", "auto")
NQUERIES = int(os.environ.get("GPU2BS_PUSHDOWN_QUERIES", "300"))
SEED = int(os.environ.get("GPU2BS_PUSHDOWN_SEED", str(random.randrange(1 << 30))))


def connect():
    conn = psycopg.connect(autocommit=True)
    conn.execute(f"SET gpu2bs.device = {DEVICE}")
    return conn


@pytest.fixture(scope="module", autouse=True)
def tables():
    with connect() as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS gpu2bs")
        c.execute("DROP TABLE IF EXISTS pd_a, pd_b, pd_empty, pd_big")
        c.execute("SELECT setseed(0.31)")
        # lattice points (ties in dist), a few duplicate keys, NULL keys and coordinates
        c.execute("CREATE TABLE pd_a AS SELECT CASE WHEN g % 53 = 0 THEN NULL WHEN g % 41 = 0 THEN g - 1 ELSE g END AS id, "
                  "floor(random() * 30) / 2 AS x, CASE WHEN g % 97 = 0 THEN NULL ELSE floor(random() * 30) / 2 END AS y "
                  "FROM generate_series(1, 1500) g")
        c.execute("CREATE TABLE pd_b AS SELECT g::bigint AS id, random() * 15 AS x, random() * 15 AS y "
                  "FROM generate_series(-300, 900) g")
        c.execute("CREATE TABLE pd_empty (id int, x float8, y float8)")
        c.execute("CREATE TABLE pd_big AS SELECT g AS id, random() x, random() y FROM generate_series(1, 300000) g")
        c.execute("ANALYZE")
    yield


def qual(rng):
    parts = []
    for _ in range(rng.randrange(4)):
        k = rng.randrange(11)
        parts.append([
            lambda: f"dist > {rng.uniform(0, 2):.2f}",
            lambda: f"dist <= {rng.uniform(0, 2):.2f}",
            lambda: f"id1 < {rng.randrange(-100, 1600)}",
            lambda: f"id2 >= {rng.randrange(-100, 1600)}",
            lambda: rng.choice(["id1 <> id2", "id1 < id2", "id2 = id1"]),
            lambda: f"id1 % {rng.choice([2, 3, 7, -4])} = {rng.randrange(-1, 2)}",
            lambda: f"dist BETWEEN {rng.uniform(0, 1):.2f} AND {rng.uniform(1, 2):.2f}",
            lambda: f"(id1 > {rng.randrange(1500)} OR NOT dist < {rng.uniform(0, 2):.2f})",
            lambda: f"NOT (id2 % 5 <> {rng.randrange(5)} AND dist > 0.5)",
            lambda: f"id1 + id2 > {rng.randrange(3000)}",
            lambda: f"dist * 2 < {rng.uniform(0, 4):.2f}",
        ][k]())
    return (" WHERE " + " AND ".join(parts)) if parts else ""


def query(rng):
    src = rng.choice(["'pd_a'", "'pd_a', 'pd_b'", "'pd_b', 'pd_a'", "'pd_b'", "'pd_empty'", "'pd_a', 'pd_empty'"])
    j = f"gpu_simjoin({src}, {rng.choice(['0.5', '1.0', '1.5', '2.2'])})"
    w = qual(rng)
    key = rng.choice(["id1", "id2"])
    return rng.choice([
        f"SELECT count(*), count(id1), min(dist), max(dist), round(sum(dist)::numeric, 6), round(avg(dist)::numeric, 9) FROM {j}{w}",
        f"SELECT {key}, count(*), min(dist), max(dist) FROM {j}{w} GROUP BY {key}",
        f"SELECT {key} AS k, count(*) * 2 + 1 AS c FROM {j}{w} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 20",
        f"SELECT DISTINCT {key} FROM {j}{w}",
        f"SELECT id1, id2, dist FROM {j}{w} ORDER BY dist {rng.choice(['', 'DESC'])}, id1, id2 LIMIT {rng.randrange(1, 80)} OFFSET {rng.randrange(5)}",
        f"SELECT count(*) FROM (SELECT * FROM {j}{w} LIMIT {rng.randrange(0, 5000)}) s",
        f"SELECT EXISTS (SELECT FROM {j}{w})",
        f"SELECT id1, id2, dist FROM {j}{w}",
    ])


def rows(conn, sql, pushdown):
    conn.execute(f"SET gpu2bs.enable_pushdown = {'on' if pushdown else 'off'}")
    return sorted(map(repr, conn.execute(sql).fetchall()))


def test_randomized_queries_equal_without_pushdown():
    rng = random.Random(SEED)
    bad = []
    with connect() as c:
        for n in range(NQUERIES):
            sql = query(rng)
            c.execute(f"SET gpu2bs.precision = {rng.choice(['float4', 'float8'])}")
            if rows(c, sql, True) != rows(c, sql, False):
                bad.append(sql)
    assert not bad, f"seed {SEED}: {len(bad)} of {NQUERIES} differ, first: {bad[0]}"


def test_pipelined_limit_stops_the_join():
    """LIMIT over a join of ~1e8 pairs returns long before the join could finish."""
    with connect() as c:
        t0 = time.monotonic()
        got = c.execute("SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pd_big', 0.02) LIMIT 10) s").fetchone()[0]
        limited = time.monotonic() - t0
        t0 = time.monotonic()
        total = c.execute("SELECT count(*) FROM gpu_simjoin('pd_big', 0.02) WHERE dist > 0.019").fetchone()[0]
        full = time.monotonic() - t0
        assert got == 10 and total > 0
        # a cursor read in part, then closed, leaves nothing running: the next call answers
        c.execute("BEGIN")
        c.execute("DECLARE pc CURSOR FOR SELECT * FROM gpu_simjoin('pd_big', 0.02)")
        assert len(c.execute("FETCH 5 FROM pc").fetchall()) == 5
        c.execute("CLOSE pc")
        c.execute("COMMIT")
        assert c.execute("SELECT count(*) FROM gpu_simjoin('pd_a', 0.5)").fetchone()[0] > 0
        print(f"limit 10: {limited:.3f} s, full pass: {full:.3f} s")


def test_pipelined_scan_cancels_within_one_second():
    """A cursor whose pipelined join is running is cancelled within a second."""
    with connect() as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        c.execute("SET gpu2bs.max_result_rows = 0")

        def cancel():
            time.sleep(1.0)
            with connect() as k:
                k.execute("SELECT pg_cancel_backend(%s)", (pid,))

        th = threading.Thread(target=cancel)
        th.start()
        t0 = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            # every pair is read: the join runs for many seconds on its thread
            c.execute("SELECT count(*) FROM (SELECT * FROM gpu_simjoin('pd_big', 0.2) LIMIT 1000000000) s").fetchone()
        waited = time.monotonic() - t0
        th.join()
        assert waited < 2.0, f"cancel took {waited - 1.0:.2f} s after the request"
        assert c.execute("SELECT count(*) FROM gpu_simjoin('pd_a', 0.5)").fetchone()[0] > 0
