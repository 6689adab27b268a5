// The backend interface: one per engine (CPU in src/core, CUDA in kernels/). SQL functions call
// it and never know which engine ran, except to report it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "problem.h"
#include "resolve.h"

namespace gpu2bs {

// One result pair of a similarity join: indices into the point sets and the distance
// sqrt(d2) computed in the problem's precision, widened to float64.
struct PairRecord {
  uint32_t i;
  uint32_t j;
  double dist;
};

// A reduction run by the engine's worker threads on each result page, reading dist only.
class PairStage {
 public:
  virtual ~PairStage() = default;
  // Called once before the workers start, with their number.
  virtual void start(int workers) = 0;
  // One page made by worker `worker` (in [0, workers)); must not throw.
  virtual void consume(const PairRecord* pairs, size_t n, int worker) = 0;
};

// Receives result pairs on the calling thread, a page at a time. May throw.
class PairSink {
 public:
  virtual ~PairSink() = default;
  virtual void consume(const PairRecord* pairs, size_t n) = 0;
};

// A reduction of a similarity join's kept pairs that an engine computes itself instead of
// handing pages to the sink (the GPU engine: on the device, in the join kernel, so no pair
// leaves it; the CPU engine: groups and top-k in its worker threads). Engine::reduces_pairs and
// Engine::reduces_pairs_in_workers say which kinds an engine does. The pairs are those within
// eps that SimjoinProblem::filter keeps (all of them without a filter).
//   Aggregate: count, sum (compensated: sum + comp), min and max of dist;
//   Group:     per point of the group side, count, min and max of dist of its pairs, the group
//              side being the point of id1 (side 0) or of id2 (side 1) of each pair, as
//              GroupSink assigns them; indexed by input index of that side;
//   TopK:      the k best pairs by dist (ascending, or descending): the engine hands the sink a
//              superset of them (every kept pair whose dist can be among the k best, ties
//              included), from which TopKSink picks the k with its tie rule.
struct PairReduce {
  enum Kind : uint8_t { Aggregate = 0, Group = 1, TopK = 2 };
  Kind kind = Aggregate;
  int side = 0;             // Group
  bool want_min = true;     // Group: the per-point minima (else group_min is left 0)
  bool want_max = true;     // Group: the per-point maxima (else group_max is left 0)
  uint64_t k = 0;           // TopK
  bool descending = false;  // TopK
  bool done = false;        // set by the engine that computed it
  // The keys by input index of a and b (a self-join: the same array), for Group in a self-join
  // (which point is id1's) and for a filter reading the keys.
  const int64_t* keys_a = nullptr;
  const int64_t* keys_b = nullptr;
  // Aggregate results.
  uint64_t count = 0;
  double sum = 0, comp = 0, min = 0, max = 0;
  // Group results, one entry per point of the group side (count 0: no pair).
  std::vector<uint64_t> group_count;
  std::vector<double> group_min, group_max;
};

// Where the time of one call went, in seconds (filled by the engine; for benchmarks and
// gpu2bs_info()).
struct RunStats {
  double scan_s = 0;      // reading the rows in PostgreSQL (set by the SQL layer)
  double prepare_s = 0;   // conversion, grid index
  double transfer_s = 0;  // host <-> device copies
  double kernel_s = 0;    // the pairwise kernels
  double merge_s = 0;     // merging private outputs, draining result pages
  uint64_t pairs_examined = 0;
  uint64_t pairs_emitted = 0;
  uint64_t block_points = 0;  // GPU SDH / pair count in blocks: points per block (0: in memory)
  uint64_t block_pairs = 0;   // block pairs run (i <= j)
  uint64_t shares = 0;        // GPU: devices (shares) the call was split across (0: one)
  uint64_t slabs = 0;         // GPU join in slabs: slabs planned (0: in memory)
};

// Load balancing of the similarity join's work (similarity-join load-imbalance paper, "Load
// Imbalance Mitigation Optimizations for GPU-Accelerated Similarity Joins"). CPU engine (items
// are row ranges of one cell, taken by worker threads):
//   WorkQueue: a shared queue of small work items (a cell's rows split into ranges of at most
//              256), taken dynamically (the paper's WORKQUEUE with bounded items);
//   Cell:      one work item per non-empty cell in cell order, taken dynamically (the paper's
//              baseline: one query cell per worker, no splitting);
//   SortByWorkload: one item per cell, largest estimated work first (SORTBYWL).
// GPU engine (items are runs of up to 32 rows of one cell, taken by warps; kernels/join/):
//   WorkQueue: items sorted by estimated workload (rows x candidates), largest first, taken from
//              one atomic queue (WORKQUEUE, section III-D);
//   Cell:      items in cell (linear id) order, static assignment: warp g of W takes items
//              g, g + W, g + 2W, ... (the GPUCALCGLOBAL baseline's fixed order, section II-C3);
//   SortByWorkload: items sorted by workload, largest first, static assignment (SORTBYWL,
//              section III-C).
//   Auto:      the measured default of each engine: Cell on the GPU (fastest end to end on 19 of
//              21 synthetic sets, kernels/tuning.h), WorkQueue on the CPU (bounded work items).
enum class JoinBalance { WorkQueue = 0, Cell = 1, SortByWorkload = 2, Auto = 3 };

// Code paths a test or benchmark forces for one call. The defaults leave every choice to the
// engine; the SQL layer never changes them. The CPU engine ignores them.
struct EngineOverrides {
  int sdh_copies = 0;        // GPU SDH privatization: 0 the model, -1 global memory, k copies
  int sdh_layout = 0;        // GPU float32 fast SDH thresholds: 0 the model, 1 per copy, 2 shared
  int tile_variant = 0;      // launch configuration of the 3-D float32 tile kernels (0: tuning.h;
                             // kernels/host_api.h lists the variants)
  int count_path = 0;        // GPU pair count: 0 the cost rule, 1 all-pairs tiles, 2 the grid
  bool host_grid = false;    // GPU: every grid built on the host (gpu2bs::Grid), as for keys
                             // wider than 64 bits
  int join_streams = 0;      // GPU join result banks (streams): 0 tuning.h, 1..3 forced
  bool join_serial_drain = false;  // GPU join: one pool drained between launches, no batching
  double join_estimate_scale = 1.0;  // GPU join: factor on the sampled result-size estimate
  unsigned long long resolve_min_pairs = 0;  // GPU resolution: the walk's stop size in point
                                             // pairs (0: tuning.h)
  int upload_workers = 0;  // GPU: host threads converting and copying points (0: tuning.h,
                           // kPointUploadWorkers)
  // GPU: the device ordinals of the call, replacing Control::devices; an ordinal may repeat
  // (emulated devices: the multi-device paths run with several shares on one GPU).
  std::vector<int> devices;
};

// What the caller lends the engine: an interrupt probe, thread count and buffer sizes.
class Control {
 public:
  virtual ~Control() = default;
  // True when the caller wants the work abandoned (query cancel). Called on the calling thread
  // only, at least every `poll_ms` milliseconds while work runs.
  virtual bool interrupt_pending() { return false; }
  int threads = 1;             // CPU worker threads
  int poll_ms = 20;            // interrupt poll interval
  size_t page_pairs = 16384;   // result pairs per output page
  size_t max_pages = 0;        // pages in flight (0: 4 per thread); bounds result memory
  size_t device_memory_limit = 0;  // bytes the GPU engine may allocate (0: 90% of free)
  JoinBalance join_balance = JoinBalance::Auto;  // join scheduling (both engines)
  // GPU join: lanes sharing one query point (k of the paper's section III-A: 1, 2, 4, 8, 16 or
  // 32; 32 / k points per warp step); 0 = automatic (kernels/tuning.h). The CPU ignores it.
  int join_threads_per_point = 0;
  EngineOverrides overrides;   // tests and benchmarks only
  // GPU device ordinals one call may use (gpu2bs.devices; empty: the first device). Several:
  // SDH and pair count by tiles split their tile pairs, the similarity join its slabs.
  std::vector<int> devices;
  // Set by the GPU engine on the Control of each of its per-device calls: the ordinal (-1: the
  // first device) and this call's share of the tile pairs (share of shares), and, with
  // shares > 1, the block size every share uses (0: all points in memory).
  int device = -1;
  int share = 0;
  int shares = 1;
  size_t share_block = 0;
  // SDH and pair count: brute force or resolution of whole cell pairs (both engines); Auto
  // follows each engine's cost model (resolve_cpu.h, kernels/tuning.h).
  SdhMethod sdh_method = SdhMethod::Auto;
  // When set, a resolution run adds its per-level counters here (benchmarks, tests).
  ResolveStats* resolve_stats = nullptr;
  RunStats stats;
};

// DBSCAN's per-point passes computed by an engine itself (Engine::dbscan_components): the
// neighbour counts, the core flags, the connected components of the core points and the
// nearest core point of every other point, with only the per-point answer handed back.
struct DbscanComponents {
  std::vector<uint8_t> core;   // per input point: 1 when it is a core point
  // Per input point: its cluster's representative (an index in [0, n) shared by every point of
  // the cluster and by no other), the representative of its nearest core point's cluster for a
  // border point, or UINT32_MAX for noise.
  std::vector<uint32_t> root;
  uint64_t neighbour_pairs = 0;  // pairs within eps (each unordered pair of distinct points once)
};

struct PairwiseProblem;  // pairwise.h: the all-pairs matrix over float vectors
struct PairExprProblem;  // pair_expr.h: a user-defined pair expression over two relations
struct PairExprResult;
struct RdfProblem;       // rdf.h: the radial distribution function over cell lists
struct PeriodicJoin;     // periodic.h: a join or pair count over a periodic box
struct WeightedCounts;   // weights.h: counts and exact weight sums of weighted pairs

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) = 0;
  virtual uint64_t pair_count(const PairCountProblem& p, Control& ctl) = 0;
  virtual void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) = 0;
  // True when simjoin() applies SimjoinProblem::filter itself.
  virtual bool applies_pair_filter() const { return false; }
  // True when simjoin() runs SimjoinProblem::stage in its workers.
  virtual bool applies_pair_stage() const { return false; }
  // True when simjoin() computes SimjoinProblem::reduce of this kind itself.
  virtual bool reduces_pairs(PairReduce::Kind) const { return false; }
  // True when simjoin() computes SimjoinProblem::reduce of this kind in its worker threads (the
  // CPU engine: groups and top-k reduced per worker and merged, no page handed over). Unlike
  // reduces_pairs, it says nothing about where the engine runs (DBSCAN reads reduces_pairs
  // to decide whether the host's cores are free).
  virtual bool reduces_pairs_in_workers(PairReduce::Kind) const { return false; }
  // All-pairs over float vectors: kNN lists or threshold pairs (PairRecord::dist = the value).
  virtual void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) = 0;
  // A pair expression (count, sum, histogram of its value, or the join's pairs to `sink`).
  virtual PairExprResult pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) = 0;
  // Pair counts per bucket of the radial distribution function (rdf.h); an engine without its
  // own kernel (the CPU engine) runs cpu_rdf on all cores.
  virtual std::vector<uint64_t> rdf(const RdfProblem& p, Control& ctl);
  // The weighted RDF (rdf.h): the counts of rdf() and per bucket the exact fixed-point sum of
  // w_i * w_j, `wa` one finite weight per point of a, `wb` per point of b (ignored when self);
  // an engine without its own kernel (the CPU engine) runs cpu_rdf_weighted.
  virtual WeightedCounts rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                                      Control& ctl);
  // Weighted SDH and pair count (weights.h): counts and fixed-point sums of w_i * w_j, `w` one
  // finite weight per point; brute force on every engine (no resolution). An engine without
  // its own kernels (the CPU engine) runs cpu_sdh_weighted / cpu_pair_count_weighted.
  virtual WeightedCounts sdh_weighted(const SdhProblem& p, const double* w, Control& ctl);
  virtual WeightedCounts pair_count_weighted(const PairCountProblem& p, const double* w,
                                             Control& ctl);
  // True when pair_expr() can run here (the GPU needs NVRTC); `why` says why not.
  virtual bool pair_expr_available(std::string* why) const {
    (void)why;
    return true;
  }
  // DBSCAN over the plain self-join problem `p` (dbscan.h gives the meaning: a point is core
  // with at least `minpoints` points within eps, itself included; a point that is not core
  // takes its nearest core point by (dist, key, input index)) computed without handing pairs
  // over; `keys` has one key per point. False when the engine does not do it (the caller then
  // streams the join's pairs); minpoints >= 1 is checked by the caller.
  virtual bool dbscan_components(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                                 DbscanComponents& out, Control& ctl) {
    (void)p, (void)keys, (void)minpoints, (void)out, (void)ctl;
    return false;
  }
  // Pairs within eps over a periodic box (periodic.h: minimum-image distances over the cell
  // lists of rdf.h) to `sink`, and their number; an engine without its own kernels (the CPU
  // engine) runs cpu_periodic_join / cpu_periodic_count on all cores.
  virtual void periodic_join(const PeriodicJoin& p, PairSink& sink, Control& ctl);
  virtual uint64_t periodic_count(const PeriodicJoin& p, Control& ctl);
};

// The CPU engine (all cores, cache-tiled, grid index for the join).
std::unique_ptr<Engine> make_cpu_engine();

// Facts about the GPU for gpu2bs_info(), as (name, value) rows.
using InfoRows = std::vector<std::pair<std::string, std::string>>;

// The CUDA engine, or null with `why` set when no GPU is usable (no driver, no device, built
// without CUDA). Initializes CUDA on first call in this process only.
Engine* cuda_engine(std::string* why);

// GPU facts (device, SMs, memory, versions) when the CUDA engine is usable.
InfoRows cuda_info();

// True when this build contains the CUDA engine.
bool built_with_cuda();

// Device memory of the GPU the CUDA engine uses, in bytes (0 when no GPU is usable).
size_t cuda_device_memory();

// Ordinals of the GPUs the CUDA engine can use (gpu2bs.devices = all); empty when none.
std::vector<int> cuda_device_ordinals();

// Rows for gpu2bs_info() about the run-time compiler of pair expressions (NVRTC): whether it
// opened, modules compiled, cache hits, compile times; a single row in builds without CUDA.
InfoRows expr_compiler_info();

}  // namespace gpu2bs
