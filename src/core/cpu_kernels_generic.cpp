// CPU kernels for any x86-64 (or other) processor: no instruction-set flags.
#define G2_ISA_NS isa_generic
#define G2_ISA_NAME "generic"
#include "cpu_kernels.inc"

namespace gpu2bs {

// The portable variant.
const CpuKernels& cpu_kernels_generic() { return isa_generic::kKernels; }

// AVX2+FMA when the processor has them (checked once), else the portable variant.
const CpuKernels& cpu_kernels() {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return cpu_kernels_avx2();
#endif
  return cpu_kernels_generic();
}

}  // namespace gpu2bs
