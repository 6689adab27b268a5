// Exact IEEE-754 arithmetic shared by the CPU and CUDA engines.
//
// DESIGN.md "Precision": distances are computed with explicit operations in a fixed order so the
// two engines give bit-identical results. On the host the translation units are compiled with
// -ffp-contract=off (no implicit fused multiply-adds); on the device the _rn intrinsics forbid
// contraction. Every pairwise kernel uses these helpers and nothing else for its distance math.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define G2_HD __host__ __device__ __forceinline__
#else
#define G2_HD inline
#endif

namespace gpu2bs {

// Largest number of coordinates a point may have (similarity join: 2 to 6).
constexpr int kMaxDims = 6;

// a - b, rounded to nearest.
G2_HD float op_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
G2_HD double op_sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

// a * b, rounded to nearest, never fused with a neighbouring add.
G2_HD float op_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
G2_HD double op_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// a * b + c with a single rounding (fused multiply-add).
G2_HD float op_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
G2_HD double op_fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Correctly rounded square root.
G2_HD float op_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
G2_HD double op_sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// Squared Euclidean distance of two points given coordinate by coordinate:
// d2 = dx0*dx0, then d2 = fma(dxk, dxk, d2) for k = 1..D-1. Symmetric in (a, b) because
// fl(a - b) = -fl(b - a).
template <typename T, int D>
G2_HD T sq_dist(const T* a, const T* b) {
  T dx = op_sub(a[0], b[0]);
  T acc = op_mul(dx, dx);
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 1; k < D; ++k) {
    T dk = op_sub(a[k], b[k]);
    acc = op_fma(dk, dk, acc);
  }
  return acc;
}

// Bucket of a pair in the spatial distance histogram: k = floor(sqrt(d2) * inv_width).
// Returns -1 when the pair lies beyond the last bucket and `clamp` is false (explicit width);
// with `clamp` (width derived from the bounding box) such pairs go to the last bucket.
// Written as a select (no early return) so compilers vectorize it; `beyond` is nbuckets - 1
// (clamp) or -1 (drop), see sdh_beyond().
template <typename T>
G2_HD int sdh_bucket(T d2, T inv_width, T nbuckets_t, T beyond) {
  T q = op_mul(op_sqrt(d2), inv_width);
  return static_cast<int>(q < nbuckets_t ? q : beyond);
}

// The value sdh_bucket() returns for pairs at or past nbuckets * width.
template <typename T>
G2_HD T sdh_beyond(int nbuckets, bool clamp) {
  return clamp ? T(nbuckets - 1) : T(-1);
}

// Neumaier's compensated step: s += v with the rounding error collected in c (the sum is s + c).
G2_HD void neumaier_add(double& s, double& c, double v) {
  const double t = s + v;
  c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
  s = t;
}

}  // namespace gpu2bs
