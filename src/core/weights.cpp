// Pair weights: the fixed-point grid, the final rounding, and the CPU engine's weighted SDH and
// pair count (brute force over tile pairs on all cores, one private accumulator per worker).
#include "weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "engine.h"
#include "error.h"
#include "parallel.h"

namespace gpu2bs {

WeightScale make_weight_scale(double wmax) {
  WeightScale s;
  const double m = wmax * wmax;
  if (!std::isfinite(m))
    throw Error(ErrorCode::InvalidParameter, "weights are too large",
                "The largest |weight| is " + float8_text(wmax) +
                    "; its square overflows float8, so products of two weights would.",
                "Scale the weights, for example by a power of two.");
  if (m == 0) return s;  // every product is 0: any grid sums them exactly
  const int e = std::ilogb(m) + 1;  // 2^(e-1) <= m < 2^e
  s.shift = 62 - e;
  s.s1 = std::ldexp(1.0, s.shift / 2);
  s.s2 = std::ldexp(1.0, s.shift - s.shift / 2);
  return s;
}

double weight_value(const WeightSum& sum, const WeightScale& s) {
  const __int128 v = static_cast<__int128>(static_cast<unsigned __int128>(sum.hi) << 64 |
                                           static_cast<unsigned __int128>(sum.lo));
  const double r = std::ldexp(static_cast<double>(v), -s.shift);
  if (!std::isfinite(r))
    throw Error(ErrorCode::InvalidParameter, "sum of weight products is out of range for float8");
  return r;
}

double weight_max(const double* w, size_t n, const char* what) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i]))
      throw Error(ErrorCode::InvalidParameter,
                  std::string("weight of ") + (what ? what : "the input") + " is not finite",
                  std::string("A row has weight ") + float8_text(w[i]) +
                      "; NaN and infinite weights are not accepted.");
    m = std::max(m, std::fabs(w[i]));
  }
  return m;
}

namespace {

// Rows per tile of the weighted CPU runs (one work item is a pair of tiles).
constexpr size_t kWeightTile = 512;

// Largest memory of the workers' private histograms together (unless one alone is larger).
constexpr size_t kWeightPrivateBytes = size_t(128) << 20;

// Coordinates of `v` in precision T ((float)x for float32), one array per axis.
template <typename T>
std::vector<std::vector<T>> typed_coords(const PointsView& v) {
  std::vector<std::vector<T>> c(size_t(v.dims));
  for (int k = 0; k < v.dims; ++k) {
    c[size_t(k)].resize(v.n);
    for (size_t i = 0; i < v.n; ++i) c[size_t(k)][i] = T(v.coord[k][i]);
  }
  return c;
}

// One worker's private counts and sums (allocated on its first item).
struct WeightedPrivate {
  std::vector<uint64_t> pairs;
  std::vector<WeightSum> sums;
};

// Tile pair `item` of `tiles` tiles as (a, b), a <= b, in row order.
void tile_pair(size_t item, size_t tiles, size_t* a, size_t* b) {
  // Row r starts at item r * tiles - r * (r - 1) / 2: the root of that quadratic, corrected.
  auto start = [&](size_t r) { return r * tiles - r * (r - 1) / 2; };
  const double t2 = 2.0 * double(tiles) + 1.0;
  const double disc = std::max(0.0, t2 * t2 - 8.0 * double(item));
  size_t r = size_t(std::max(0.0, std::floor((t2 - std::sqrt(disc)) / 2.0)));
  r = std::min(r, tiles - 1);
  while (r > 0 && start(r) > item) --r;
  while (r + 1 < tiles && start(r + 1) <= item) ++r;
  *a = r;
  *b = r + (item - start(r));
}

// The weighted SDH of the pairs (i, j), i in tile rows [i0, i1), j in [j0, j1), j > i on the
// diagonal: the bucket as sdh_rows computes it, the product on the grid.
template <typename T, int D, bool CLAMP>
void sdh_weighted_rows(const T* const* c, const double* w, size_t i0, size_t i1, size_t j0,
                       size_t j1, bool diag, T inv_w, int nb, const WeightScale& s,
                       WeightedPrivate& out) {
  const T nbt = T(nb);
  const T beyond = sdh_beyond<T>(nb, CLAMP);
  for (size_t i = i0; i < i1; ++i) {
    T p[D];
    for (int k = 0; k < D; ++k) p[k] = c[k][i];
    const double wi = w[i];
    for (size_t j = diag ? i + 1 : j0; j < j1; ++j) {
      T q[D];
      for (int k = 0; k < D; ++k) q[k] = c[k][j];
      const int b = sdh_bucket<T>(sq_dist<T, D>(p, q), inv_w, nbt, beyond);
      if (!CLAMP && b < 0) continue;
      out.pairs[size_t(b)]++;
      out.sums[size_t(b)].add(weight_fixed(wi, w[j], s));
    }
  }
}

// The weighted pair count of the same ranges: pairs with d2 <= r2.
template <typename T, int D>
void count_weighted_rows(const T* const* c, const double* w, size_t i0, size_t i1, size_t j0,
                         size_t j1, bool diag, T r2, const WeightScale& s, WeightedPrivate& out) {
  uint64_t n = 0;
  WeightSum sum;
  for (size_t i = i0; i < i1; ++i) {
    T p[D];
    for (int k = 0; k < D; ++k) p[k] = c[k][i];
    const double wi = w[i];
    for (size_t j = diag ? i + 1 : j0; j < j1; ++j) {
      T q[D];
      for (int k = 0; k < D; ++k) q[k] = c[k][j];
      if (sq_dist<T, D>(p, q) <= r2) {
        ++n;
        sum.add(weight_fixed(wi, w[j], s));
      }
    }
  }
  out.pairs[0] += n;
  out.sums[0].add(sum);
}

// Runs `rows(i0, i1, j0, j1, diag, private)` over every tile pair on the workers and merges
// their private outputs of `slots` entries (integer sums: the merge order does not matter).
template <typename Rows>
WeightedCounts run_weighted(size_t n, size_t slots, const WeightScale& s, Control& ctl,
                            Rows rows) {
  WeightedCounts res;
  res.scale = s;
  res.pairs.assign(slots, 0);
  res.sums.assign(slots, WeightSum());
  const size_t tiles = (n + kWeightTile - 1) / kWeightTile;
  const size_t items = tiles * (tiles + 1) / 2;
  const size_t bytes = slots * (sizeof(uint64_t) + sizeof(WeightSum));
  const int max_workers = int(std::max<size_t>(1, std::min<size_t>(1024, kWeightPrivateBytes / bytes)));
  const int workers = std::max(1, std::min(ctl.threads > 0 ? ctl.threads : 1, max_workers));
  std::vector<std::unique_ptr<WeightedPrivate>> priv(static_cast<size_t>(workers));
  const auto t0 = std::chrono::steady_clock::now();
  parallel_for(
      ctl, items,
      [&](size_t item, int worker) {
        std::unique_ptr<WeightedPrivate>& mine = priv[size_t(worker)];
        if (!mine) {
          mine.reset(new WeightedPrivate);
          mine->pairs.assign(slots, 0);
          mine->sums.assign(slots, WeightSum());
        }
        size_t a, b;
        tile_pair(item, tiles, &a, &b);
        const size_t i0 = a * kWeightTile, i1 = std::min(n, i0 + kWeightTile);
        const size_t j0 = b * kWeightTile, j1 = std::min(n, j0 + kWeightTile);
        rows(i0, i1, j0, j1, a == b, *mine);
      },
      workers);
  for (const auto& p : priv) {
    if (!p) continue;
    for (size_t k = 0; k < slots; ++k) {
      res.pairs[k] += p->pairs[k];
      res.sums[k].add(p->sums[k]);
    }
  }
  ctl.stats.kernel_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctl.stats.pairs_examined += uint64_t(n) * (uint64_t(n) - 1) / 2;
  return res;
}

// The weighted SDH in precision T and D dimensions.
template <typename T, int D>
WeightedCounts sdh_weighted_t(const SdhProblem& p, const double* w, const WeightScale& s,
                              Control& ctl) {
  const auto coords = typed_coords<T>(p.pts);
  const T* c[kMaxDims] = {};
  for (int k = 0; k < D; ++k) c[k] = coords[size_t(k)].data();
  const T inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  const int nb = p.params.nbuckets;
  return run_weighted(p.pts.n, size_t(nb), s, ctl,
                      [&](size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
                          WeightedPrivate& out) {
                        if (p.params.explicit_width)
                          sdh_weighted_rows<T, D, false>(c, w, i0, i1, j0, j1, diag, inv_w, nb, s, out);
                        else
                          sdh_weighted_rows<T, D, true>(c, w, i0, i1, j0, j1, diag, inv_w, nb, s, out);
                      });
}

// The weighted pair count in precision T and D dimensions.
template <typename T, int D>
WeightedCounts count_weighted_t(const PairCountProblem& p, const double* w,
                                const WeightScale& s, Control& ctl) {
  const auto coords = typed_coords<T>(p.pts);
  const T* c[kMaxDims] = {};
  for (int k = 0; k < D; ++k) c[k] = coords[size_t(k)].data();
  const T r2 = sizeof(T) == 4 ? T(p.r2_f) : T(p.r2);
  return run_weighted(p.pts.n, 1, s, ctl,
                      [&](size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
                          WeightedPrivate& out) {
                        count_weighted_rows<T, D>(c, w, i0, i1, j0, j1, diag, r2, s, out);
                      });
}

// Dispatches `f<T, D>` on the problem's precision and dimensions.
#define G2_WEIGHTED_DISPATCH(F, prob, ...)                                          \
  do {                                                                             \
    const bool f32 = (prob).prec == Precision::Float32;                            \
    switch ((prob).pts.dims) {                                                     \
      case 2: return f32 ? F<float, 2>(__VA_ARGS__) : F<double, 2>(__VA_ARGS__);   \
      case 3: return f32 ? F<float, 3>(__VA_ARGS__) : F<double, 3>(__VA_ARGS__);   \
      case 4: return f32 ? F<float, 4>(__VA_ARGS__) : F<double, 4>(__VA_ARGS__);   \
      case 5: return f32 ? F<float, 5>(__VA_ARGS__) : F<double, 5>(__VA_ARGS__);   \
      default: return f32 ? F<float, 6>(__VA_ARGS__) : F<double, 6>(__VA_ARGS__);  \
    }                                                                              \
  } while (0)

}  // namespace

WeightedCounts cpu_sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) {
  const WeightScale s = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  G2_WEIGHTED_DISPATCH(sdh_weighted_t, p, p, w, s, ctl);
}

WeightedCounts cpu_pair_count_weighted(const PairCountProblem& p, const double* w, Control& ctl) {
  const WeightScale s = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  G2_WEIGHTED_DISPATCH(count_weighted_t, p, p, w, s, ctl);
}

WeightedCounts Engine::sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) {
  return cpu_sdh_weighted(p, w, ctl);
}

WeightedCounts Engine::pair_count_weighted(const PairCountProblem& p, const double* w,
                                           Control& ctl) {
  return cpu_pair_count_weighted(p, w, ctl);
}

}  // namespace gpu2bs
