#!/usr/bin/env python3
"""gpu_pairwise benchmark helpers for the GPU machine (called by test/gpu/bench_pairwise.sh).

  gen FILE N D SEED            random normal float32 N x D (torch on the GPU), raw little-endian
  peers FILE N D K             PyTorch self kNN in batches of 8,192 queries, median of 3:
                               cdist + topk (FP32), matmul form FP32, matmul form TF32; writes
                               FILE.<name>.i32 lists
  compare FILE N D K LISTS...  each list file (int32 N x K) against a float64 reference (matmul
                               form in float64 on the GPU): rows identical, differing entries, and
                               how many of those are near-ties (float64 value within the float32
                               error bound of the reference k-th value)
  copy FILE N D OUT [ROWS]     PostgreSQL COPY BINARY file of (id bigint, e real[]) for rows of FILE
"""
import struct
import sys
import time

import numpy as np


def gen(path, n, d, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, d, generator=g, device="cuda", dtype=torch.float32)
    x.cpu().numpy().tofile(path)


def load(path, n, d):
    return np.fromfile(path, dtype=np.float32, count=n * d).reshape(n, d)


def peers(path, n, d, k):
    import torch
    x = torch.from_numpy(load(path, n, d)).cuda()
    B = 8192
    norms = (x * x).sum(1)

    def run(kind):
        out = torch.empty(n, k, dtype=torch.int64, device="cuda")
        for s in range(0, n, B):
            q = x[s:s + B]
            if kind == "cdist":
                dist = torch.cdist(q, x)
            else:
                dist = norms[s:s + B, None] + norms[None, :] - 2.0 * (q @ x.T)
            idx = torch.arange(s, min(s + B, n), device="cuda")
            dist[idx - s, idx] = float("inf")
            out[s:s + B] = torch.topk(dist, k, dim=1, largest=False).indices
        return out

    res = {}
    for name, kind, tf32 in (("torch_cdist_fp32", "cdist", False), ("torch_matmul_fp32", "mm", False),
                             ("torch_matmul_tf32", "mm", True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        run(kind)  # warm-up
        torch.cuda.synchronize()
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            o = run(kind)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        print(f"{name:18s} median of 3: {times[1]:.1f} ms  [runs: {' '.join(f'{t:.1f}' for t in times)}]")
        o.to(torch.int32).cpu().numpy().tofile(f"{path}.{name}.i32")
        res[name] = times[1]
    torch.backends.cuda.matmul.allow_tf32 = False
    return res


def compare(path, n, d, k, lists):
    import torch
    x = torch.from_numpy(load(path, n, d)).cuda().double()
    norms = (x * x).sum(1)
    B = 4096
    ref_idx = torch.empty(n, k, dtype=torch.int64, device="cuda")
    ref_kth = torch.empty(n, dtype=torch.float64, device="cuda")
    for s in range(0, n, B):
        q = x[s:s + B]
        d2 = (norms[s:s + B, None] + norms[None, :] - 2.0 * (q @ x.T)).clamp_min(0)
        idx = torch.arange(s, min(s + B, n), device="cuda")
        d2[idx - s, idx] = float("inf")
        v, i = torch.topk(d2, k, dim=1, largest=False)
        ref_idx[s:s + B] = i
        ref_kth[s:s + B] = v[:, -1]
    # float32 error bound of a squared distance (difference form, d terms): (d + 4) 2^-24 d2,
    # doubled for the other pair of a swap
    tol = 2.0 * (d + 4) * 2.0 ** -24 * ref_kth
    print(f"float64 reference: self kNN l2, n = {n}, d = {d}, k = {k}; near-tie tolerance "
          f"2 (d + 4) 2^-24 d2_k (median {tol.median().item():.3g})")
    for lp in lists:
        got = torch.from_numpy(np.fromfile(lp, dtype=np.int32).reshape(n, k)).cuda().long()
        same_rows = (torch.sort(got, 1).values == torch.sort(ref_idx, 1).values).all(1)
        # entries of got not in the reference list
        member = (got[:, :, None] == ref_idx[:, None, :]).any(2)
        extra = ~member
        gi = got.clamp_min(0)
        dd = x[gi.reshape(-1)].reshape(n, k, d) - x[:, None, :]
        d2 = (dd * dd).sum(2)
        near = extra & ((d2 - ref_kth[:, None]).abs() <= tol[:, None])
        bad = int((extra & ~near).sum().item())
        print(f"{lp.split('.')[-2]:18s} rows identical to float64: {int(same_rows.sum())}/{n}; "
              f"differing entries {int(extra.sum())}, of which near-ties {int(near.sum())}, "
              f"not near-ties {bad}")


def copy_file(path, n, d, out, rows=None):
    rows = rows or n
    x = load(path, n, d)[:rows]
    # PGCOPY header, then per row: 2 fields, int8 id, float4[] (1-D, no nulls, elem oid 700)
    arr_hdr = struct.pack(">iiiii", 1, 0, 700, d, 1)
    dt = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i8"), ("l2", ">i4"), ("hdr", "S20"),
                   ("el", [("len", ">i4"), ("v", ">f4")], (d,))])
    rec = np.zeros(rows, dtype=dt)
    rec["nf"] = 2
    rec["l1"] = 8
    rec["id"] = np.arange(1, rows + 1)
    rec["l2"] = 20 + 8 * d
    rec["hdr"] = arr_hdr
    rec["el"]["len"] = 4
    rec["el"]["v"] = x
    with open(out, "wb") as f:
        f.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
        rec.tofile(f)
        f.write(struct.pack(">h", -1))


if __name__ == "__main__":
    cmd = sys.argv[1]
    a = sys.argv[2:]
    if cmd == "gen":
        gen(a[0], int(a[1]), int(a[2]), int(a[3]))
    elif cmd == "peers":
        peers(a[0], int(a[1]), int(a[2]), int(a[3]))
    elif cmd == "compare":
        compare(a[0], int(a[1]), int(a[2]), int(a[3]), a[4:])
    elif cmd == "copy":
        copy_file(a[0], int(a[1]), int(a[2]), a[3], int(a[4]) if len(a) > 4 else None)
    else:
        sys.exit(__doc__)
