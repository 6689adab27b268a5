// Periodic boxes for the pair functions (gpu_sdh_fixed, gpu_pair_count, gpu_simjoin,
// gpu_dbscan): one length per axis, 0 for an axis that is not periodic; minimum-image distances
// (periodic_sq_dist of rdf.h, the arithmetic gpu_rdf uses) over the cell lists of rdf.h, whose
// grid wraps on periodic axes (1 or at least 3 cells per periodic axis, so no pair is found
// twice). Both engines read the same host-built cell lists, so their answers agree bit for bit.
// No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstdint>
#include <vector>

#include "engine.h"
#include "rdf.h"

namespace gpu2bs {

// Validates a box of `nbox` lengths (null `box`: no axis periodic) for points of `dims`
// coordinates: one length per coordinate, each 0 (not periodic) or positive and finite, and
// `range` at most half the shortest periodic length, `what` naming the range in the message
// ("eps", "r", "r_max", "the bucket range nbuckets * width"). Writes the lengths to out[0 ..
// dims-1] and returns true when at least one axis is periodic. Throws Error(InvalidParameter).
bool check_box(const double* box, int nbox, int dims, double range, const char* what, double* out);

// Refuses coordinates whose wrapped values [0, L] overflow the precision on a periodic axis.
// Throws Error(InvalidParameter).
void check_box_range(const Bounds& bounds, const double* box, Precision prec);

// A similarity join (or pair count) over a periodic box: the join's threshold, precision and
// result limit (`join`: the pair is kept when d2 <= eps2 in the working precision, d2 the
// squared minimum-image distance) and the cell lists' problem (`cells`: an RdfProblem with
// r_max = eps and the box, read by build_rdf_cells and rdf_neighbors).
struct PeriodicJoin {
  SimjoinProblem join;
  RdfProblem cells;
};

// The periodic form of the join `p` (already validated by make_simjoin) over `box` (dims
// lengths, as check_box wrote them, at least one positive): eps at most half the shortest
// periodic length, coordinates in range. `what` names eps in messages. Throws
// Error(InvalidParameter).
PeriodicJoin make_periodic_join(const SimjoinProblem& p, const double* box, const char* what);

// The periodic SDH of one relation with an explicit bucket width: an RdfProblem (self) with
// nbuckets buckets of `width` (the parameters of gpu_sdh_fixed) and r_max = nbuckets * width,
// at most half the shortest periodic length. Throws Error(InvalidParameter).
RdfProblem make_periodic_sdh(const PointsView& pts, int nbuckets, double width, const double* box,
                             Precision prec);

// The CPU engine's periodic join on all cores: every pair within eps (unordered pairs of
// distinct points once in a self-join, every (a, b) pair otherwise) to `sink` as input indices
// and dist = sqrt(d2) in the working precision. Throws Error(ProgramLimit) past
// join.max_pairs, Error(Interrupted) on cancel.
void cpu_periodic_join(const PeriodicJoin& p, PairSink& sink, Control& ctl);
// The number of those pairs (CPU engine, all cores).
uint64_t cpu_periodic_count(const PeriodicJoin& p, Control& ctl);

// The engine `base` seen through a periodic box: simjoin() runs base.periodic_join over the box
// (no filter, stage or reduction in the engine: callers apply them to the pages), so the
// functions built on Engine::simjoin (DBSCAN) run periodic; the other problems are refused
// with Error(Internal). `box` holds the dims lengths as check_box wrote them.
class PeriodicEngine final : public Engine {
 public:
  PeriodicEngine(Engine& base, const double* box, int dims);
  std::string name() const override { return base_.name(); }
  std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) override;
  uint64_t pair_count(const PairCountProblem& p, Control& ctl) override;
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) override;
  void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) override;
  PairExprResult pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) override;

 private:
  Engine& base_;
  double box_[kMaxDims] = {};
};

}  // namespace gpu2bs
