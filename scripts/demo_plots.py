#!/usr/bin/env python3
"""Plots of the demo's histograms (CSV files written by scripts/demo.sql) as PNG files.

  demo_plots.py DIR    reads DIR/atoms_sdh.csv, DIR/stars_sdh.csv, DIR/stars_close.csv and
                       writes DIR/atoms_sdh.png and DIR/stars_pair_separation.png
"""
import csv
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def atoms_plot(d):
    """The atoms' spatial distance histogram: whole range, and the first 12 Angstrom."""
    rows = read(d / "atoms_sdh.csv")
    w = float(rows[0]["width"])
    lo = [float(r["bucket"]) * w for r in rows]
    n = [int(r["pairs"]) for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    a.bar(lo, n, width=w, align="edge", color="tab:blue")
    a.set_xlabel("pair distance (Angstrom)")
    a.set_ylabel("pairs per bucket")
    a.set_title(f"gpu_sdh(x, y, z, {len(rows)}) FROM atoms: {sum(n):,} pairs, width {w:.4f} A")
    k = [i for i, x in enumerate(lo) if x < 12.0]
    b.bar([lo[i] for i in k], [n[i] for i in k], width=w, align="edge", color="tab:orange")
    b.set_xlabel("pair distance (Angstrom)")
    b.set_ylabel("pairs per bucket")
    b.set_title("the same, first 12 Angstrom (O-H bonds near 1 A, H-H near 1.6 A)")
    fig.tight_layout()
    out = d / "atoms_sdh.png"
    fig.savefig(out, dpi=110)
    return out


def stars_plot(d):
    """Angular separations of star pairs: the whole sky (gpu_sdh over unit vectors, chord
    buckets turned into degrees), and pairs closer than 0.5 degree (gpu_simjoin)."""
    rows = read(d / "stars_sdh.csv")
    w = float(rows[0]["width"])
    deg = lambda chord: math.degrees(2 * math.asin(min(chord, 2.0) / 2))  # noqa: E731
    lo, hi, n = [], [], []
    for r in rows:
        a, b, c = deg(int(r["bucket"]) * w), deg((int(r["bucket"]) + 1) * w), int(r["pairs"])
        if b > a:
            lo.append(a), hi.append(b), n.append(c)
        else:  # chords at or above 2 (antipodal, float4 rounding): the last degree bucket
            n[-1] += c
    density = [c / (h - l) for c, l, h in zip(n, lo, hi)]
    close = read(d / "stars_close.csv")
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    a.bar(lo, density, width=[h - l for l, h in zip(lo, hi)], align="edge", color="tab:blue")
    a.plot([0, 180], [0, 0], alpha=0)
    x = [i * 0.5 for i in range(361)]
    total = sum(n)
    a.plot(x, [total * math.sin(math.radians(t)) * math.pi / 360 for t in x], color="k", lw=1,
           label="isotropic sky: N(N-1)/2 * sin(theta) / 2 per radian")
    a.set_xlabel("angular separation (degrees)")
    a.set_ylabel("pairs per degree")
    a.set_xlim(0, 180)
    a.set_title(f"Hipparcos, {total:,} star pairs (gpu_sdh over unit vectors)")
    a.legend(loc="upper right", fontsize=8)
    lo2 = [float(r["arcmin"]) for r in close]
    n2 = [int(r["pairs"]) for r in close]
    b.bar(lo2, n2, width=1.0, align="edge", color="tab:orange")
    b.set_xlabel("angular separation (arcmin)")
    b.set_ylabel("pairs per arcmin")
    b.set_title(f"pairs closer than 0.5 degree (gpu_simjoin): {sum(n2):,}\n"
                f"the excess below 1 arcmin ({n2[0]:,}) is double stars", fontsize=10)
    fig.tight_layout()
    out = d / "stars_pair_separation.png"
    fig.savefig(out, dpi=110)
    return out


def main():
    d = pathlib.Path(sys.argv[1])
    for out in (atoms_plot(d), stars_plot(d)):
        print(f"  {out}")


if __name__ == "__main__":
    main()
