// Periodic boxes: validation, the periodic problems over the cell lists of rdf.h, the CPU
// engine's entry points and the engine view that runs the join periodic.
#include "periodic.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "error.h"
#include "pair_expr.h"
#include "rdf_cpu.h"

namespace gpu2bs {

bool check_box(const double* box, int nbox, int dims, double range, const char* what, double* out) {
  if (box && nbox != dims)
    throw Error(ErrorCode::InvalidParameter, "box must have one length per coordinate",
                "box has " + std::to_string(nbox) + " elements, the points have " +
                    std::to_string(dims) + " coordinates.",
                "Give 0 or NULL for an axis that is not periodic.");
  double shortest = INFINITY;
  for (int k = 0; k < dims; ++k) {
    const double L = box ? box[k] : 0.0;
    if (!std::isfinite(L) || L < 0)
      throw Error(ErrorCode::InvalidParameter,
                  "box lengths must be 0, NULL or positive finite numbers",
                  "box element " + std::to_string(k + 1) + " is " + float8_text(L) + ".");
    out[k] = L;
    if (L > 0) shortest = std::min(shortest, L);
  }
  if (range > shortest / 2)
    throw Error(ErrorCode::InvalidParameter,
                std::string(what) + " must be at most half the shortest periodic box length",
                std::string(what) + " is " + float8_text(range) +
                    ", the shortest periodic length is " + float8_text(shortest) + ".",
                "Minimum-image distances are defined up to half a periodic length.");
  return std::isfinite(shortest);
}

void check_box_range(const Bounds& bounds, const double* box, Precision prec) {
  Bounds wide = bounds;
  for (int k = 0; k < bounds.dims; ++k)
    if (box[k] > 0) {
      wide.lo[k] = 0;
      wide.hi[k] = box[k];
    }
  check_range(wide, prec);
}

PeriodicJoin make_periodic_join(const SimjoinProblem& p, const double* box, const char* what) {
  PeriodicJoin j;
  j.join = p;
  RdfProblem& c = j.cells;
  c.a = p.a;
  c.b = p.b;
  c.self = p.self;
  c.nbuckets = 1;
  // The cells' width: eps, or the smallest normal number for r = 0 (cells of positive width).
  c.r_max = std::max(p.eps, DBL_MIN);
  c.prec = p.prec;
  check_box(box, p.a.dims, p.a.dims, p.eps, what, c.box);
  c.bounds = p.box;
  check_box_range(c.bounds, c.box, p.prec);
  return j;
}

RdfProblem make_periodic_sdh(const PointsView& pts, int nbuckets, double width, const double* box,
                             Precision prec) {
  const SdhParams params = make_sdh_params(nbuckets, width, true, Bounds(), prec);
  const double range = double(nbuckets) * width;
  double lens[kMaxDims] = {};
  check_box(box, pts.dims, pts.dims, range, "nbuckets * width", lens);
  RdfProblem p = make_rdf(pts, nullptr, nbuckets, range, lens, pts.dims, prec);
  p.params = params;
  return p;
}

void cpu_periodic_join(const PeriodicJoin& p, PairSink& sink, Control& ctl) {
  periodic_cpu_run(p, &sink, ctl);
}

uint64_t cpu_periodic_count(const PeriodicJoin& p, Control& ctl) {
  return periodic_cpu_run(p, nullptr, ctl);
}

void Engine::periodic_join(const PeriodicJoin& p, PairSink& sink, Control& ctl) {
  cpu_periodic_join(p, sink, ctl);
}

uint64_t Engine::periodic_count(const PeriodicJoin& p, Control& ctl) {
  return cpu_periodic_count(p, ctl);
}

PeriodicEngine::PeriodicEngine(Engine& base, const double* box, int dims) : base_(base) {
  for (int k = 0; k < dims && k < kMaxDims; ++k) box_[k] = box[k];
}

namespace {

// The error for a problem the periodic view does not run.
[[noreturn]] void not_periodic(const char* what) {
  throw Error(ErrorCode::Internal, std::string(what) + " has no periodic form");
}

}  // namespace

std::vector<uint64_t> PeriodicEngine::sdh(const SdhProblem&, Control&) { not_periodic("sdh"); }

uint64_t PeriodicEngine::pair_count(const PairCountProblem&, Control&) {
  not_periodic("pair_count");
}

void PeriodicEngine::simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  if (p.filter || p.stage || p.reduce)
    throw Error(ErrorCode::Internal, "the periodic join takes no pushed-down filter or reduction");
  base_.periodic_join(make_periodic_join(p, box_, "eps"), sink, ctl);
}

void PeriodicEngine::pairwise(const PairwiseProblem&, PairSink&, Control&) {
  not_periodic("pairwise");
}

PairExprResult PeriodicEngine::pair_expr(const PairExprProblem&, PairSink*, Control&) {
  not_periodic("pair_expr");
}

}  // namespace gpu2bs
