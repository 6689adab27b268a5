#!/usr/bin/env python3
"""gpu_xi with analytic RR (randoms NULL, periodic box) against Corrfunc theory.xi on the same
points: N clustered points (half uniform, half in Gaussian blobs) in a periodic box of side L,
log-spaced bins. Writes the points to CSV, loads them into the PostgreSQL that psql reaches
(PGHOST/PGPORT; table xi_theory_pts, replaced), runs

  SELECT * FROM gpu_xi('xi_theory_pts', NULL, EDGES, box => '{L,L,L}', coords => '{x,y,z}')

with gpu2bs.precision = float8, and Corrfunc.theory.xi(boxsize=L, nthreads=THREADS, binfile=EDGES,
X, Y, Z) (float64). Prints one Markdown row per bin: DD (gpu_xi unordered; Corrfunc ordered / 2)
and xi of both, and the largest relative xi difference.

  xi_corrfunc_theory.py N L R_MIN R_MAX NB THREADS"""
import io
import subprocess
import sys

import numpy as np
from Corrfunc.theory.xi import xi as corrfunc_xi


def main():
    n, box, rmin, rmax, nb, threads = int(float(sys.argv[1])), float(sys.argv[2]), \
        float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    rng = np.random.default_rng(7)
    half = n // 2
    centres = rng.uniform(0, box, size=(200, 3))
    blob = centres[rng.integers(0, 200, size=n - half)] + rng.normal(0, rmax / 4, size=(n - half, 3))
    pts = np.concatenate([rng.uniform(0, box, size=(half, 3)), blob]) % box
    edges = rmin * (rmax / rmin) ** (np.arange(nb + 1) / nb)
    csv = io.StringIO()
    np.savetxt(csv, pts, fmt="%.17g", delimiter=",")
    arr = "{" + ",".join(repr(float(e)) for e in edges) + "}"
    sql = ("DROP TABLE IF EXISTS xi_theory_pts; CREATE TABLE xi_theory_pts (x float8, y float8, z float8);\n"
           "COPY xi_theory_pts FROM STDIN WITH (FORMAT csv);\n" + csv.getvalue() + "\\.\n"
           "SET gpu2bs.precision = float8;\n"
           f"COPY (SELECT dd, xi FROM gpu_xi('xi_theory_pts', NULL, '{arr}', box => '{{{box},{box},{box}}}', "
           "coords => '{x,y,z}')) TO STDOUT WITH (FORMAT csv);\n")
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql, capture_output=True,
                         text=True, check=True).stdout
    ours = np.array([[float(v) for v in line.split(",")] for line in out.strip().splitlines()])
    res = corrfunc_xi(box, threads, edges, pts[:, 0].copy(), pts[:, 1].copy(), pts[:, 2].copy())
    print("| r_lo | r_hi | DD gpu_xi | DD Corrfunc / 2 | xi gpu_xi | xi Corrfunc |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for k in range(nb):
        cdd = int(res["npairs"][k]) // 2
        cxi = float(res["xi"][k])
        worst = max(worst, abs(ours[k, 1] - cxi) / max(abs(cxi), 1e-300))
        print(f"| {edges[k]:.6g} | {edges[k + 1]:.6g} | {int(ours[k, 0])} | {cdd} | {ours[k, 1]:.12g} | {cxi:.12g} |")
    print(f"\nlargest relative xi difference: {worst:.3g}; DD equal in every bin: "
          f"{all(int(ours[k, 0]) == int(res['npairs'][k]) // 2 for k in range(nb))}")


if __name__ == "__main__":
    main()
