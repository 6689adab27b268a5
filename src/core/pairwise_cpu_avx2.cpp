// The all-pairs tile compiled with -mavx2 -mfma (the build sets the flags for this file only).
#define G2_PW_NS pw_avx2
#define G2_PW_ISA "avx2+fma"
#include "pairwise_cpu.inc"

namespace gpu2bs {

// The AVX2+FMA variant (call only when the processor supports it).
const PairwiseKernels& cpu_pairwise_kernels_avx2() { return pw_avx2::kKernels; }

}  // namespace gpu2bs
