// Metamorphic test of the rule "whether a pair is in the result depends on that pair and the
// parameters alone": adding far-away points (which move the bounding box, the grid origin and
// the cell size) never changes the join pairs, the pair count or the explicit-width SDH among
// the other points. Shared by the CPU engine's unit tests and the GPU tests (any Engine).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"

namespace gpu2bs {
namespace meta {

// One random case: points S, far points F, the parameters.
struct Case {
  uint64_t seed = 0;
  int dims = 2;
  Precision prec = Precision::Float32;
  double eps = 0;     // join eps and pair-count r
  int nb = 1;         // SDH buckets of explicit width `width` (nb * width far below the gap)
  double width = 0;
  bool two = false;   // also a two-relation join: S's first half against its second half
  ref::Points s;      // the points
  ref::Points sf;     // the points, then the far points
  std::string describe() const {
    char buf[160];
    snprintf(buf, sizeof buf, "seed %llu dims %d %s eps %.17g nb %d width %.17g n %zu far %zu",
             (unsigned long long)seed, dims, prec == Precision::Float32 ? "float4" : "float8",
             eps, nb, width, s.n(), sf.n() - s.n());
    return buf;
  }
};

// Points at scale 10^[-6, 6], or near the precision's underflow, around a random origin, with duplicates and near-duplicates (a few
// units in the last place apart); far points in random directions at radii L * 2, 3, 4, ... with
// L >= 1000 times the points' extent, so no far point is within eps (or the SDH range) of
// anything.
inline Case make_case(uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 7);
  std::uniform_real_distribution<double> u(0, 1);
  Case c;
  c.seed = seed;
  c.dims = 2 + int(rng() % 3);
  c.prec = rng() % 2 ? Precision::Float32 : Precision::Float64;
  // Half the cases near the precision's underflow (squares of eps, r, width and of the
  // distances below the smallest normal number), half at everyday scales.
  const bool low = rng() % 2;
  const double scale = low ? (c.prec == Precision::Float32 ? std::pow(10.0, -26 + 10 * u(rng))
                                                           : std::pow(10.0, -170 + 20 * u(rng)))
                           : std::pow(10.0, -6 + 12 * u(rng));
  const double origin = rng() % 3 == 0 ? 0 : scale * std::pow(10.0, 4 * u(rng)) * (u(rng) - 0.5);
  const size_t n = 40 + rng() % 260;
  c.s.dims = c.dims;
  c.s.c.assign(size_t(c.dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t kind = rng() % 8;
    for (int k = 0; k < c.dims; ++k) {
      double v = origin + scale * u(rng);
      if (i > 0 && kind == 0) v = c.s.c[size_t(k)][i - 1];  // duplicate
      if (i > 0 && kind == 1)                               // near-duplicate
        v = c.s.c[size_t(k)][i - 1] * (1 + std::ldexp(double(int(rng() % 9) - 4), -23));
      c.s.c[size_t(k)][i] = v;
    }
  }
  const double spread = rng() % 2 ? 8 : 3;  // eps from scale * 10^-spread to scale * 3
  c.eps = scale * std::pow(10.0, -spread + (spread + 0.5) * u(rng));
  c.nb = 1 + int(rng() % 64);
  c.width = scale * std::pow(10.0, -spread + spread * u(rng)) / c.nb;
  c.two = rng() % 2;
  // Far points: the gap L is at least 1000x the extent (and eps, nb * width); the whole box
  // stays within the float4 range check (diagonal <= 1e18).
  const size_t m = 1 + rng() % 40;
  const double ext = std::max({scale, c.eps, c.nb * c.width, std::fabs(origin)});
  const double lmax = 1e16 / double(m + 2);
  const double L = std::min(lmax, ext * std::pow(10.0, 3 + 9 * u(rng)));
  c.sf = c.s;
  std::normal_distribution<double> g(0, 1);
  for (size_t f = 0; f < m; ++f) {
    double dir[kMaxDims], norm = 0;
    for (int k = 0; k < c.dims; ++k) {
      dir[k] = g(rng);
      norm += dir[k] * dir[k];
    }
    norm = std::sqrt(norm);
    for (int k = 0; k < c.dims; ++k)
      c.sf.c[size_t(k)].push_back(origin + L * double(f + 2) * dir[k] / norm);
  }
  return c;
}

// What an engine answers for a case, restricted to pairs among the case's own points (indices
// below s.n()); pairs that involve a far point are only counted.
struct Outcome {
  bool refused = false;       // the parameters were refused (22023) before any work
  std::string why;
  std::vector<std::tuple<uint32_t, uint32_t, double>> join;  // sorted (i, j, dist), i < j
  std::vector<std::tuple<uint32_t, uint32_t, double>> join2;  // two-relation join, sorted
  uint64_t far_pairs = 0;     // join pairs that involve a point of index >= `keep`
  uint64_t count = 0;
  std::vector<uint64_t> hist;
};

// Collects join pairs among indices < keep (self-join: ordered i < j).
class KeepSink : public PairSink {
 public:
  KeepSink(size_t keep_a, size_t keep_b, bool self, Outcome* o,
           std::vector<std::tuple<uint32_t, uint32_t, double>>* out)
      : ka_(keep_a), kb_(keep_b), self_(self), o_(o), out_(out) {}
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      uint32_t i = p[k].i, j = p[k].j;
      if (self_ && i > j) std::swap(i, j);
      if (i >= ka_ || j >= kb_)
        o_->far_pairs++;
      else
        out_->emplace_back(i, j, p[k].dist);
    }
  }

 private:
  size_t ka_, kb_;
  bool self_;
  Outcome* o_;
  std::vector<std::tuple<uint32_t, uint32_t, double>>* out_;
};

// The first `n` points of `p` as a view.
inline PointsView head(const ref::Points& p, size_t n) {
  PointsView v = p.view();
  v.n = std::min(v.n, n);
  return v;
}

// Points [from, to) of `p` as a view (coordinates of point i at index i - from).
inline PointsView slice(const ref::Points& p, size_t from, size_t to) {
  PointsView v = p.view();
  for (int k = 0; k < v.dims; ++k) v.coord[k] += from;
  v.n = to - from;
  return v;
}

// Runs join, pair count and explicit-width SDH of case `c` over `pts` (S or S + F) on `eng`;
// results among the first s.n() points. `threads` CPU threads.
inline Outcome run(Engine& eng, const Case& c, const ref::Points& pts, int threads = 2) {
  Outcome o;
  const size_t keep = c.s.n();
  try {
    Control ctl;
    ctl.threads = threads;
    {
      KeepSink sink(keep, keep, true, &o, &o.join);
      eng.simjoin(make_simjoin(pts.view(), nullptr, c.eps, c.prec, 0), sink, ctl);
    }
    if (c.two) {
      // a = the first half of S; b = the second half of S, then (with F) the far points.
      const size_t half = keep / 2;
      const PointsView a = head(pts, half);
      const PointsView b = slice(pts, half, pts.n());
      KeepSink sink(half, keep - half, false, &o, &o.join2);
      eng.simjoin(make_simjoin(a, &b, c.eps, c.prec, 0), sink, ctl);
    }
    o.count = eng.pair_count(make_pair_count(pts.view(), c.eps, c.prec), ctl);
    o.hist = eng.sdh(make_sdh(pts.view(), c.nb, c.width, true, c.prec), ctl);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::InvalidParameter) throw;
    o.refused = true;
    o.why = e.what();
  }
  std::sort(o.join.begin(), o.join.end());
  std::sort(o.join2.begin(), o.join2.end());
  return o;
}

}  // namespace meta
}  // namespace gpu2bs
