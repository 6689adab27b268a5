// The all-pairs tile compiled with -mavx2 -mfma (the build sets the flags for this file only):
// 4 x 16 accumulators, eight 256-bit registers.
#define G2_PW_NS pw_avx2
#define G2_PW_ISA "avx2+fma"
#define G2_PW_ROWS 4
#define G2_PW_COLS 16
#define G2_PW_VEC __m256
#define G2_PW_W 8
#define G2_PW_ZERO _mm256_setzero_ps
#define G2_PW_LOAD _mm256_loadu_ps
#define G2_PW_STORE _mm256_storeu_ps
#define G2_PW_SET1 _mm256_set1_ps
#define G2_PW_ADD _mm256_add_ps
#define G2_PW_SUB _mm256_sub_ps
#define G2_PW_FMA _mm256_fmadd_ps
#define G2_PW_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#include "pairwise_cpu.inc"

namespace gpu2bs {

// The AVX2+FMA variant (call only when the processor supports it).
const PairwiseKernels& cpu_pairwise_kernels_avx2() { return pw_avx2::kKernels; }

}  // namespace gpu2bs
