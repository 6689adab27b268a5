"""Traces a backend's memory after every call of the cancel-memory reliability test's statement
sequence (each cancelled by a 25 ms statement_timeout): anonymous resident memory of the main
heap ([heap]), of 64 MB-aligned anonymous mappings (glibc arenas of the worker threads) and of
other anonymous mappings, printed whenever it changes.

  PGHOST=... PGPORT=... python test/bench/cancel_memory_trace.py CALLS
(the tables of test/reliability must exist: run that suite once against the server first)
"""
import os, sys, psycopg
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
import test_reliability as T
def breakdown(pid):
    out = {"heap":0, "arena":0, "anon":0}
    cur = None
    for l in open(f"/proc/{pid}/smaps"):
        f = l.split()
        if "-" in f[0] and len(f) >= 5 and not f[0].endswith(":"):
            s,e = [int(x,16) for x in f[0].split("-")]
            name = f[5] if len(f) > 5 else ""
            if name == "[heap]": cur = "heap"
            elif name == "" and s % (64<<20) == 0: cur = "arena"
            elif name == "" : cur = "anon"
            else: cur = None
        elif f[0] == "Anonymous:" and cur:
            out[cur] += int(f[1])
    return out
with T.connect() as c:
    pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
    c.execute("SET gpu2bs.max_result_rows = 0")
    c.execute("SELECT count(*) FROM rel_big").fetchone()
    c.execute("SET statement_timeout = '25ms'")
    stmts = [T.LONG["gpu_sdh"], T.LONG["gpu_simjoin"], "SELECT gpu_sdh(x, y, z, 10) FROM rel_small"]
    prev = None
    for i in range(int(sys.argv[1])):
        try:
            c.execute(stmts[i % 3])
            r = "ok"
        except psycopg.errors.QueryCanceled:
            r = "cancel"
        b = breakdown(pid)
        if b != prev: print(i, i%3, r, b, flush=True)
        prev = b
