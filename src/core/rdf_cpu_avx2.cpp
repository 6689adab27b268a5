// The CPU engine's RDF kernel for processors with AVX2 and FMA (256-bit vectors).
#define G2_RDF_NS rdf_avx2
#include "rdf_cpu.inc"
