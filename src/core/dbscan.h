// DBSCAN clustering (Ester, Kriegel, Sander and Xu, KDD 1996) on the similarity self-join of any
// engine: neighbour counts, core points, connected components of the core points and the
// border points, with the meaning of PostGIS ST_ClusterDBSCAN and a deterministic border rule.
// No PostgreSQL and no CUDA headers here.
#pragma once

#include <cstdint>
#include <vector>

#include "engine.h"

namespace gpu2bs {

// The clustering of the points of one self-join problem.
//   core:    a point with at least minpoints points (itself included) within distance eps
//            (d <= eps in the problem's precision, as the join keeps pairs);
//   cluster: the connected components of the core points linked by pairs within eps;
//   border:  a point that is not core with at least one core point within eps: it joins the
//            cluster of its nearest core point (smallest dist, ties by the smaller key, then by
//            the smaller input index);
//   noise:   every other point, cluster -1.
// Clusters are numbered 0, 1, ... in ascending order of the smallest key among their points
// (core and border; ties between equal keys by the smaller input index).
struct DbscanResult {
  std::vector<int32_t> cluster;  // per input point: its cluster, or -1 (noise)
  std::vector<uint8_t> core;     // per input point: 1 when it is a core point
  uint64_t clusters = 0;
  uint64_t core_points = 0;
  uint64_t border_points = 0;
  uint64_t noise_points = 0;
  uint64_t pairs_seen = 0;       // pairs within eps handed to the host (both passes)
  uint64_t neighbour_pairs = 0;  // pairs within eps counted by an engine that runs every pass
                                 // itself (Engine::dbscan_components), else 0
};

// Runs DBSCAN over the self-join problem `p` (p.self, no filter, stage or reduce set) whose
// points have keys `keys` (one per point of p.a). An engine whose dbscan_components() runs the
// passes itself (both built-in engines: the GPU on the device over the join's grid, the CPU
// over its grid on all workers; no pair is handed over) gives back the core flags and one
// representative per cluster, numbered here as below; minpoints above the number of points
// gives all noise at once. Otherwise pass 1 counts the neighbours of every point:
// on an engine that reduces Group on its own, as two per-point counts (the id1 and the id2 end
// of each pair) that never leave it; otherwise from the pair pages, both ends of each pair.
// Pass 2 reads the pair pages again into a union-find over the core points (roots linked by
// index with compare-and-swap, path halving) and the nearest core point of every other point;
// a call handing over a run of pairs is split among the calling thread and ctl.threads - 1
// helpers (from 8,192 pairs on an engine that reduces Group itself, whose host cores are free;
// from 65,536 on the CPU engine, whose pages its own workers make). No pair is stored, so
// memory is O(n) beside the engine's pages. Throws Error(InvalidParameter) for minpoints < 1,
// Error(ProgramLimit) past 2^31 - 1 clusters, and what the engine throws (Interrupted).
// The CPU engine's Engine::dbscan_components: the passes of the GPU engine
// (kernels/join/dbscan.cu) over gpu2bs::Grid on ctl.threads workers: per point of a run of one
// cell, its neighbours in the 3^(d-1) candidate rows (runs of three adjacent cells) counted,
// then core points united with every core neighbour of larger sorted position (union-find,
// compare-and-swap, path halving) and every other point given its nearest core neighbour by
// (dist, key, input index); no pair is stored. Throws Error(Interrupted) on a cancel.
void dbscan_components_cpu(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                           DbscanComponents& out, Control& ctl);

DbscanResult dbscan(Engine& eng, const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                    Control& ctl);

}  // namespace gpu2bs
