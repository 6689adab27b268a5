#!/usr/bin/env python3
"""Writes a PostgreSQL COPY BINARY stream of (id bigint, e real[]) to stdout: rows
[PART * N / PARTS, (PART + 1) * N / PARTS) of N random normal float32 vectors of D elements
(numpy, seeded by SEED and the part), ids from 1. Parts run in parallel, one COPY each.

  knn_sql_copy.py PART PARTS N D SEED
"""
import struct
import sys

import numpy as np


def main():
    part, parts, n, d, seed = (int(a) for a in sys.argv[1:6])
    lo, hi = part * n // parts, (part + 1) * n // parts
    row = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"), ("ndim", ">i4"),
                    ("hasnull", ">i4"), ("et", ">i4"), ("dim", ">i4"), ("lb", ">i4"),
                    ("el", [("len", ">i4"), ("v", ">f4")], (d,))])
    out = sys.stdout.buffer
    out.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
    rng = np.random.default_rng(seed * 1000 + part)
    batch = 8192
    for s in range(lo, hi, batch):
        m = min(batch, hi - s)
        buf = np.empty(m, dtype=row)
        buf["nf"] = 2
        buf["l1"] = 8
        buf["id"] = np.arange(s + 1, s + m + 1)
        buf["l2"] = 20 + 8 * d
        buf["ndim"] = 1
        buf["hasnull"] = 0
        buf["et"] = 700  # float4
        buf["dim"] = d
        buf["lb"] = 1
        buf["el"]["len"] = 4
        buf["el"]["v"] = rng.standard_normal((m, d), dtype=np.float32)
        out.write(buf.tobytes())
    out.write(struct.pack(">h", -1))


if __name__ == "__main__":
    main()
