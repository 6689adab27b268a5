// The CPU engine: every core, cache-sized tiles of SoA points with privatized per-thread
// histograms (2-BS framework, sections 3.2-3.3 mapped to caches), and the similarity join on a
// grid index of non-empty cells with a unidirectional neighbour pattern.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "arith.h"
#include "cpu_kernels.h"
#include "dbscan.h"
#include "density_map.h"
#include "engine.h"
#include "error.h"
#include "grid.h"
#include "pair_ir.h"
#include "pairwise.h"
#include "pair_expr.h"
#include "parallel.h"
#include "pipeline.h"
#include "resolve_cpu.h"

namespace gpu2bs {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Points converted to the engine precision, optionally reordered by `order`; kCpuJoinPad
// zeros follow the last axis, so every axis can be read that far past its end.
template <typename T>
struct TypedPoints {
  int dims = 0;
  size_t n = 0;
  std::vector<T> data;
  const T* c[kMaxDims] = {};

  TypedPoints(const PointsView& v, const std::vector<uint32_t>* order = nullptr)
      : dims(v.dims), n(v.n), data(v.n * size_t(v.dims) + kCpuJoinPad) {
    for (int k = 0; k < dims; ++k) {
      T* out = data.data() + size_t(k) * n;
      const double* in = v.coord[k];
      if (order)
        for (size_t s = 0; s < n; ++s) out[s] = T(in[(*order)[s]]);
      else
        for (size_t i = 0; i < n; ++i) out[i] = T(in[i]);
      c[k] = out;
    }
  }
};

// Tile length so every worker gets several tile pairs, within [64, kCpuTile].
size_t tile_for(size_t n, int threads) {
  size_t t = (n + size_t(threads) * 4 - 1) / (size_t(threads) * 4);
  return std::max<size_t>(64, std::min(kCpuTile, t));
}

// The upper triangle of tile pairs (a <= b) of `tiles` tiles, as a linear item index.
struct TilePairs {
  size_t tiles;
  std::vector<size_t> row_start;  // first item of row a
  explicit TilePairs(size_t t) : tiles(t), row_start(t + 1) {
    size_t acc = 0;
    for (size_t a = 0; a < t; ++a) {
      row_start[a] = acc;
      acc += t - a;
    }
    row_start[t] = acc;
  }
  size_t count() const { return row_start[tiles]; }
  void pair(size_t item, size_t* a, size_t* b) const {
    size_t r = size_t(std::upper_bound(row_start.begin(), row_start.end(), item) -
                      row_start.begin()) - 1;
    *a = r;
    *b = r + (item - row_start[r]);
  }
};

// A join work item: rows [r0, r1) of cell `cell` (positions in the sorted arrays).
struct JoinItem {
  uint32_t cell;
  uint32_t r0;
  uint32_t r1;
};

constexpr uint32_t kJoinRows = 256;
// Largest top-k kept per worker (larger ones: every kept pair goes to the sink).
constexpr uint64_t kWorkerTopK = 65536;
// Points per task when per-point arrays are mapped or merged on every core.
constexpr size_t kMapChunk = size_t(1) << 14;
// Sparse grids (join): below this mean cell population seen by a point (itself included), cells
// are widened so that it reaches about the target, at most by the given factor per axis.
// 2-core dev machine, 1e6 uniform 3-D points, eps 0.004 (population 1.06 at side eps), 2
// threads: join 835-990 ms at side eps, 468-481 ms widened 4x (kernel 700 -> 187 ms). The
// target population bounds the work per point, so the cap only guards against a wrong
// estimate: at a cap of 4, 1e6 uniform 2-D points at eps 1e-4 (15,733 pairs, population 1.01)
// took 1,205 ms for the join and 1,909 ms for gpu_pair_count, 3-D at eps 0.001 3,019 ms; at 32:
// 472, 472 and 709 ms (eps 0.0025 2-D unchanged at 363 ms; same loaded machine, back to back).
constexpr double kJoinSparseOccupancy = 3.0;
constexpr double kJoinTargetOccupancy = 12.0;
constexpr double kJoinMaxWidening = 32.0;

// Work items of the join under a balancing strategy (see JoinBalance). WorkQueue splits every
// cell into row ranges of at most kJoinRows so a crowded cell is shared; the others keep one
// item per cell, SortByWorkload ordered by the pairs the cell examines (rows x candidates).
std::vector<JoinItem> join_items(const Grid& g, JoinBalance balance = JoinBalance::WorkQueue,
                                 const std::vector<uint64_t>* work = nullptr) {
  std::vector<JoinItem> items;
  items.reserve(g.num_cells());
  for (size_t c = 0; c < g.num_cells(); ++c) {
    if (balance != JoinBalance::WorkQueue) {
      items.push_back({uint32_t(c), uint32_t(g.cell_begin(c)), uint32_t(g.cell_end(c))});
      continue;
    }
    for (size_t r = g.cell_begin(c); r < g.cell_end(c); r += kJoinRows)
      items.push_back({uint32_t(c), uint32_t(r),
                       uint32_t(std::min<size_t>(r + kJoinRows, g.cell_end(c)))});
  }
  if (balance == JoinBalance::SortByWorkload && work)
    std::stable_sort(items.begin(), items.end(), [&](const JoinItem& a, const JoinItem& b) {
      return (*work)[a.cell] > (*work)[b.cell];
    });
  return items;
}

// Factor by which to widen cells of side `side` over n points in `dims` dimensions whose mean
// cell population seen by a point is `seen` (grid_occupancy; 1: keep): raised to about
// kJoinTargetOccupancy when below kJoinSparseOccupancy, by at most kJoinMaxWidening per axis.
double sparse_widening(int dims, size_t n, double seen) {
  if (n < 4096 || seen >= kJoinSparseOccupancy) return 1;
  // A point sees itself plus the others of its cell; the others grow with the cell volume.
  const double others = std::max(seen - 1, 1e-3);
  const double f = std::pow((kJoinTargetOccupancy - 1) / others, 1.0 / dims);
  return std::min(f, kJoinMaxWidening);
}

// Calls fn(cell) for each non-empty cell at `offsets` from cell c.
template <typename F>
void for_each_neighbour(const Grid& g, size_t c, const std::vector<int>& offsets, F fn) {
  for_each_cell_around(g, c, g, offsets, fn);
}

// Calls fn(cell of gb) for each non-empty cell of gb at `offsets` from cell c of ga (the two
// grids share origin and cell side).
template <typename F>
void for_each_cell_around(const Grid& ga, size_t c, const Grid& gb,
                                 const std::vector<int>& offsets, F fn) {
  const int d = ga.dims();
  const int64_t* base = ga.cell_coord(c);
  int64_t key[kMaxDims];
  for (size_t o = 0; o < offsets.size(); o += size_t(d)) {
    for (int k = 0; k < d; ++k) key[k] = base[k] + offsets[o + k];
    int64_t nc = gb.find(key);
    if (nc >= 0) fn(size_t(nc));
  }
}

// Points of grid gb in the cells at `offsets` around each cell of ga (the pattern's cells; the
// own cell not included), on every core in chunks of cells.
std::vector<uint64_t> neighbour_mass(Control& ctl, const Grid& ga, const Grid& gb,
                                     const std::vector<int>& offsets) {
  constexpr size_t kChunk = 2048;
  std::vector<uint64_t> mass(ga.num_cells());
  parallel_for(ctl, (ga.num_cells() + kChunk - 1) / kChunk, [&](size_t item, int) {
    const size_t c1 = std::min(ga.num_cells(), (item + 1) * kChunk);
    for (size_t c = item * kChunk; c < c1; ++c) {
      uint64_t around = 0;
      for_each_cell_around(ga, c, gb, offsets,
                           [&](size_t nc) { around += gb.cell_end(nc) - gb.cell_begin(nc); });
      mass[c] = around;
    }
  });
  return mass;
}

// The grid of a join or pair count (and of the join's second relation): cells of side
// grid_cell_side(eps, box) over the rounded coordinates (box: the problem's bounding box),
// widened when the candidates' grid is sparse. At side ~eps a sparse set has about one point
// per cell, and the work is then bound by neighbour-cell lookups (3^d - 1 per point, cache
// misses) rather than by distances; wider cells trade lookups for vectorized distance tests
// (any side >= eps finds the same pairs).
struct JoinGrids {
  std::unique_ptr<Grid> ga, gb;  // gb: null for a self-join
  double side = 0;

  // The candidates' grid is built at side ~eps first; its occupancy (grid_occupancy's value,
  // from the cells' populations) decides the widening, and only a widened grid is built again.
  JoinGrids(const PointsView& a, const PointsView* b, const Bounds& box, double eps,
            Precision prec) {
    side = grid_cell_side(eps, box);
    const bool f32 = prec == Precision::Float32;
    const PointsView& cand = b ? *b : a;
    std::unique_ptr<Grid> g(new Grid(cand.dims, cand.n, cand.coord, box.lo, side, f32));
    double sq = 0;
    for (size_t c = 0; c < g->num_cells(); ++c) {
      const double k = double(g->cell_end(c) - g->cell_begin(c));
      sq += k * k;
    }
    const double widen = sparse_widening(cand.dims, cand.n, cand.n ? sq / double(cand.n) : 0.0);
    if (widen != 1) {
      side *= widen;
      g.reset(new Grid(cand.dims, cand.n, cand.coord, box.lo, side, f32));
    }
    if (b) {
      gb = std::move(g);
      ga.reset(new Grid(a.dims, a.n, a.coord, box.lo, side, f32));
    } else {
      ga = std::move(g);
    }
  }
};

class CpuEngine final : public Engine {
 public:
  std::string name() const override { return std::string("cpu (") + cpu_kernels().isa + ")"; }

  std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) override {
    return p.prec == Precision::Float32 ? sdh_t<float>(p, ctl) : sdh_t<double>(p, ctl);
  }

  uint64_t pair_count(const PairCountProblem& p, Control& ctl) override {
    return p.prec == Precision::Float32 ? count_t<float>(p, T2<float>(p.r2_f), ctl)
                                        : count_t<double>(p, p.r2, ctl);
  }

  bool applies_pair_filter() const override { return true; }
  bool applies_pair_stage() const override { return true; }
  bool reduces_pairs_in_workers(PairReduce::Kind k) const override {
    return k == PairReduce::Group || k == PairReduce::TopK;
  }
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) override {
    if (p.prec == Precision::Float32)
      join_t<float>(p, p.eps2_f, sink, ctl);
    else
      join_t<double>(p, p.eps2, sink, ctl);
  }

  void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) override {
    cpu_pairwise(p, sink, ctl);
  }

  // DBSCAN over the grid index on all workers (dbscan.h), no pair handed over.
  bool dbscan_components(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                         DbscanComponents& out, Control& ctl) override {
    if (p.filter || p.stage || p.reduce || !p.self) return false;
    dbscan_components_cpu(p, keys, minpoints, out, ctl);
    return true;
  }

  PairExprResult pair_expr(const PairExprProblem& p, PairSink* sink, Control& ctl) override {
    return cpu_pair_expr(p, sink, ctl);
  }

 private:
  template <typename T>
  static T T2(T v) { return v; }

  static int threads(const Control& ctl) { return ctl.threads > 0 ? ctl.threads : 1; }

  template <typename T>
  static void sdh_kernel(const CpuKernels& k, int dims, const T* const* c, size_t i0, size_t i1,
                         size_t j0, size_t j1, bool diag, const SdhParams& p, uint64_t* h,
                         int copies) {
    if constexpr (sizeof(T) == 4)
      k.sdh_f32(dims, c, i0, i1, j0, j1, diag, p, h, copies);
    else
      k.sdh_f64(dims, c, i0, i1, j0, j1, diag, p, h, copies);
  }

  template <typename T>
  static uint64_t count_kernel(const CpuKernels& k, int dims, const T* const* a, size_t i0,
                               size_t i1, const T* const* b, size_t j0, size_t j1, bool diag,
                               T r2) {
    if constexpr (sizeof(T) == 4)
      return k.count_f32(dims, a, i0, i1, b, j0, j1, diag, r2);
    else
      return k.count_f64(dims, a, i0, i1, b, j0, j1, diag, r2);
  }

  template <typename T>
  static void join_kernel(const CpuKernels& k, int dims, const T* const* a, size_t i0, size_t i1,
                          const T* const* b, size_t j0, size_t j1, bool diag, T eps2,
                          PageWriter& out) {
    if constexpr (sizeof(T) == 4)
      k.join_f32(dims, a, i0, i1, b, j0, j1, diag, eps2, out);
    else
      k.join_f64(dims, a, i0, i1, b, j0, j1, diag, eps2, out);
  }

  // The per-point count kernel (GroupCount) of precision T.
  template <typename T>
  static void group_kernel(const CpuKernels& k, int dims, const T* const* a, size_t i0, size_t i1,
                           const T* const* b, size_t j0, size_t j1, bool diag, T eps2,
                           const GroupCount& gc) {
    if constexpr (sizeof(T) == 4)
      k.group_f32(dims, a, i0, i1, b, j0, j1, diag, eps2, gc);
    else
      k.group_f64(dims, a, i0, i1, b, j0, j1, diag, eps2, gc);
  }

  template <typename T>
  static void agg_kernel(const CpuKernels& k, int dims, const T* const* a, size_t i0, size_t i1,
                         const T* const* b, size_t j0, size_t j1, bool diag, T eps2,
                         DistAgg& acc) {
    if constexpr (sizeof(T) == 4)
      k.agg_f32(dims, a, i0, i1, b, j0, j1, diag, eps2, acc);
    else
      k.agg_f64(dims, a, i0, i1, b, j0, j1, diag, eps2, acc);
  }

  // SDH: tile pairs over workers, private histograms as far as the work warrants
  // (sdh_privatization), each allocated by its worker on first use, merged on every core by
  // bucket ranges (cancel is polled between ranges).
  template <typename T>
  std::vector<uint64_t> sdh_t(const SdhProblem& p, Control& ctl) {
    const auto& kern = cpu_kernels();
    auto t0 = Clock::now();
    if (use_resolve(ctl, p.pts, [&] {
          return cpu_resolve_sdh_wins(p.pts.n, p.pts.dims, p.params.nbuckets);
        }))
      return resolve_t<T>(p.pts, p.prec, ctl, [&](const DensityMap<T>& m, const T* const* c,
                                                  ResolveStats* st) {
        return cpu_resolve_sdh<T>(m, c, p.params, ctl, st);
      });
    TypedPoints<T> pts(p.pts);
    const size_t nb = size_t(p.params.nbuckets);
    const size_t tile = tile_for(pts.n, threads(ctl));
    const size_t tiles = (pts.n + tile - 1) / tile;
    TilePairs tp(tiles);
    const uint64_t pairs = uint64_t(pts.n) * (pts.n ? pts.n - 1 : 0) / 2;
    const SdhPrivatization pv = sdh_privatization(p.params.nbuckets, pairs, threads(ctl), tp.count());
    std::vector<std::vector<uint64_t>> priv(size_t(pv.workers));
    ctl.stats.prepare_s += seconds_since(t0);
    t0 = Clock::now();
    parallel_for(
        ctl, tp.count(),
        [&](size_t item, int w) {
          std::vector<uint64_t>& h = priv[size_t(w)];
          if (h.empty()) h.assign(nb * size_t(pv.copies), 0);
          size_t a, b;
          tp.pair(item, &a, &b);
          size_t i0 = a * tile, i1 = std::min(pts.n, i0 + tile);
          size_t j0 = b * tile, j1 = std::min(pts.n, j0 + tile);
          sdh_kernel<T>(kern, pts.dims, pts.c, i0, i1, j0, j1, a == b, p.params, h.data(),
                        pv.copies);
        },
        pv.workers);
    ctl.stats.kernel_s += seconds_since(t0);
    t0 = Clock::now();
    std::vector<uint64_t> hist(nb, 0);
    constexpr size_t kMergeChunk = size_t(1) << 14;
    parallel_for(
        ctl, (nb + kMergeChunk - 1) / kMergeChunk,
        [&](size_t c, int) {
          const size_t b0 = c * kMergeChunk, b1 = std::min(nb, b0 + kMergeChunk);
          for (const auto& h : priv)
            for (size_t copy = 0; copy < h.size() / nb; ++copy) {
              const uint64_t* src = h.data() + copy * nb;
              for (size_t k = b0; k < b1; ++k) hist[k] += src[k];
            }
        },
        pv.workers);
    ctl.stats.merge_s += seconds_since(t0);
    ctl.stats.pairs_examined += pairs;
    return hist;
  }

  // Resolution applies to 2-D and 3-D sets of at least 2 points; forced by the setting, else
  // chosen by the cost model `wins`.
  template <class W>
  static bool use_resolve(const Control& ctl, const PointsView& pts, W wins) {
    if ((pts.dims != 2 && pts.dims != 3) || pts.n < 2 || pts.n > UINT32_MAX) return false;
    if (ctl.sdh_method == SdhMethod::Brute) return false;
    return ctl.sdh_method == SdhMethod::Resolve || wins();
  }

  // Builds the density map of the points in precision T, sorts the points by it and runs
  // `walk` (the SDH or pair count resolution); time and counters go to the stats.
  template <typename T, class F>
  static auto resolve_t(const PointsView& v, Precision prec, Control& ctl, F walk) {
    (void)prec;
    auto t0 = Clock::now();
    ResolveStats local;
    ResolveStats* st = ctl.resolve_stats ? ctl.resolve_stats : &local;
    DensityMap<T> map;
    {
      TypedPoints<T> raw(v);
      map = build_density_map<T>(v.dims, v.n, raw.c, cpu_resolve_tuning(v.dims).leaf_points, ctl);
    }
    TypedPoints<T> sorted(v, &map.order);
    const double build = seconds_since(t0);
    ctl.stats.prepare_s += build;
    st->build_s += build;
    t0 = Clock::now();
    const uint64_t before = st->examined_pairs;
    auto out = walk(map, sorted.c, st);
    const double walk_s = seconds_since(t0);
    ctl.stats.kernel_s += walk_s;
    st->walk_s += walk_s;
    ctl.stats.pairs_examined += st->examined_pairs - before;
    return out;
  }

  // Pair count: through the join's grid (same builder, same cell widening) when it examines
  // fewer pairs than all-pairs tiles.
  template <typename T>
  uint64_t count_t(const PairCountProblem& p, T r2, Control& ctl) {
    const auto& kern = cpu_kernels();
    auto t0 = Clock::now();
    const size_t n = p.pts.n;
    const uint64_t all_pairs = uint64_t(n) * (n ? n - 1 : 0) / 2;
    const int nt = threads(ctl);
    if (use_resolve(ctl, p.pts, [&] {
          const Bounds& box = p.box;
          double extent = 0;
          for (int k = 0; k < box.dims; ++k) extent = std::max(extent, box.hi[k] - box.lo[k]);
          return extent > 0 && cpu_resolve_count_wins(n, p.pts.dims, p.r / extent);
        }))
      return resolve_t<T>(p.pts, p.prec, ctl, [&](const DensityMap<T>& m, const T* const* c,
                                                  ResolveStats* st) {
        return cpu_resolve_count<T>(m, c, r2, ctl, st);
      });
    std::vector<uint64_t> partial(size_t(nt), 0);
    if (n >= 2 && std::isfinite(p.r) && p.r > 0) {
      JoinGrids jg(p.pts, nullptr, p.box, p.r, p.prec);
      const Grid& grid = *jg.ga;
      const auto fwd = neighbour_offsets(p.pts.dims, true);
      const std::vector<uint64_t> mass = neighbour_mass(ctl, grid, grid, fwd);
      uint64_t candidates = 0;
      for (size_t c = 0; c < grid.num_cells(); ++c) {
        const uint64_t nc = grid.cell_end(c) - grid.cell_begin(c);
        candidates += nc * (nc - 1) / 2 + nc * mass[c];
      }
      if (candidates < all_pairs / 2) {
        TypedPoints<T> pts(p.pts, &grid.order());
        auto items = join_items(grid);
        ctl.stats.prepare_s += seconds_since(t0);
        t0 = Clock::now();
        // Each item: its rows against themselves, the rest of its cell and the next cell on the
        // last axis, then each forward row of three cells as one contiguous range (the same
        // candidates as the (3^d - 1) / 2 forward cells, in longer vectorized runs).
        const int d = p.pts.dims;
        const auto rows = forward_rows(d);
        parallel_for(ctl, items.size(), [&](size_t it, int w) {
          const JoinItem& ji = items[it];
          const int64_t* base = grid.cell_coord(ji.cell);
          int64_t key[kMaxDims];
          for (int k = 0; k < d; ++k) key[k] = base[k];
          key[d - 1] += 1;
          const int64_t next = grid.find(key);
          const size_t own_end = next >= 0 ? grid.cell_end(size_t(next)) : grid.cell_end(ji.cell);
          uint64_t c = count_kernel<T>(kern, d, pts.c, ji.r0, ji.r1, pts.c, ji.r0, ji.r1, true, r2);
          c += count_kernel<T>(kern, d, pts.c, ji.r0, ji.r1, pts.c, ji.r1, own_end, false, r2);
          key[d - 1] = base[d - 1];
          for (size_t o = 0; o < rows.size(); o += size_t(d - 1)) {
            for (int k = 0; k < d - 1; ++k) key[k] = base[k] + rows[o + size_t(k)];
            size_t b, e;
            grid.row_range(key, &b, &e);
            if (b < e) c += count_kernel<T>(kern, d, pts.c, ji.r0, ji.r1, pts.c, b, e, false, r2);
          }
          partial[w] += c;
        });
        ctl.stats.kernel_s += seconds_since(t0);
        ctl.stats.pairs_examined += candidates;
        uint64_t total = 0;
        for (auto v : partial) total += v;
        return total;
      }
    }
    if (n < 2) return 0;
    TypedPoints<T> pts(p.pts);
    const size_t tile = tile_for(n, nt);
    TilePairs tp((n + tile - 1) / tile);
    ctl.stats.prepare_s += seconds_since(t0);
    t0 = Clock::now();
    parallel_for(ctl, tp.count(), [&](size_t item, int w) {
      size_t a, b;
      tp.pair(item, &a, &b);
      size_t i0 = a * tile, i1 = std::min(n, i0 + tile);
      size_t j0 = b * tile, j1 = std::min(n, j0 + tile);
      partial[w] += count_kernel<T>(kern, pts.dims, pts.c, i0, i1, pts.c, j0, j1, a == b, r2);
    });
    ctl.stats.kernel_s += seconds_since(t0);
    ctl.stats.pairs_examined += all_pairs;
    uint64_t total = 0;
    for (auto v : partial) total += v;
    return total;
  }

  // The error for a join with more than max_pairs results (`found` when known).
  [[noreturn]] static void throw_too_many(uint64_t max_pairs, uint64_t found) {
    throw Error(ErrorCode::ProgramLimit, "similarity join result exceeds gpu2bs.max_result_rows",
                found ? std::to_string(found) + " pairs are within eps; the limit is " +
                            std::to_string(max_pairs) + "."
                      : "More than " + std::to_string(max_pairs) + " pairs are within eps.",
                "Use a smaller eps, or raise gpu2bs.max_result_rows.");
  }

  // Similarity join on the grid: workers fill pages of pairs (sorted positions mapped back to
  // input indices); the calling thread hands the pages to the sink.
  template <typename T>
  void join_t(const SimjoinProblem& p, T eps2, PairSink& sink, Control& ctl) {
    const auto& kern = cpu_kernels();
    auto t0 = Clock::now();
    // Group and top-k reduced in the workers (reduces_pairs_in_workers); other kinds are not
    // asked of this engine.
    PairReduce* red = p.reduce;
    if (red && red->kind != PairReduce::Group && red->kind != PairReduce::TopK)
      throw Error(ErrorCode::Internal, "the cpu engine does not reduce this kind of pairs");
    if (p.a.n == 0 || p.b.n == 0) {
      if (red && red->kind == PairReduce::Group) {
        const size_t n = p.self || red->side == 0 ? p.a.n : p.b.n;
        red->group_count.assign(n, 0);
        red->group_min.assign(n, 0.0);
        red->group_max.assign(n, 0.0);
      }
      if (red) red->done = true;
      return;
    }
    JoinGrids jg(p.a, p.self ? nullptr : &p.b, p.box, p.eps, p.prec);
    std::unique_ptr<Grid>& gb = jg.gb;
    std::unique_ptr<Grid>& ga_ptr = jg.ga;
    const Grid& ga = *ga_ptr;
    TypedPoints<T> pa(p.a, &ga.order());
    std::unique_ptr<TypedPoints<T>> pb;
    if (!p.self) pb.reset(new TypedPoints<T>(p.b, &gb->order()));
    const Grid& gridb = p.self ? ga : *gb;
    const TypedPoints<T>& ptsb = p.self ? pa : *pb;
    const auto offsets = neighbour_offsets(p.a.dims, p.self);
    // Candidates of a work item as contiguous ranges of grid b's sorted points: cells are sorted
    // with the last axis fastest, so a row of three cells along it is one range
    // (Grid::row_range). Self-join: the item's rows against themselves, then the rest of its
    // cell and the next cell on the last axis (one range), then the forward rows; two
    // relations: the 3^(d-1) rows around the cell. The same candidates as the cells at
    // `offsets`, in fewer and longer runs.
    const int d = p.a.dims;
    const std::vector<int> rows = p.self ? forward_rows(d) : neighbour_offsets(d - 1, false);
    const size_t nrows = rows.size() / size_t(d - 1);  // a join has 2 to 6 dimensions
    auto for_each_range = [&](const JoinItem& ji, auto&& fn) {
      const int64_t* base = ga.cell_coord(ji.cell);
      int64_t key[kMaxDims];
      for (int k = 0; k < d; ++k) key[k] = base[k];
      if (p.self) {
        fn(size_t(ji.r0), size_t(ji.r1), true);
        key[d - 1] += 1;
        const int64_t nx = ga.find(key);
        const size_t own_end = nx >= 0 ? ga.cell_end(size_t(nx)) : ga.cell_end(ji.cell);
        if (ji.r1 < own_end) fn(size_t(ji.r1), own_end, false);
        key[d - 1] = base[d - 1];
      }
      for (size_t r = 0; r < nrows; ++r) {
        for (int k = 0; k < d - 1; ++k) key[k] = base[k] + rows[r * size_t(d - 1) + size_t(k)];
        size_t b, e;
        gridb.row_range(key, &b, &e);
        if (b < e) fn(b, e, false);
      }
    };
    // Auto: work items of at most kJoinRows rows from one queue (a crowded cell is shared).
    const JoinBalance balance =
        ctl.join_balance == JoinBalance::Auto ? JoinBalance::WorkQueue : ctl.join_balance;
    // Points of grid b in the neighbour cells of each cell of a (the pattern's cells; the own
    // cell not included), computed once when needed.
    std::vector<uint64_t> mass;
    auto neighbour_mass_once = [&]() -> const std::vector<uint64_t>& {
      if (mass.empty() && ga.num_cells()) mass = neighbour_mass(ctl, ga, gridb, offsets);
      return mass;
    };
    std::vector<uint64_t> work;
    if (balance == JoinBalance::SortByWorkload) {
      const auto& m = neighbour_mass_once();
      work.resize(ga.num_cells());
      for (size_t c = 0; c < ga.num_cells(); ++c) {
        const uint64_t rows = ga.cell_end(c) - ga.cell_begin(c);
        work[c] = rows * ((p.self ? rows : 0) + m[c]);
      }
    }
    auto items = join_items(ga, balance, &work);
    const int nt = std::max(1, std::min<int>(threads(ctl), int(items.size())));
    const size_t queue_pages = ctl.max_pages ? ctl.max_pages : size_t(4) * size_t(nt);
    const size_t page_pairs = join_page_pairs(ctl.page_pairs, nt, queue_pages);
    const std::vector<uint32_t>& order_a = ga.order();
    const std::vector<uint32_t>& order_b = gridb.order();
    // A join that may exceed max_pairs is counted first (an order of magnitude cheaper than
    // emitting), so a runaway join fails in seconds instead of after filling the tuplestore.
    // Cheap bound first: no item meets more than 3^d cells of at most max_cell points each.
    uint64_t max_cell = 0, reach = 1;
    for (size_t c = 0; c < gridb.num_cells(); ++c)
      max_cell = std::max<uint64_t>(max_cell, gridb.cell_end(c) - gridb.cell_begin(c));
    for (int k = 0; k < p.a.dims; ++k) reach *= 3;
    const bool may_exceed = p.max_pairs && double(p.a.n) * double(reach) * double(max_cell) > double(p.max_pairs);
    if (may_exceed) {
      // From the per-cell neighbour mass (lookups on every core, once: on one core per item
      // they took 16-43 s for 2e6 6-D points).
      const auto& m = neighbour_mass_once();
      uint64_t bound = 0;
      for (const JoinItem& ji : items)
        bound += uint64_t(ji.r1 - ji.r0) * ((p.self ? ga.cell_end(ji.cell) - ji.r0 : 0) + m[ji.cell]);
      if (bound > p.max_pairs) {
        std::vector<uint64_t> partial(size_t(threads(ctl)), 0);
        parallel_for(ctl, items.size(), [&](size_t it, int w) {
          const JoinItem& ji = items[it];
          uint64_t c = 0;
          for_each_range(ji, [&](size_t j0, size_t j1, bool diag) {
            c += count_kernel<T>(kern, d, pa.c, ji.r0, ji.r1, ptsb.c, j0, j1, diag, eps2);
          });
          partial[w] += c;
        });
        uint64_t total = 0;
        for (auto v : partial) total += v;
        if (total > p.max_pairs) throw_too_many(p.max_pairs, total);
      }
    }
    ctl.stats.prepare_s += seconds_since(t0);
    t0 = Clock::now();
    std::atomic<size_t> next{0};
    uint64_t emitted = 0;
    if (p.stage) p.stage->start(nt);
    // An aggregate over an interval of dist (AggregateStage::dist_interval) is reduced in the
    // kernel itself: no pair is written.
    DistAgg iv;
    AggregateStage* agg = dynamic_cast<AggregateStage*>(p.stage);
    if (agg && agg->dist_interval(&iv.lo, &iv.lo_incl, &iv.hi, &iv.hi_incl)) {
      std::vector<DistAgg> acc(size_t(std::max(threads(ctl), 1)), iv);
      // Tasks of consecutive items with about kJoinRows rows together (an item of a small cell
      // holds a few points; a crowded cell's items stay one per task, so cancel is polled as
      // often as between items).
      std::vector<size_t> task_start;
      for (size_t it = 0, rows_in = kJoinRows; it < items.size(); ++it) {
        if (rows_in >= kJoinRows) {
          task_start.push_back(it);
          rows_in = 0;
        }
        rows_in += items[it].r1 - items[it].r0;
      }
      task_start.push_back(items.size());
      parallel_for(ctl, task_start.size() - 1, [&](size_t task, int w) {
        DistAgg& a = acc[size_t(w)];
        for (size_t it = task_start[task]; it < task_start[task + 1]; ++it) {
          const JoinItem& ji = items[it];
          for_each_range(ji, [&](size_t j0, size_t j1, bool diag) {
            agg_kernel<T>(kern, d, pa.c, ji.r0, ji.r1, ptsb.c, j0, j1, diag, eps2, a);
          });
        }
      });
      for (const DistAgg& a : acc) {
        uint64_t c;
        double sm, cp, lo, hi;
        a.finish(&c, &sm, &cp, &lo, &hi);
        agg->add(0, c, sm, cp, lo, hi);
      }
      ctl.stats.kernel_s += seconds_since(t0);
      return;
    }
    // Groups: per-worker counters (and minima, maxima when read) of the group side's points,
    // indexed by sorted position (the accesses stay near the item's rows) or, when a filter
    // reads the mapped pairs, by input index; summed on every core at the end. Top-k: a
    // per-worker TopKSink; a pair worse than a worker's k-th is dropped before its keys are
    // looked up.
    const bool grouping = red && red->kind == PairReduce::Group;
    // A top-k of more than kWorkerTopK rows goes through the pages to the sink (a TopKSink)
    // instead: per-worker heaps of that size would hold several times the answer.
    const bool topk = red && red->kind == PairReduce::TopK && red->k <= kWorkerTopK;
    if (topk && (!red->keys_a || !red->keys_b))
      throw Error(ErrorCode::Internal, "top-k reduction without keys");
    const int gside = grouping ? red->side : 0;
    const std::vector<uint32_t>& order_g = !p.self && gside == 1 ? order_b : order_a;
    const size_t ng = order_g.size();
    const bool want_min = grouping && red->want_min, want_max = grouping && red->want_max;
    struct GroupPart {
      std::vector<uint32_t> cnt;  // a point has fewer than 2^32 partners
      std::vector<double> mn, mx;
    };
    std::vector<GroupPart> gparts(grouping ? size_t(nt) : 0);
    std::vector<int64_t> sorted_keys;  // self-join keys by sorted position (which end is id1)
    if (grouping && p.self) {
      if (!red->keys_a) throw Error(ErrorCode::Internal, "group reduction of a self-join without keys");
      if (!p.filter) {
        sorted_keys.resize(order_a.size());
        const size_t n = order_a.size();
        parallel_for(ctl, (n + kMapChunk - 1) / kMapChunk, [&](size_t c, int) {
          const size_t e = std::min(n, (c + 1) * kMapChunk);
          for (size_t s = c * kMapChunk; s < e; ++s) sorted_keys[s] = red->keys_a[order_a[s]];
        });
      }
    }
    std::vector<std::unique_ptr<TopKSink>> tparts(topk ? size_t(nt) : 0);
    for (auto& t : tparts)
      t.reset(new TopKSink(PairKeys{red->keys_a, red->keys_b, p.self}, size_t(red->k), red->descending));
    // One kept pair to worker w's counters (indices as gkeys indexes them).
    auto group_add = [&](GroupPart& gp, const int64_t* gkeys, const PairRecord& r) {
      uint32_t g;
      if (p.self) {
        // id1 is the smaller key of the pair (either point when the keys are equal).
        const bool i_small = gkeys[r.i] <= gkeys[r.j];
        g = (gside == 0) == i_small ? r.i : r.j;
      } else {
        g = gside == 0 ? r.i : r.j;
      }
      gp.cnt[g]++;
      if (want_min) gp.mn[g] = std::min(gp.mn[g], r.dist);
      if (want_max) gp.mx[g] = std::max(gp.mx[g], r.dist);
    };
    // A page of worker w (sorted positions) into its group counters or top-k.
    auto reduce_page = [&](int w, const PairRecord* recs, size_t n) {
      if (grouping) {
        GroupPart& gp = gparts[size_t(w)];
        if (gp.cnt.empty()) {
          gp.cnt.assign(ng, 0);
          if (want_min) gp.mn.assign(ng, HUGE_VAL);
          if (want_max) gp.mx.assign(ng, -HUGE_VAL);
        }
        if (!p.filter) {
          for (size_t q = 0; q < n; ++q) group_add(gp, sorted_keys.data(), recs[q]);
          return;
        }
        for (size_t q = 0; q < n; ++q) {
          PairRecord m{order_a[recs[q].i], order_b[recs[q].j], recs[q].dist};
          if (p.filter->select(&m, 1)) group_add(gp, red->keys_a, m);
        }
        return;
      }
      TopKSink& tk = *tparts[size_t(w)];
      for (size_t q = 0; q < n; ++q) {
        if (tk.rejects(recs[q].dist)) continue;
        PairRecord m{order_a[recs[q].i], order_b[recs[q].j], recs[q].dist};
        if (p.filter && !p.filter->select(&m, 1)) continue;
        tk.consume(&m, 1);
      }
    };
    // Groups of counts alone without a predicate are counted in the kernel (GroupCount).
    const bool count_in_kernel = grouping && !p.filter && !want_min && !want_max;
    // A top-k's pages stay small, so its bound (TopKSink::worst) tightens early.
    const size_t worker_page = topk ? std::min(page_pairs, kCpuFirstPagePairs) : page_pairs;
    WorkerGroup group(
        nt,
        [&](int worker, WorkerGroup& g) {
          // The page grows from kCpuFirstPagePairs as pairs arrive (allocated on the first).
          WorkerGroup::Page page;
          PageWriter out;
          // Maps sorted positions back to input indices, keeps the pairs the pushed-down
          // predicate accepts (in place, on this worker) and hands the page over.
          auto hand_over = [&](size_t n) -> bool {
            if (p.stage) {
              // A reduction over dist: consumed here, in the engine's own indices.
              p.stage->consume(page.data(), n, worker);
              return true;
            }
            if (grouping || topk) {
              reduce_page(worker, page.data(), n);
              return true;
            }
            WorkerGroup::Page full(page.begin(), page.begin() + long(n));
            for (auto& r : full) {
              r.i = order_a[r.i];
              r.j = order_b[r.j];
            }
            if (p.filter) {
              full.resize(p.filter->select(full.data(), full.size()));
              if (full.empty()) return true;
            }
            return g.push_page(std::move(full));
          };
          out.flush = [&]() -> bool {
            if (page.size() < worker_page) {
              page.resize(std::min(worker_page, std::max(kCpuFirstPagePairs, page.size() * 2)));
              out.buf = page.data();
              out.cap = page.size();
              return true;
            }
            bool ok = hand_over(out.n);
            out.n = 0;
            return ok;
          };
          while (out.ok && !g.stopping()) {
            size_t it = next.fetch_add(1, std::memory_order_relaxed);
            if (it >= items.size()) break;
            const JoinItem& ji = items[it];
            // Ascending top-k: once this worker keeps k pairs, pairs farther than its k-th
            // cannot enter, so the kernel's radius shrinks to that distance (with a margin for
            // the rounding of sqrt; TopKSink still decides exactly).
            if (count_in_kernel) {
              // Counts only, no predicate: the kernel counts per point, no pair is written.
              GroupPart& gp = gparts[size_t(worker)];
              if (gp.cnt.empty()) gp.cnt.assign(ng, 0);
              GroupCount gc;
              gc.keys = p.self ? sorted_keys.data() : nullptr;
              gc.side = gside;
              gc.cnt = gp.cnt.data();
              for_each_range(ji, [&](size_t j0, size_t j1, bool diag) {
                group_kernel<T>(kern, d, pa.c, ji.r0, ji.r1, ptsb.c, j0, j1, diag, eps2, gc);
              });
              continue;
            }
            T e2 = eps2;
            double worst;
            if (topk && !red->descending && tparts[size_t(worker)]->worst(&worst))
              e2 = std::min(eps2, T(worst * worst * (1 + 1e-5)));
            for_each_range(ji, [&](size_t j0, size_t j1, bool diag) {
              if (out.ok) join_kernel<T>(kern, d, pa.c, ji.r0, ji.r1, ptsb.c, j0, j1, diag, e2, out);
            });
          }
          if (out.ok && out.n > 0 && !g.stopping()) hand_over(out.n);
        },
        queue_pages);
    group.drive(ctl, [&](WorkerGroup::Page& page) {
      emitted += page.size();
      if (p.max_pairs && emitted > p.max_pairs) throw_too_many(p.max_pairs, 0);
      auto tm = Clock::now();
      sink.consume(page.data(), page.size());
      ctl.stats.merge_s += seconds_since(tm);
    });
    ctl.stats.kernel_s += seconds_since(t0);
    ctl.stats.pairs_emitted += emitted;
    if (!red) return;
    t0 = Clock::now();
    if (grouping) {
      // Every core sums the workers' counters of a range of points; sorted positions map back
      // to input indices (a filter's counters are by input index already).
      red->group_count.assign(ng, 0);
      red->group_min.assign(ng, want_min ? HUGE_VAL : 0.0);
      red->group_max.assign(ng, want_max ? -HUGE_VAL : 0.0);
      parallel_for(ctl, (ng + kMapChunk - 1) / kMapChunk, [&](size_t c, int) {
        const size_t e = std::min(ng, (c + 1) * kMapChunk);
        for (const GroupPart& gp : gparts) {
          if (gp.cnt.empty()) continue;
          for (size_t s = c * kMapChunk; s < e; ++s) {
            if (!gp.cnt[s]) continue;
            const size_t g = p.filter ? s : order_g[s];
            red->group_count[g] += gp.cnt[s];
            if (want_min) red->group_min[g] = std::min(red->group_min[g], gp.mn[s]);
            if (want_max) red->group_max[g] = std::max(red->group_max[g], gp.mx[s]);
          }
        }
      });
    } else if (topk) {
      // The union of the workers' k best holds the k best; the sink picks them.
      for (const auto& t : tparts) {
        const std::vector<PairRecord> recs = t->records();
        if (!recs.empty()) sink.consume(recs.data(), recs.size());
      }
    }
    red->done = true;
    ctl.stats.merge_s += seconds_since(t0);
  }
};

}  // namespace

void DistAgg::finish(uint64_t* count, double* s, double* c, double* lo_out, double* hi_out) const {
  uint64_t n = 0;
  double sm = 0, cp = 0, lo = HUGE_VAL, hi = -HUGE_VAL;
  for (int l = 0; l < kLanes; ++l) {
    if (cnt[l] == 0) continue;
    n += cnt[l];
    neumaier_add(sm, cp, sum[l]);
    neumaier_add(sm, cp, comp[l]);
    lo = std::min(lo, mn[l]);
    hi = std::max(hi, mx[l]);
  }
  *count = n;
  *s = sm;
  *c = cp;
  *lo_out = lo;
  *hi_out = hi;
}

SdhPrivatization sdh_privatization(int nbuckets, uint64_t pairs, int threads, size_t items) {
  const uint64_t nb = uint64_t(std::max(nbuckets, 1));
  uint64_t w = uint64_t(std::max(threads, 1));
  w = std::min<uint64_t>(w, std::max<size_t>(items, 1));
  w = std::min<uint64_t>(w, std::max<uint64_t>(pairs / nb, 1));
  w = std::min<uint64_t>(w, std::max<uint64_t>(kCpuSdhPrivateBytes / (nb * 8), 1));
  SdhPrivatization pv;
  pv.workers = int(w);
  const bool four = nbuckets <= kCpuSdhCopiesMaxBuckets && pairs / w >= 4 * 4 * nb &&
                    w * 4 * nb * 8 <= kCpuSdhPrivateBytes;
  pv.copies = four ? 4 : 1;
  return pv;
}

size_t join_page_pairs(size_t page_pairs, int workers, size_t queue_pages) {
  const size_t pages = size_t(std::max(workers, 1)) + queue_pages;
  const size_t budget = kCpuResultBytes / sizeof(PairRecord) / pages;
  return std::max<size_t>(64, std::min(std::max<size_t>(page_pairs, 64), budget));
}

std::unique_ptr<Engine> make_cpu_engine() { return std::unique_ptr<Engine>(new CpuEngine()); }

}  // namespace gpu2bs
