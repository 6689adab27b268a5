// Float64 brute-force references for the differential tests, and the count of "boundary-near"
// pairs: pairs whose float64 distance lies within the precision's rounding of a bucket edge, of
// r or of eps. An engine may disagree with the reference only on such pairs (DESIGN.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/problem.h"

namespace gpu2bs {
namespace ref {

// Owned SoA points with a view.
struct Points {
  int dims = 0;
  std::vector<std::vector<double>> c;
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = c.empty() ? 0 : c[0].size();
    for (int k = 0; k < dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
  size_t n() const { return c.empty() ? 0 : c[0].size(); }
};

// n points whose coordinates are drawn one by one from `dist` with a generator seeded by `seed`.
template <typename Dist>
inline Points random_points(size_t n, int dims, uint64_t seed, Dist dist) {
  std::mt19937_64 rng(seed);
  Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = dist(rng);
  return p;
}

// Uniform random points in [lo, hi)^dims.
inline Points uniform(size_t n, int dims, uint64_t seed, double lo = 0, double hi = 1) {
  return random_points(n, dims, seed, std::uniform_real_distribution<double>(lo, hi));
}

// Exponentially distributed points: each coordinate drawn from Exp(lambda) (the similarity-join
// load-imbalance paper's skewed sets use lambda = 40): dense near the origin, sparse far out.
inline Points exponential(size_t n, int dims, uint64_t seed, double lambda) {
  return random_points(n, dims, seed, std::exponential_distribution<double>(lambda));
}

// Clustered points: `blobs` Gaussian blobs of standard deviation `sigma` around centres drawn
// uniformly from [0, 1)^dims, each point in a blob drawn at random.
inline Points clustered(size_t n, int dims, uint64_t seed, int blobs = 8, double sigma = 0.02) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, sigma);
  std::vector<double> centre(size_t(blobs) * size_t(dims));
  for (auto& c : centre) c = u(rng);
  Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    const size_t b = size_t(rng() % uint64_t(blobs));
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = centre[b * size_t(dims) + size_t(k)] + g(rng);
  }
  return p;
}

// Points on the integer lattice {0, .., side - 1}^dims (`spacing` apart), in a shuffled order,
// repeated until n points: every distance is spacing * sqrt(integer), so with bucket width
// `spacing` many pairs lie exactly on bucket edges (the hardest case for resolution bounds).
inline Points lattice(size_t n, int dims, uint64_t seed, int side, double spacing = 1.0) {
  std::mt19937_64 rng(seed);
  Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = spacing * double(rng() % uint64_t(side));
  return p;
}

// Exact-ish float64 distance of points i (of a) and j (of b).
inline double dist(const Points& a, size_t i, const Points& b, size_t j) {
  long double s = 0;
  for (int k = 0; k < a.dims; ++k) {
    long double d = (long double)a.c[size_t(k)][i] - (long double)b.c[size_t(k)][j];
    s += d * d;
  }
  return double(std::sqrt(s));
}

// Rounding slack of a distance d in the given precision, for coordinates of magnitude <= m.
inline double slack(double d, double m, Precision prec) {
  double u = prec == Precision::Float32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  return 16 * u * (m + d) + 1e-300;
}

inline double max_abs(const Points& p) {
  double m = 0;
  for (auto& col : p.c)
    for (double v : col) m = std::max(m, std::fabs(v));
  return m;
}

struct SdhRef {
  std::vector<uint64_t> hist;
  uint64_t near = 0;  // pairs within slack of a bucket edge
};

// Spatial distance histogram by definition: k = floor(d / w).
inline SdhRef sdh(const Points& p, const SdhParams& sp, Precision prec) {
  SdhRef r;
  r.hist.assign(size_t(sp.nbuckets), 0);
  const double m = max_abs(p);
  for (size_t i = 0; i < p.n(); ++i)
    for (size_t j = i + 1; j < p.n(); ++j) {
      double d = dist(p, i, p, j);
      double q = sp.width > 0 ? d / sp.width : 0;
      long k = long(std::floor(q));
      if (k >= sp.nbuckets) {
        if (sp.explicit_width) k = -1;
        else k = sp.nbuckets - 1;
      }
      if (k >= 0) r.hist[size_t(k)]++;
      if (sp.width > 0) {
        double edge = std::round(q) * sp.width;
        if (std::fabs(d - edge) <= slack(d, m, prec) + 2 * slack(sp.width * std::round(q), 0, prec)) r.near++;
      }
    }
  return r;
}

// Pair count by definition: d <= r, with the near-boundary count.
inline std::pair<uint64_t, uint64_t> pair_count(const Points& p, double rr, Precision prec) {
  uint64_t n = 0, near = 0;
  const double m = max_abs(p);
  for (size_t i = 0; i < p.n(); ++i)
    for (size_t j = i + 1; j < p.n(); ++j) {
      double d = dist(p, i, p, j);
      if (d <= rr) n++;
      if (std::fabs(d - rr) <= slack(d, m, prec) + slack(rr, 0, prec)) near++;
    }
  return {n, near};
}

// Similarity join by definition: the set of (i, j) with d <= eps (i < j for a self-join), and
// the set of near-boundary pairs.
struct JoinRef {
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  std::set<std::pair<uint32_t, uint32_t>> near;
};

inline JoinRef simjoin(const Points& a, const Points* b, double eps, Precision prec) {
  JoinRef r;
  const Points& bb = b ? *b : a;
  const double m = std::max(max_abs(a), max_abs(bb));
  for (size_t i = 0; i < a.n(); ++i)
    for (size_t j = b ? 0 : i + 1; j < bb.n(); ++j) {
      double d = dist(a, i, bb, j);
      if (d <= eps) r.pairs.insert({uint32_t(i), uint32_t(j)});
      if (std::fabs(d - eps) <= slack(d, m, prec) + slack(eps, 0, prec)) r.near.insert({uint32_t(i), uint32_t(j)});
    }
  return r;
}

// Compares an engine histogram with the reference: totals equal where no pair can be dropped,
// and every misplaced count explained by a near-boundary pair. Returns the misplaced count.
inline uint64_t histogram_disagreement(const std::vector<uint64_t>& got, const SdhRef& want) {
  uint64_t diff = 0;
  for (size_t k = 0; k < got.size(); ++k)
    diff += got[k] > want.hist[k] ? got[k] - want.hist[k] : want.hist[k] - got[k];
  return diff;
}

}  // namespace ref
}  // namespace gpu2bs
