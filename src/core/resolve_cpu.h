// The CPU engine's resolution path: walks the density map's cell pairs level by level on every
// core; resolved pairs are counted whole, unresolved pairs at the leaves (or small enough) go
// through the engine's SIMD tile kernels (cpu_kernels.h) over the two cells' sorted points.
#pragma once

#include <cstdint>
#include <vector>

#include "density_map.h"
#include "engine.h"
#include "resolve.h"

namespace gpu2bs {

// Measured constants of the CPU resolution path and its cost model (2-core AMD EPYC dev
// machine, AVX2, measured with test/bench/bench_resolve).
struct CpuResolveTuning {
  // Points per leaf cell for uniform data (the map's depth).
  double leaf_points;
  // Unresolved cell pairs with at most min_pairs point pairs go to the tile kernel at once
  // instead of being split into their children; so do those with at most direct_pairs whose
  // distance range spans two bucket edges or more (halving it rarely resolves).
  uint64_t min_pairs;
  uint64_t direct_pairs;
  // Unresolved cell pairs with at most this many point pairs become one work item (walked
  // depth-first by one worker); larger ones are split breadth-first on every core.
  uint64_t item_pairs;
};
CpuResolveTuning cpu_resolve_tuning(int dims);
// Benchmark hook: replaces the constants of `dims` (null restores them). Not thread-safe.
void set_cpu_resolve_tuning(int dims, const CpuResolveTuning* t);

// Cost model of the SDH: true when resolution is predicted faster than all-pairs tiles for n
// points of `dims` coordinates and `nbuckets` buckets.
bool cpu_resolve_sdh_wins(size_t n, int dims, int nbuckets);
// Cost model of the pair count: true when resolution is predicted faster than the grid/tiles
// path; `r_rel` is r divided by the largest extent of the bounding box.
bool cpu_resolve_count_wins(size_t n, int dims, double r_rel);

// SDH by resolution: `sorted` are the coordinates in precision T in the map's order.
template <typename T>
std::vector<uint64_t> cpu_resolve_sdh(const DensityMap<T>& m, const T* const* sorted,
                                      const SdhParams& p, Control& ctl, ResolveStats* st);
// Pair count (d2 <= r2) by resolution.
template <typename T>
uint64_t cpu_resolve_count(const DensityMap<T>& m, const T* const* sorted, T r2, Control& ctl,
                           ResolveStats* st);

}  // namespace gpu2bs
