// CPU resolution walk (resolve_cpu.h). Breadth-first on every core while cell pairs hold many
// point pairs, then one depth-first walk per work item, so that items take milliseconds (the
// calling thread polls for cancel between items) and memory stays O(items).
#include "resolve_cpu.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "cpu_kernels.h"
#include "error.h"
#include "parallel.h"

namespace gpu2bs {

// 2-core dev machine, AVX2, float32, 2-D uniform, derived width (bench_resolve and a tuning
// driver; CPU seconds, the machine being shared): N = 2e5, 20 buckets, 32 points per leaf
// resolves 76% of the pairs in 6.7 CPU s against ~20 CPU s of brute force, while 8 points per
// leaf visit 16x more cell pairs (1.6e9 at N = 2e5, 100 buckets: slower than brute force) and
// 64 resolve more (88% at N = 1e6) at a coarser walk. A visit costs about as much as 100-250
// pair distances in the tile kernel, so leaves must hold tens of points. The map itself is
// built deeper (4 points per leaf for uniform data) and the walk stops splitting at 1024 point
// pairs (32 x 32): uniform data stops at ~32-point cells, dense clusters go deeper. A pair
// whose distance range spans two bucket edges or more is computed whole up to 2^20 point pairs
// (big tiles, ~1 ms): its children rarely resolve, and at 1e5 points and 100 buckets splitting
// such pairs down to the leaves cost 3.9 CPU s against 2.0 for brute force.
namespace {
CpuResolveTuning g_override[2];
bool g_overridden[2] = {false, false};
}  // namespace

void set_cpu_resolve_tuning(int dims, const CpuResolveTuning* t) {
  if (dims != 2 && dims != 3) return;
  g_overridden[dims - 2] = t != nullptr;
  if (t) g_override[dims - 2] = *t;
}

CpuResolveTuning cpu_resolve_tuning(int dims) {
  if ((dims == 2 || dims == 3) && g_overridden[dims - 2]) return g_override[dims - 2];
  return {4.0, 1024, uint64_t(1) << 20, uint64_t(1) << 22};
}

// Fraction of point pairs left unresolved, about c * s * nbuckets / sqrt(d) for leaf cells of
// side s (unit extent; a pair straddles a bucket edge with probability ~ its distance range
// over the bucket width), with s = (leaf_points / n)^(1/d). Measured: 2-D, N = 2e5, 20 buckets,
// s = 0.0126: 24% unresolved, c = 1.35; the 3-D coefficient is taken larger (wider ranges
// along the diagonal). Unresolved pairs cost about twice a tile pair (short ranges) and the
// walk adds its visits, so resolution wins below about a third unresolved; below
// kCpuResolveMinPoints brute force takes milliseconds and keeps the simpler path
// (measured with test/bench/bench_resolve).
namespace {
constexpr double kCpuUnresolvedCoef[2] = {1.6, 2.2};  // 2-D, 3-D
constexpr double kCpuResolveWinFraction = 0.35;
constexpr size_t kCpuResolveMinPoints = 50000;
constexpr double kCpuLeafPairsSide = 32.0;  // points of the cells where uniform walks stop
}  // namespace

bool cpu_resolve_sdh_wins(size_t n, int dims, int nbuckets) {
  if ((dims != 2 && dims != 3) || n < kCpuResolveMinPoints) return false;
  const double s = std::pow(kCpuLeafPairsSide / double(n), 1.0 / dims);
  const double frac = kCpuUnresolvedCoef[dims - 2] * s * nbuckets / std::sqrt(double(dims));
  return frac < kCpuResolveWinFraction;
}

bool cpu_resolve_count_wins(size_t n, int dims, double r_rel) {
  if ((dims != 2 && dims != 3) || n < kCpuResolveMinPoints || !(r_rel > 0)) return false;
  // The grid path examines pairs within (3r)^d of each point; resolution the pairs whose
  // leaf cells straddle the sphere of radius r: area ~ 2 pi r (2-D) or 4 pi r^2 (3-D) times
  // the leaf side s, plus the walk. Resolution wins when the shell is thinner than the grid's
  // neighbourhood by the coefficient's margin.
  const double s = std::pow(kCpuLeafPairsSide / double(n), 1.0 / dims);
  const double shell = (dims == 2 ? 2 * M_PI * r_rel : 4 * M_PI * r_rel * r_rel) * 2 * s;
  const double grid = std::pow(std::min(1.0, 3 * r_rel), dims);
  return shell * kCpuUnresolvedCoef[dims - 2] < grid * kCpuResolveWinFraction;
}

namespace {

using Clock = std::chrono::steady_clock;

struct CellPair {
  uint32_t a, b;
  int level;
};

// Per-worker counters.
struct WorkerStats {
  uint64_t visited[kResolveMaxLevels] = {};
  uint64_t resolved[kResolveMaxLevels] = {};
  uint64_t examined[kResolveMaxLevels] = {};
  uint64_t resolved_pairs = 0;
};

// The walk over the map for one operation. Op provides:
//   int test(T d2lo, T d2hi)                        verdict, -1 = unresolved
//   void resolved(int verdict, uint64_t pairs, int w)
//   void brute(size_t i0, size_t i1, size_t j0, size_t j1, bool self, int w)
//   bool hopeless(T d2lo, T d2hi)                   children unlikely to resolve
template <typename T, int D, class Op>
class Walker {
 public:
  Walker(const DensityMap<T>& m, Op& op, const CpuResolveTuning& t, int threads)
      : m_(m), op_(op), t_(t), L_(m.levels() - 1), ws_(size_t(threads)) {}

  void run(Control& ctl, ResolveStats* st) {
    std::vector<CellPair> frontier{{0, 0, 0}};
    std::vector<CellPair> items;
    const int nt = int(ws_.size());
    while (!frontier.empty()) {
      std::vector<std::vector<CellPair>> next(static_cast<size_t>(nt)), its(static_cast<size_t>(nt));
      const size_t chunk = 1024;
      parallel_for(ctl, (frontier.size() + chunk - 1) / chunk, [&](size_t ch, int w) {
        const size_t e = std::min(frontier.size(), (ch + 1) * chunk);
        for (size_t k = ch * chunk; k < e; ++k) {
          const CellPair& cp = frontier[k];
          if (!settle(cp, w)) continue;
          if (pairs_of(cp) <= t_.item_pairs)
            its[size_t(w)].push_back(cp);
          else
            expand(cp, [&](const CellPair& c) { next[size_t(w)].push_back(c); });
        }
      });
      frontier.clear();
      for (auto& v : next) frontier.insert(frontier.end(), v.begin(), v.end());
      for (auto& v : its) items.insert(items.end(), v.begin(), v.end());
    }
    // Largest items first: the last items to finish are small.
    std::sort(items.begin(), items.end(), [&](const CellPair& x, const CellPair& y) {
      return pairs_of(x) > pairs_of(y);
    });
    parallel_for(ctl, items.size(), [&](size_t k, int w) {
      std::vector<CellPair> stack;
      expand(items[k], [&](const CellPair& c) { stack.push_back(c); });
      while (!stack.empty()) {
        const CellPair cp = stack.back();
        stack.pop_back();
        if (settle(cp, w)) expand(cp, [&](const CellPair& c) { stack.push_back(c); });
      }
    });
    if (st) {
      st->levels = m_.levels();
      for (const auto& s : ws_) {
        for (int l = 0; l < kResolveMaxLevels; ++l) {
          st->visited[l] += s.visited[l];
          st->resolved[l] += s.resolved[l];
          st->examined[l] += s.examined[l];
          st->examined_pairs += s.examined[l];
        }
        st->resolved_pairs += s.resolved_pairs;
      }
    }
  }

 private:
  uint64_t count(int level, uint32_t c) const {
    const auto& lv = m_.level[size_t(level)];
    return lv.begin[c + 1] - lv.begin[c];
  }
  uint64_t pairs_of(const CellPair& cp) const {
    const uint64_t na = count(cp.level, cp.a);
    return cp.a == cp.b ? na * (na - 1) / 2 : na * count(cp.level, cp.b);
  }

  // Tests a cell pair: counts it whole when resolved, runs the tile kernel when it is a leaf
  // pair or small; returns true when it must be split into its children.
  bool settle(const CellPair& cp, int w) {
    WorkerStats& s = ws_[size_t(w)];
    const auto& lv = m_.level[size_t(cp.level)];
    const uint64_t pairs = pairs_of(cp);
    if (pairs == 0) return false;
    s.visited[cp.level]++;
    const T* ba = &lv.box[size_t(cp.a) * 2 * D];
    const T* bb = &lv.box[size_t(cp.b) * 2 * D];
    T d2lo, d2hi;
    d2_bounds<T, D>(ba, ba + D, bb, bb + D, &d2lo, &d2hi);
    const int v = op_.test(d2lo, d2hi);
    if (v >= 0) {
      s.resolved[cp.level]++;
      s.resolved_pairs += pairs;
      op_.resolved(v, pairs, w);
      return false;
    }
    if (cp.level == L_ || pairs <= t_.min_pairs ||
        (pairs <= t_.direct_pairs && op_.hopeless(d2lo, d2hi))) {
      s.examined[cp.level] += pairs;
      op_.brute(lv.begin[cp.a], lv.begin[cp.a + 1], lv.begin[cp.b], lv.begin[cp.b + 1],
                cp.a == cp.b, w);
      return false;
    }
    return true;
  }

  // Calls fn on each child pair of cp (i <= j within one cell).
  template <class F>
  void expand(const CellPair& cp, F fn) const {
    const auto& lv = m_.level[size_t(cp.level)];
    const int cl = cp.level + 1;
    const uint32_t a0 = lv.child[cp.a], a1 = lv.child[cp.a + 1];
    const uint32_t b0 = lv.child[cp.b], b1 = lv.child[cp.b + 1];
    for (uint32_t i = a0; i < a1; ++i)
      for (uint32_t j = cp.a == cp.b ? i : b0; j < b1; ++j) fn(CellPair{i, j, cl});
  }

  const DensityMap<T>& m_;
  Op& op_;
  CpuResolveTuning t_;
  int L_;
  std::vector<WorkerStats> ws_;
};

template <typename T>
void sdh_tile(const CpuKernels& k, int dims, const T* const* c, size_t i0, size_t i1, size_t j0,
              size_t j1, bool diag, const SdhParams& p, uint64_t* h, int copies) {
  if constexpr (sizeof(T) == 4)
    k.sdh_f32(dims, c, i0, i1, j0, j1, diag, p, h, copies);
  else
    k.sdh_f64(dims, c, i0, i1, j0, j1, diag, p, h, copies);
}

template <typename T>
uint64_t count_tile(const CpuKernels& k, int dims, const T* const* c, size_t i0, size_t i1,
                    size_t j0, size_t j1, bool diag, T r2) {
  if constexpr (sizeof(T) == 4)
    return k.count_f32(dims, c, i0, i1, c, j0, j1, diag, r2);
  else
    return k.count_f64(dims, c, i0, i1, c, j0, j1, diag, r2);
}

template <typename T, int D>
struct SdhOp {
  const CpuKernels& kern;
  const T* const* c;
  const SdhParams& p;
  T inv_w, nbt, beyond;
  int copies;
  std::vector<std::vector<uint64_t>>& priv;
  int test(T lo, T hi) const { return resolve_bucket<T>(lo, hi, inv_w, nbt, beyond); }
  // The range spans two bucket edges or more: halving it (the children) rarely resolves.
  bool hopeless(T lo, T hi) const {
    return sdh_bucket<T>(hi, inv_w, nbt, beyond) - sdh_bucket<T>(lo, inv_w, nbt, beyond) >= 2;
  }
  void resolved(int k, uint64_t pairs, int w) {
    if (k < p.nbuckets) priv[size_t(w)][size_t(k)] += pairs;  // k == nbuckets: not counted
  }
  // The tile kernel takes j-ranges of at most kCpuTile points.
  void brute(size_t i0, size_t i1, size_t j0, size_t j1, bool self, int w) {
    uint64_t* h = priv[size_t(w)].data();
    for (size_t jb = j0; jb < j1; jb += kCpuTile) {
      const size_t je = std::min(j1, jb + kCpuTile);
      if (!self) {
        sdh_tile<T>(kern, D, c, i0, i1, jb, je, false, p, h, copies);
        continue;
      }
      sdh_tile<T>(kern, D, c, jb, je, jb, je, true, p, h, copies);  // within the block
      if (jb > i0) sdh_tile<T>(kern, D, c, i0, jb, jb, je, false, p, h, copies);  // before it
    }
  }
};

template <typename T, int D>
struct CountOp {
  const CpuKernels& kern;
  const T* const* c;
  T r2;
  std::vector<uint64_t>& partial;
  int test(T lo, T hi) const { return resolve_count<T>(lo, hi, r2); }
  bool hopeless(T, T) const { return false; }  // one edge: children often fall to one side
  void resolved(int v, uint64_t pairs, int w) {
    if (v == 1) partial[size_t(w)] += pairs;
  }
  void brute(size_t i0, size_t i1, size_t j0, size_t j1, bool self, int w) {
    partial[size_t(w)] += count_tile<T>(kern, D, c, i0, i1, j0, j1, self, r2);
  }
};

int worker_count(const Control& ctl) { return ctl.threads > 0 ? ctl.threads : 1; }

template <typename T, int D>
std::vector<uint64_t> sdh_d(const DensityMap<T>& m, const T* const* c, const SdhParams& p,
                            Control& ctl, ResolveStats* st) {
  const int nt = worker_count(ctl);
  const int copies = p.nbuckets <= kCpuSdhCopiesMaxBuckets ? 4 : 1;
  std::vector<std::vector<uint64_t>> priv(
      size_t(nt), std::vector<uint64_t>(size_t(p.nbuckets) * size_t(copies), 0));
  const T inv_w = sizeof(T) == 4 ? T(p.inv_width_f) : T(p.inv_width);
  SdhOp<T, D> op{cpu_kernels(), c, p, inv_w, T(p.nbuckets),
                 T(p.explicit_width ? p.nbuckets : p.nbuckets - 1), copies, priv};
  Walker<T, D, SdhOp<T, D>> walker(m, op, cpu_resolve_tuning(D), nt);
  walker.run(ctl, st);
  std::vector<uint64_t> hist(size_t(p.nbuckets), 0);
  for (auto& h : priv)
    for (size_t k = 0; k < h.size(); ++k) hist[k % hist.size()] += h[k];
  return hist;
}

template <typename T, int D>
uint64_t count_d(const DensityMap<T>& m, const T* const* c, T r2, Control& ctl,
                 ResolveStats* st) {
  const int nt = worker_count(ctl);
  std::vector<uint64_t> partial(size_t(nt), 0);
  CountOp<T, D> op{cpu_kernels(), c, r2, partial};
  Walker<T, D, CountOp<T, D>> walker(m, op, cpu_resolve_tuning(D), nt);
  walker.run(ctl, st);
  uint64_t total = 0;
  for (auto v : partial) total += v;
  return total;
}

}  // namespace

template <typename T>
std::vector<uint64_t> cpu_resolve_sdh(const DensityMap<T>& m, const T* const* sorted,
                                      const SdhParams& p, Control& ctl, ResolveStats* st) {
  if (m.geo.dims == 2) return sdh_d<T, 2>(m, sorted, p, ctl, st);
  if (m.geo.dims == 3) return sdh_d<T, 3>(m, sorted, p, ctl, st);
  throw Error(ErrorCode::Internal, "resolution needs 2 or 3 coordinates");
}

template <typename T>
uint64_t cpu_resolve_count(const DensityMap<T>& m, const T* const* sorted, T r2, Control& ctl,
                           ResolveStats* st) {
  if (m.geo.dims == 2) return count_d<T, 2>(m, sorted, r2, ctl, st);
  if (m.geo.dims == 3) return count_d<T, 3>(m, sorted, r2, ctl, st);
  throw Error(ErrorCode::Internal, "resolution needs 2 or 3 coordinates");
}

template std::vector<uint64_t> cpu_resolve_sdh<float>(const DensityMap<float>&,
                                                      const float* const*, const SdhParams&,
                                                      Control&, ResolveStats*);
template std::vector<uint64_t> cpu_resolve_sdh<double>(const DensityMap<double>&,
                                                       const double* const*, const SdhParams&,
                                                       Control&, ResolveStats*);
template uint64_t cpu_resolve_count<float>(const DensityMap<float>&, const float* const*, float,
                                           Control&, ResolveStats*);
template uint64_t cpu_resolve_count<double>(const DensityMap<double>&, const double* const*,
                                            double, Control&, ResolveStats*);

}  // namespace gpu2bs
