// The CPU engine's RDF kernel: one variant per instruction set (rdf_cpu.inc), chosen at run time.
#pragma once

#include <vector>

#include "engine.h"
#include "rdf.h"

namespace gpu2bs {

// Counts of the problem's pairs per bucket on all cores, with the best variant the processor
// runs (every variant gives the same counts).
std::vector<uint64_t> rdf_cpu_run(const RdfProblem& p, Control& ctl);

namespace rdf_generic {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
}
namespace rdf_avx2 {
std::vector<uint64_t> run(const RdfProblem& p, Control& ctl);
}

}  // namespace gpu2bs
