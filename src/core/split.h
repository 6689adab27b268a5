// Splitting one call's work into shares: across several GPUs (gpu2bs.devices) and, for the
// similarity join, into slabs run one after another when the points exceed the device budget.
// No CUDA here: the planning is plain arithmetic, tested on the CPU (test/unit/split_test.cpp).
//
// Type-I / Type-II (SDH, pair count, all-pairs tiles): the upper triangle of tile pairs (a <= b)
// of n points is cut into contiguous runs of tile pairs holding equal numbers of point pairs
// (a diagonal tile holds r(r-1)/2 pairs, an off-diagonal one r_a * r_b), one run per device; in
// blocks of points the block pairs are cut the same way. Every point pair lies in exactly one
// run, so the per-device integer counts add up to the one-device counts.
//
// Type-III (similarity join): the points of `a` are cut into slabs along the axis of largest
// extent at quantiles of that coordinate (balanced by points). Ownership: a self-join's pair
// belongs to the slab of its point of lower slab index (both in one slab: that slab); a join of
// a and b's pair belongs to the slab of its point of a. Slab s runs the self-join of its own
// points plus the join of its own points with its halo: the points of later slabs whose
// coordinate is below the slab's upper cut + h (self), or the points of b within h of the slab
// (a x b). h bounds the axis difference of every pair the join keeps in its precision, so
// every pair is found in exactly one slab.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine.h"
#include "problem.h"

namespace gpu2bs {
namespace split {

// Point pairs in the tile pairs [0, t) of the upper triangle of ceil(n / tile) tiles, in row
// order (row a holds tile pairs (a, a), (a, a + 1), ...).
uint64_t triangle_pairs_before(uint64_t n, uint64_t tile, uint64_t t);

// Boundaries (shares + 1 values, first 0, last M(M+1)/2) of `shares` contiguous runs of tile
// pairs of the triangle holding as equal numbers of point pairs as whole tile pairs allow.
std::vector<uint64_t> triangle_shares(uint64_t n, uint64_t tile, int shares);

// Boundaries (shares + 1 indices into `weights`) of `shares` contiguous runs of items of as
// equal total weight as whole items allow.
std::vector<size_t> weighted_shares(const std::vector<uint64_t>& weights, int shares);

// Point pairs of the block pairs (i <= j, row order) of n points in blocks of `block` points.
std::vector<uint64_t> block_pair_weights(uint64_t n, uint64_t block);

// Parses gpu2bs.devices: "all" (every ordinal below `count`) or a comma list of distinct
// ordinals in [0, count). False with `err` set on a malformed, repeated or absent ordinal.
bool parse_devices(const std::string& text, int count, std::vector<int>* out, std::string* err);

// The slab decomposition of a similarity join (see the file comment).
struct Slab {
  std::vector<uint32_t> own;   // indices into a of the slab's points
  std::vector<uint32_t> halo;  // self: indices into a of later slabs' points near the slab;
                               // a x b: indices into b within h of the slab
};
struct SlabPlan {
  int axis = 0;
  double halo = 0;            // h
  std::vector<double> cuts;   // slabs - 1 ascending cut values: slab s is [cuts[s-1], cuts[s])
  std::vector<Slab> slabs;
};

// Bound h on |a_axis - b_axis| of any pair the join keeps (d2 <= eps^2 in the problem's
// precision, float32 coordinates rounded from float64).
double slab_halo(const SimjoinProblem& p, int axis);

// The slab plan of `p` with `slabs` slabs (>= 1). Its passes over the points run on up to
// `threads` threads (gpu2bs.cpu_threads; 0: the machine's, at most 8), one per 65,536 points.
SlabPlan plan_slabs(const SimjoinProblem& p, int slabs, int threads = 0);

// Device bytes the GPU join of `p` needs for its points and grid (not its result banks).
uint64_t join_core_bytes(uint64_t na, uint64_t nb, bool self, int dims, Precision prec);

// Device bytes a join keeps for its result banks at least (a quarter of the budget when that is
// less; below: the join runs in slabs).
constexpr uint64_t kJoinMinBankBytes = uint64_t(64) << 20;

// The part of `budget` the slab plan leaves to the result banks: kJoinMinBankBytes, or a quarter
// of a budget below 256 MiB (the join gives its banks three quarters of what its points, grid
// and lists leave, so the banks get at least 3/16 of a small budget).
uint64_t join_bank_reserve(uint64_t budget);

// Slabs for a join whose points and grid exceed `budget`: a count (any, at most 2^16) whose
// largest slab (own points plus halo) fits the budget less the banks' part, searched upwards from
// the fewest whose own points and the halo band a sample predicts fit (at most twice the last
// count that does not fit; twice as many once more where the largest slab stops shrinking); one
// slab with empty lists when the whole join fits. Threads as plan_slabs. Throws Error(OutOfMemory)
// when no plan fits.
SlabPlan plan_slabs_for_budget(const SimjoinProblem& p, uint64_t budget, int threads = 0);

// One slab's sub-join: (problem, sink) run by an engine; the problem's indices are the slab's.
using RunJoin = std::function<void(const SimjoinProblem&, PairSink&)>;

// The points of `idx` of `v`, gathered into `store` (one array per coordinate).
PointsView gather_points(const PointsView& v, const std::vector<uint32_t>& idx,
                         std::vector<std::vector<double>>* store);

// The sub-problems of slab `s`: the self-join of its own points (self only) and the join of
// its own points with its halo; `store` keeps their coordinates. Their points carry the input's
// indices (PointsView::index: the slab's own and halo lists).
struct SlabJobs {
  SimjoinProblem inner;       // self only: own x own (n = 0: none)
  SimjoinProblem cross;       // own x halo (a x b: own x b's halo)
  std::vector<std::vector<double>> own_store, halo_store;
  bool has_inner = false;
  bool has_cross = false;
};
void make_slab_jobs(const SimjoinProblem& p, const SlabPlan& plan, size_t s, SlabJobs* jobs);

// A sink that maps a slab's indices back to the input's (unless the engine emitted the input's
// indices already: map(nullptr, nullptr)) and forwards the pairs, enforcing the whole join's
// max_pairs.
class SlabSink final : public PairSink {
 public:
  SlabSink(PairSink& out, uint64_t max_pairs, uint64_t* emitted)
      : out_(out), max_pairs_(max_pairs), emitted_(emitted) {}
  // Sets the index maps of the next sub-join (its a and b sides).
  void map(const std::vector<uint32_t>* ia, const std::vector<uint32_t>* ib) {
    ia_ = ia;
    ib_ = ib;
  }
  void consume(const PairRecord* pairs, size_t n) override;

 private:
  PairSink& out_;
  uint64_t max_pairs_;
  uint64_t* emitted_;
  const std::vector<uint32_t>* ia_ = nullptr;
  const std::vector<uint32_t>* ib_ = nullptr;
  std::vector<PairRecord> buf_;
};

// The error of a join with more than max_pairs results.
[[noreturn]] void throw_too_many_pairs(uint64_t max_pairs);

// Runs the join `p` (no filter, stage or reduce) slab by slab through `run`, the pairs to
// `sink` with input indices; each pair once (the ownership rule). `engine_maps`: `run` emits
// the sub-problems' PointsView::index values (the GPU join), so no pair is remapped here.
void slab_simjoin(const SimjoinProblem& p, const SlabPlan& plan, PairSink& sink, const RunJoin& run,
                  bool engine_maps = false);

}  // namespace split
}  // namespace gpu2bs
