// The CPU engine of pair expressions for any x86-64 processor (128-bit vectors), and the entry
// point: the problem's checks and the run-time choice of the instruction-set variant.
#define G2_PX_NS px_generic
#define G2_PX_VB 16
#include "pair_expr_cpu.inc"

namespace gpu2bs {

#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
namespace px_avx2 {
PairExprResult run_pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl);
}
namespace px_avx512 {
PairExprResult run_pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl);
}
#endif

namespace {
std::atomic<int> g_forced_isa{0};

// AVX-512 or AVX2 when the processor has them (checked once), else the portable variant; every
// variant gives the same bits.
PairExprResult run_best(const PairExprProblem& p, PairSink* sink, Control& ctl) {
#if defined(__x86_64__) && defined(G2_HAVE_AVX2_VARIANT)
  switch (g_forced_isa.load()) {
    case 1: return px_generic::run_pair_expr(p, sink, ctl);
    case 2: return px_avx2::run_pair_expr(p, sink, ctl);
    case 3: return px_avx512::run_pair_expr(p, sink, ctl);
    default: break;
  }
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx512) return px_avx512::run_pair_expr(p, sink, ctl);
  if (avx2) return px_avx2::run_pair_expr(p, sink, ctl);
#endif
  return px_generic::run_pair_expr(p, sink, ctl);
}
}  // namespace

void set_cpu_pair_expr_isa(int isa) { g_forced_isa = isa; }

PairExprResult cpu_pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) {
  if (!p.expr) throw Error(ErrorCode::Internal, "pair expression problem without an expression");
  if (p.kind == PairExprKind::Histogram &&
      (p.nbuckets < 1 || !(p.lo < p.hi) || !std::isfinite(p.lo) || !std::isfinite(p.hi)))
    throw Error(ErrorCode::Internal, "pair expression histogram with bad bounds");
  if ((p.kind == PairExprKind::Sum || p.kind == PairExprKind::Histogram) && p.expr->value < 0)
    throw Error(ErrorCode::Internal, "pair expression without a value");
  if (p.a.n > int64_t(UINT32_MAX) || p.b.n > int64_t(UINT32_MAX))
    throw Error(ErrorCode::ProgramLimit, "too many rows for a pair expression");
  const auto t0 = std::chrono::steady_clock::now();
  PairExprResult r = run_best(p, sink, ctl);
  ctl.stats.kernel_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gpu2bs
