// Weighted CPU kernels for any x86-64 (or other) processor: no instruction-set flags.
#define G2_ISA_NS isa_generic
#define G2_ISA_NAME "generic"
#include "weights_cpu.inc"

namespace gpu2bs {

// The portable variant.
const WeightKernels& weight_kernels_generic() { return isa_generic::kWeightKernels; }

// AVX2+FMA when the processor has them (checked once), else the portable variant.
const WeightKernels& weight_kernels() {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return weight_kernels_avx2();
#endif
  return weight_kernels_generic();
}

}  // namespace gpu2bs
