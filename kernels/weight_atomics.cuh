// Device helpers of the exact weight sums (src/core/weights.h): 128-bit atomic adds in global
// memory and the 32-bit-word form of the shared per-block sums, used by the weighted SDH and
// pair count (weights.cu) and the weighted RDF (rdf.cu).
#pragma once

#include "core/weights.h"

namespace gpu2bs {
namespace cuda {
namespace {

// Adds a fixed-point product to the 128-bit sum (lo, hi) with atomics (the carry from the old
// low limb).
__device__ __forceinline__ void add128(unsigned long long* lo, unsigned long long* hi, long long q) {
  const unsigned long long u = (unsigned long long)q;
  const unsigned long long old = atomicAdd(lo, u);
  const unsigned long long inc = (unsigned long long)(q >> 63) + (old + u < old ? 1ull : 0ull);
  if (inc) atomicAdd(hi, inc);
}

// Adds a 128-bit sum (l, h) to (lo, hi) with atomics.
__device__ __forceinline__ void add128(unsigned long long* lo, unsigned long long* hi,
                                       unsigned long long l, unsigned long long h) {
  const unsigned long long old = atomicAdd(lo, l);
  const unsigned long long inc = h + (old + l < old ? 1ull : 0ull);
  if (inc) atomicAdd(hi, inc);
}

// Adds a fixed-point product to a shared sum in 32-bit words: v = q + 2^62 (0 <= v < 2^63) as
// a + 2^32 b; a goes to word l, b and l's carry to word h, h's carry counted in x. The block's
// sum of v is l + 2^32 h + 2^64 x (x counts at most 2^32 adds), and the sum of q that less
// 2^62 per pair counted.
__device__ __forceinline__ void add_split32(unsigned* l, unsigned* h, unsigned* x, long long q) {
  const unsigned long long v = (unsigned long long)q + (1ull << 62);
  const unsigned a = unsigned(v), b = unsigned(v >> 32);
  const unsigned old = atomicAdd(l, a);
  const unsigned t = b + (old + a < old ? 1u : 0u);
  const unsigned old2 = atomicAdd(h, t);
  if (old2 + t < old2) atomicAdd(x, 1u);
}

// The sum of q of a 32-bit-word shared sum (l, h, x) over `cnt` pairs, as a 128-bit sum.
__device__ WeightSum split32_sum(unsigned l, unsigned h, unsigned x, unsigned cnt) {
  WeightSum v;
  v.lo = (unsigned long long)l;
  v.add(WeightSum{(unsigned long long)h << 32, 0});
  v.add(WeightSum{0, (unsigned long long)x});
  // Less cnt * 2^62: the two's complement of (cnt mod 4) * 2^62 + (cnt / 4) * 2^64.
  const WeightSum off{(unsigned long long)(cnt & 3u) << 62, (unsigned long long)(cnt >> 2)};
  WeightSum neg{~off.lo, ~off.hi};
  neg.add((long long)1);
  v.add(neg);
  return v;
}

}  // namespace
}  // namespace cuda
}  // namespace gpu2bs
