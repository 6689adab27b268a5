// The CPU engine's all-pairs register tile, compiled once per instruction set (generic x86-64,
// AVX2+FMA with a 4 x 16 tile, AVX-512 with an 8 x 32 tile) and chosen at run time like
// cpu_kernels(). Every variant accumulates each pair in the order of pairwise_arith.h, so all
// give the same bits as each other and as the CUDA engine; the tile shape only decides which
// pairs share registers.
#pragma once

#include <cstddef>

namespace gpu2bs {

// Largest register tile of any variant: rows of a x columns of b. Column slabs are a multiple
// of kPwMaxTileCols wide.
constexpr size_t kPwMaxTileRows = 8;
constexpr size_t kPwMaxTileCols = 32;

// keys[r * cols + c] = key of (a row arow[r], column c of the transposed slab bt, row stride
// ldb), over d dimensions, for the variant's rows x cols tile.
using PwBlockFn = void (*)(const float* const* arow, const float* bt, size_t ldb, int d, double p,
                           float* keys);

struct PairwiseKernels {
  const char* isa;
  int rows;
  int cols;
  PwBlockFn block[6];  // indexed by PairMetric
};

const PairwiseKernels& cpu_pairwise_kernels_generic();
const PairwiseKernels& cpu_pairwise_kernels_avx2();
const PairwiseKernels& cpu_pairwise_kernels_avx512();
// The widest variant the processor runs (AVX-512, else AVX2+FMA, else generic), unless a test
// forced one with set_cpu_pairwise_isa.
const PairwiseKernels& cpu_pairwise_kernels();
// Test and benchmark hook: 0 = automatic, 1 = generic, 2 = AVX2+FMA, 3 = AVX-512 (the caller
// checks that the processor has it).
void set_cpu_pairwise_isa(int isa);

}  // namespace gpu2bs
