"""Engine errors carry their throw site to PostgreSQL: the error's location (the source file,
line and function fields that `\\set VERBOSITY verbose` prints as LOCATION) is where the error
was raised, not the SQL boundary's ereport. Run by test/run against its throwaway cluster."""
import psycopg
import pytest

# (statement, SQLSTATE, source files the engine may raise it from)
CASES = [
    # similarity join result over gpu2bs.max_result_rows: raised by the engine's join
    ("SET gpu2bs.max_result_rows = 1; SELECT count(*) FROM gpu_simjoin('loc_pts', 10)",
     "54000", {"cpu_engine.cpp", "cuda_engine.cu", "banks.cu", "problem.cpp"}),
    # float4 range check of the points
    ("SET gpu2bs.precision = float4; SELECT gpu_sdh(x * 1e39, y, z, 4) FROM loc_pts",
     "22023", {"problem.cpp", "validate.cpp"}),
    # bucket width out of range
    ("SELECT gpu_sdh_fixed(x, y, z, 4, 1e-320) FROM loc_pts",
     "22023", {"problem.cpp", "validate.cpp", "points_agg.cpp"}),
    # no GPU for gpu2bs.device = gpu (only on a machine without one)
    ("SET gpu2bs.device = gpu; SELECT gpu_pair_count(x, y, 1) FROM loc_pts",
     "55000", {"settings.cpp"}),
]


@pytest.fixture(scope="module")
def conn():
    c = psycopg.connect(autocommit=True)
    c.execute("CREATE EXTENSION IF NOT EXISTS gpu2bs")
    c.execute("DROP TABLE IF EXISTS loc_pts")
    c.execute("CREATE TABLE loc_pts AS SELECT g AS id, g * 0.1 AS x, 0.0::float8 AS y, 0.0::float8 AS z "
              "FROM generate_series(1, 50) g")
    c.execute("ALTER TABLE loc_pts ADD PRIMARY KEY (id)")
    yield c
    c.execute("DROP TABLE IF EXISTS loc_pts")
    c.close()


@pytest.mark.parametrize("stmt,state,files", CASES)
def test_engine_error_location_is_the_throw_site(conn, stmt, state, files):
    has_gpu = dict(conn.execute("SELECT name, value FROM gpu2bs_info()").fetchall()).get("engine", "").startswith("cuda")
    if state == "55000" and has_gpu:
        pytest.skip("a GPU is usable here")
    conn.execute("RESET ALL")
    with pytest.raises(psycopg.Error) as ei:
        for part in stmt.split("; "):
            conn.execute(part)
    conn.execute("RESET ALL")
    d = ei.value.diag
    assert d.sqlstate == state, (d.sqlstate, d.message_primary)
    assert d.source_file in files, (d.source_file, d.source_line, d.source_function)
    assert d.source_function not in (None, "raise"), d.source_function
    assert int(d.source_line) > 0
