// Pair weights of the SDH and the pair count (2-BS Type-II and Type-I): beside the count of each
// bucket, the sum of w_i * w_j over its pairs, identical on every engine and in every run.
//
// The rule (docs/semantics.md "Pair weights"): each product p = w_i * w_j is rounded to float64
// once, then to the fixed-point grid 2^-shift (round to nearest, ties to even), where
// shift = 62 - E and 2^(E-1) <= fl(max|w|^2) < 2^E, so every rounded product is an integer q
// with |q| <= 2^62. The integers are summed exactly in a 128-bit two's-complement accumulator
// (two 64-bit limbs with carries; 2^63 pairs of 2^62 need 126 bits), and integer additions are
// associative, so threads, atomics and work splits in any order give the same bits. The sum is
// rounded to float64 once at the end. Bound: |result - sum of fl(w_i w_j)| <= 0.5 ulp(result) +
// pairs * 2^(E-63) <= 0.5 ulp(result) + pairs * max|w|^2 * 2^-62; the fixed-point step is exact
// when every product is a multiple of 2^(E-62) (integer weights with max|w|^2 < 2^62, dyadic
// fractions with few bits).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "arith.h"
#include "problem.h"

namespace gpu2bs {

// An exact 128-bit two's-complement sum of fixed-point products: value = hi * 2^64 + lo.
struct WeightSum {
  uint64_t lo = 0;
  uint64_t hi = 0;  // two's complement high limb
  // Adds one fixed-point product q (|q| <= 2^62).
  G2_HD void add(int64_t q) {
    const uint64_t u = static_cast<uint64_t>(q);
    const uint64_t t = lo + u;
    hi += static_cast<uint64_t>(q >> 63) + (t < u ? 1u : 0u);
    lo = t;
  }
  // Adds another accumulator (exact modulo 2^128; no overflow within 2^63 pairs).
  G2_HD void add(const WeightSum& o) {
    const uint64_t t = lo + o.lo;
    hi += o.hi + (t < o.lo ? 1u : 0u);
    lo = t;
  }
  bool operator==(const WeightSum& o) const { return lo == o.lo && hi == o.hi; }
};

// The fixed-point grid of one call: a product p becomes rint(p * s1 * s2), s1 * s2 = 2^shift
// (two factors so each is a normal float64 over the whole exponent range).
struct WeightScale {
  int shift = 0;
  double s1 = 1, s2 = 1;
};

// The grid for weights of largest magnitude `wmax` (finite, >= 0). Throws
// Error(InvalidParameter) when wmax^2 overflows float64.
WeightScale make_weight_scale(double wmax);

// p = w_i * w_j rounded to float64, then to the grid: the fixed-point integer summed. On the
// host the rounding to an integer (nearest, ties to even, as __double2ll_rn) is written with
// plain IEEE operations so loops over it vectorize: below 2^52, |v| + 2^52 rounds to an integer
// and subtracting 2^52 again is exact; from 2^52 on every float64 is an integer.
G2_HD int64_t weight_fixed(double wi, double wj, const WeightScale& s) {
  const double v = op_mul(op_mul(op_mul(wi, wj), s.s1), s.s2);
#if defined(__CUDA_ARCH__)
  return __double2ll_rn(v);
#else
  const double two52 = 4503599627370496.0;
  const double a = std::fabs(v);
  const double r = a < two52 ? (a + two52) - two52 : a;
  return static_cast<int64_t>(std::copysign(r, v));
#endif
}

// The float64 value of a sum on grid `s`, rounded once (a result beyond float64's range
// throws Error(InvalidParameter)).
double weight_value(const WeightSum& sum, const WeightScale& s);

// Counts and weight sums of a weighted SDH (one per bucket) or pair count (one entry).
struct WeightedCounts {
  std::vector<uint64_t> pairs;
  std::vector<WeightSum> sums;
  WeightScale scale;
};

// Largest |w| of `n` weights; every weight must be finite (else Error(InvalidParameter)
// naming `what`).
double weight_max(const double* w, size_t n, const char* what);

// The sum of `n` weights (squares false) or of their squares w_i * w_i (squares true), exact
// on a fixed-point grid as the pair sums (2^(E-62) with 2^(E-1) <= the largest |w| or
// fl(|w|^2) < 2^E; each term rounded to it once, to nearest) and rounded to float64 once, so
// the order of the weights does not change it. 0 when n is 0. Throws as weight_max.
double weight_total(const double* w, size_t n, bool squares, const char* what);

class Control;
// The CPU engine's weighted runs on all cores (brute force over tile pairs): the same pairs and
// buckets as the unweighted kernels (arith.h), weights `w` by input index.
WeightedCounts cpu_sdh_weighted(const SdhProblem& p, const double* w, Control& ctl);
WeightedCounts cpu_pair_count_weighted(const PairCountProblem& p, const double* w, Control& ctl);

}  // namespace gpu2bs
