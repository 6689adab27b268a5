// The CPU engine of pair expressions with 256-bit vectors (the build compiles this file with
// CORE_AVX2_FLAGS; -ffp-contract=off keeps every + - * / rounded once).
#define G2_PX_NS px_avx2
#define G2_PX_VB 32
#include "pair_expr_cpu.inc"
