// Shares of the tile-pair triangle and of block pairs, device lists, and the similarity join's
// slab decomposition with its eps halo (split.h).
#include "split.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

#include <pthread.h>
#include <signal.h>

#include "error.h"

namespace gpu2bs {
namespace split {

namespace {

using u128 = unsigned __int128;

// Tile pairs before row a of the triangle of M tiles.
u128 row_start(u128 a, u128 M) { return a ? a * M - a * (a - 1) / 2 : 0; }

// Pairs of r points among themselves.
u128 tri(u128 r) { return r ? r * (r - 1) / 2 : 0; }

}  // namespace

// Whole rows r < row of the triangle hold full tiles only (the short last tile is row M - 1).
uint64_t triangle_pairs_before(uint64_t n, uint64_t tile, uint64_t t) {
  if (n < 2 || tile == 0) return 0;
  const u128 M = (n + tile - 1) / tile;
  const u128 total_items = M * (M + 1) / 2;
  if (t >= total_items) return uint64_t(tri(n));
  // The row r holding item t: the largest r with row_start(r) <= t.
  u128 lo = 0, hi = M - 1;
  while (lo < hi) {
    const u128 mid = (lo + hi + 1) / 2;
    if (row_start(mid, M) <= t) lo = mid; else hi = mid - 1;
  }
  const u128 r = lo;
  const u128 T = tile;
  // Rows a < r are full tiles: T(T-1)/2 on the diagonal plus T * (n - (a + 1) T) after it.
  u128 pairs = r * tri(T) + T * (r * u128(n) - T * (r * (r + 1) / 2));
  const u128 c = u128(t) - row_start(r, M);  // items of row r before t
  if (c >= 1) {
    const u128 rows_r = std::min<u128>(T, u128(n) - r * T);
    pairs += tri(rows_r);
    if (c >= 2) pairs += rows_r * (std::min<u128>((r + c) * T, n) - (r + 1) * T);
  }
  return uint64_t(pairs);
}

// Each boundary is the first tile pair before which the share's target of point pairs lies.
std::vector<uint64_t> triangle_shares(uint64_t n, uint64_t tile, int shares) {
  if (shares < 1) shares = 1;
  const uint64_t M = tile ? (n + tile - 1) / tile : 0;
  const uint64_t items = M * (M + 1) / 2;
  const u128 P = tri(n);
  std::vector<uint64_t> b(size_t(shares) + 1, 0);
  b[size_t(shares)] = items;
  for (int k = 1; k < shares; ++k) {
    const u128 target = P * u128(k) / u128(shares);
    // The first item t with pairs before it >= target.
    uint64_t lo = b[size_t(k) - 1], hi = items;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (u128(triangle_pairs_before(n, tile, mid)) >= target) hi = mid; else lo = mid + 1;
    }
    b[size_t(k)] = lo;
  }
  return b;
}

// Each boundary is the first item whose prefix weight reaches the share's target.
std::vector<size_t> weighted_shares(const std::vector<uint64_t>& weights, int shares) {
  if (shares < 1) shares = 1;
  std::vector<u128> prefix(weights.size() + 1, 0);
  for (size_t i = 0; i < weights.size(); ++i) prefix[i + 1] = prefix[i] + weights[i];
  const u128 W = prefix.back();
  std::vector<size_t> b(size_t(shares) + 1, 0);
  b[size_t(shares)] = weights.size();
  for (int k = 1; k < shares; ++k) {
    const u128 target = W * u128(k) / u128(shares);
    b[size_t(k)] = size_t(std::lower_bound(prefix.begin() + long(b[size_t(k) - 1]), prefix.end(), target) -
                          prefix.begin());
    b[size_t(k)] = std::min(b[size_t(k)], weights.size());
  }
  return b;
}

// r(r-1)/2 for a diagonal block pair, r_i r_j otherwise, in run_block_pairs' row order.
std::vector<uint64_t> block_pair_weights(uint64_t n, uint64_t block) {
  std::vector<uint64_t> w;
  if (block == 0) return w;
  const uint64_t K = (n + block - 1) / block;
  auto count = [&](uint64_t i) { return std::min(block, n - i * block); };
  for (uint64_t i = 0; i < K; ++i)
    for (uint64_t j = i; j < K; ++j)
      w.push_back(i == j ? uint64_t(tri(count(i))) : count(i) * count(j));
  return w;
}

// Spaces are ignored and "all" matches in any case; ordinals keep the order given.
bool parse_devices(const std::string& text, int count, std::vector<int>* out, std::string* err) {
  out->clear();
  std::string t;
  for (char ch : text)
    if (!std::isspace(static_cast<unsigned char>(ch))) t += char(std::tolower(static_cast<unsigned char>(ch)));
  if (t == "all") {
    for (int d = 0; d < count; ++d) out->push_back(d);
    return true;
  }
  if (t.empty()) {
    *err = "the device list is empty";
    return false;
  }
  size_t pos = 0;
  while (pos <= t.size()) {
    const size_t comma = t.find(',', pos);
    const std::string item = t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) {
      *err = "the list has an empty entry";
      return false;
    }
    if (item.size() > 6 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      *err = "\"" + item + "\" is not a device ordinal";
      return false;
    }
    const int d = std::atoi(item.c_str());
    if (d >= count) {
      *err = "device " + item + " does not exist (" + std::to_string(count) + " CUDA device" +
             (count == 1 ? "" : "s") + ")";
      return false;
    }
    if (std::find(out->begin(), out->end(), d) != out->end()) {
      *err = "device " + item + " is listed twice";
      return false;
    }
    out->push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return true;
}

// The eps bound plus the coordinate rounding of the precision (float32: each coordinate rounded
// to 24 bits, the difference rounded again), with a relative margin above every rounding.
double slab_halo(const SimjoinProblem& p, int axis) {
  const double m = std::max(std::fabs(p.box.lo[axis]), std::fabs(p.box.hi[axis]));
  if (p.prec == Precision::Float32) {
    const double e = std::max(p.eps, std::sqrt(double(p.eps2_f)));
    return e * (1.0 + 1e-5) + m * std::ldexp(1.0, -21);
  }
  const double e = std::max(p.eps, std::sqrt(p.eps2));
  return e * (1.0 + 1e-9) + m * std::ldexp(1.0, -49);
}

namespace {

// Points per part of the plan's passes (below: one thread).
constexpr size_t kPlanPartPoints = size_t(1) << 16;

// Parts (threads) for a pass of the plan over n points: one per kPlanPartPoints, at most
// `threads` (0: 8 and the machine's hardware threads).
int plan_parts(size_t n, int threads) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t cap = threads > 0 ? size_t(threads) : std::min(size_t(8), hw);
  return int(std::max<size_t>(1, std::min(cap, n / kPlanPartPoints)));
}

// The first index of part k of `parts` contiguous ranges of n indices.
inline size_t part_begin(size_t n, int k, int parts) { return n * size_t(k) / size_t(parts); }

// Runs body(k) for k in [0, parts): parts - 1 new threads (started with every signal blocked,
// so the caller's handlers, PostgreSQL's, stay on the calling thread) and the calling thread;
// rethrows the first part's error after all ended.
void run_parts(int parts, const std::function<void(int)>& body) {
  if (parts <= 1) {
    body(0);
    return;
  }
  std::vector<std::exception_ptr> errs(static_cast<size_t>(parts));
  std::vector<std::thread> threads;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  bool started = true;
  try {
    for (int k = 1; k < parts; ++k)
      threads.emplace_back([&body, &errs, k] {
        try {
          body(k);
        } catch (...) {
          errs[size_t(k)] = std::current_exception();
        }
      });
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (started) {
    try {
      body(0);
    } catch (...) {
      errs[0] = std::current_exception();
    }
  }
  for (auto& t : threads) t.join();
  if (!started) throw Error(ErrorCode::OutOfMemory, "could not start worker threads");
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
}

// Places the order statistics at positions pos[k0..k1) of v[lo, hi) (ascending positions, all
// in [lo, hi)): the middle one first, then each half within its side (O(n log k)), the two
// sides on two threads while `par` > 1 and the range is large.
void select_positions(std::vector<double>& v, size_t lo, size_t hi, const std::vector<size_t>& pos,
                      size_t k0, size_t k1, int par) {
  if (k0 >= k1 || lo >= hi) return;
  const size_t km = (k0 + k1) / 2;
  const size_t at = pos[km];
  std::nth_element(v.begin() + long(lo), v.begin() + long(at), v.begin() + long(hi));
  if (par > 1 && hi - lo >= 2 * kPlanPartPoints && k1 - k0 > 1) {
    run_parts(2, [&](int side) {
      if (side == 0)
        select_positions(v, lo, at, pos, k0, km, par / 2);
      else
        select_positions(v, at + 1, hi, pos, km + 1, k1, par - par / 2);
    });
    return;
  }
  select_positions(v, lo, at, pos, k0, km, 1);
  select_positions(v, at + 1, hi, pos, km + 1, k1, 1);
}

// The slab of coordinate x under `cuts` (slab s is [cuts[s-1], cuts[s])): the number of cuts c
// with !(x < c), as std::upper_bound, by a search without data-dependent branches.
inline size_t slab_of(const std::vector<double>& cuts, double x) {
  size_t n = cuts.size();
  if (n == 0) return 0;
  const double* base = cuts.data();
  while (n > 1) {
    const size_t half = n / 2;
    base = !(x < base[half - 1]) ? base + half : base;
    n -= half;
  }
  return size_t(base - cuts.data()) + (!(x < base[0]) ? 1 : 0);
}

// Order statistics of one coordinate for growing slab counts: a copy of the array stays
// partitioned at every position selected so far, so a finer level's new positions are selected
// within the ranges between earlier ones (no full sort, no work repeated from one level to the
// next). The first call on a large input tries the bracketed selection, which leaves no copy.
class Quantiles {
 public:
  // Points of the strided sample (all points of a smaller input).
  static constexpr size_t kSample = size_t(1) << 16;
  Quantiles(const double* x, size_t n, int threads) : x_(x), n_(n), par_(plan_parts(n, threads)) {}
  // The coordinates x[i n / k] (k = min(n, kSample) points), ascending; taken once.
  const std::vector<double>& sorted_sample() {
    const size_t k = std::min(n_, kSample);
    if (sample_.size() != k) {
      sample_.resize(k);
      for (size_t i = 0; i < k; ++i) sample_[i] = x_[i * n_ / k];
      std::sort(sample_.begin(), sample_.end());
    }
    return sample_;
  }
  // The slabs - 1 cuts at positions n k / slabs (k = 1 .. slabs - 1).
  std::vector<double> cuts(int slabs) {
    const size_t n = n_;
    if (n == 0 || slabs <= 1) return std::vector<double>(size_t(std::max(slabs, 1)) - 1, 0.0);
    std::vector<size_t> want;
    for (int k = 1; k < slabs; ++k) want.push_back(n * size_t(k) / size_t(slabs));
    std::vector<double> fast;
    if (v_.empty() && bracketed(want, &fast)) return fast;
    if (v_.empty()) v_.assign(x_, x_ + n);
    // New positions, grouped by the range between selected positions that holds them; the
    // ranges are disjoint, so they are selected in parallel (one range: its halves are).
    struct Range {
      size_t lo, hi;
      std::vector<size_t> fresh;
    };
    std::vector<Range> ranges;
    size_t at = 0;  // index into sel_ of the first selected position >= the current one
    for (size_t i = 0; i < want.size();) {
      const size_t q = want[i];
      while (at < sel_.size() && sel_[at] < q) ++at;
      if (at < sel_.size() && sel_[at] == q) {
        ++i;
        continue;
      }
      Range r{at == 0 ? 0 : sel_[at - 1] + 1, at == sel_.size() ? n : sel_[at], {}};
      while (i < want.size() && want[i] < r.hi) {
        if (r.fresh.empty() || r.fresh.back() != want[i]) r.fresh.push_back(want[i]);
        ++i;
      }
      for (size_t f : r.fresh) added_.push_back(f);
      ranges.push_back(std::move(r));
    }
    if (ranges.size() == 1) {
      select_positions(v_, ranges[0].lo, ranges[0].hi, ranges[0].fresh, 0, ranges[0].fresh.size(), par_);
    } else if (!ranges.empty()) {
      const int parts = std::min(par_, int(ranges.size()));
      run_parts(parts, [&](int k) {
        for (size_t g = size_t(k); g < ranges.size(); g += size_t(parts))
          select_positions(v_, ranges[g].lo, ranges[g].hi, ranges[g].fresh, 0, ranges[g].fresh.size(), 1);
      });
    }
    if (!added_.empty()) {
      sel_.insert(sel_.end(), added_.begin(), added_.end());
      std::sort(sel_.begin(), sel_.end());
      added_.clear();
    }
    std::vector<double> out;
    for (size_t q : want) out.push_back(v_[q]);
    return out;
  }

 private:
  std::vector<double> v_;
  std::vector<size_t> sel_;    // positions selected so far, ascending
  // The order statistics at positions `want` (ascending) of a large input without copying or
  // partitioning it: a strided sample brackets each position by two sample values, one
  // parallel pass counts the points below each bracket and gathers those inside it, and a
  // selection within the bracket gives the value. False (nothing set) when the input is small,
  // the cuts are many, brackets overlap or a position falls outside its bracket.
  bool bracketed(const std::vector<size_t>& want, std::vector<double>* out) {
    const size_t n = n_, K = want.size();
    if (par_ < 2 || n < 8 * kSample || K == 0 || K > 63) return false;
    const std::vector<double>& sample = sorted_sample();
    const size_t spacing = kSample / (K + 1);
    const size_t d = std::min<size_t>(512, spacing / 2 - 1);
    std::vector<double> lo(K), hi(K);
    for (size_t k = 0; k < K; ++k) {
      const size_t r = size_t((unsigned __int128)(want[k]) * kSample / n);
      lo[k] = sample[r > d ? r - d : 0];
      hi[k] = sample[std::min(kSample - 1, r + d)];
      if (k > 0 && !(hi[k - 1] < lo[k])) return false;
    }
    // Per part: points in the gap before bracket k (gap[k], k <= K) and the values inside it.
    const int parts = par_;
    std::vector<std::vector<uint64_t>> gap(size_t(parts), std::vector<uint64_t>(K + 1, 0));
    std::vector<std::vector<std::vector<double>>> in(static_cast<size_t>(parts), std::vector<std::vector<double>>(K));
    run_parts(parts, [&](int p) {
      for (size_t i = part_begin(n, p, parts), e = part_begin(n, p + 1, parts); i < e; ++i) {
        const double x = x_[i];
        const size_t j = slab_of(lo, x);  // brackets whose lo <= x (no mispredicted branches)
        if (j > 0 && x <= hi[j - 1])
          in[size_t(p)][j - 1].push_back(x);
        else
          ++gap[size_t(p)][j];
      }
    });
    std::vector<double> res(K);
    uint64_t below = 0;  // points below bracket k
    for (size_t k = 0; k < K; ++k) {
      for (int p = 0; p < parts; ++p) below += gap[size_t(p)][k];
      std::vector<double> b;
      for (int p = 0; p < parts; ++p) b.insert(b.end(), in[size_t(p)][k].begin(), in[size_t(p)][k].end());
      if (want[k] < below || want[k] - below >= b.size()) return false;
      std::nth_element(b.begin(), b.begin() + long(want[k] - below), b.end());
      res[k] = b[want[k] - below];
      below += b.size();
    }
    *out = std::move(res);
    return true;
  }

  const double* x_;
  size_t n_;
  std::vector<double> sample_;  // sorted_sample(), once taken
  std::vector<size_t> added_;   // positions selected by the current call
  int par_;                    // threads for the selections
};

// The axis of largest extent of p's box.
int slab_axis(const SimjoinProblem& p) {
  int axis = 0;
  for (int k = 1; k < p.box.dims; ++k)
    if (p.box.hi[k] - p.box.lo[k] > p.box.hi[axis] - p.box.lo[axis]) axis = k;
  return axis;
}

// The first slab whose halo holds a point of slab t at coordinate x (self-join: the earlier
// slabs whose upper cut is above x - h; t when none).
inline size_t halo_first(const std::vector<double>& cuts, size_t t, double x, double h) {
  return t > 0 && x - h < cuts[t - 1] ? slab_of(cuts, x - h) : t;
}

// The slabs [s0, s1] whose halos hold point x of b ([cuts[s-1] - h, cuts[s] + h) holds x).
inline void b_halo_range(const std::vector<double>& cuts, double x, double h, size_t* s0, size_t* s1) {
  const size_t t = slab_of(cuts, x);
  *s0 = t > 0 && x - h < cuts[t - 1] ? slab_of(cuts, x - h) : t;
  *s1 = t < cuts.size() && !(x + h < cuts[t]) ? slab_of(cuts, x + h) : t;
}

// Own and halo point counts of the slabs of some cuts, per part of the points (part k: the k-th
// of `parts` contiguous index ranges of a, for the own lists and a self-join's halos, and of b,
// for an a x b join's halos) and in all.
struct Tally {
  int parts = 0;
  std::vector<std::vector<uint64_t>> part_own, part_halo;  // [part][slab]
  std::vector<uint64_t> own, halo;                          // [slab]
};

// The counts of the slabs of `cuts` (the sizes plan_with_cuts gives its lists), the parts
// counted in parallel.
void slab_counts(const SimjoinProblem& p, int axis, double h, const std::vector<double>& cuts, int threads,
                 Tally* t) {
  const size_t S = cuts.size() + 1;
  const int parts = plan_parts(std::max(p.a.n, p.self ? size_t(0) : p.b.n), threads);
  t->parts = parts;
  t->part_own.assign(size_t(parts), std::vector<uint64_t>(S, 0));
  t->part_halo.assign(size_t(parts), std::vector<uint64_t>(S, 0));
  run_parts(parts, [&](int k) {
    std::vector<uint64_t>& own = t->part_own[size_t(k)];
    std::vector<uint64_t>& halo = t->part_halo[size_t(k)];
    const double* xa = p.a.coord[axis];
    for (size_t i = part_begin(p.a.n, k, parts), e = part_begin(p.a.n, k + 1, parts); i < e; ++i) {
      const size_t s1 = slab_of(cuts, xa[i]);
      ++own[s1];
      if (p.self)
        for (size_t s = halo_first(cuts, s1, xa[i], h); s < s1; ++s) ++halo[s];
    }
    if (!p.self) {
      const double* xb = p.b.coord[axis];
      for (size_t j = part_begin(p.b.n, k, parts), e = part_begin(p.b.n, k + 1, parts); j < e; ++j) {
        size_t s0, s1;
        b_halo_range(cuts, xb[j], h, &s0, &s1);
        for (size_t s = s0; s <= s1 && s < S; ++s) ++halo[s];
      }
    }
  });
  t->own.assign(S, 0);
  t->halo.assign(S, 0);
  for (int k = 0; k < parts; ++k)
    for (size_t s = 0; s < S; ++s) {
      t->own[s] += t->part_own[size_t(k)][s];
      t->halo[s] += t->part_halo[size_t(k)][s];
    }
}

// Device bytes of the largest sub-join of the slabs of `cuts` (counts only, no lists).
// The counts are left in `t` (plan_with_cuts takes them).
uint64_t largest_slab_bytes(const SimjoinProblem& p, int axis, double h, const std::vector<double>& cuts,
                            int threads, Tally* t) {
  slab_counts(p, axis, h, cuts, threads, t);
  uint64_t need = 0;
  for (size_t s = 0; s < t->own.size(); ++s) {
    if (p.self) need = std::max(need, join_core_bytes(t->own[s], 0, true, p.a.dims, p.prec));
    need = std::max(need, join_core_bytes(t->own[s], t->halo[s], false, p.a.dims, p.prec));
  }
  return need;
}

// The plan of `cuts`: every point of a in its slab, the halos (lists sized by the counts of
// slab_counts, given or counted here; indices ascending in every list: each part writes its
// indices, in order, after those of the earlier parts).
SlabPlan plan_with_cuts(const SimjoinProblem& p, int axis, std::vector<double> cut_values, int threads,
                        Tally t = Tally()) {
  SlabPlan plan;
  plan.axis = axis;
  plan.halo = slab_halo(p, axis);
  plan.cuts = std::move(cut_values);
  const auto& cuts = plan.cuts;
  const double h = plan.halo;
  const size_t S = cuts.size() + 1;
  if (t.own.size() != S) slab_counts(p, axis, h, cuts, threads, &t);
  plan.slabs.resize(S);
  for (size_t s = 0; s < S; ++s) {
    plan.slabs[s].own.resize(t.own[s]);
    plan.slabs[s].halo.resize(t.halo[s]);
  }
  const int parts = t.parts;
  run_parts(parts, [&](int k) {
    std::vector<uint64_t> own_at(S, 0), halo_at(S, 0);  // this part's first slots
    for (int q = 0; q < k; ++q)
      for (size_t s = 0; s < S; ++s) {
        own_at[s] += t.part_own[size_t(q)][s];
        halo_at[s] += t.part_halo[size_t(q)][s];
      }
    const double* xa = p.a.coord[axis];
    for (size_t i = part_begin(p.a.n, k, parts), e = part_begin(p.a.n, k + 1, parts); i < e; ++i) {
      const size_t s1 = slab_of(cuts, xa[i]);
      plan.slabs[s1].own[own_at[s1]++] = uint32_t(i);
      if (p.self)
        for (size_t s = halo_first(cuts, s1, xa[i], h); s < s1; ++s)
          plan.slabs[s].halo[halo_at[s]++] = uint32_t(i);
    }
    if (!p.self) {
      const double* xb = p.b.coord[axis];
      for (size_t j = part_begin(p.b.n, k, parts), e = part_begin(p.b.n, k + 1, parts); j < e; ++j) {
        size_t s0, s1;
        b_halo_range(cuts, xb[j], h, &s0, &s1);
        for (size_t s = s0; s <= s1 && s < S; ++s) plan.slabs[s].halo[halo_at[s]++] = uint32_t(j);
      }
    }
  });
  return plan;
}

}  // namespace

// Cuts at quantiles of the axis of largest extent.
SlabPlan plan_slabs(const SimjoinProblem& p, int slabs, int threads) {
  const int axis = slab_axis(p);
  Quantiles q(p.a.coord[axis], p.a.n, threads);
  return plan_with_cuts(p, axis, q.cuts(std::max(slabs, 1)), threads);
}

// Per point: raw and sorted coordinates, cell keys (two arrays), grid order (two arrays), the
// radix sort's scratch, input indices (a slab's points); per cell (at most one per point):
// start, coordinates, item count and offset, work item and its workload.
uint64_t join_core_bytes(uint64_t na, uint64_t nb, bool self, int dims, Precision prec) {
  const uint64_t sz = prec == Precision::Float32 ? 4 : 8;
  const uint64_t per = 2 * uint64_t(dims) * sz + 16 + 8 + 24 + 4 + 4 + 8 * uint64_t(dims) + 8 + 8 + 24;
  const uint64_t n = self ? na : na + nb;
  return n * per + (uint64_t(8) << 20);
}

// One contiguous array per coordinate, in the order of idx.
PointsView gather_points(const PointsView& v, const std::vector<uint32_t>& idx,
                         std::vector<std::vector<double>>* store) {
  PointsView out;
  out.dims = v.dims;
  out.n = idx.size();
  out.name = v.name;
  store->assign(size_t(v.dims), {});
  for (int k = 0; k < v.dims; ++k) {
    auto& c = (*store)[size_t(k)];
    c.resize(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) c[i] = v.coord[k][idx[i]];
    out.coord[k] = c.data();
  }
  return out;
}

// The sub-problems carry no filter, stage, reduction or limit; their boxes are their points'.
void make_slab_jobs(const SimjoinProblem& p, const SlabPlan& plan, size_t s, SlabJobs* jobs) {
  const Slab& sl = plan.slabs[s];
  PointsView own = gather_points(p.a, sl.own, &jobs->own_store);
  PointsView halo = gather_points(p.self ? p.a : p.b, sl.halo, &jobs->halo_store);
  own.index = sl.own.data();
  halo.index = sl.halo.data();
  SimjoinProblem base = p;
  base.max_pairs = 0;  // the whole join's limit is kept by SlabSink
  base.filter = nullptr;
  base.stage = nullptr;
  base.reduce = nullptr;
  jobs->has_inner = p.self && own.n >= 2;
  if (jobs->has_inner) {
    jobs->inner = base;
    jobs->inner.a = jobs->inner.b = own;
    jobs->inner.self = true;
    jobs->inner.box = compute_bounds(own);
  }
  jobs->has_cross = own.n > 0 && halo.n > 0;
  if (jobs->has_cross) {
    jobs->cross = base;
    jobs->cross.a = own;
    jobs->cross.b = halo;
    jobs->cross.self = false;
    jobs->cross.box = compute_bounds(own, &halo);
  }
}

// The in-memory join's error (kernels/join/banks.cu), for the same limit.
void throw_too_many_pairs(uint64_t max_pairs) {
  throw Error(ErrorCode::ProgramLimit, "similarity join result exceeds gpu2bs.max_result_rows",
              "More than " + std::to_string(max_pairs) + " pairs are within eps.",
              "Use a smaller eps, or raise gpu2bs.max_result_rows.");
}

// Checks the limit before any pair of the page is handed on.
void SlabSink::consume(const PairRecord* pairs, size_t n) {
  if (n == 0) return;
  if (max_pairs_ && *emitted_ + n > max_pairs_) throw_too_many_pairs(max_pairs_);
  if (!ia_) {
    *emitted_ += n;
    out_.consume(pairs, n);
    return;
  }
  buf_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    buf_[k].i = (*ia_)[pairs[k].i];
    buf_[k].j = (*ib_)[pairs[k].j];
    buf_[k].dist = pairs[k].dist;
  }
  *emitted_ += n;
  out_.consume(buf_.data(), n);
}

// The most points a slab's halo may hold, estimated from a strided sample of the axis (of b for
// a x b; of a, the quantiles' sample `qa`, for a self-join): the sample points in the densest
// window of the halo's width (self: h above a cut; a x b: h on either side), scaled to the whole
// set.
static uint64_t halo_estimate(const SimjoinProblem& p, int axis, double h, Quantiles& qa) {
  const PointsView& v = p.self ? p.a : p.b;
  const size_t n = v.n;
  std::vector<double> own;
  if (!p.self) {
    Quantiles qb(v.coord[axis], n, 1);
    own = qb.sorted_sample();
  }
  const std::vector<double>& x = p.self ? qa.sorted_sample() : own;
  const size_t k = x.size();
  if (k == 0) return 0;
  const double w = p.self ? h : 2 * h;
  size_t most = 0;
  for (size_t i = 0, j = 0; j < k; ++j) {
    while (x[j] - x[i] > w) ++i;
    most = std::max(most, j - i + 1);
  }
  return (uint64_t(most) * n + k - 1) / k;
}

// The banks' part of a budget: kJoinMinBankBytes, or a quarter of a smaller budget.
uint64_t join_bank_reserve(uint64_t budget) {
  return std::min<uint64_t>(kJoinMinBankBytes, budget / 4);
}

// Slab counts from the fewest whose own points and estimated halo fit upwards, each next count
// sized by the counts of points per slab of the last (its largest own list and halo) until the
// largest fits.
SlabPlan plan_slabs_for_budget(const SimjoinProblem& p, uint64_t budget, int threads) {
  const uint64_t nb = p.self ? 0 : p.b.n;
  // The banks keep their reserve (the join runs with any pool of at least one page).
  const uint64_t bank = join_bank_reserve(budget);
  if (join_core_bytes(p.a.n, nb, p.self, p.a.dims, p.prec) <= budget - bank) {
    SlabPlan whole;  // one slab: the join in memory (its lists are not filled)
    whole.slabs.resize(1);
    return whole;
  }
  const uint64_t avail = budget - bank;
  const uint64_t fixed = join_core_bytes(0, 0, true, p.a.dims, p.prec);
  const uint64_t per = join_core_bytes(1, 0, true, p.a.dims, p.prec) - fixed;  // bytes per point
  // Below the fixed part and one point no slab fits; past the point where more slabs stop
  // shrinking the largest one (its halo dominates) none will.
  if (avail > fixed + per) {
    const uint64_t fit = (avail - fixed) / per;  // points one sub-join may hold
    const int axis = slab_axis(p);
    const double h = slab_halo(p, axis);
    Quantiles q(p.a.coord[axis], p.a.n, threads);
    // The largest slab holds at least ceil(n / slabs) points of its own (a x b: and about as
    // large a share of b), so fewer slabs than those whose own points alone fit cannot fit; the
    // first count leaves room for the band of width h the sample predicts.
    const uint64_t band = halo_estimate(p, axis, h, q);
    const uint64_t room = band < fit / 2 ? fit - band : fit;
    const uint64_t spread = uint64_t(p.a.n) + (p.self ? 0 : uint64_t(p.b.n));
    uint64_t slabs = std::max<uint64_t>(2, (spread + room - 1) / room);
    uint64_t prev = UINT64_MAX;
    bool stalled = false;
    while (slabs <= (uint64_t(1) << 16)) {
      std::vector<double> cuts = q.cuts(int(slabs));
      Tally t;
      const uint64_t need = largest_slab_bytes(p, axis, h, cuts, threads, &t);
      if (need <= avail) return plan_with_cuts(p, axis, std::move(cuts), threads, std::move(t));
      if (need >= prev) {
        // A few more slabs need not shrink the largest one (a cut just below a dense band
        // narrower than h puts the band in a halo): twice as many once before giving up.
        if (stalled) break;
        stalled = true;
        slabs *= 2;
        continue;
      }
      stalled = false;
      prev = need;
      // The own lists shrink with more slabs and a self-join's halos stay about as wide: the
      // next count gives the largest own list the room its largest halo leaves (a x b, whose
      // halos shrink too: the largest own list and halo scaled together); one more slab at
      // least, twice as many at most.
      const uint64_t own_max = *std::max_element(t.own.begin(), t.own.end());
      const uint64_t halo_max = *std::max_element(t.halo.begin(), t.halo.end());
      uint64_t next = 2 * slabs;
      if (!p.self)
        next = (slabs * (own_max + halo_max) + fit - 1) / fit;
      else if (halo_max < fit)
        next = (slabs * own_max + (fit - halo_max) - 1) / (fit - halo_max);
      slabs = std::min(std::max(next, slabs + 1), 2 * slabs);
    }
  }
  throw Error(ErrorCode::OutOfMemory, "GPU memory limit exceeded",
              "The similarity join needs " +
                  std::to_string(join_core_bytes(p.a.n, nb, p.self, p.a.dims, p.prec) + bank) +
                  " bytes of device memory and no slab plan fits in " + std::to_string(budget) + ".",
              "Raise gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.");
}

// The next slab's points are gathered on a helper thread while the current slab's sub-joins run.
void slab_simjoin(const SimjoinProblem& p, const SlabPlan& plan, PairSink& sink, const RunJoin& run,
                  bool engine_maps) {
  uint64_t emitted = 0;
  SlabSink out(sink, p.max_pairs, &emitted);
  const size_t S = plan.slabs.size();
  std::unique_ptr<SlabJobs> next(new SlabJobs);
  if (S > 0) make_slab_jobs(p, plan, 0, next.get());
  for (size_t s = 0; s < S; ++s) {
    std::unique_ptr<SlabJobs> cur = std::move(next);
    std::future<void> ahead;
    if (s + 1 < S) {
      next.reset(new SlabJobs);
      SlabJobs* nj = next.get();
      ahead = std::async(std::launch::async, [&p, &plan, s, nj] { make_slab_jobs(p, plan, s + 1, nj); });
    }
    // The helper's gather finishes before `next` is read or freed (also on an error here).
    struct Join {
      std::future<void>& f;
      ~Join() {
        if (f.valid()) f.wait();
      }
    } join_ahead{ahead};
    SlabJobs& jobs = *cur;
    const Slab& sl = plan.slabs[s];
    if (jobs.has_inner) {
      out.map(engine_maps ? nullptr : &sl.own, engine_maps ? nullptr : &sl.own);
      run(jobs.inner, out);
    }
    if (jobs.has_cross) {
      out.map(engine_maps ? nullptr : &sl.own, engine_maps ? nullptr : &sl.halo);
      run(jobs.cross, out);
    }
    if (ahead.valid()) ahead.get();  // rethrows the helper's error (bad_alloc)
  }
}

}  // namespace split
}  // namespace gpu2bs
