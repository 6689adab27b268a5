#!/usr/bin/env python3
"""gpu_pairwise CPU engine vs scikit-learn NearestNeighbors(algorithm='brute') on the same cores.

Self kNN over N random normal float32 vectors of dimension D (k neighbours besides the row
itself), median of 3 runs each, for the metrics l2, cosine and l1; the neighbour lists of both
are compared with each other (rows identical). Prints a markdown table.

  build/venv/bin/python test/bench/pairwise_cpu_vs_sklearn.py [N] [D] [K]
(needs test/unit/build/bench_pairwise: make unit, or cmake --build test/unit/build)
"""
import os
import re
import subprocess
import sys
import time

import numpy as np
from sklearn.neighbors import NearestNeighbors

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
d = int(sys.argv[2]) if len(sys.argv) > 2 else 768
k = int(sys.argv[3]) if len(sys.argv) > 3 else 10
cores = os.cpu_count()
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
bench = os.path.join(root, "test/unit/build/bench_pairwise")
x = np.random.default_rng(1).standard_normal((n, d), dtype=np.float32)
path = "/tmp/pw_cpu_bench.f32"
x.tofile(path)

print(f"Self kNN, n = {n}, d = {d}, k = {k}, random normal float32, {cores} cores, median of 3\n")
print("| metric | gpu2bs CPU engine (ms) | scikit-learn brute (ms) | speed-up | rows with identical lists |")
print("|---|---|---|---|---|")
for metric, skm in (("l2", "euclidean"), ("cosine", "cosine"), ("l1", "manhattan")):
    out = subprocess.run([bench, "knn", path, str(n), str(d), str(k), "3", "/tmp/pw_cpu_bench", "cpu", metric],
                         capture_output=True, text=True, check=True).stdout
    ours_ms = float(re.search(r"exact median of 3: ([0-9.]+) ms", out).group(1))
    ours = np.fromfile("/tmp/pw_cpu_bench.exact.i32", dtype=np.int32).reshape(n, k)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric=skm, n_jobs=cores).fit(x)
        _, idx = nn.kneighbors(x)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    # drop each row's own index (first, or wherever it landed among exact ties)
    sk = np.array([[j for j in row if j != i][:k] for i, row in enumerate(idx)])
    same = int((np.sort(sk, 1) == np.sort(ours, 1)).all(1).sum())
    print(f"| {metric} | {ours_ms:.0f} | {times[1]:.0f} | {times[1] / ours_ms:.2f}x | {same}/{n} |")
os.remove(path)
