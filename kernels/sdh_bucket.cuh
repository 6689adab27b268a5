// The float32 SDH bucket without the square root's called slow path, shared by the tile
// kernels (sdh.cu) and the resolution work kernel (resolve.cu). Equal to sdh_bucket<float> for
// every d2 sq_dist returns when 0 <= inv_w <= 2^40 (test SdhFastBucket.EveryFloat).
#pragma once

#include <cuda_runtime.h>

namespace gpu2bs {
namespace cuda {
namespace {  // internal linkage: one copy per translation unit (relocatable device code)

// Correctly rounded float32 square root for bit patterns in [0x0d000000, 0x7f7fffff] (x >= 2^-101,
// finite): the instruction sequence of the compiler's own __fsqrt_rn for that range (MUFU.RSQ,
// two FMUL, two FFMA; its other inputs go to a called slow path, and the branch, call and
// reconvergence cost about 4 instructions per pair in the SDH loop).
__device__ __forceinline__ float sqrt_rn_inrange(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  const float s = __fmul_rn(x, y);
  const float h = __fmul_rn(y, 0.5f);
  const float r = __fmaf_rn(-s, s, x);
  return __fmaf_rn(r, h, s);
}

// sdh_bucket<float> without the slow path, for the d2 that sq_dist returns (+0, positive, +inf,
// NaN) and 0 <= inv_w <= 2^40: below 2^-101 the exact bucket is 0 (sqrt < 2^-50, times inv_w
// < 2^-10) and s = 0 gives 0; for +inf and NaN the square root is x itself. The test
// SdhFastBucket.EveryFloat compares it with sdh_bucket for every bit pattern.
__device__ __forceinline__ int sdh_bucket_nocall(float d2, float inv_w, float nbt, float beyond) {
  const unsigned b = __float_as_uint(d2);
  float s = sqrt_rn_inrange(d2);
  if (b - 0x0d000000u > 0x727fffffu) s = b < 0x0d000000u ? 0.0f : d2;
  const float q = __fmul_rn(s, inv_w);
  return static_cast<int>(q < nbt ? q : beyond);
}

}  // namespace
}  // namespace cuda
}  // namespace gpu2bs
