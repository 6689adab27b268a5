// The all-pairs tile compiled with -mavx512f -mfma and 512-bit vectors (the build sets the flags
// for this file only): 8 x 32 accumulators, sixteen 512-bit registers.
#define G2_PW_NS pw_avx512
#define G2_PW_ISA "avx512f"
#define G2_PW_ROWS 8
#define G2_PW_COLS 32
#define G2_PW_VEC __m512
#define G2_PW_W 16
#define G2_PW_ZERO _mm512_setzero_ps
#define G2_PW_LOAD _mm512_loadu_ps
#define G2_PW_STORE _mm512_storeu_ps
#define G2_PW_SET1 _mm512_set1_ps
#define G2_PW_ADD _mm512_add_ps
#define G2_PW_SUB _mm512_sub_ps
#define G2_PW_FMA _mm512_fmadd_ps
#define G2_PW_ABS _mm512_abs_ps
#include "pairwise_cpu.inc"

namespace gpu2bs {

// The AVX-512 variant (call only when the processor supports it).
const PairwiseKernels& cpu_pairwise_kernels_avx512() { return pw_avx512::kKernels; }

}  // namespace gpu2bs
