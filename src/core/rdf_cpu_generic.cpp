// The CPU engine's RDF kernel for any x86-64 processor (128-bit vectors), and the run-time
// choice of the variant.
// Floating-point operations do not trap (the engine never reads FP exception flags), so the
// compiler may evaluate both arms of a select: the distance loop vectorizes. Results are the
// same IEEE operations either way.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#define G2_RDF_NS rdf_generic
#include "rdf_cpu.inc"

namespace gpu2bs {

std::vector<uint64_t> rdf_cpu_run(const RdfProblem& p, Control& ctl) {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return rdf_avx2::run(p, ctl);
#endif
  return rdf_generic::run(p, ctl);
}

WeightedCounts rdf_cpu_run_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                    const WeightScale& s, Control& ctl) {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return rdf_avx2::run_weighted(p, wa, wb, s, ctl);
#endif
  return rdf_generic::run_weighted(p, wa, wb, s, ctl);
}

uint64_t periodic_cpu_run(const PeriodicJoin& p, PairSink* sink, Control& ctl) {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return rdf_avx2::periodic_join(p, sink, ctl);
#endif
  return rdf_generic::periodic_join(p, sink, ctl);
}

}  // namespace gpu2bs
