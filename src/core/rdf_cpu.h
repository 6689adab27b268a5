// The CPU engine's RDF and periodic-join kernels: one variant per instruction set (rdf_cpu.inc), chosen at run time.
#pragma once

#include <vector>

#include "engine.h"
#include "rdf.h"

namespace gpu2bs {

// Counts of the problem's pairs per bucket on all cores, with the best variant the processor
// runs (every variant gives the same counts).
std::vector<uint64_t> rdf_cpu_run(const RdfProblem& p, Control& ctl);

struct PeriodicJoin;

// The periodic join's pairs to `sink` (null: counted only) on all cores, with the best variant
// the processor runs; returns the number of pairs.
uint64_t periodic_cpu_run(const PeriodicJoin& p, PairSink* sink, Control& ctl);

namespace rdf_generic {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
uint64_t periodic_join(const PeriodicJoin& p, PairSink* sink, Control& ctl);
}
namespace rdf_avx2 {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
uint64_t periodic_join(const PeriodicJoin& p, PairSink* sink, Control& ctl);
}

}  // namespace gpu2bs
