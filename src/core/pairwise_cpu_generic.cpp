// The all-pairs tile for any processor (no instruction-set flags).
#define G2_PW_NS pw_generic
#define G2_PW_ISA "generic"
#include "pairwise_cpu.inc"

namespace gpu2bs {

// The portable variant.
const PairwiseKernels& cpu_pairwise_kernels_generic() { return pw_generic::kKernels; }

// AVX2+FMA when the processor has them (checked once), else the portable variant.
const PairwiseKernels& cpu_pairwise_kernels() {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return cpu_pairwise_kernels_avx2();
#endif
  return cpu_pairwise_kernels_generic();
}

}  // namespace gpu2bs
