#!/usr/bin/env python3
"""gpu_xi_weighted against Corrfunc theory.DD with weight_type='pair_product' on the same points.

  xi_weighted_corrfunc.py PSQL_ARGS...     e.g. -h /tmp/sock -p 55503 -U postgres

Uniform data (N_D = 5000) and randoms (N_R = 8000) in a periodic box of 100 with real weights
(data in [0.5, 2), randoms in [0.5, 1.5)), 12 log bins from 0.5 to 20, float64. The points go
into tables xw_data and xw_rand of the database psql connects to (gpu2bs installed), and
gpu_xi_weighted(..., box => '{100,100,100}') runs with gpu2bs.precision = float8 on the engine
gpu2bs.device selects. Corrfunc runs DD(autocorr=1) on the data, DD(autocorr=0) on data x
randoms and DD(autocorr=1) on the randoms (periodic, boxsize 100); its autocorrelations count
ordered pairs, so npairs and npairs * weightavg are halved. Prints per bin the counts (equal or
not), the relative difference of the weight sums (Corrfunc's npairs * weightavg is rounded), and
xi from Corrfunc's sums with gpu_xi_weighted's normalization beside gpu_xi_weighted's xi; exit
status 1 when a count differs or a sum or xi differs by more than 1e-12 relative."""
import io
import subprocess
import sys

import numpy as np
from Corrfunc.theory.DD import DD

L = 100.0


def psql(args, sql, stdin=None):
    out = subprocess.run(["psql", "-X", "-q", "-At", "-F", ",", "-v", "ON_ERROR_STOP=1", *args, "-c", sql],
                         input=stdin, capture_output=True, text=True, check=True)
    return out.stdout


def main():
    args = sys.argv[1:]
    rng = np.random.default_rng(17)
    nd, nr = 5000, 8000
    d = rng.uniform(0, L, size=(nd, 3))
    r = rng.uniform(0, L, size=(nr, 3))
    wd = rng.uniform(0.5, 2.0, size=nd)
    wr = rng.uniform(0.5, 1.5, size=nr)
    edges = np.geomspace(0.5, 20.0, 13)
    for name, pts, w in (("xw_data", d, wd), ("xw_rand", r, wr)):
        buf = io.StringIO()
        for (x, y, z), wi in zip(pts, w):
            buf.write(f"{float(x)!r},{float(y)!r},{float(z)!r},{float(wi)!r}\n")
        psql(args, f"DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (x float8, y float8, z float8, w float8)")
        subprocess.run(["psql", "-X", "-q", *args, "-c", f"\\copy {name} FROM pstdin WITH (FORMAT csv)"],
                       input=buf.getvalue(), text=True, check=True, capture_output=True)
    arr = "{" + ",".join(repr(float(e)) for e in edges) + "}"
    rows = psql(args, "SET gpu2bs.precision = float8; SELECT dd, dr, rr, dd_w, dr_w, rr_w, xi, "
                      "(SELECT value FROM gpu2bs_info() WHERE name = 'engine') FROM "
                      f"gpu_xi_weighted('xw_data', 'xw_rand', '{arr}', 'w', box => '{{100,100,100}}', "
                      "coords => '{x,y,z}')").strip().splitlines()
    ours = [row.split(",") for row in rows]
    engine = ours[0][7] if ours and len(ours[0]) > 7 else "?"
    common = dict(nthreads=2, binfile=edges, periodic=True, boxsize=L, weight_type="pair_product")
    cdd = DD(autocorr=1, X1=d[:, 0], Y1=d[:, 1], Z1=d[:, 2], weights1=wd, **common)
    cdr = DD(autocorr=0, X1=d[:, 0], Y1=d[:, 1], Z1=d[:, 2], weights1=wd,
             X2=r[:, 0], Y2=r[:, 1], Z2=r[:, 2], weights2=wr, **common)
    crr = DD(autocorr=1, X1=r[:, 0], Y1=r[:, 1], Z1=r[:, 2], weights1=wr, **common)
    half = lambda c: (c["npairs"].astype(np.int64) // 2, c["npairs"] * c["weightavg"] / 2)
    (ndd, sdd), (nrr, srr) = half(cdd), half(crr)
    ndr, sdr = cdr["npairs"].astype(np.int64), cdr["npairs"] * cdr["weightavg"]
    pdd = (wd.sum() ** 2 - (wd * wd).sum()) / 2
    pdr = wd.sum() * wr.sum()
    prr = (wr.sum() ** 2 - (wr * wr).sum()) / 2
    bad = 0
    print(f"engine: {engine}; N_D {nd}, N_R {nr}, box {L} periodic, 12 log bins 0.5..20, float8")
    print("| r_lo | r_hi | DD | DR | RR | counts equal | max rel. diff of dd_w, dr_w, rr_w | xi (Corrfunc sums) | xi (gpu_xi_weighted) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, row in enumerate(ours):
        dd, dr, rr = int(row[0]), int(row[1]), int(float(row[2]))
        dd_w, dr_w, rr_w, xi = (float(v) for v in row[3:7])
        same = (dd, dr, rr) == (int(ndd[k]), int(ndr[k]), int(nrr[k]))
        rel = max(abs(a - b) / max(abs(b), 1e-300) for a, b in ((dd_w, sdd[k]), (dr_w, sdr[k]), (rr_w, srr[k])))
        fdd, fdr, frr = sdd[k] / pdd, sdr[k] / pdr, srr[k] / prr
        xi_c = (fdd - 2 * fdr + frr) / frr
        ok = same and rel <= 1e-12 and abs(xi - xi_c) <= 1e-12 * (1 + abs(xi_c))
        bad += not ok
        print(f"| {edges[k]:.4g} | {edges[k + 1]:.4g} | {dd} | {dr} | {rr} | {'yes' if same else 'NO'} | "
              f"{rel:.1e} | {xi_c:.10f} | {xi:.10f} |")
    print(f"\n{'PASS' if bad == 0 else 'FAIL'}: {bad} bin(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
