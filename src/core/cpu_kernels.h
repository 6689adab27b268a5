// The CPU engine's pairwise inner loops, compiled once per instruction set (generic x86-64 and
// AVX2+FMA) and chosen at run time. Same arithmetic (arith.h) on every path, so every variant
// gives bit-identical results.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine.h"

namespace gpu2bs {

// Largest j-range handed to the SDH tile kernel.
constexpr size_t kCpuTile = 1024;

// Histograms up to this many buckets get 4 interleaved private copies per worker (bench_cpu,
// 2-core EPYC, N=1e5 f32, pairs/s/thread: 10 buckets 1.13e9 -> 1.24e9, 500 buckets 1.53e9 ->
// 1.66e9, measured with test/bench/bench_cpu).
constexpr int kCpuSdhCopiesMaxBuckets = 1024;

// Upper bound of the CPU SDH's private histograms together (unless one histogram alone is
// larger): 16 private copies of the largest histogram (2^20 buckets, 8 MiB each).
constexpr size_t kCpuSdhPrivateBytes = size_t(128) << 20;

// Private histograms of the CPU SDH: `workers` workers (each allocates its private histogram
// on its first work item) with `copies` interleaved copies each.
struct SdhPrivatization {
  int workers = 1;
  int copies = 1;
};

// Workers at most the threads and the work items (tile pairs), at most one per `nbuckets`
// pairs (a private histogram that receives fewer pairs than it has buckets costs more to zero
// and merge than it saves), and all private histograms within kCpuSdhPrivateBytes; 4 copies
// for histograms of at most kCpuSdhCopiesMaxBuckets buckets when every worker gets 16 or more
// pairs per bucket (4 per bucket of each copy).
SdhPrivatization sdh_privatization(int nbuckets, uint64_t pairs, int threads, size_t items);

// Upper bound of the CPU join's result pages in memory (the workers' pages being filled and
// the queue of full pages), whatever Control::page_pairs and the thread count: pages are
// made smaller when page_pairs x (workers + queued pages) x 16 bytes would exceed it.
constexpr size_t kCpuResultBytes = size_t(256) << 20;
// First size of a worker's result page; it doubles as pairs arrive, up to the page size.
constexpr size_t kCpuFirstPagePairs = 1024;

// Pairs per result page of a join on `workers` workers with `queue_pages` queued pages, for
// a requested page size of `page_pairs` (at least 64, at most within kCpuResultBytes).
size_t join_page_pairs(size_t page_pairs, int workers, size_t queue_pages);

// Candidates per block of the join and aggregate kernels: one vector of float32 lanes (AVX2).
constexpr size_t kCpuJoinBlock = 8;
// The join and aggregate kernels read candidate coordinates b[k][j] for j up to
// j1 + kCpuJoinPad - 1 (a range's last block, whose lanes past j1 are ignored): callers give
// arrays with that many readable elements past every range's end (the CPU engine pads its
// coordinate arrays).
constexpr size_t kCpuJoinPad = kCpuJoinBlock;

// Collects join results into a page; when the page is full (or not allocated yet), `flush`
// makes room: it grows the page or hands it on (and may stop the worker by returning false).
struct PageWriter {
  PairRecord* buf = nullptr;
  size_t n = 0;
  size_t cap = 0;
  std::function<bool()> flush;
  bool ok = true;
  void add(uint32_t i, uint32_t j, double dist) {
    if (n == cap) {
      ok = flush() && ok;
      if (!ok || n == cap) return;  // stopping: the pair is dropped with the rest
    }
    buf[n++] = PairRecord{i, j, dist};
  }
};

// A join's pairs reduced without leaving the kernel: those with d2 <= eps2 whose distance
// sqrt(d2) (widened to float64) lies in [lo, hi] (bounds open unless *_incl) are counted, summed
// (Neumaier per lane) and their minimum and maximum kept, in kLanes independent lanes (one per
// position in the kernel's candidate block) merged by finish(). One per worker.
struct DistAgg {
  static constexpr int kLanes = int(kCpuJoinBlock);
  double lo = -HUGE_VAL, hi = HUGE_VAL;
  bool lo_incl = true, hi_incl = true;
  alignas(64) uint64_t cnt[kLanes] = {};
  alignas(64) double sum[kLanes] = {};
  alignas(64) double comp[kLanes] = {};
  alignas(64) double mn[kLanes];
  alignas(64) double mx[kLanes];
  DistAgg() {
    for (int l = 0; l < kLanes; ++l) {
      mn[l] = HUGE_VAL;
      mx[l] = -HUGE_VAL;
    }
  }
  // The lanes merged: count, sum and its compensation, min and max (min/max undefined when
  // count is 0).
  void finish(uint64_t* count, double* s, double* c, double* lo_out, double* hi_out) const;
};

// Per-point pair counts of a join without writing a pair: each pair with d2 <= eps2 adds 1 to
// cnt[g], g being the pair's point of side `side` (0: the i end, 1: the j end); with `keys`
// (a self-join, keys by sorted position) the i end is the one with the smaller key (i when the
// keys are equal), as GroupSink assigns a self-join's id1.
struct GroupCount {
  const int64_t* keys = nullptr;
  int side = 0;
  uint32_t* cnt = nullptr;
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
  // Join: writes (i, j, sqrt(d2)) for d2 <= eps2. Reads b up to kCpuJoinPad past j1.
  void (*join_f32)(int dims, const float* const* a, size_t i0, size_t i1, const float* const* b,
                   size_t j0, size_t j1, bool diag, float eps2, PageWriter& out);
  void (*join_f64)(int dims, const double* const* a, size_t i0, size_t i1,
                   const double* const* b, size_t j0, size_t j1, bool diag, double eps2,
                   PageWriter& out);
  // Join reduced in place (DistAgg): the pairs the join would write, aggregated. Reads b up to
  // kCpuJoinPad past j1.
  void (*agg_f32)(int dims, const float* const* a, size_t i0, size_t i1, const float* const* b,
                  size_t j0, size_t j1, bool diag, float eps2, DistAgg& acc);
  void (*agg_f64)(int dims, const double* const* a, size_t i0, size_t i1,
                  const double* const* b, size_t j0, size_t j1, bool diag, double eps2,
                  DistAgg& acc);
  // Join counted per point in place (GroupCount). Reads b up to kCpuJoinPad past j1.
  void (*group_f32)(int dims, const float* const* a, size_t i0, size_t i1,
                    const float* const* b, size_t j0, size_t j1, bool diag, float eps2,
                    const GroupCount& gc);
  void (*group_f64)(int dims, const double* const* a, size_t i0, size_t i1,
                    const double* const* b, size_t j0, size_t j1, bool diag, double eps2,
                    const GroupCount& gc);
};

// Kernels of each compiled variant.
const CpuKernels& cpu_kernels_generic();
const CpuKernels& cpu_kernels_avx2();
// The best variant this processor runs (AVX2+FMA when present).
const CpuKernels& cpu_kernels();

}  // namespace gpu2bs
