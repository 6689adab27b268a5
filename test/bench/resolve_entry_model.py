#!/usr/bin/env python3
"""Offline model of the GPU resolve work kernel's two-sided entries (kernels/resolve.cu).

Draws work entries like the walk's on 2-D uniform data where it stops at cells of ~95 points
with a bucket width of 14.5 cell sides (the 1e8 x 100 buckets row): a cell pair whose distance
range spans a bucket edge, each cell Poisson(95) uniform points sorted in Z order of 4 x 4
sub-cells. Replays the kernel's steps (points of b against a's box, staging, passes over a
against the staged points' box, groups of 32 computed points) and prints per entry: passes,
computed groups, lane slots, computed pairs, chunk tests and pairs settled by each test, for a
pass trigger of 32 staged points (the kernel) and 64. Distances in float64 (a model, not the
kernel's rounding). Usage: python3 test/bench/resolve_entry_model.py [ENTRIES]
"""
import math
import random
import sys

W = 14.5  # bucket width in cell sides


# Poisson variate with mean lam (Knuth).
def poisson(lam):
    lim = math.exp(-lam)
    k, p = 0, 1.0
    while True:
        p *= random.random()
        if p < lim:
            return k
        k += 1


# Z-order key of a point's 4 x 4 sub-cell inside the unit cell.
def zkey(p):
    ix, iy = min(int(p[0] * 4), 3), min(int(p[1] * 4), 3)
    k = 0
    for b in range(2):
        k |= ((ix >> b) & 1) << (2 * b)
        k |= ((iy >> b) & 1) << (2 * b + 1)
    return k


# Distance range from point p to the box [lo, hi].
def point_box(p, lo, hi):
    g = f = 0.0
    for k in range(2):
        gg = max(lo[k] - p[k], p[k] - hi[k], 0.0)
        ff = max(p[k] - lo[k], hi[k] - p[k])
        g += gg * gg
        f += ff * ff
    return math.sqrt(g), math.sqrt(f)


# True when every distance in [dlo, dhi] falls in one bucket.
def one_bucket(dlo, dhi):
    return math.floor(dlo / W) == math.floor(dhi / W)


# Bounding box of a list of points.
def box(pts):
    return ([min(p[0] for p in pts), min(p[1] for p in pts)],
            [max(p[0] for p in pts), max(p[1] for p in pts)])


# One entry replayed with a pass over a once `trig` points of b are staged; returns counters.
def entry(trig):
    while True:
        off = (random.randint(-1024, 1024), random.randint(-1024, 1024))
        if off == (0, 0):
            continue
        lo = [max(abs(o) - 1, 0) for o in off]
        hi = [abs(o) + 1 for o in off]
        if not one_bucket(math.hypot(*lo), math.hypot(*hi)):
            break
    na, nb = poisson(95), poisson(95)
    a = sorted([(random.random(), random.random()) for _ in range(na)], key=zkey)
    b = [(p[0] + off[0], p[1] + off[1])
         for p in sorted([(random.random(), random.random()) for _ in range(nb)], key=zkey)]
    alo, ahi = box(a)
    st = dict(passes=0, groups=0, slots=0, computed=0, tests_a=0, tests_b=0, pairs=na * nb,
              settled_b=0, settled_a=0)
    unb = [not one_bucket(*point_box(p, alo, ahi)) for p in b]
    st['settled_b'] = sum(1 for u in unb if not u) * na
    staged = []
    for c in range(0, nb, 32):
        st['tests_b'] += 1
        staged += [i for i in range(c, min(c + 32, nb)) if unb[i]]
        if len(staged) >= trig or (c + 32 >= nb and staged):
            blo, bhi = box([b[i] for i in staged])
            st['passes'] += 1
            una = [not one_bucket(*point_box(p, blo, bhi)) for p in a]
            st['settled_a'] += sum(1 for u in una if not u) * len(staged)
            nq, q4 = 0, (len(staged) + 3) & ~3
            for ac in range(0, na, 32):
                st['tests_a'] += 1
                nq += sum(una[ac:ac + 32])
                while nq >= 32:
                    st['groups'] += 1
                    st['slots'] += 32 * q4
                    st['computed'] += 32 * len(staged)
                    nq -= 32
            if nq:
                st['groups'] += 1
                st['slots'] += 32 * q4
                st['computed'] += nq * len(staged)
            staged = []
    return st


# Prints the per-entry means for both pass triggers.
def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for trig in (32, 64):
        random.seed(1)
        tot = {}
        for _ in range(n):
            for k, v in entry(trig).items():
                tot[k] = tot.get(k, 0) + v
        print('trigger', trig, {k: round(v / n, 1) for k, v in tot.items()},
              'computed/pairs', round(tot['computed'] / tot['pairs'], 3),
              'lanes used', round(tot['computed'] / tot['slots'], 3))


if __name__ == '__main__':
    main()
