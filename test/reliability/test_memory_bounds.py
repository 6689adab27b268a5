"""Backend memory bounded by the data, not by the settings' maxima, and cancel in every phase.

Peak backend memory is the growth of the backend's VmHWM (/proc/PID/status, peak resident
set) over a fresh backend that has already loaded the library, so each case measures one
query. The figures are printed (pytest -s) and recorded in test/RELIABILITY.md.
"""
import time

import psycopg
import pytest
from conftest import DEVICE, connect


@pytest.fixture(scope="module", autouse=True)
def tables():
    with connect() as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS gpu2bs")
        c.execute("DROP TABLE IF EXISTS mb_tiny, mb_twelve, mb_stale, mb_mid")
        c.execute("CREATE TABLE mb_tiny (id int PRIMARY KEY, x float8, y float8)")
        c.execute("INSERT INTO mb_tiny VALUES (1, 0, 0), (2, 1, 0), (3, 0, 1)")
        c.execute("CREATE TABLE mb_twelve AS SELECT g AS id, (g % 4)::float8 x, (g / 4)::float8 y "
                  "FROM generate_series(1, 12) g")
        c.execute("ALTER TABLE mb_twelve ADD PRIMARY KEY (id)")
        c.execute("CREATE TABLE mb_stale (id int PRIMARY KEY, x float8, y float8)")
        c.execute("INSERT INTO mb_stale VALUES (1, 0, 0), (2, 0.5, 0)")
        c.execute("SELECT setseed(0.25)")
        c.execute("CREATE TABLE mb_mid AS SELECT g AS id, random() x, random() y, random() z "
                  "FROM generate_series(1, 200000) g")
        c.execute("ALTER TABLE mb_mid ADD PRIMARY KEY (id)")
    yield


def vm_kb(conn, field):
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for backend {pid}")


def peak_growth_mb(settings, query):
    """(result, growth of the backend's peak RSS in MB) of one query in a fresh backend."""
    with connect() as c:
        c.execute("SELECT count(*) FROM gpu_simjoin('mb_tiny', 0.5)")  # library loaded, warm
        for s in settings:
            c.execute(s)
        before = vm_kb(c, "VmHWM")
        t0 = time.monotonic()
        rows = c.execute(query).fetchall()
        elapsed = time.monotonic() - t0
        grown = (vm_kb(c, "VmHWM") - before) / 1024
    print(f"\n{'; '.join(settings)}; {query}: peak backend memory +{grown:.1f} MB, {elapsed * 1e3:.0f} ms")
    return rows, grown, elapsed


# (settings, query, bound on the peak growth in MB). Before the bounds: the first took 8.4 GB
# and 22.7 s, the join with 2^24-pair pages on 16 threads 3.9 GB, the stale estimate 53200.
CASES = [
    (["SET gpu2bs.cpu_threads = 1024"], "SELECT gpu_sdh(x, y, 1048576) FROM mb_tiny", 96),
    (["SET gpu2bs.cpu_threads = 1024"], "SELECT gpu_sdh_fixed(x, y, 1048576, 0.001) FROM mb_tiny", 96),
    (["SET gpu2bs.cpu_threads = 16", "SET gpu2bs.result_page_pairs = 16777216"],
     "SELECT count(*) FROM gpu_simjoin('mb_twelve', 100)", 32),
    (["SET gpu2bs.cpu_threads = 1024", "SET gpu2bs.result_page_pairs = 16777216"],
     "SELECT count(*) FROM gpu_simjoin('mb_twelve', 'mb_twelve', 100)", 32),
    (["SET gpu2bs.cpu_threads = 1024"], "SELECT gpu_pair_count(x, y, 100) FROM mb_tiny", 32),
]


@pytest.mark.parametrize("settings,query,bound", CASES)
def test_peak_memory_at_the_settings_extremes(settings, query, bound):
    rows, grown, _ = peak_growth_mb(settings, query)
    assert rows and rows[0][0] is not None
    assert grown < bound, f"peak backend memory grew {grown:.1f} MB (bound {bound} MB)"


def test_stale_row_estimate_is_capped():
    """pg_class.reltuples of 4e9 on a 2-row table: the join reserves a capped guess and grows."""
    with connect() as c:
        c.execute("UPDATE pg_class SET reltuples = 4e9 WHERE oid = 'mb_stale'::regclass")
    rows, grown, _ = peak_growth_mb([], "SELECT count(*) FROM gpu_simjoin('mb_stale', 1)")
    assert rows[0][0] == 1
    assert grown < 64


def test_results_unchanged_by_the_extremes():
    with connect() as c:
        want = c.execute("SELECT gpu_sdh(x, y, 1048576) FROM mb_tiny").fetchone()[0]
        pairs = c.execute("SELECT array_agg((id1, id2, dist) ORDER BY id1, id2) "
                          "FROM gpu_simjoin('mb_twelve', 100)").fetchone()[0]
        c.execute("SET gpu2bs.cpu_threads = 1024")
        c.execute("SET gpu2bs.result_page_pairs = 16777216")
        assert c.execute("SELECT gpu_sdh(x, y, 1048576) FROM mb_tiny").fetchone()[0] == want
        assert c.execute("SELECT array_agg((id1, id2, dist) ORDER BY id1, id2) "
                         "FROM gpu_simjoin('mb_twelve', 100)").fetchone()[0] == pairs
        assert sum(want) == 3 and len(pairs) == 66


# Cancel latency by phase: a 300 ms statement_timeout lands in the phase named (the scan and
# transition calls take the first ~100 ms of 200,000 rows; each query below runs for seconds
# when not cancelled), and the error must come within 1 s of the timeout.
PHASES = {
    # private histograms of 2^20 buckets: allocation, the kernel, the merge
    "sdh 2^20 buckets, 1024 threads": (["SET gpu2bs.cpu_threads = 1024"],
                                       "SELECT gpu_sdh(x, y, z, 1048576) FROM mb_mid, generate_series(1, 4)"),
    "sdh 500 buckets": ([], "SELECT gpu_sdh(x, y, z, 500) FROM mb_mid, generate_series(1, 4)"),
    # the join's grid, count pass and result pages of 2^24 pairs
    # (on the GPU the pairs leave the engine: a pushed-down count(*) is reduced in the kernel)
    "join, 2^24-pair pages": (["SET gpu2bs.result_page_pairs = 16777216", "SET gpu2bs.max_result_rows = 0"],
                              "SELECT count(*) FROM (SELECT id1 FROM gpu_simjoin('mb_mid', 0.2) OFFSET 0) s"
                              if DEVICE == "gpu" else "SELECT count(*) FROM gpu_simjoin('mb_mid', 0.2)"),
    "join, runaway count pass": ([], "SELECT count(*) FROM gpu_simjoin('mb_mid', 0.5)"),
}


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_cancel_latency_per_phase(phase):
    if DEVICE == "gpu" and not phase.startswith("join, 2^24"):
        pytest.skip("the GPU may finish this within the timeout; test/gpu Cancel.* covers its phases")
    settings, query = PHASES[phase]
    with connect() as c:
        for s in settings:
            c.execute(s)
        timeouts = (300, 1200)
        if phase == "join, runaway count pass":
            # This phase ends by itself (54000) once the count pass has counted past the limit,
            # after a time that depends on the machine: the timeouts are set at a quarter and
            # at half of its measured length, so they always land inside it.
            t0 = time.monotonic()
            with pytest.raises(psycopg.errors.ProgramLimitExceeded):
                c.execute(query)
            length_ms = (time.monotonic() - t0) * 1e3
            timeouts = (max(1, int(length_ms / 4)), max(2, int(length_ms / 2)))
        for timeout_ms in timeouts:
            c.execute(f"SET statement_timeout = '{timeout_ms}ms'")
            t0 = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                c.execute(query)
            late = time.monotonic() - t0 - timeout_ms / 1000
            print(f"\n{phase}: timeout {timeout_ms} ms, cancelled {late * 1e3:.0f} ms after it")
            assert late < 1.0, f"{phase}: cancelled {late:.2f} s after a {timeout_ms} ms timeout"
        c.execute("RESET statement_timeout")
        assert c.execute("SELECT 1").fetchone()[0] == 1
