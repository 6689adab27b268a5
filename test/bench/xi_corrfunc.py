#!/usr/bin/env python3
"""Corrfunc theory.DD for the DD, DR and RR counts of gpu_xi's benchmark (same points, same bins,
same cores), beside the CPU engine's counts written by bench_xi.

  test/unit/build/bench_xi N NR R_MAX NB f64 REPS /tmp/xi.bin
  xi_corrfunc.py /tmp/xi.bin THREADS REPS

Corrfunc runs DD(autocorr=1) on the data, DD(autocorr=0) on data x randoms and DD(autocorr=1) on
the randoms, periodic=False, float64 arrays (Corrfunc's double-precision kernels), bins from the
dump; autocorr counts are of ordered pairs and are halved. Each count is timed REPS times (median
of wall seconds). Prints one Markdown row and whether every bin equals bench_xi's."""
import sys
import time

import numpy as np
from Corrfunc.theory.DD import DD


def main():
    path, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    raw = np.fromfile(path, dtype=np.float64)
    n, nr, nb = int(raw[0]), int(raw[1]), int(raw[2])
    o = 3
    edges = raw[o:o + nb + 1].copy()
    o += nb + 1
    d = [raw[o + k * n:o + (k + 1) * n].copy() for k in range(3)]
    o += 3 * n
    r = [raw[o + k * nr:o + (k + 1) * nr].copy() for k in range(3)]
    o += 3 * nr
    ours = [raw[o + k * nb:o + (k + 1) * nb].astype(np.int64) for k in range(3)]

    def timed(**kw):
        ts, res = [], None
        for _ in range(reps):
            t0 = time.perf_counter()
            res = DD(nthreads=threads, binfile=edges, periodic=False, **kw)
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts)), res["npairs"].astype(np.int64)

    tdd, dd = timed(autocorr=1, X1=d[0], Y1=d[1], Z1=d[2])
    tdr, dr = timed(autocorr=0, X1=d[0], Y1=d[1], Z1=d[2], X2=r[0], Y2=r[1], Z2=r[2])
    trr, rr = timed(autocorr=1, X1=r[0], Y1=r[1], Z1=r[2])
    dd, rr = dd // 2, rr // 2
    same = [bool(np.array_equal(a, b)) for a, b in zip((dd, dr, rr), ours)]
    diff = [int(np.abs(a - b).sum()) for a, b in zip((dd, dr, rr), ours)]
    print(f"| Corrfunc DD | {threads} | {n} | {nr} | {nb} | f64 | {tdd:.3f} | {tdr:.3f} | {trr:.3f} | "
          f"{tdd + tdr + trr:.3f} | {dd.sum()} + {dr.sum()} + {rr.sum()} |")
    print(f"\nbins equal to bench_xi (DD, DR, RR): {same}; summed |difference|: {diff}")


if __name__ == "__main__":
    main()
