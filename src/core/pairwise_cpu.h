// The CPU engine's all-pairs register tile, compiled once per instruction set (generic x86-64
// and AVX2+FMA) and chosen at run time like cpu_kernels(). Every variant accumulates each pair
// in the order of pairwise_arith.h, so all give the same bits as the CUDA engine.
#pragma once

#include <cstddef>

namespace gpu2bs {

// Register tile: rows of a x columns of b.
constexpr size_t kPwTileRows = 4;
constexpr size_t kPwTileCols = 16;

// keys[r * kPwTileCols + c] = key of (a row r, column c of the transposed slab bt + column
// offset, row stride ldb), over d dimensions.
using PwBlockFn = void (*)(const float* const* arow, const float* bt, size_t ldb, int d, double p,
                           float* keys);

struct PairwiseKernels {
  const char* isa;
  PwBlockFn block[6];  // indexed by PairMetric
};

const PairwiseKernels& cpu_pairwise_kernels_generic();
const PairwiseKernels& cpu_pairwise_kernels_avx2();
// AVX2+FMA when the processor has them, else the portable variant.
const PairwiseKernels& cpu_pairwise_kernels();

}  // namespace gpu2bs
