// Resolution of whole cell pairs for the spatial distance histogram and the pair count (the
// density-map method of Chen, Tu et al. that the 2-BS framework paper cites in its introduction):
// a pair of cells whose every point pair provably gets the same answer from the engine's
// distance arithmetic is counted as n_a x n_b (n_a (n_a - 1) / 2 within one cell) without
// touching a point. Used by both engines; the bound functions are host/device code.
//
// The bound is exact, not a tolerance: every operation of the engine's per-pair computation
// (arith.h: op_sub, op_mul, op_fma, op_sqrt, the multiplication by 1/w and the truncation in
// sdh_bucket) is a monotone function of its operands (IEEE-754 round to nearest is monotone
// non-decreasing). Evaluating the same operations, in the same order and precision, at the
// extremes of the coordinate differences that the two cells' bounding boxes allow therefore
// brackets the value the engine computes for every pair of the two cells: d2lo <= d2(i, j) <=
// d2hi and bucket(d2lo) <= bucket(d2(i, j)) <= bucket(d2hi). When the two ends agree, every
// pair agrees with them. docs/methods.md gives the derivation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "arith.h"

namespace gpu2bs {

// How the SDH and the pair count are computed (gpu2bs.sdh_method): Auto chooses by the cost
// model of each engine, Brute examines every pair (tiles, or the grid for the pair count),
// Resolve walks the density map.
enum class SdhMethod { Auto = 0, Brute = 1, Resolve = 2 };

// Deepest density-map level (2^20 cells per axis: Z-order keys of 2-D and 3-D cells fit in 64
// bits with room to spare, and cells stay far above the float32 spacing of typical data).
constexpr int kResolveMaxLevel = 20;
constexpr int kResolveMaxLevels = kResolveMaxLevel + 1;

// What one resolution run did, per level of the density map (for benchmarks and tests).
struct ResolveStats {
  int levels = 0;                              // levels of the map (0 = root)
  int start_level = 0;                         // level of the first cell pairs
  uint64_t visited[kResolveMaxLevels] = {};    // cell pairs tested at each level
  uint64_t resolved[kResolveMaxLevels] = {};   // of which resolved
  uint64_t examined[kResolveMaxLevels] = {};   // point pairs computed one by one (at that level)
  uint64_t resolved_pairs = 0;                 // point pairs counted by resolution
  uint64_t examined_pairs = 0;                 // point pairs computed one by one
  uint64_t one_sided_entries = 0;              // GPU work entries of cells a != b taken by the
                                               // one-sided point test (small cells)
  uint64_t two_sided_entries = 0;              // and by the two-sided test (larger cells)
  double build_s = 0;                          // density map construction
  double walk_s = 0;                           // cell-pair walk and the pairwise kernels
  // Point pairs counted by resolution / all point pairs.
  double resolved_fraction() const {
    const double all = double(resolved_pairs) + double(examined_pairs);
    return all > 0 ? double(resolved_pairs) / all : 0.0;
  }
};

// Range [lo, hi] of |fl(a - b)| over a in [alo, ahi], b in [blo, bhi] (op_sub is monotone:
// fl(alo - bhi) <= fl(a - b) <= fl(ahi - blo)). A periodic box (minimum-image distances)
// would replace this per-axis range (and the pairwise difference) and nothing else.
template <typename T>
G2_HD void abs_diff_range(T alo, T ahi, T blo, T bhi, T* lo, T* hi) {
  const T l = op_sub(alo, bhi);
  const T u = op_sub(ahi, blo);
  *lo = l > T(0) ? l : (u < T(0) ? -u : T(0));
  const T nl = -l;
  *hi = nl > u ? nl : u;
}

// Bounds d2lo <= d2 <= d2hi of the squared distance that sq_dist<T, D> computes for every point
// of box a (al..ah per axis) and every point of box b, by the same operations in the same order
// (op_mul for axis 0, then op_fma per axis; both depend only on |dx| and are monotone in it and
// in the accumulator).
template <typename T, int D>
G2_HD void d2_bounds(const T* al, const T* ah, const T* bl, const T* bh, T* d2lo, T* d2hi) {
  T lo, hi;
  abs_diff_range(al[0], ah[0], bl[0], bh[0], &lo, &hi);
  T acc_lo = op_mul(lo, lo), acc_hi = op_mul(hi, hi);
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 1; k < D; ++k) {
    abs_diff_range(al[k], ah[k], bl[k], bh[k], &lo, &hi);
    acc_lo = op_fma(lo, lo, acc_lo);
    acc_hi = op_fma(hi, hi, acc_hi);
  }
  *d2lo = acc_lo;
  *d2hi = acc_hi;
}

// SDH: the bucket every pair with d2 in [d2lo, d2hi] gets, or -1 when they may differ.
// `resolved_beyond` is nbuckets - 1 with a derived width (the clamp) and nbuckets with an
// explicit width (a pseudo-bucket of pairs that are not counted); sdh_bucket with it is a
// non-decreasing function of d2, so equal ends decide every pair between them.
template <typename T>
G2_HD int resolve_bucket(T d2lo, T d2hi, T inv_w, T nbt, T resolved_beyond) {
  const int k0 = sdh_bucket<T>(d2lo, inv_w, nbt, resolved_beyond);
  const int k1 = sdh_bucket<T>(d2hi, inv_w, nbt, resolved_beyond);
  return k0 == k1 ? k0 : -1;
}

// Pair count: 1 when every pair with d2 in [d2lo, d2hi] has d2 <= r2, 0 when none has, -1 when
// they may differ.
template <typename T>
G2_HD int resolve_count(T d2lo, T d2hi, T r2) {
  return d2hi <= r2 ? 1 : (d2lo > r2 ? 0 : -1);
}

}  // namespace gpu2bs
