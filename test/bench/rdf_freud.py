#!/usr/bin/env python3
"""gpu_rdf's CPU engine against freud density.RDF on the same points and cores.

   python rdf_freud.py ATOMS.csv BENCH_RDF_BINARY [N] [R_MAX] [NBINS] [THREADS]

ATOMS.csv: id,x,y,z in Å (test/data/prepare.py atoms), replicated 2x2x2 with a shift of 110 Å
and truncated to N atoms, box 220 Å periodic, as bench_rdf builds it. freud runs with
normalization_mode='finite_size' (g = 2 P / (N (N - 1) / V * shell), the self form of gpu_rdf),
THREADS threads; bench_rdf counts runs the CPU engine with THREADS threads and writes its rows. Prints
the timings (median of 3 after one warm-up), the largest difference of the counts and of g(r),
and the same comparison with a numpy float64 reference (minimum image) on a 4,000-atom subset.
The coordinates are multiples of 0.01 Å, so many pairs lie exactly on a bucket edge (w = 0.03 Å
for r_max 15 and 500 bins), where the float32 rounding of each program decides the side: freud
(distances of points shifted by -L/2, its own binning) and the numpy float64 reference move such
pairs between neighbouring bins. The checks are therefore on the totals and the cumulative
counts: exit status 1 when a cumulative count N(r < r_hi) (the last one is the total) differs by
more than 1e-3 of itself (freud; its float32 coordinates are shifted by -L/2, so pairs within
about 1e-5 Å of an edge or of r_max may fall on the other side), or more than the pairs within 5e-5 Å of that edge (numpy: float32 rounds coordinates of up to
220 Å by up to 7.6e-6 Å).
"""
import subprocess
import sys
import tempfile
import time

import numpy as np
import freud


def load(path, n):
    base = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(1, 2, 3))
    out = []
    total = 0
    for i in range(2):
        for j in range(2):
            for l in range(2):
                if total >= n:
                    break
                part = base + np.array([110.0 * i, 110.0 * j, 110.0 * l])
                part = part[: n - total]
                out.append(part)
                total += len(part)
    return np.concatenate(out)[:n]


def main():
    atoms, binary = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    r_max = float(sys.argv[4]) if len(sys.argv) > 4 else 15.0
    nbins = int(sys.argv[5]) if len(sys.argv) > 5 else 500
    threads = int(sys.argv[6]) if len(sys.argv) > 6 else 2
    pts = load(atoms, n)
    L = 220.0
    wrapped = (pts - L * np.floor(pts / L)).astype(np.float32) - np.float32(L / 2)
    box = freud.box.Box.cube(L)
    freud.parallel.set_num_threads(threads)
    times = []
    for rep in range(4):
        rdf = freud.density.RDF(bins=nbins, r_max=r_max, normalization_mode="finite_size")
        t0 = time.perf_counter()
        rdf.compute(system=(box, wrapped), reset=True)
        dt = (time.perf_counter() - t0) * 1e3
        if rep:
            times.append(dt)
    freud_ms = sorted(times)[1]
    with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        out = subprocess.run([binary, "counts", atoms, str(n), str(r_max), str(nbins), f.name, str(threads)],
                             check=True, capture_output=True, text=True).stdout.strip()
        rows = np.loadtxt(f.name)
    print(f"# {n} atoms, box {L} A periodic, r_max {r_max}, {nbins} bins")
    print(f"freud {freud.__version__} density.RDF finite_size, {threads} threads: median {freud_ms:.1f} ms "
          f"(runs: {' '.join(f'{t:.1f}' for t in times)})")
    print(out)
    ours_ms = float(out.split("median ")[1].split(" ms")[0])
    print(f"speed-up of the CPU engine over freud: {freud_ms / ours_ms:.2f}x")
    # freud counts ordered pairs (both directions) in bin_counts.
    freud_pairs = np.asarray(rdf.bin_counts) / 2
    ours_pairs = rows[:, 2]
    g_f = np.asarray(rdf.rdf)
    g_o = rows[:, 3]
    dp = np.abs(freud_pairs - ours_pairs)
    big = ours_pairs >= 1000
    rel = np.abs(g_f - g_o)[big] / np.abs(g_f[big])
    cum_o = np.cumsum(ours_pairs)
    cum_f = np.cumsum(freud_pairs)
    nz = cum_f > 0
    cum_rel = (np.abs(cum_o - cum_f)[nz] / cum_f[nz]).max()
    print(f"pairs: total ours {ours_pairs.sum():.0f}, freud {freud_pairs.sum():.0f}; "
          f"largest count difference {dp.max():.0f} (bins differing: {(dp > 0).sum()})")
    print(f"cumulative counts N(r < r_hi): largest relative difference {cum_rel:.3e}")
    print(f"g(r): largest relative difference {rel.max():.3e} over {big.sum()} bins with >= 1000 pairs")
    ok = cum_rel <= 1e-3
    # numpy float64 reference (minimum image) on a subset: g from exact pair counts.
    sub = pts[:4000]
    m = len(sub)
    d = sub[:, None, :] - sub[None, :, :]
    d -= L * np.rint(d / L)
    r = np.sqrt((d * d).sum(-1))[np.triu_indices(m, 1)]
    ref_counts = np.histogram(r[r < r_max], bins=nbins, range=(0, r_max))[0]
    with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        subprocess.run([binary, "counts", atoms, str(m), str(r_max), str(nbins), f.name],
                       check=True, capture_output=True, text=True)
        srows = np.loadtxt(f.name)
    sd = np.abs(srows[:, 2] - ref_counts)
    w = r_max / nbins
    rr = r[r < r_max + w]
    edges = np.arange(1, nbins + 1) * w
    near = np.array([(np.abs(rr - e) <= 5e-5).sum() for e in edges])
    cum_d = np.abs(np.cumsum(srows[:, 2]) - np.cumsum(ref_counts))
    print(f"numpy float64 reference, {m} atoms: counts equal in {(sd == 0).sum()} of {nbins} bins, "
          f"largest difference {sd.max():.0f}; pairs within 5e-5 A of an edge: {near.sum()}; "
          f"cumulative differences within them at every edge: {bool((cum_d <= near).all())}")
    ok = ok and bool((cum_d <= near).all())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
