// The CPU engine's RDF and periodic-join kernels: one variant per instruction set (rdf_cpu.inc), chosen at run time.
#pragma once

#include <vector>

#include "engine.h"
#include "rdf.h"

namespace gpu2bs {

// Counts of the problem's pairs per bucket on all cores, with the best variant the processor
// runs (every variant gives the same counts).
std::vector<uint64_t> rdf_cpu_run(const RdfProblem& p, Control& ctl);

// The weighted counts and sums (rdf.h cpu_rdf_weighted) on all cores with the best variant:
// weights `wa`, `wb` by input index, already checked, on grid `s`.
WeightedCounts rdf_cpu_run_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                    const WeightScale& s, Control& ctl);

struct PeriodicJoin;

// The periodic join's pairs to `sink` (null: counted only) on all cores, with the best variant
// the processor runs; returns the number of pairs.
uint64_t periodic_cpu_run(const PeriodicJoin& p, PairSink* sink, Control& ctl);

namespace rdf_generic {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
WeightedCounts run_weighted(const RdfProblem& p, const double* wa, const double* wb,
                            const WeightScale& s, Control& ctl);
uint64_t periodic_join(const PeriodicJoin& p, PairSink* sink, Control& ctl);
}
namespace rdf_avx2 {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
WeightedCounts run_weighted(const RdfProblem& p, const double* wa, const double* wb,
                            const WeightScale& s, Control& ctl);
uint64_t periodic_join(const PeriodicJoin& p, PairSink* sink, Control& ctl);
}

}  // namespace gpu2bs
