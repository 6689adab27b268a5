// Pair weights: the fixed-point grid, the final rounding, and the CPU engine's weighted SDH and
// pair count (brute force over tile pairs on all cores, one private accumulator per worker; the
// inner loops per instruction set in weights_cpu.inc).
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
#include "weights_cpu.h"

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

double weight_total(const double* w, size_t n, bool squares, const char* what) {
  const double wmax = weight_max(w, n, what);
  WeightScale s;
  if (squares) {
    s = make_weight_scale(wmax);
  } else if (wmax > 0) {
    const int e = std::ilogb(wmax) + 1;  // 2^(e-1) <= wmax < 2^e
    s.shift = 62 - e;
    s.s1 = std::ldexp(1.0, s.shift / 2);
    s.s2 = std::ldexp(1.0, s.shift - s.shift / 2);
  }
  WeightSum sum;
  for (size_t i = 0; i < n; ++i) sum.add(weight_fixed(w[i], squares ? w[i] : 1.0, s));
  return weight_value(sum, s);
}

namespace {

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

// The weighted SDH in precision T on the best kernel variant.
template <typename T>
WeightedCounts sdh_weighted_t(const SdhProblem& p, const double* w, const WeightScale& s,
                              Control& ctl) {
  const auto coords = typed_coords<T>(p.pts);
  const T* c[kMaxDims] = {};
  for (int k = 0; k < p.pts.dims; ++k) c[k] = coords[size_t(k)].data();
  const bool f32 = sizeof(T) == 4;
  const T inv_w = f32 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  const int nb = p.params.nbuckets;
  const bool clamp = !p.params.explicit_width;
  const WeightKernels& kern = weight_kernels();
  return run_weighted(p.pts.n, size_t(nb), s, ctl,
                      [&](size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
                          WeightedPrivate& out) {
                        if constexpr (sizeof(T) == 4)
                          kern.sdh_f32(p.pts.dims, c, w, i0, i1, j0, j1, diag, inv_w, nb, clamp, s,
                                       out.pairs.data(), out.sums.data());
                        else
                          kern.sdh_f64(p.pts.dims, c, w, i0, i1, j0, j1, diag, inv_w, nb, clamp, s,
                                       out.pairs.data(), out.sums.data());
                      });
}

// The weighted pair count in precision T on the best kernel variant.
template <typename T>
WeightedCounts count_weighted_t(const PairCountProblem& p, const double* w,
                                const WeightScale& s, Control& ctl) {
  const auto coords = typed_coords<T>(p.pts);
  const T* c[kMaxDims] = {};
  for (int k = 0; k < p.pts.dims; ++k) c[k] = coords[size_t(k)].data();
  const T r2 = sizeof(T) == 4 ? T(p.r2_f) : T(p.r2);
  const WeightKernels& kern = weight_kernels();
  return run_weighted(p.pts.n, 1, s, ctl,
                      [&](size_t i0, size_t i1, size_t j0, size_t j1, bool diag,
                          WeightedPrivate& out) {
                        if constexpr (sizeof(T) == 4)
                          kern.count_f32(p.pts.dims, c, w, i0, i1, j0, j1, diag, r2, s,
                                         out.pairs.data(), out.sums.data());
                        else
                          kern.count_f64(p.pts.dims, c, w, i0, i1, j0, j1, diag, r2, s,
                                         out.pairs.data(), out.sums.data());
                      });
}

}  // namespace

WeightedCounts cpu_sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) {
  const WeightScale s = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  return p.prec == Precision::Float32 ? sdh_weighted_t<float>(p, w, s, ctl)
                                      : sdh_weighted_t<double>(p, w, s, ctl);
}

WeightedCounts cpu_pair_count_weighted(const PairCountProblem& p, const double* w, Control& ctl) {
  const WeightScale s = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  return p.prec == Precision::Float32 ? count_weighted_t<float>(p, w, s, ctl)
                                      : count_weighted_t<double>(p, w, s, ctl);
}

WeightedCounts Engine::sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) {
  return cpu_sdh_weighted(p, w, ctl);
}

WeightedCounts Engine::pair_count_weighted(const PairCountProblem& p, const double* w,
                                           Control& ctl) {
  return cpu_pair_count_weighted(p, w, ctl);
}

}  // namespace gpu2bs
