"""gpu_rdf against freud density.RDF and MDAnalysis InterRDF, and gpu_xi / gpu_pair_count DD
against Corrfunc theory.DD,
on small random data (coordinates are uniform float64, so pair distances lie off the bucket
edges except within float32 rounding), each beside a numpy float64 reference (minimum image),
on the CPU engine and the engine of GPU2BS_TEST_DEVICE, in float4 and float8. freud rounds its
positions to float32, Corrfunc computes in float64.

Agreement rule: cumulative counts N(r < edge) may differ from the float64 reference (and from
the peer) by at most the reference pairs whose distance lies within a tolerance of that edge:
1e-9 relative for float8, 2e-6 relative of the box side for float4 and freud (float32 rounds
coordinates of up to 10 by up to 4.8e-7, a distance by about twice that). test/run installs
freud-analysis and MDAnalysis into build/venv-test from their binary wheels and builds Corrfunc
from its source distribution; a peer that is not installed skips its test with the reason.
"""
import numpy as np
import pytest

from conftest import DEVICE, connect

L = 10.0
N = 2000
ENGINES = sorted({"cpu", DEVICE})
PRECS = ["float4", "float8"]


@pytest.fixture(scope="module")
def points():
    """2,000 points uniform in [0, 10)^3 as table peer_pts (id, x, y, z); dropped at the end."""
    rng = np.random.default_rng(17)
    pts = rng.uniform(0.0, L, size=(N, 3))
    with connect() as conn:
        conn.execute("DROP TABLE IF EXISTS peer_pts")
        conn.execute("CREATE TABLE peer_pts (id int8 PRIMARY KEY, x float8, y float8, z float8)")
        with conn.cursor().copy("COPY peer_pts (id, x, y, z) FROM STDIN") as cp:
            for i, (x, y, z) in enumerate(pts):
                cp.write_row((i + 1, float(x), float(y), float(z)))
    yield pts
    with connect() as conn:
        conn.execute("DROP TABLE IF EXISTS peer_pts")


def pair_distances(pts, periodic):
    """Float64 distances of every unordered pair (minimum image when periodic)."""
    d = pts[:, None, :] - pts[None, :, :]
    if periodic:
        d -= L * np.rint(d / L)
    return np.sqrt((d * d).sum(-1))[np.triu_indices(len(pts), 1)]


def near_edges(dist, edges, tol):
    """Per edge: the reference pairs whose distance lies within tol of it."""
    s = np.sort(dist)
    return np.array([np.searchsorted(s, e + tol, "right") - np.searchsorted(s, e - tol, "left") for e in edges])


def check_cumulative(counts, ref_counts, edges_hi, near, what):
    """Cumulative counts at each upper edge within the pairs near that edge."""
    diff = np.abs(np.cumsum(counts) - np.cumsum(ref_counts))
    bad = np.nonzero(diff > near)[0]
    assert bad.size == 0, f"{what}: cumulative counts differ by {diff[bad]} at edges {edges_hi[bad]} (near {near[bad]})"


def rows(conn, engine, prec, sql, params=()):
    """The rows of `sql` with gpu2bs.device = engine and gpu2bs.precision = prec."""
    conn.execute(f"SET gpu2bs.device = {engine}")
    conn.execute(f"SET gpu2bs.precision = {prec}")
    return conn.execute(sql, params).fetchall()


def tolerance(prec):
    """Distance from an edge within which the precision may put a pair on either side."""
    return 1e-9 * L if prec == "float8" else 2e-6 * L


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prec", PRECS)
def test_rdf_against_freud(points, engine, prec):
    """gpu_rdf's pairs and g against freud density.RDF (finite_size) and the float64 reference."""
    freud = pytest.importorskip("freud", reason="freud-analysis is not installed (test/run installs its binary wheel into build/venv-test)")
    nbins, r_max = 60, 2.4
    with connect() as conn:
        got = rows(conn, engine, prec,
                   "SELECT r_lo, r_hi, pairs, g FROM gpu_rdf('peer_pts', 'peer_pts', %s, %s, '{10,10,10}', '{x,y,z}') ORDER BY r_lo",
                   (nbins, r_max))
    got = np.array(got, dtype=float)
    assert got.shape == (nbins, 4)
    w = r_max / nbins
    edges = np.arange(nbins + 1) * w
    dist = pair_distances(points, True)
    ref = np.histogram(dist[dist < r_max], bins=edges)[0]
    # float64 reference
    check_cumulative(got[:, 2], ref, edges[1:], near_edges(dist, edges[1:], tolerance(prec)), f"gpu_rdf {engine} {prec} vs float64")
    # freud: ordered pairs in bin_counts, positions float32 in [-L/2, L/2)
    box = freud.box.Box.cube(L)
    rdf = freud.density.RDF(bins=nbins, r_max=r_max, normalization_mode="finite_size")
    rdf.compute(system=(box, (points - L / 2).astype(np.float32)), reset=True)
    f_pairs = np.asarray(rdf.bin_counts, dtype=float) / 2
    assert f_pairs.sum() > 50000
    near32 = near_edges(dist, edges[1:], 2e-6 * L)
    check_cumulative(f_pairs, ref, edges[1:], near32, "freud vs float64")
    check_cumulative(got[:, 2], f_pairs, edges[1:], near32 + near_edges(dist, edges[1:], tolerance(prec)), f"gpu_rdf {engine} {prec} vs freud")
    # g: freud's finite_size normalization, where both count the same pairs
    same = (got[:, 2] == f_pairs) & (f_pairs > 0)
    assert same.sum() >= nbins - 10
    g_f = np.asarray(rdf.rdf, dtype=float)
    np.testing.assert_allclose(got[same, 3], g_f[same], rtol=1e-5)
    # g: the float64 formula over our own counts
    shell = 4.0 / 3.0 * np.pi * (got[:, 1] ** 3 - got[:, 0] ** 3)
    np.testing.assert_allclose(got[:, 3], 2 * got[:, 2] / (N * (N - 1) / L**3 * shell), rtol=1e-12)


@pytest.fixture(scope="module")
def subset(points):
    """The first 700 points as table peer_sub (id, x, y, z), the second relation of the two-set RDF."""
    with connect() as conn:
        conn.execute("DROP TABLE IF EXISTS peer_sub")
        conn.execute("CREATE TABLE peer_sub AS SELECT * FROM peer_pts WHERE id <= 700")
    yield points[:700]
    with connect() as conn:
        conn.execute("DROP TABLE IF EXISTS peer_sub")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prec", PRECS)
def test_rdf_against_mdanalysis(points, subset, engine, prec):
    """gpu_rdf's pairs and g against MDAnalysis InterRDF: the self form with exclusion_block=(1, 1)
    and the two-relation form with its defaults (the normalizations gpu_rdf documents)."""
    mda = pytest.importorskip("MDAnalysis", reason="MDAnalysis is not installed (test/run installs its binary wheel into build/venv-test)")
    from MDAnalysis.analysis.rdf import InterRDF
    nbins, r_max = 60, 2.4
    u = mda.Universe.empty(N, trajectory=True)
    u.atoms.positions = points.astype(np.float32)
    u.dimensions = [L, L, L, 90.0, 90.0, 90.0]
    edges = np.arange(nbins + 1) * (r_max / nbins)
    near32 = near_edges(pair_distances(points, True), edges[1:], 2e-6 * L)
    with connect() as conn:
        got_self = np.array(rows(conn, engine, prec,
                                 "SELECT r_lo, r_hi, pairs, g FROM gpu_rdf('peer_pts', 'peer_pts', %s, %s, '{10,10,10}', '{x,y,z}') ORDER BY r_lo",
                                 (nbins, r_max)), dtype=float)
        got_two = np.array(rows(conn, engine, prec,
                                "SELECT r_lo, r_hi, pairs, g FROM gpu_rdf('peer_pts', 'peer_sub', %s, %s, '{10,10,10}', '{x,y,z}') ORDER BY r_lo",
                                (nbins, r_max)), dtype=float)
    # self form: InterRDF counts ordered pairs and excludes each atom with itself
    m = InterRDF(u.atoms, u.atoms, nbins=nbins, range=(0.0, r_max), exclusion_block=(1, 1)).run()
    m_pairs = np.asarray(m.results.count, dtype=float) / 2
    assert m_pairs.sum() > 50000
    check_cumulative(got_self[:, 2], m_pairs, edges[1:], 2 * near32 + near_edges(pair_distances(points, True), edges[1:], tolerance(prec)),
                     f"gpu_rdf self {engine} {prec} vs InterRDF")
    same = (got_self[:, 2] == m_pairs) & (m_pairs > 0)
    assert same.sum() >= nbins - 10
    np.testing.assert_allclose(got_self[same, 3], np.asarray(m.results.rdf, dtype=float)[same], rtol=1e-6)
    # two relations: every (row of a, row of b), the 700 coincident pairs at distance 0 included
    m2 = InterRDF(u.atoms, u.atoms[:700], nbins=nbins, range=(0.0, r_max)).run()
    m2_pairs = np.asarray(m2.results.count, dtype=float)
    d2 = points[:, None, :] - subset[None, :, :]
    d2 -= L * np.rint(d2 / L)
    d2 = np.sqrt((d2 * d2).sum(-1)).ravel()
    near2 = near_edges(d2, edges[1:], 2e-6 * L) + near_edges(d2, edges[1:], tolerance(prec))
    assert got_two[0, 2] >= 700 and m2_pairs[0] >= 700
    check_cumulative(got_two[:, 2], m2_pairs, edges[1:], 2 * near2, f"gpu_rdf a x b {engine} {prec} vs InterRDF")
    same2 = (got_two[:, 2] == m2_pairs) & (m2_pairs > 0)
    assert same2.sum() >= nbins - 10
    np.testing.assert_allclose(got_two[same2, 3], np.asarray(m2.results.rdf, dtype=float)[same2], rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prec", PRECS)
def test_dd_against_corrfunc(points, engine, prec):
    """gpu_xi's dd and gpu_pair_count differences against Corrfunc theory.DD and the float64 reference."""
    Corrfunc = pytest.importorskip(
        "Corrfunc.theory",
        reason="Corrfunc is not installed (test/run builds it from its source distribution, which needs gcc and GSL)")
    edges = 0.05 * 30 ** (np.arange(16) / 15.0)  # 15 log bins from 0.05 to 1.5
    with connect() as conn:
        xi = rows(conn, engine, prec,
                  "SELECT r_lo, r_hi, dd FROM gpu_xi('peer_pts', 'peer_pts', %s, coords => '{x,y,z}') ORDER BY r_lo",
                  (list(map(float, edges)),))
        pc = [rows(conn, engine, prec, "SELECT gpu_pair_count(x, y, z, %s) FROM peer_pts", (float(e),))[0][0] for e in edges]
    dd = np.array([r[2] for r in xi], dtype=float)
    assert len(dd) == len(edges) - 1
    x, y, z = (np.ascontiguousarray(points[:, k]) for k in range(3))
    res = Corrfunc.DD(autocorr=1, nthreads=1, binfile=edges, X1=x, Y1=y, Z1=z, periodic=False)
    c_dd = np.asarray(res["npairs"], dtype=float) / 2  # Corrfunc counts ordered pairs
    dist = pair_distances(points, False)
    ref = np.histogram(dist, bins=edges)[0]
    assert ref.sum() > 10000
    near = near_edges(dist, edges[1:], tolerance(prec))
    check_cumulative(c_dd, ref, edges[1:], near_edges(dist, edges[1:], 1e-9 * L), "Corrfunc vs float64")
    check_cumulative(dd, ref, edges[1:], near, f"gpu_xi dd {engine} {prec} vs float64")
    check_cumulative(dd, c_dd, edges[1:], near, f"gpu_xi dd {engine} {prec} vs Corrfunc")
    # gpu_pair_count(r): pairs with d <= r, so bin k = count(edges[k+1]) - count(edges[k]) up to
    # pairs exactly at an edge (none within the tolerance on this data unless counted in near)
    pc_bins = np.diff(np.array(pc, dtype=float))
    check_cumulative(pc_bins, c_dd, edges[1:], near + near_edges(dist, edges[:1], tolerance(prec)),
                     f"gpu_pair_count {engine} {prec} vs Corrfunc")
