// The all-pairs vector kernels' arithmetic, shared by the CPU and CUDA engines (Sarje and Aluru,
// "All-pairs computations on many-core graphics processors", section 2: D[i, j] = F(u_i, v_j)).
//
// Order of accumulation (both engines, every tile shape and slice width): one float32
// accumulator per pair, starting at +0, updated once per dimension k = 0, 1, ..., d - 1 in
// order, carried unchanged from one slice of d' dimensions to the next. Each update is one of
// the explicit operations below (fused multiply-add, or an add of a separately rounded term),
// so a pair's key is the same bits on every engine. The key is what both engines rank and
// filter by (smaller is better); the SQL value is computed from it on the host in float64.
#pragma once

#include <cmath>
#include <cstdint>

#include "arith.h"

namespace gpu2bs {

// The metrics of gpu_pairwise. Cosine runs as Dot on vectors normalized on the host.
enum class PairMetric : int { L1 = 0, L2 = 1, SqEuclidean = 2, Cosine = 3, Dot = 4, Lp = 5 };

// a + b, rounded to nearest, never fused.
G2_HD float pw_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
G2_HD double pw_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// x^p for x >= 0 in float64 from explicit operations only (no libm: its pow differs between
// the host and the device), rounded to float32. Relative error about 1e-15 before rounding.
// x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1)
// (series to s^23); exp by reduction to r in [-ln2/2, ln2/2] and a degree-16 Taylor polynomial.
G2_HD float pw_pow(float xf, double p) {
  if (xf == 0.0f) return 0.0f;
  const double x = double(xf);
  int e = 0;
  double m = ::frexp(x, &e);  // m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m = op_mul(m, 2.0);
    e -= 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = op_mul(s, s);
  double t = 1.0 / 23.0;
  t = op_fma(t, s2, 1.0 / 21.0);
  t = op_fma(t, s2, 1.0 / 19.0);
  t = op_fma(t, s2, 1.0 / 17.0);
  t = op_fma(t, s2, 1.0 / 15.0);
  t = op_fma(t, s2, 1.0 / 13.0);
  t = op_fma(t, s2, 1.0 / 11.0);
  t = op_fma(t, s2, 1.0 / 9.0);
  t = op_fma(t, s2, 1.0 / 7.0);
  t = op_fma(t, s2, 1.0 / 5.0);
  t = op_fma(t, s2, 1.0 / 3.0);
  t = op_fma(t, s2, 1.0);
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double lnm = op_mul(op_mul(2.0, s), t);
  const double lnx = pw_add(op_fma(double(e), ln2_lo, lnm), op_mul(double(e), ln2_hi));
  const double y = op_mul(p, lnx);
  if (y > 709.0) return INFINITY;
  if (y < -745.0) return 0.0f;
  const double n = ::rint(op_mul(y, 1.44269504088896338700));
  const double r = op_fma(-n, ln2_lo, op_fma(-n, ln2_hi, y));
  double q = 1.0 / 20922789888000.0;  // 1/16!
  q = op_fma(q, r, 1.0 / 1307674368000.0);
  q = op_fma(q, r, 1.0 / 87178291200.0);
  q = op_fma(q, r, 1.0 / 6227020800.0);
  q = op_fma(q, r, 1.0 / 479001600.0);
  q = op_fma(q, r, 1.0 / 39916800.0);
  q = op_fma(q, r, 1.0 / 3628800.0);
  q = op_fma(q, r, 1.0 / 362880.0);
  q = op_fma(q, r, 1.0 / 40320.0);
  q = op_fma(q, r, 1.0 / 5040.0);
  q = op_fma(q, r, 1.0 / 720.0);
  q = op_fma(q, r, 1.0 / 120.0);
  q = op_fma(q, r, 1.0 / 24.0);
  q = op_fma(q, r, 1.0 / 6.0);
  q = op_fma(q, r, 0.5);
  q = op_fma(q, r, 1.0);
  q = op_fma(q, r, 1.0);
  return float(::ldexp(q, int(n)));
}

// One accumulation step of metric M for dimension values (u, v).
template <PairMetric M>
G2_HD float pw_step(float acc, float u, float v, double p) {
  if constexpr (M == PairMetric::L1) {
    return pw_add(acc, ::fabsf(op_sub(u, v)));
  } else if constexpr (M == PairMetric::L2 || M == PairMetric::SqEuclidean) {
    const float dx = op_sub(u, v);
    return op_fma(dx, dx, acc);
  } else if constexpr (M == PairMetric::Dot || M == PairMetric::Cosine) {
    return op_fma(u, v, acc);
  } else {
    return pw_add(acc, pw_pow(::fabsf(op_sub(u, v)), p));
  }
}

// The ranking key of an accumulator: smaller is better (the similarity of dot and cosine is
// negated); NaN (overflowing sums of opposite signs) ranks last, as +Infinity.
template <PairMetric M>
G2_HD float pw_key(float acc) {
  const float k = (M == PairMetric::Dot || M == PairMetric::Cosine) ? -acc : acc;
  return k != k ? INFINITY : k;
}

// Key order with ties by column index: (ka, ja) before (kb, jb).
G2_HD bool pw_less(float ka, uint32_t ja, float kb, uint32_t jb) {
  return ka < kb || (ka == kb && ja < jb);
}

}  // namespace gpu2bs
