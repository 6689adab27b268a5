// The all-pairs tile for any processor (no instruction-set flags), and the run-time choice.
#define G2_PW_NS pw_generic
#define G2_PW_ISA "generic"
#define G2_PW_ROWS 4
#define G2_PW_COLS 16
#include "pairwise_cpu.inc"

#include <atomic>

namespace gpu2bs {

namespace {
std::atomic<int> g_forced_isa{0};
}  // namespace

// The portable variant.
const PairwiseKernels& cpu_pairwise_kernels_generic() { return pw_generic::kKernels; }

void set_cpu_pairwise_isa(int isa) { g_forced_isa = isa; }

// AVX-512 or AVX2+FMA when the processor has them (checked once), else the portable variant.
const PairwiseKernels& cpu_pairwise_kernels() {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  switch (g_forced_isa.load()) {
    case 1: return cpu_pairwise_kernels_generic();
    case 2: return cpu_pairwise_kernels_avx2();
    case 3: return cpu_pairwise_kernels_avx512();
    default: break;
  }
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512) return cpu_pairwise_kernels_avx512();
  if (avx2) return cpu_pairwise_kernels_avx2();
#endif
  return cpu_pairwise_kernels_generic();
}

}  // namespace gpu2bs
