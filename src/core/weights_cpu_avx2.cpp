// Weighted CPU kernels compiled with -mavx2 -mfma (the build sets the flags for this file only);
// chosen at run time by weight_kernels() when the processor supports them.
#define G2_ISA_NS isa_avx2
#define G2_ISA_NAME "avx2+fma"
#include "weights_cpu.inc"

namespace gpu2bs {

// The AVX2+FMA variant (call only when the processor supports it).
const WeightKernels& weight_kernels_avx2() { return isa_avx2::kWeightKernels; }

}  // namespace gpu2bs
