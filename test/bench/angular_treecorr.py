#!/usr/bin/env python3
"""TreeCorr NNCorrelation on the Hipparcos stars, the peer of bench_expr's angular histogram
(test/bench/results/2026-11-24-h100-angular.md).

  angular_treecorr.py STARS.csv.gz NBINS THREADS BIN_SLOP [GPU_HIST.txt [MAX_STARS]]

The stars (id,x,y,z rows after a header) are normalized to unit vectors and handed to TreeCorr
as (ra, dec) in radians; NNCorrelation counts the pairs of the auto-correlation in NBINS linear
bins of the great-circle separation over [0, pi) (TreeCorr's Arc metric; TC_METRIC=Euclidean:
the chord length, TreeCorr's default for such catalogues), with the given
bin_slop (0: every pair in its exact bin; TreeCorr's default is 1). Prints the wall and CPU
time of process() and, with GPU_HIST.txt (one count per line, bench_expr G2_HIST_OUT), the
pairs per bin against the GPU histogram. TC_HIST_OUT=<file>: TreeCorr's counts, one per line."""
import gzip
import math
import os
import sys
import time

import numpy as np
import treecorr


def main():
    path, nbins, threads, slop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    rows = []
    with gzip.open(path, "rt") as f:
        next(f)
        for line in f:
            p = line.split(",")
            if len(p) >= 4:
                rows.append((float(p[1]), float(p[2]), float(p[3])))
    if len(sys.argv) > 6:
        rows = rows[:int(sys.argv[6])]
    xyz = np.array(rows)
    nrm = np.sqrt((xyz ** 2).sum(axis=1))
    xyz = xyz[nrm > 0] / nrm[nrm > 0, None]
    ra = np.arctan2(xyz[:, 1], xyz[:, 0])
    dec = np.arcsin(np.clip(xyz[:, 2], -1, 1))
    cat = treecorr.Catalog(ra=ra, dec=dec, ra_units="radians", dec_units="radians")
    nn = treecorr.NNCorrelation(min_sep=0.0, max_sep=math.pi, nbins=nbins, bin_type="Linear",
                                sep_units="radians", bin_slop=slop, num_threads=threads)
    metric = os.environ.get("TC_METRIC", "Arc")
    t0, c0 = time.perf_counter(), time.process_time()
    nn.process(cat, metric=metric, num_threads=threads)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(ra)
    total = float(nn.npairs.sum())
    print(f"treecorr {treecorr.__version__} numpy {np.__version__}: {n} stars, {nbins} bins, metric {metric}, "
          f"bin_slop {slop}, {threads} threads: process() wall {wall:.3f} s, cpu {cpu:.2f} s, "
          f"npairs sum {total:.0f} (all pairs {n * (n - 1) // 2})")
    print("  treecorr bins 0..4: " + " ".join(f"{v:.0f}" for v in nn.npairs[:5]))
    if os.environ.get("TC_HIST_OUT"):  # the counts, one per line (test/bench/angular_edges.cpp)
        np.savetxt(os.environ["TC_HIST_OUT"], nn.npairs, fmt="%.0f")
    if len(sys.argv) > 5 and os.path.exists(sys.argv[5]):
        g = np.loadtxt(sys.argv[5], dtype=np.float64)
        d = np.abs(nn.npairs - g)
        rel = d / np.maximum(g, 1)
        k = int(np.argmax(rel))
        print(f"  vs GPU histogram: sum |diff| {d.sum():.0f} ({d.sum() / max(g.sum(), 1):.3e} of the pairs), "
              f"largest relative difference {rel[k]:.3e} in bin {k} ({nn.npairs[k]:.0f} vs {g[k]:.0f})")


if __name__ == "__main__":
    main()
