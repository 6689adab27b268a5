#!/usr/bin/env python3
"""Corrfunc theory.DD on the points bench_resolve generates (same points, same cores), for the
resolution benchmark (test/bench/results/2026-11-23-cpu-2core-resolve.md).

  BENCH_RESOLVE_DUMP=/tmp/p.bin test/unit/build/bench_resolve cpu sdh DIMS DIST N NB
  corrfunc_dd.py /tmp/p.bin DIMS N NB THREADS [MAX_N]

Bins: NB buckets of width w = bounding-box diagonal / NB (gpu_sdh's derived width), the first
starting at 1e-12 (Corrfunc needs rmin > 0). 2-D points get z = 0. When N > MAX_N, DD runs on
the first MAX_N points and its time is extrapolated by (N / MAX_N)^2 (Corrfunc's cost at
rmax = the diagonal is all pairs). Prints one Markdown row."""
import sys
import time

import numpy as np
from Corrfunc.theory.DD import DD


def main():
    path, dims, n, nb, threads = sys.argv[1], int(sys.argv[2]), int(float(sys.argv[3])), \
        int(sys.argv[4]), int(sys.argv[5])
    max_n = int(float(sys.argv[6])) if len(sys.argv) > 6 else n
    c = np.fromfile(path, dtype=np.float64).reshape(dims, n)
    m = min(n, max_n)
    x, y = c[0][:m].copy(), c[1][:m].copy()
    z = c[2][:m].copy() if dims == 3 else np.zeros(m)
    diag = float(np.sqrt(sum((c[k].max() - c[k].min()) ** 2 for k in range(dims))))
    edges = np.linspace(0, diag, nb + 1)
    edges[0] = 1e-12
    edges[-1] = diag * (1 + 1e-12)
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = DD(autocorr=1, nthreads=threads, binfile=edges, X1=x, Y1=y, Z1=z, periodic=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    f = (n / m) ** 2
    pairs = int(res["npairs"].sum()) // 2
    how = "measured" if m == n else f"extrapolated from {m}"
    print(f"| Corrfunc DD | {dims}-D | {n} | {nb} | {wall * f:.3f} ({how}) | {cpu * f:.2f} | "
          f"{pairs} pairs counted at {m} |")


if __name__ == "__main__":
    main()
