// The CPU engine's weighted SDH and pair count inner loops (weights_cpu.inc), compiled once per
// instruction set (generic x86-64 and AVX2+FMA) and chosen at run time, as cpu_kernels.h does:
// the same arithmetic (arith.h, weights.h) on every path, so every variant gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weights.h"

namespace gpu2bs {

// Rows per tile of the weighted CPU runs (one work item is a pair of tiles; the kernels' row
// buffers hold one tile).
constexpr size_t kWeightTile = 512;

// One instruction-set variant. Ranges: rows i in [i0, i1) and j in [j0, j1) of the same points
// (SoA coordinates c, weights w), j > i when `diag`; j1 - j0 <= kWeightTile. Each counted pair
// adds 1 to pairs[b] and its fixed-point product to sums[b] (b its bucket; 0 for the count).
struct WeightKernels {
  const char* isa;
  // SDH: bucket as sdh_bucket with 1 / width `inv_w`; `clamp` puts pairs past the last bucket
  // in it, else they are not counted.
  void (*sdh_f32)(int dims, const float* const* c, const double* w, size_t i0, size_t i1,
                  size_t j0, size_t j1, bool diag, float inv_w, int nb, bool clamp,
                  const WeightScale& s, uint64_t* pairs, WeightSum* sums);
  void (*sdh_f64)(int dims, const double* const* c, const double* w, size_t i0, size_t i1,
                  size_t j0, size_t j1, bool diag, double inv_w, int nb, bool clamp,
                  const WeightScale& s, uint64_t* pairs, WeightSum* sums);
  // Pair count: pairs with d2 <= r2.
  void (*count_f32)(int dims, const float* const* c, const double* w, size_t i0, size_t i1,
                    size_t j0, size_t j1, bool diag, float r2, const WeightScale& s,
                    uint64_t* pairs, WeightSum* sums);
  void (*count_f64)(int dims, const double* const* c, const double* w, size_t i0, size_t i1,
                    size_t j0, size_t j1, bool diag, double r2, const WeightScale& s,
                    uint64_t* pairs, WeightSum* sums);
};

// Kernels of each compiled variant.
const WeightKernels& weight_kernels_generic();
const WeightKernels& weight_kernels_avx2();
// The best variant this processor runs (AVX2+FMA when present).
const WeightKernels& weight_kernels();

}  // namespace gpu2bs
