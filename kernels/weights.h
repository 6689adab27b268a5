// Weighted SDH and pair count on the device (kernels/weights.cu): all-pairs tiles over device
// arrays the caller owns, counts and exact fixed-point weight sums (src/core/weights.h). No
// engine internals in weighted_run, so test/gpu's test_weights builds from weights.cu and the
// core alone.
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "core/engine.h"
#include "core/weights.h"

namespace gpu2bs {
namespace cuda {

// One weighted run: points (device SoA arrays in the precision), weights, the statistic and its
// outputs (device arrays, zeroed by the caller: nbuckets entries for the SDH, one for the pair
// count; sum = hi * 2^64 + lo per entry).
struct WeightedDeviceArgs {
  int dims = 0;
  size_t n = 0;
  bool f32 = true;
  const void* coord[kMaxDims] = {};
  const double* w = nullptr;
  int nbuckets = 0;       // SDH: buckets; 0: the pair count
  bool clamp = true;      // SDH: width from the bounding box (pairs past the end in the last)
  double inv_w = 0;       // SDH: 1 / width (inv_width_f for float32)
  float inv_w_f = 0;
  double r2 = 0;          // pair count: r^2 (r2_f for float32)
  float r2_f = 0;
  bool weighted = true;   // false: counts only (benchmarks: the cost of the sums)
  bool split32 = true;    // SDH shared sums in 32-bit words (else two 64-bit limbs per bucket)
  WeightScale scale;
  unsigned long long* pairs = nullptr;
  unsigned long long* lo = nullptr;
  unsigned long long* hi = nullptr;
};

// Runs every tile pair of the points on `stream` in launches of bounded work, calling `poll`
// (may throw) after each; `sms` sizes the grid. Returns the kernel time in milliseconds. Every
// CUDA call is checked (`check` throws).
double weighted_run(const WeightedDeviceArgs& a, cudaStream_t stream, int sms,
                    const std::function<void()>& poll,
                    void (*check)(cudaError_t, const char*, const char*, int));

// The CUDA engine's weighted SDH and pair count (kernels/weights_engine.cu): the points and
// weights uploaded once, weighted_run, the counts and sums downloaded. Throws.
WeightedCounts sdh_weighted(const SdhProblem& p, const double* w, Control& ctl);
WeightedCounts pair_count_weighted(const PairCountProblem& p, const double* w, Control& ctl);

}  // namespace cuda
}  // namespace gpu2bs
