// The CPU engine's RDF kernel for processors with AVX2 and FMA (256-bit vectors).
// Floating-point operations do not trap (the engine never reads FP exception flags), so the
// compiler may evaluate both arms of a select: the distance loop vectorizes. Results are the
// same IEEE operations either way.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#define G2_RDF_NS rdf_avx2
#include "rdf_cpu.inc"
