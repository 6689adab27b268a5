// The CPU engine of pair expressions with 512-bit vectors (the build compiles this file with
// CORE_AVX512_FLAGS; -ffp-contract=off keeps every + - * / rounded once).
#define G2_PX_NS px_avx512
#define G2_PX_VB 64
#include "pair_expr_cpu.inc"
