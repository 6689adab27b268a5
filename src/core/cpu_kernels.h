// The CPU engine's pairwise inner loops, compiled once per instruction set (generic x86-64 and
// AVX2+FMA) and chosen at run time. Same arithmetic (arith.h) on every path, so every variant
// gives bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine.h"

namespace gpu2bs {

// Largest j-range handed to the SDH tile kernel.
constexpr size_t kCpuTile = 1024;

// Histograms up to this many buckets get 4 interleaved private copies per worker (bench_cpu,
// 2-core EPYC, N=1e5 f32, pairs/s/thread: 10 buckets 1.13e9 -> 1.24e9, 500 buckets 1.53e9 ->
// 1.66e9; test/bench/results/2026-11-22-cpu-2core-bench_cpu.txt).
constexpr int kCpuSdhCopiesMaxBuckets = 1024;

// Collects join results into a page; `flush` hands a full page on (and may stop the worker by
// returning false).
struct PageWriter {
  PairRecord* buf = nullptr;
  size_t n = 0;
  size_t cap = 0;
  std::function<bool()> flush;
  bool ok = true;
  void add(uint32_t i, uint32_t j, double dist) {
    buf[n++] = PairRecord{i, j, dist};
    if (n == cap) ok = flush() && ok;
  }
};

// One instruction-set variant of the kernels. Coordinates are SoA arrays of the given type.
// Ranges: i in [i0, i1) of `a`, j in [j0, j1) of `b`; with `diag` (a == b, same range) only
// pairs with j > i.
struct CpuKernels {
  const char* isa;
  // SDH: hist[c * nbuckets + k] += pairs in bucket k, over `copies` (1 or 4) private copies
  // that the caller sums (j-range at most kCpuTile).
  void (*sdh_f32)(int dims, const float* const* a, size_t i0, size_t i1, size_t j0, size_t j1,
                  bool diag, const SdhParams& p, uint64_t* hist, int copies);
  void (*sdh_f64)(int dims, const double* const* a, size_t i0, size_t i1, size_t j0, size_t j1,
                  bool diag, const SdhParams& p, uint64_t* hist, int copies);
  // Pair count: pairs with d2 <= r2.
  uint64_t (*count_f32)(int dims, const float* const* a, size_t i0, size_t i1,
                        const float* const* b, size_t j0, size_t j1, bool diag, float r2);
  uint64_t (*count_f64)(int dims, const double* const* a, size_t i0, size_t i1,
                        const double* const* b, size_t j0, size_t j1, bool diag, double r2);
  // Join: writes (i, j, sqrt(d2)) for d2 <= eps2.
  void (*join_f32)(int dims, const float* const* a, size_t i0, size_t i1, const float* const* b,
                   size_t j0, size_t j1, bool diag, float eps2, PageWriter& out);
  void (*join_f64)(int dims, const double* const* a, size_t i0, size_t i1,
                   const double* const* b, size_t j0, size_t j1, bool diag, double eps2,
                   PageWriter& out);
};

// Kernels of each compiled variant.
const CpuKernels& cpu_kernels_generic();
const CpuKernels& cpu_kernels_avx2();
// The best variant this processor runs (AVX2+FMA when present).
const CpuKernels& cpu_kernels();

}  // namespace gpu2bs
