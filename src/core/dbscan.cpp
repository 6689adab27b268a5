// DBSCAN over the similarity self-join (dbscan.h): neighbour counts, core flags, union-find over
// the core-core pairs streamed from the engine, nearest core point of each border point (or all
// of it on an engine that does it itself), cluster numbers.
#include "dbscan.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "cpu_kernels.h"
#include "error.h"
#include "grid.h"
#include "parallel.h"

namespace gpu2bs {

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// Pairs of one call are processed in chunks of kChunkPairs by the calling thread and a team of
// ctl.threads - 1 helper threads when the call holds at least `share_from` pairs: kShareDevice
// on an engine that computes on its own device (the GPU: the host's cores are free while it
// hands over runs of pages), kShareHost on the CPU engine (its pages are made by its own
// workers on the same cores; only pages made longer than usual are shared).
constexpr size_t kChunkPairs = 4096;
constexpr size_t kShareDevice = 2 * kChunkPairs;
constexpr size_t kShareHost = 65536;
// Spin locks guarding the nearest-core records of points that are not core, by point index.
constexpr size_t kOfferLocks = 4096;

// Helper threads (every signal blocked, as the engine's workers) that run one function over the
// chunks of a call together with the calling thread. A helper joins a call only while it is
// open; the call returns once every chunk is done and no helper is still in it.
class ChunkTeam {
 public:
  explicit ChunkTeam(int helpers) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
      for (int h = 0; h < helpers; ++h) threads_.emplace_back([this] { helper(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      stop();
      throw Error(ErrorCode::OutOfMemory, "could not start helper threads");
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  ~ChunkTeam() { stop(); }
  ChunkTeam(const ChunkTeam&) = delete;
  ChunkTeam& operator=(const ChunkTeam&) = delete;

  // True when there are no helpers (one thread).
  bool empty() const { return threads_.empty(); }

  // Runs fn(begin, end) over the chunks of [0, n) on this thread and the helpers that join.
  void run(size_t n, const std::function<void(size_t, size_t)>& fn) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      n_ = n;
      next_.store(0, std::memory_order_relaxed);
      open_ = true;
      ++gen_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(mu_);
    open_ = false;
    done_cv_.wait(lk, [this] { return inside_ == 0; });
  }

 private:
  // Takes chunks of the open call until none is left.
  void work() {
    for (;;) {
      const size_t b = next_.fetch_add(1, std::memory_order_relaxed) * kChunkPairs;
      if (b >= n_) return;
      (*fn_)(b, std::min(n_, b + kChunkPairs));
    }
  }

  // A helper: waits for a new call, joins it while it is open, works, leaves.
  void helper() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return quit_ || gen_ != seen; });
        if (quit_) return;
        seen = gen_;
        if (!open_) continue;
        ++inside_;
      }
      work();
      std::lock_guard<std::mutex> lk(mu_);
      if (--inside_ == 0) done_cv_.notify_one();
    }
  }

  // Stops and joins the helpers.
  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  uint64_t gen_ = 0;       // calls started (under mu_)
  bool open_ = false;      // helpers may join the current call (under mu_)
  bool quit_ = false;      // (under mu_)
  int inside_ = 0;         // helpers working on the current call (under mu_)
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0};
};

// Runs fn(begin, end, shared) over [0, n) pairs: on the calling thread (shared false), or with
// the team (shared true) when n >= share_from and the team has helpers.
template <typename F>
void for_pairs(ChunkTeam* team, size_t share_from, size_t n, F&& fn) {
  if (!team || team->empty() || n < share_from) {
    fn(size_t(0), n, false);
    return;
  }
  team->run(n, [&](size_t b, size_t e) { fn(b, e, true); });
}

// Counts, for every point, the pairs it belongs to (both ends of each pair).
class DegreeSink final : public PairSink {
 public:
  // n points, all counts 0; long calls shared with `team` (may be null).
  DegreeSink(size_t n, ChunkTeam* team, size_t share_from) : deg_(n), team_(team), share_from_(share_from) {
    for (auto& d : deg_) d.store(0, std::memory_order_relaxed);
  }
  // Adds 1 to the count of both points of each pair.
  void consume(const PairRecord* pairs, size_t n) override {
    std::atomic<uint32_t>* d = deg_.data();
    for_pairs(team_, share_from_, n, [&](size_t b, size_t e, bool shared) {
      if (shared) {
        for (size_t p = b; p < e; ++p) {
          d[pairs[p].i].fetch_add(1, std::memory_order_relaxed);
          d[pairs[p].j].fetch_add(1, std::memory_order_relaxed);
        }
      } else {  // one thread: plain increments
        for (size_t p = b; p < e; ++p) {
          d[pairs[p].i].store(d[pairs[p].i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          d[pairs[p].j].store(d[pairs[p].j].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        }
      }
    });
    seen += n;
  }
  // The number of pairs point g belongs to.
  uint32_t degree(size_t g) const { return deg_[g].load(std::memory_order_relaxed); }
  uint64_t seen = 0;

 private:
  std::vector<std::atomic<uint32_t>> deg_;
  ChunkTeam* team_;
  size_t share_from_;
};

// Drops the pages an engine hands over while it computes a reduction itself (none are expected).
class NullSink final : public PairSink {
 public:
  // Ignores the page.
  void consume(const PairRecord*, size_t) override {}
};

// Union-find over the core points joined by core-core pairs, and for each point that is not core
// the nearest core point seen so far (dist, then key, then index). Safe for concurrent use
// (chunks of one call on several workers): a root is linked under the root of smaller index by
// compare-and-swap, so every parent index is at most its child's (no cycles) and the sets do not
// depend on the order of the unions; paths are halved on the way. Nearest-core records are
// updated under striped spin locks. The parent array also marks the points that are not core
// (kNone), so a pair costs one read per end before any find.
class ClusterSink final : public PairSink {
 public:
  // Every core point its own set; no point with a nearest core point yet.
  ClusterSink(const std::vector<uint8_t>& core, const int64_t* keys, size_t n, ChunkTeam* team,
              size_t share_from)
      : keys_(keys), team_(team), share_from_(share_from), parent_(n), near_(n, kNone), near_d_(n, HUGE_VAL), locks_(kOfferLocks) {
    for (size_t i = 0; i < n; ++i) parent_[i].store(core[i] ? uint32_t(i) : kNone, std::memory_order_relaxed);
    for (auto& l : locks_) l.store(0, std::memory_order_relaxed);
  }

  // Core-core pairs join their sets; core-other pairs offer the core point to the other.
  void consume(const PairRecord* pairs, size_t n) override {
    const std::atomic<uint32_t>* par = parent_.data();
    for_pairs(team_, share_from_, n, [&](size_t b, size_t e, bool shared) {
      for (size_t p = b; p < e; ++p) {
        const PairRecord& r = pairs[p];
        const bool ci = par[r.i].load(std::memory_order_relaxed) != kNone;
        const bool cj = par[r.j].load(std::memory_order_relaxed) != kNone;
        if (ci && cj)
          unite(r.i, r.j);
        else if (ci)
          offer(r.j, r.i, r.dist, shared);
        else if (cj)
          offer(r.i, r.j, r.dist, shared);
      }
    });
    seen += n;
  }

  // The representative of the set of core point x (halving the path on the way).
  uint32_t find(uint32_t x) {
    std::atomic<uint32_t>* par = parent_.data();
    for (;;) {
      uint32_t p = par[x].load(std::memory_order_relaxed);
      if (p == x) return x;
      const uint32_t gp = par[p].load(std::memory_order_relaxed);
      if (gp != p) par[x].compare_exchange_weak(p, gp, std::memory_order_relaxed);
      x = gp;
    }
  }

  // The nearest core point of a point that is not core (kNone: no core point within eps).
  uint32_t nearest(uint32_t x) const { return near_[x]; }

  uint64_t seen = 0;

 private:
  // Joins the sets of core points a and b.
  void unite(uint32_t a, uint32_t b) {
    for (;;) {
      a = find(a);
      b = find(b);
      if (a == b) return;
      if (a < b) std::swap(a, b);  // a, the larger index, goes under b
      uint32_t expect = a;
      if (parent_[a].compare_exchange_strong(expect, b, std::memory_order_relaxed)) return;
    }
  }

  // Core point c at distance d of point b (not core): kept when nearer than b's current one,
  // ties by the smaller key, then the smaller index, so the choice does not depend on the order
  // pairs arrive in.
  void offer(uint32_t b, uint32_t c, double d, bool shared) {
    std::atomic<uint8_t>* lk = shared ? &locks_[b % kOfferLocks] : nullptr;
    if (lk)
      while (lk->exchange(1, std::memory_order_acquire)) {
      }
    const uint32_t cur = near_[b];
    bool take = true;
    if (cur != kNone) {
      const double cd = near_d_[b];
      take = d < cd || (d == cd && (keys_[c] < keys_[cur] || (keys_[c] == keys_[cur] && c < cur)));
    }
    if (take) {
      near_[b] = c;
      near_d_[b] = d;
    }
    if (lk) lk->store(0, std::memory_order_release);
  }

  const int64_t* keys_;
  ChunkTeam* team_;
  size_t share_from_;
  std::vector<std::atomic<uint32_t>> parent_;  // kNone: not a core point
  std::vector<uint32_t> near_;
  std::vector<double> near_d_;
  std::vector<std::atomic<uint8_t>> locks_;
};


// ---- DBSCAN over the grid index on the host's cores (the CPU engine's dbscan_components) -----

// Points per work item of the grid passes: a run of one cell's points in cell order, at most
// kGridItemPoints, fewer where the cell's candidate rows are long (dense data), so that an item
// evaluates at most about kGridItemPairs pairs and query cancel, polled between items, is
// noticed within milliseconds also when all points share one cell.
constexpr size_t kGridItemPoints = 256;
constexpr size_t kGridItemPairs = size_t(1) << 22;

// Pairs with d2 <= eps2 between point i of `a` and the points [j0, j1) of `a`, by the CPU
// engine's vectorized pair count (cpu_kernels.h: the arithmetic of arith.h).
inline uint64_t count_row(const CpuKernels& K, int dims, const float* const* a, size_t i,
                          size_t j0, size_t j1, float eps2) {
  return K.count_f32(dims, a, i, i + 1, a, j0, j1, false, eps2);
}
// The same in float64.
inline uint64_t count_row(const CpuKernels& K, int dims, const double* const* a, size_t i,
                          size_t j0, size_t j1, double eps2) {
  return K.count_f64(dims, a, i, i + 1, a, j0, j1, false, eps2);
}
// The pairs (i, j, sqrt(d2)) with d2 <= eps2 between point i and the points [j0, j1) of `a`,
// appended to `out` by the CPU engine's join kernel.
inline void join_row(const CpuKernels& K, int dims, const float* const* a, size_t i, size_t j0,
                     size_t j1, float eps2, PageWriter& out) {
  K.join_f32(dims, a, i, i + 1, a, j0, j1, false, eps2, out);
}
// The same in float64.
inline void join_row(const CpuKernels& K, int dims, const double* const* a, size_t i, size_t j0,
                     size_t j1, double eps2, PageWriter& out) {
  K.join_f64(dims, a, i, i + 1, a, j0, j1, false, eps2, out);
}

// The grid passes for one element type: the passes of the GPU engine (kernels/join/dbscan.cu),
// one work item a run of points of one cell whose candidate rows (3^(d-1) runs of three
// adjacent cells, Grid::row_range) are looked up once, distances by the engine's kernels.
template <typename T>
void grid_dbscan(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                 DbscanComponents& out, Control& ctl) {
  const size_t n = p.a.n;
  const int D = p.a.dims;
  const bool f32 = sizeof(T) == 4;
  const T eps2 = f32 ? T(p.eps2_f) : T(p.eps2);
  const CpuKernels& K = cpu_kernels();
  using Clock = std::chrono::steady_clock;
  const auto t_prep = Clock::now();
  const Grid grid(D, n, p.a.coord, p.box.lo, grid_cell_side(p.eps, p.box), f32);
  const std::vector<uint32_t>& order = grid.order();
  // Coordinates in T by sorted position (SoA; kCpuJoinPad zeros past the end, which the join
  // kernel's last block of a range reads and ignores), the work items, the row offsets.
  std::vector<std::vector<T>> xs;
  xs.assign(size_t(D), std::vector<T>(n + kCpuJoinPad));
  const T* cols[kMaxDims] = {};
  for (int k = 0; k < D; ++k) {
    for (size_t s = 0; s < n; ++s) xs[size_t(k)][s] = T(p.a.coord[k][order[s]]);
    cols[k] = xs[size_t(k)].data();
  }
  struct Item {
    uint32_t cell, begin, end;
  };
  const std::vector<int> rows = neighbour_offsets(D - 1, false);  // 3^(d-1) offsets of d-1 axes
  const size_t nrows = rows.size() / size_t(D - 1);
  constexpr size_t kMaxRows = 243;  // 3^5
  // The candidate rows of cell `cell`: sorted positions [rb[r], re[r]).
  auto cell_rows = [&](size_t cell, size_t* rb, size_t* re) {
    const int64_t* cc = grid.cell_coord(cell);
    for (size_t r = 0; r < nrows; ++r) {
      int64_t key[kMaxDims] = {};
      for (int k = 0; k < D - 1; ++k) key[k] = cc[k] + rows[r * size_t(D - 1) + size_t(k)];
      key[D - 1] = cc[D - 1];
      grid.row_range(key, &rb[r], &re[r]);
    }
  };
  auto rows_of = [&](const Item& it, size_t* rb, size_t* re) { cell_rows(it.cell, rb, re); };
  std::vector<Item> items;
  for (size_t c = 0; c < grid.num_cells(); ++c) {
    size_t rb[kMaxRows], re[kMaxRows], cand = 0;
    cell_rows(c, rb, re);
    for (size_t r = 0; r < nrows; ++r) cand += re[r] > rb[r] ? re[r] - rb[r] : 0;
    const size_t step = std::clamp<size_t>(kGridItemPairs / std::max<size_t>(cand, 1), 1, kGridItemPoints);
    for (size_t b = grid.cell_begin(c); b < grid.cell_end(c); b += step)
      items.push_back(Item{uint32_t(c), uint32_t(b), uint32_t(std::min(grid.cell_end(c), b + step))});
  }
  const auto t_passes = Clock::now();
  ctl.stats.prepare_s += std::chrono::duration<double>(t_passes - t_prep).count();
  // Pass 1: neighbour counts (itself included) -> core flags; pairs within eps.
  std::vector<uint8_t> core(n, 0);
  std::vector<uint64_t> per_worker(size_t(std::max(1, ctl.threads)), 0);
  parallel_for(ctl, items.size(), [&](size_t i, int w) {
    const Item& it = items[i];
    size_t rb[kMaxRows], re[kMaxRows];
    rows_of(it, rb, re);
    uint64_t extra = 0;
    for (uint32_t s = it.begin; s < it.end; ++s) {
      uint64_t cnt = 0;
      for (size_t r = 0; r < nrows; ++r)
        if (rb[r] < re[r]) cnt += count_row(K, D, cols, s, rb[r], re[r], eps2);
      core[s] = cnt >= uint64_t(minpoints);
      extra += cnt - 1;
    }
    per_worker[size_t(w)] += extra;
  });
  uint64_t pairs2 = 0;
  for (uint64_t v : per_worker) pairs2 += v;
  // Pass 2: union-find of the core points (larger root under the smaller by compare-and-swap,
  // path halving) over core neighbours of larger sorted position; nearest core point of the rest.
  std::vector<std::atomic<uint32_t>> parent(n);
  for (size_t s = 0; s < n; ++s) parent[s].store(core[s] ? uint32_t(s) : kNone, std::memory_order_relaxed);
  std::vector<uint32_t> near(n, kNone);
  auto find = [&](uint32_t x) {
    for (;;) {
      uint32_t q = parent[x].load(std::memory_order_relaxed);
      if (q == x) return x;
      const uint32_t g = parent[q].load(std::memory_order_relaxed);
      if (g != q) parent[x].compare_exchange_weak(q, g, std::memory_order_relaxed);
      x = g;
    }
  };
  parallel_for(ctl, items.size(), [&](size_t i, int) {
    const Item& it = items[i];
    size_t rb[kMaxRows], re[kMaxRows];
    rows_of(it, rb, re);
    std::vector<PairRecord> buf(1024);
    PageWriter pw;
    pw.buf = buf.data();
    pw.cap = buf.size();
    bool cs = false;
    // a core point's neighbours hooked into the union-find (the buffer is then reused)
    auto hook = [&](uint32_t s) {
      for (size_t k = 0; k < pw.n; ++k) {
        const uint32_t j = pw.buf[k].j;
        if (!core[j]) continue;
        uint32_t a = find(s), b = find(j);
        while (a != b) {
          if (a < b) std::swap(a, b);  // a, the larger root, goes under b
          uint32_t expect = a;
          if (parent[a].compare_exchange_strong(expect, b, std::memory_order_relaxed)) break;
          a = find(a);
          b = find(b);
        }
      }
      pw.n = 0;
    };
    uint32_t s = it.begin;
    pw.flush = [&] {
      if (cs) {  // a core point's pairs are hooked as they come: memory bounded by the buffer
        hook(s);
        return true;
      }
      // grows the buffer: a non-core point has fewer than minpoints neighbours
      buf.resize(buf.size() * 2);
      pw.buf = buf.data();
      pw.cap = buf.size();
      return true;
    };
    for (; s < it.end; ++s) {
      pw.n = 0;
      cs = core[s];
      for (size_t r = 0; r < nrows; ++r) {
        const size_t j0 = cs ? std::max<size_t>(rb[r], size_t(s) + 1) : rb[r];
        if (j0 < re[r]) join_row(K, D, cols, s, j0, re[r], eps2, pw);
      }
      if (cs) {
        hook(s);
        continue;
      }
      uint32_t best = kNone, best_in = 0;
      double best_d = 0;
      int64_t best_key = 0;
      for (size_t k = 0; k < pw.n; ++k) {
        const uint32_t j = pw.buf[k].j;
        if (!core[j]) continue;
        const double d = pw.buf[k].dist;
        const uint32_t jin = order[j];
        const int64_t kj = keys[jin];
        if (best == kNone || d < best_d ||
            (d == best_d && (kj < best_key || (kj == best_key && jin < best_in)))) {
          best = j;
          best_in = jin;
          best_d = d;
          best_key = kj;
        }
      }
      near[s] = best;
    }
  });
  // Representatives by input index.
  out.core.assign(n, 0);
  out.root.assign(n, kNone);
  parallel_for(ctl, (n + 65535) / 65536, [&](size_t b, int) {
    for (size_t s = b * 65536; s < std::min(n, (b + 1) * 65536); ++s) {
      const uint32_t x = core[s] ? uint32_t(s) : near[s];
      const uint32_t in = order[s];
      out.core[in] = core[s];
      out.root[in] = x == kNone ? kNone : find(x);
    }
  });
  out.neighbour_pairs = pairs2 / 2;
  ctl.stats.kernel_s += std::chrono::duration<double>(Clock::now() - t_passes).count();
}

// Numbers the sets of `root` (per point its set's representative, an index below n, or kNone
// for noise) 0, 1, ... in ascending order of their smallest (key, index) member and fills
// res.cluster and the border and noise counts (res.core is set).
void number_clusters(const std::vector<uint32_t>& root, const int64_t* keys, DbscanResult& res) {
  const size_t n = root.size();
  const std::vector<uint8_t>& core = res.core;
  std::vector<uint32_t> first(n, kNone);  // per root: its member with the smallest (key, index)
  for (size_t g = 0; g < n; ++g) {
    const uint32_t r = root[g];
    if (r == kNone) continue;
    const uint32_t f = first[r];
    if (f == kNone || keys[g] < keys[f]) first[r] = uint32_t(g);  // g ascends: ties keep f
  }
  std::vector<uint32_t> roots;
  for (size_t g = 0; g < n; ++g)
    if (first[g] != kNone) roots.push_back(uint32_t(g));
  if (roots.size() > size_t(std::numeric_limits<int32_t>::max()))
    throw Error(ErrorCode::ProgramLimit, "too many clusters",
                std::to_string(roots.size()) + " clusters; cluster numbers are integers up to 2147483647.");
  std::sort(roots.begin(), roots.end(), [&](uint32_t a, uint32_t b) {
    const uint32_t fa = first[a], fb = first[b];
    if (keys[fa] != keys[fb]) return keys[fa] < keys[fb];
    return fa < fb;
  });
  std::vector<int32_t> number(n, -1);  // per root
  for (size_t c = 0; c < roots.size(); ++c) number[roots[c]] = int32_t(c);
  for (size_t g = 0; g < n; ++g) {
    if (root[g] == kNone) {
      ++res.noise_points;
      continue;
    }
    res.cluster[g] = number[root[g]];
    if (!core[g]) ++res.border_points;
  }
  res.clusters = roots.size();
}

}  // namespace

void dbscan_components_cpu(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                           DbscanComponents& out, Control& ctl) {
  out = DbscanComponents();
  if (p.a.n == 0) return;
  if (p.a.dims < 2 || p.a.dims > 6)
    throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  if (p.prec == Precision::Float32)
    grid_dbscan<float>(p, keys, minpoints, out, ctl);
  else
    grid_dbscan<double>(p, keys, minpoints, out, ctl);
}

DbscanResult dbscan(Engine& eng, const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                    Control& ctl) {
  if (minpoints < 1)
    throw Error(ErrorCode::InvalidParameter, "minpoints must be at least 1",
                "minpoints is " + std::to_string(minpoints) + ".",
                "A point is a core point when at least minpoints points, itself included, lie within eps.");
  if (!p.self || p.filter || p.stage || p.reduce)
    throw Error(ErrorCode::Internal, "dbscan needs a plain self-join problem");
  const size_t n = p.a.n;
  DbscanResult res;
  res.cluster.assign(n, -1);
  res.core.assign(n, 0);
  if (n == 0) return res;
  if (uint64_t(minpoints) > uint64_t(n)) {  // no point can be core: all noise, no join
    res.noise_points = n;
    return res;
  }

  // An engine that runs every pass itself hands back core flags and representatives only.
  {
    DbscanComponents dc;
    if (eng.dbscan_components(p, keys, minpoints, dc, ctl)) {
      if (dc.core.size() != n || dc.root.size() != n)
        throw Error(ErrorCode::Internal, "engine did not compute the clusters");
      res.core = std::move(dc.core);
      res.neighbour_pairs = dc.neighbour_pairs;
      for (size_t g = 0; g < n; ++g) {
        res.core_points += res.core[g];
        if (dc.root[g] != kNone && dc.root[g] >= n)
          throw Error(ErrorCode::Internal, "engine gave a cluster representative out of range");
      }
      number_clusters(dc.root, keys, res);
      return res;
    }
  }

  // Helpers for long calls: the host's other cores.
  const bool own_device = eng.reduces_pairs(PairReduce::Group);
  const size_t share_from = own_device ? kShareDevice : kShareHost;
  ChunkTeam team(std::max(0, ctl.threads - 1));

  // Pass 1: core flags. With minpoints = 1 every point is core; with minpoints > n none is.
  std::vector<uint8_t>& core = res.core;
  if (minpoints == 1) {
    std::fill(core.begin(), core.end(), uint8_t(1));
  } else if (uint64_t(minpoints) <= uint64_t(n)) {
    const uint64_t need = uint64_t(minpoints) - 1;  // neighbours besides the point itself
    if (own_device) {
      // Each pair counts once under its id1 end (side 0) and once under its id2 end (side 1).
      std::vector<uint64_t> deg(n, 0);
      for (int side = 0; side < 2; ++side) {
        PairReduce red;
        red.kind = PairReduce::Group;
        red.side = side;
        red.want_min = red.want_max = false;
        red.keys_a = red.keys_b = keys;
        SimjoinProblem q = p;
        q.reduce = &red;
        NullSink none;
        eng.simjoin(q, none, ctl);
        if (!red.done || red.group_count.size() != n)
          throw Error(ErrorCode::Internal, "engine did not compute the neighbour counts");
        for (size_t g = 0; g < n; ++g) deg[g] += red.group_count[g];
      }
      for (size_t g = 0; g < n; ++g) core[g] = deg[g] >= need;
    } else {
      DegreeSink sink(n, &team, share_from);
      eng.simjoin(p, sink, ctl);
      res.pairs_seen += sink.seen;
      for (size_t g = 0; g < n; ++g) core[g] = sink.degree(g) >= need;
    }
  }
  for (size_t g = 0; g < n; ++g) res.core_points += core[g];
  if (res.core_points == 0) {
    res.noise_points = n;
    return res;
  }

  // Pass 2: components of the core points, nearest core point of the others.
  ClusterSink cs(core, keys, n, &team, share_from);
  eng.simjoin(p, cs, ctl);
  res.pairs_seen += cs.seen;

  // Each point's set (kNone: noise).
  std::vector<uint32_t> root(n, kNone);
  for (size_t g = 0; g < n; ++g) {
    if (core[g]) {
      root[g] = cs.find(uint32_t(g));
    } else {
      const uint32_t c = cs.nearest(uint32_t(g));
      if (c != kNone) root[g] = cs.find(c);
    }
  }
  number_clusters(root, keys, res);
  return res;
}

}  // namespace gpu2bs
