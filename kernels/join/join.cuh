// Distance similarity join (2-BS Type-III) on the GPU: the declarations its files share.
//
// Grid index (similarity-join paper): cells of side grid_cell_side(eps, box), cell coordinates
// floor((v - lo) / side) clamped to [0, 2^41] (grid_cell_coord), only non-empty cells stored.
// Built on the GPU: a linearized cell key (dimension 0 most significant, so key order is the
// lexicographic cell order of gpu2bs::Grid), cub::DeviceRadixSort of (key, index) pairs,
// run-length encoding into cells. When the key needs more than 64 bits the grid is built on the
// host with gpu2bs::Grid and uploaded. Either way the device sees cells sorted lexicographically
// by their integer coordinates, looked up by binary search.
//
// Cell access: LID-UNICOMP. Cells have a linear id in lexicographic order; a self-join examines
// the pairs i < j inside a cell plus the cells with a larger linear id among the 3^d neighbours
// (the offsets whose first non-zero component is +1: neighbour_offsets(d, true)), so each pair
// is examined once. A two-relation join examines all 3^d neighbour cells of b around each cell
// of a.
//
// Work: an item is a run of up to 32 points ("rows") of one cell of a. A warp takes items from a
// global queue (atomic counter, WORKQUEUE). For a batch of up to 32 neighbour cells it
// concatenates their points into one candidate list; each lane holds one candidate, the rows
// are broadcast with shuffles, and a ballot collects the hits of one row.
//
// Output: a paged direct output buffer (framework paper 3.3.3). The pool holds `pool_pages`
// pages of `page_size` PairRecords; a warp writes its hits into its own page and takes a new
// page with one atomicAdd on the page counter. When the pool is exhausted (or the launch's time
// budget is spent) the warp records its position (item, neighbour batch, candidate chunk, row)
// in a resume list and stops; the host drains the written pages to the PairSink on the calling
// thread and launches again, warps taking resume entries before new items. The result size is
// estimated first (count mode over a sample of the items); the pool is split into banks, one per
//
// Files (kernels/join/): grid.cu builds the grid index; plan.cu orders the work items, picks K
// and cuts batches; kernel.cu holds the join kernel and its per-warp helpers; banks.cu runs the
// launches and drains the result pool (serial path) or the banks (batched path); dispatch.cu is
// the entry point simjoin(); dbscan.cu runs DBSCAN's passes over the same grid. The grid pair
// count (kernels/pair_count.cu) runs the same grid and kernel in count mode.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../common.cuh"
#include "core/grid.h"
#include "core/pair_ir.h"

namespace gpu2bs {
namespace cuda {
namespace join {

constexpr int kJT = cuda_tuning::kJoinThreads;
constexpr int kWarps = kJT / 32;
constexpr unsigned kRows = 32;  // rows per item (one per lane)
constexpr unsigned kNoPage = 0xFFFFFFFFu;
constexpr double kMaxCellCoord = 2199023255552.0;  // 2^41, as grid_cell_coord

static_assert(sizeof(PairRecord) == 16 && offsetof(PairRecord, i) == 0 &&
                  offsetof(PairRecord, j) == 4 && offsetof(PairRecord, dist) == 8,
              "the device writes PairRecords as two 64-bit words");

// ---- device helpers ------------------------------------------------------------------------------

// The GPU's global timer, in nanoseconds.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <typename T>
struct Coords {
  const T* c[kMaxDims];
};

struct Geometry {
  double lo[kMaxDims];
  double inv;                // 1 / side, or 0 (grid_cell_side gave a non-finite side)
  int shift[kMaxDims];       // bit position of each cell coordinate in the key
  int bits[kMaxDims];
  int total_bits;
  bool host;                 // key > 64 bits (or forced): grid built with gpu2bs::Grid
  double side;
};

// Cell index of integer coordinates `key` (lexicographic binary search), or -1 when empty.
template <int D>
__device__ __forceinline__ long long find_cell(const long long* __restrict__ cc, unsigned ncells,
                                               const long long* key) {
  unsigned lo = 0, hi = ncells;
  while (lo < hi) {
    const unsigned mid = lo + ((hi - lo) >> 1);  // lo + hi may pass 2^32
    const long long* m = cc + size_t(mid) * D;
    int cmp = 0;
#pragma unroll
    for (int k = 0; k < D; ++k) {
      const long long v = __ldg(m + k);
      if (cmp == 0 && v != key[k]) cmp = v < key[k] ? -1 : 1;
    }
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo >= ncells) return -1;
  const long long* m = cc + size_t(lo) * D;
#pragma unroll
  for (int k = 0; k < D; ++k)
    if (__ldg(m + k) != key[k]) return -1;
  return (long long)lo;  // up to 2^32 - 1 cells: wider than int
}

// ---- the join kernel's arguments -----------------------------------------------------------------

struct JoinCtl {
  unsigned long long item_next;  // next item of the queue (static assignment: items taken)
  unsigned long long examined;   // candidate pairs examined (this launch)
  unsigned long long count;      // pairs within eps (count mode, this launch)
  unsigned long long slots;      // lane slots issued by the compare loop (this launch)
  unsigned page_next;            // next free page of the pool
  unsigned resume_next;          // next entry of the resume list
  unsigned resume_out;           // entries written to the next resume list
  unsigned pool_full;            // a warp found no free page
};

// Kernel modes: pairs to the result pool, a count of the pairs within eps (the grid pair count,
// the result-size estimate), or a reduction of the kept pairs on the device (PairReduce).
constexpr int kModeEmit = 0;
constexpr int kModeCount = 1;
constexpr int kModeReduce = 2;

// Reductions of kModeReduce.
constexpr int kRedNone = -1;
constexpr int kRedAggregate = 0;  // count, compensated sum, min, max of dist (one part per warp)
constexpr int kRedGroup = 1;      // per point of the group side: count, min, max (atomics)
constexpr int kRedHistogram = 2;  // counts per dist bucket (shared memory, then global)

// Dist buckets of the top-k histogram: enough that the bucket holding the k-th best pair holds
// few others for the k of a LIMIT, small enough for shared memory beside the join's arrays.
constexpr unsigned kTopKBuckets = 4096;

// One warp's aggregate of kept pairs (kRedAggregate), accumulated over launches.
struct AggPart {
  unsigned long long count;
  double sum, comp, lo, hi;
};

// Where a stopped warp resumes: item, neighbour batch, candidate chunk, step of the chunk
// (step = sub-chunk * row steps + row step; see join_kernel).
struct WarpState {
  unsigned item, batch, chunk, step;
};

template <typename T>
struct JoinArgs {
  Coords<T> a;                  // points of a, sorted by cell
  Coords<T> b;                  // points of b, sorted by cell (a for a self-join)
  const unsigned* order_a;      // sorted position -> input index
  const unsigned* order_b;
  const unsigned* start_a;      // cell starts of a (cells + 1)
  const unsigned* start_b;
  const long long* ccoord_a;    // cell coordinates (cells * D), lexicographic
  const long long* ccoord_b;
  unsigned ncells_b;
  const uint2* items;           // (cell of a, first row), in the balancing strategy's order
  unsigned long long nitems;
  unsigned long long* cursor;   // static assignment: items taken by each warp; null: queue
  unsigned long long item_base;  // static assignment: first item of the range (a batch)
  const signed char* offsets;   // noffsets * D; a self-join's list starts with the cell itself
  int noffsets;
  T eps2;
  JoinCtl* ctl;
  const WarpState* resume_in;
  unsigned n_in;
  WarpState* resume_out;
  ulonglong2* pool;             // pool_pages * page_size records
  unsigned* page_fill;          // records in each page (written when a warp leaves it)
  unsigned pool_pages;
  unsigned page_size;
  unsigned long long budget_ns;  // time budget of this launch
  // Pushed-down filter (emit and reduce modes): the pair IR program (pair_ir.h) evaluated on
  // (id1, id2, dist) of each pair within eps, the keys by input index (null when the program
  // reads dist only), and a selection by dist bucket (top-k candidates).
  const PairInstr* pred;
  int pred_n;
  const long long* keys_a;
  const long long* keys_b;
  int sel;                      // 0: none; 1: bucket <= sel_bucket; 2: bucket >= sel_bucket
  unsigned sel_bucket;
  double bucket_scale;          // buckets per unit of dist
  unsigned nbuckets;
  // Reduce mode: which reduction and its outputs.
  int red;
  int group_side;               // kRedGroup: 0 id1's point, 1 id2's point
  AggPart* agg;                 // kRedAggregate: one per warp of the launch grid
  unsigned long long* g_count;  // kRedGroup: per input index of the group side
  unsigned long long* g_min;    // dist bits (non-negative doubles order as their bit patterns);
                                // null when not wanted (g_max likewise)
  unsigned long long* g_max;
  unsigned long long* hist;     // kRedHistogram: nbuckets counts
};

// The bucket of a distance: floor(dist * scale), the last bucket for everything beyond.
__device__ __forceinline__ unsigned dist_bucket(double dist, double scale, unsigned nbuckets) {
  const double t = dist * scale;
  return t >= double(nbuckets) ? nbuckets - 1u : unsigned(t);
}

// What a caller adds to a join run: a filter, a reduction and the reduction's results.
struct JoinExtra {
  const PairInstr* pred = nullptr;  // device copy of the program
  int pred_n = 0;
  const long long* keys_a = nullptr;  // device keys by input index
  const long long* keys_b = nullptr;
  int sel = 0;
  unsigned sel_bucket = 0;
  double bucket_scale = 0;
  unsigned nbuckets = 0;
  int red = kRedNone;  // run_join<..., COUNT = true> with a reduction runs the reduce kernel
  int group_side = 0;
  unsigned long long* g_count = nullptr;
  unsigned long long* g_min = nullptr;
  unsigned long long* g_max = nullptr;
  unsigned long long* hist = nullptr;
  // kRedAggregate results, merged over warps in warp order.
  uint64_t count = 0;
  double sum = 0, comp = 0, min = 0, max = 0;
};

// Copies the filter and reduction of `x` (when given) into the kernel arguments.
template <typename T>
inline void apply_extra(JoinArgs<T>& A, const JoinExtra* x) {
  if (!x) return;
  A.pred = x->pred;
  A.pred_n = x->pred_n;
  A.keys_a = x->keys_a;
  A.keys_b = x->keys_b;
  A.sel = x->sel;
  A.sel_bucket = x->sel_bucket;
  A.bucket_scale = x->bucket_scale;
  A.nbuckets = x->nbuckets;
  A.red = x->red;
  A.group_side = x->group_side;
  A.g_count = x->g_count;
  A.g_min = x->g_min;
  A.g_max = x->g_max;
  A.hist = x->hist;
}

// The join kernel for one element type, dimension, join kind and mode.
template <typename T>
using JoinKernel = void (*)(JoinArgs<T>);

// Join kernel for K lanes per query point (1, 2, 4, 8, 16 or 32) (kernel.cu).
template <typename T, int D, bool SELF, bool COUNT>
JoinKernel<T> join_kernel_for(int k);

// The reduce-mode join kernel for K lanes per query point (kernel.cu).
template <typename T, int D, bool SELF>
JoinKernel<T> join_reduce_kernel_for(int k);

// ---- host: grid construction (grid.cu) ---------------------------------------------------------

template <typename T>
struct DevGrid {
  unsigned n = 0;
  unsigned ncells = 0;
  Coords<T> c{};                 // sorted by cell
  unsigned* order = nullptr;     // sorted position -> input index
  unsigned* start = nullptr;     // ncells + 1
  long long* ccoord = nullptr;   // ncells * D
  uint2* items = nullptr;        // work items of this grid, in cell order
  unsigned* item_off = nullptr;  // first item of each cell (ncells + 1)
  unsigned long long nitems = 0;
};

inline unsigned blocks_for(size_t n, int threads) {
  const size_t cap = size_t(device_facts().sms) * 16;
  return unsigned(std::max<size_t>(1, std::min(cap, (n + threads - 1) / size_t(threads))));
}

// Geometry of the grid for radius `eps` over `box`, as the CPU engine's Grid; `host_grid`
// forces the host build (EngineOverrides::host_grid).
Geometry make_geometry(const Bounds& box, double eps, Precision prec, int dims, bool host_grid);

// Sets stats.prepare_s to its value at construction plus the wall time since, less the
// transfer time counted meanwhile (device work waited for before a transfer counts as
// preparation; preparation counted by callees is part of the wall time, not added twice).
struct PrepareTimer {
  Control& ctl;
  Clock::time_point t0 = Clock::now();
  double prep0, xfer0;
  explicit PrepareTimer(Control& c) : ctl(c), prep0(c.stats.prepare_s), xfer0(c.stats.transfer_s) {}
  ~PrepareTimer() {
    ctl.stats.prepare_s =
        prep0 + std::max(0.0, seconds_since(t0) - (ctl.stats.transfer_s - xfer0));
  }
};

template <typename T>
inline T read_value(Call& call, const T* dev) {
  call.sync();  // device work before the value counts as the caller's (not as transfer)
  T v{};
  download(call, &v, dev, sizeof(T));
  return v;
}

// Builds the grid of `v` (coordinates rounded to T) on the device, or on the host when the key
// does not fit in 64 bits. Time goes to stats.prepare_s (transfers to transfer_s).
template <typename T, int D>
DevGrid<T> build_grid(Call& call, const PointsView& v, const Geometry& g, Precision prec);

// Neighbour offsets as int8: a self-join's list is the cell itself then the forward offsets;
// a two-relation join's list is all 3^d offsets.
std::vector<signed char> offsets_for(int dims, bool self);

// The offsets on the device.
signed char* upload_offsets(Call& call, const std::vector<signed char>& off);

// ---- host: work order, lanes per query point, batches (plan.cu) --------------------------------

// How run_join schedules the work: items in the strategy's order, static or queued, K.
struct JoinPlan {
  const uint2* items = nullptr;
  bool static_items = false;
  int k = 32;
};

inline bool valid_threads_per_point(int k) {
  return k == 1 || k == 2 || k == 4 || k == 8 || k == 16 || k == 32;
}

// Orders the items of `ga` for Control::join_balance (Cell: cell order; SortByWorkload and
// WorkQueue: estimated workload descending, cub::DeviceRadixSort, ties in cell order) and picks
// K (Control::join_threads_per_point; when 0, the tuning.h rule from the estimated compare-loop
// steps, or kJoinAutoKWithoutEstimate for Cell, which runs no estimate).
template <typename T, int D, bool SELF>
JoinPlan plan_join(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb,
                   const signed char* d_off, int noffsets);

// Item ranges [bounds[b], bounds[b + 1]) whose estimated output is about `target` pairs, from
// the estimated pairs per item of each segment [seg_begin[g], seg_begin[g + 1]).
std::vector<unsigned long long> plan_batches(const std::vector<unsigned long long>& seg_begin,
                                             const std::vector<double>& per_item, double target);

// ---- host: launches and result drains (banks.cu) -----------------------------------------------

struct JoinResult {
  uint64_t count = 0;     // count mode
  uint64_t examined = 0;
  uint64_t emitted = 0;
};

// Throws the ProgramLimit error of a result larger than gpu2bs.max_result_rows.
[[noreturn]] void too_many_pairs(uint64_t max_pairs);

// Kernel arguments describing the two grids, the neighbour offsets and eps^2 (the work, pool and
// control fields are set by the caller).
template <typename T>
inline JoinArgs<T> join_args(const DevGrid<T>& ga, const DevGrid<T>& gb,
                             const signed char* d_off, int noffsets, T eps2) {
  JoinArgs<T> A{};
  A.a = ga.c;
  A.b = gb.c;
  A.order_a = ga.order;
  A.order_b = gb.order;
  A.start_a = ga.start;
  A.start_b = gb.start;
  A.ccoord_a = ga.ccoord;
  A.ccoord_b = gb.ccoord;
  A.ncells_b = gb.ncells;
  A.offsets = d_off;
  A.noffsets = noffsets;
  A.eps2 = eps2;
  return A;
}

// The launch loop on the call's stream with one result pool drained between launches (COUNT:
// count mode, no pool; the grid pair count). Counts go to the result, pairs to `sink`.
// With `x`: its filter applies to the emitted pairs; with COUNT and x->red set, the reduce
// kernel runs instead and its results go to x (the Aggregate's, merged) or to x's arrays.
// COUNT counts every pair within eps; max_pairs bounds the pairs within eps (before the filter).
template <typename T, int D, bool SELF, bool COUNT>
JoinResult run_join(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                    const std::vector<signed char>& offsets, PairSink* sink, uint64_t max_pairs,
                    JoinExtra* x = nullptr);

// The similarity join's output stage with batching (banks.cu): estimate, banks, batches.
template <typename T, int D, bool SELF>
JoinResult run_join_batched(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                            const std::vector<signed char>& offsets, PairSink* sink,
                            uint64_t max_pairs, JoinExtra* x = nullptr);

// Instantiates MACRO(T, D) for every element type and dimension the join supports.
#define G2_JOIN_FOR_ALL(MACRO) \
  MACRO(float, 2) MACRO(float, 3) MACRO(float, 4) MACRO(float, 5) MACRO(float, 6) \
  MACRO(double, 2) MACRO(double, 3) MACRO(double, 4) MACRO(double, 5) MACRO(double, 6)

}  // namespace join
}  // namespace cuda
}  // namespace gpu2bs
