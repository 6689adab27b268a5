// Resolution of cell pairs (density map) against brute force on the CPU engine: the SDH and the
// pair count must be identical (counts, not close) for random, clustered, lattice (exact ties
// at bucket edges), coincident and collinear-edge point sets, both precisions, 2-D and 3-D,
// derived and explicit widths, N = 2 .. 10,000. Brute force is the engine with
// sdh_method = Brute and, for small N, a scalar loop over arith.h (the definition itself).
#include <gtest/gtest.h>

#include <cmath>

#include "common/reference.h"
#include "core/arith.h"
#include "core/density_map.h"
#include "core/engine.h"
#include "core/resolve.h"
#include "core/resolve_cpu.h"

using namespace gpu2bs;

namespace {

class Ctl : public Control {
 public:
  explicit Ctl(SdhMethod m, int t = 2) {
    threads = t;
    sdh_method = m;
  }
};

// The engine's per-pair arithmetic, pair by pair (no tiles, no SIMD).
template <typename T>
std::vector<uint64_t> scalar_sdh(const ref::Points& p, const SdhParams& sp) {
  std::vector<uint64_t> h(size_t(sp.nbuckets), 0);
  const T inv_w = sizeof(T) == 4 ? T(sp.inv_width_f) : T(sp.inv_width);
  const T beyond = sdh_beyond<T>(sp.nbuckets, !sp.explicit_width);
  for (size_t i = 0; i < p.n(); ++i)
    for (size_t j = i + 1; j < p.n(); ++j) {
      T a[kMaxDims], b[kMaxDims];
      for (int k = 0; k < p.dims; ++k) {
        a[k] = T(p.c[size_t(k)][i]);
        b[k] = T(p.c[size_t(k)][j]);
      }
      const T d2 = p.dims == 2 ? sq_dist<T, 2>(a, b) : sq_dist<T, 3>(a, b);
      const int k = sdh_bucket<T>(d2, inv_w, T(sp.nbuckets), beyond);
      if (k >= 0) h[size_t(k)]++;
    }
  return h;
}

template <typename T>
uint64_t scalar_count(const ref::Points& p, T r2) {
  uint64_t c = 0;
  for (size_t i = 0; i < p.n(); ++i)
    for (size_t j = i + 1; j < p.n(); ++j) {
      T a[kMaxDims], b[kMaxDims];
      for (int k = 0; k < p.dims; ++k) {
        a[k] = T(p.c[size_t(k)][i]);
        b[k] = T(p.c[size_t(k)][j]);
      }
      c += (p.dims == 2 ? sq_dist<T, 2>(a, b) : sq_dist<T, 3>(a, b)) <= r2;
    }
  return c;
}

// SDH by resolution equals brute force (engine tiles, and the scalar definition for small N);
// returns the resolved fraction.
double check_sdh(const ref::Points& pts, int nb, double width, Precision prec) {
  auto eng = make_cpu_engine();
  SdhProblem p;
  p.pts = pts.view();
  p.prec = prec;
  Bounds box = compute_bounds(p.pts);
  p.params = make_sdh_params(nb, width, width > 0, box, prec);
  Ctl brute(SdhMethod::Brute), res(SdhMethod::Resolve);
  ResolveStats st;
  res.resolve_stats = &st;
  const auto hb = eng->sdh(p, brute);
  const auto hr = eng->sdh(p, res);
  EXPECT_EQ(hb, hr) << "n=" << pts.n() << " dims=" << pts.dims << " nb=" << nb
                    << " width=" << width;
  if (pts.n() <= 3000) {
    const auto hs = prec == Precision::Float32 ? scalar_sdh<float>(pts, p.params)
                                               : scalar_sdh<double>(pts, p.params);
    EXPECT_EQ(hs, hr);
  }
  const uint64_t all = pts.n() * (pts.n() - 1) / 2;
  EXPECT_EQ(st.resolved_pairs + st.examined_pairs, all);
  return st.resolved_fraction();
}

double check_count(const ref::Points& pts, double r, Precision prec) {
  auto eng = make_cpu_engine();
  PairCountProblem p = make_pair_count(pts.view(), r, prec);
  Ctl brute(SdhMethod::Brute), res(SdhMethod::Resolve);
  ResolveStats st;
  res.resolve_stats = &st;
  const uint64_t cb = eng->pair_count(p, brute);
  const uint64_t cr = eng->pair_count(p, res);
  EXPECT_EQ(cb, cr) << "n=" << pts.n() << " dims=" << pts.dims << " r=" << r;
  if (pts.n() <= 3000) {
    const uint64_t cs = prec == Precision::Float32 ? scalar_count<float>(pts, p.r2_f)
                                                   : scalar_count<double>(pts, p.r2);
    EXPECT_EQ(cs, cr);
  }
  return st.resolved_fraction();
}

const Precision kPrecs[] = {Precision::Float32, Precision::Float64};

}  // namespace

TEST(Resolve, BoundsBracketEveryPair) {
  // d2_bounds of two boxes brackets sq_dist of random points inside them (float32).
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-3, 3);
  for (int t = 0; t < 20000; ++t) {
    float al[3], ah[3], bl[3], bh[3], a[3], b[3];
    for (int k = 0; k < 3; ++k) {
      float x = u(rng), y = u(rng), z = u(rng), w = u(rng);
      al[k] = std::min(x, y), ah[k] = std::max(x, y), bl[k] = std::min(z, w), bh[k] = std::max(z, w);
      std::uniform_real_distribution<float> ua(al[k], ah[k]), ub(bl[k], bh[k]);
      a[k] = t % 3 == 0 ? al[k] : ua(rng);
      b[k] = t % 5 == 0 ? bh[k] : ub(rng);
    }
    float lo, hi;
    d2_bounds<float, 3>(al, ah, bl, bh, &lo, &hi);
    const float d2 = sq_dist<float, 3>(a, b);
    ASSERT_LE(lo, d2);
    ASSERT_LE(d2, hi);
  }
}

TEST(Resolve, DensityMapPartitionsPoints) {
  auto pts = ref::clustered(5000, 3, 3);
  std::vector<float> c[3];
  const float* cp[3];
  for (int k = 0; k < 3; ++k) {
    for (double v : pts.c[size_t(k)]) c[k].push_back(float(v));
    cp[k] = c[k].data();
  }
  Ctl ctl(SdhMethod::Resolve);
  auto m = build_density_map<float>(3, pts.n(), cp, 4.0, ctl);
  ASSERT_GE(m.levels(), 2);
  EXPECT_EQ(m.level[0].cells, 1u);
  for (int l = 0; l < m.levels(); ++l) {
    const auto& lv = m.level[size_t(l)];
    EXPECT_EQ(lv.begin.front(), 0u);
    EXPECT_EQ(lv.begin.back(), pts.n());
    for (size_t cell = 0; cell < lv.cells; ++cell) {
      ASSERT_LT(lv.begin[cell], lv.begin[cell + 1]);  // non-empty
      for (size_t s = lv.begin[cell]; s < lv.begin[cell + 1]; ++s)
        for (int k = 0; k < 3; ++k) {
          const float v = c[k][m.order[s]];
          ASSERT_LE(lv.box[cell * 6 + size_t(k)], v);
          ASSERT_GE(lv.box[cell * 6 + 3 + size_t(k)], v);
        }
      if (l + 1 < m.levels()) {
        const auto& f = m.level[size_t(l) + 1];
        ASSERT_EQ(f.begin[lv.child[cell]], lv.begin[cell]);
        ASSERT_EQ(f.begin[lv.child[cell + 1]], lv.begin[cell + 1]);
      }
    }
  }
}

TEST(Resolve, SdhRandomAndClustered) {
  for (Precision prec : kPrecs)
    for (int dims : {2, 3})
      for (size_t n : {size_t(2), size_t(3), size_t(17), size_t(200), size_t(2000)}) {
        check_sdh(ref::uniform(n, dims, n + 11), 10, 0, prec);
        check_sdh(ref::uniform(n, dims, n + 12), 1, 0, prec);
        check_sdh(ref::clustered(n, dims, n + 13), 100, 0, prec);
        check_sdh(ref::clustered(n, dims, n + 14), 37, 0.01, prec);  // explicit, many beyond
        check_sdh(ref::uniform(n, dims, n + 15, -1e3, 1e3), 500, 0, prec);
      }
}

TEST(Resolve, SdhLatticeTies) {
  // Integer lattice with width 1: distances sqrt(k) land exactly on edges for every square k.
  for (Precision prec : kPrecs)
    for (int dims : {2, 3}) {
      check_sdh(ref::lattice(3000, dims, 21, 12), 20, 1.0, prec);
      check_sdh(ref::lattice(3000, dims, 22, 40), 8, 1.0, prec);
      check_sdh(ref::lattice(3000, dims, 23, 12), 17, 0, prec);  // derived width
      check_sdh(ref::lattice(3000, dims, 24, 16, 0.25), 30, 0.25, prec);
      check_sdh(ref::lattice(3000, dims, 25, 10, 0.1), 30, 0.1, prec);  // inexact spacing
    }
}

TEST(Resolve, SdhExactEdgeDistances) {
  // Points at distances that are exact multiples of the width (3-4-5 triangles, a line).
  for (Precision prec : kPrecs) {
    ref::Points p;
    p.dims = 2;
    p.c.assign(2, {});
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 30; ++j) {
        p.c[0].push_back(3.0 * i);
        p.c[1].push_back(4.0 * j);
      }
    check_sdh(p, 50, 5.0, prec);
    check_sdh(p, 50, 1.0, prec);
    check_sdh(p, 64, 0, prec);
  }
}

TEST(Resolve, SdhAllPointsEqual) {
  for (Precision prec : kPrecs)
    for (int dims : {2, 3}) {
      ref::Points p;
      p.dims = dims;
      p.c.assign(size_t(dims), std::vector<double>(5000, 0.375));
      EXPECT_EQ(check_sdh(p, 10, 0, prec), 1.0);
      check_sdh(p, 10, 0.5, prec);
    }
}

TEST(Resolve, SdhTenThousand) {
  for (int dims : {2, 3}) {
    const double f = check_sdh(ref::uniform(10000, dims, 31), 4, 0, Precision::Float32);
    if (dims == 2) {
      EXPECT_GT(f, 0.3);  // resolution does resolve
    }
    check_sdh(ref::clustered(10000, dims, 32), 100, 0, Precision::Float32);
    check_sdh(ref::lattice(10000, dims, 33, 30), 25, 1.0, Precision::Float32);
    check_sdh(ref::uniform(10000, dims, 34), 1000, 0, Precision::Float64);
  }
}

TEST(Resolve, PairCount) {
  for (Precision prec : kPrecs)
    for (int dims : {2, 3}) {
      for (size_t n : {size_t(2), size_t(50), size_t(3000)}) {
        check_count(ref::uniform(n, dims, n + 41), 0.05, prec);
        check_count(ref::clustered(n, dims, n + 42), 0.03, prec);
      }
      for (double r : {0.0, 1.0, 2.0, 5.0, std::sqrt(2.0), 1e9})
        check_count(ref::lattice(3000, dims, 43, 12), r, prec);
      check_count(ref::uniform(10000, dims, 44), 0.01, prec);
      ref::Points eq;
      eq.dims = dims;
      eq.c.assign(size_t(dims), std::vector<double>(1000, -2.5));
      check_count(eq, 0.0, prec);
      check_count(eq, 1.0, prec);
    }
}

TEST(Resolve, CostModelPrefersBruteForSmallSets) {
  EXPECT_FALSE(cpu_resolve_sdh_wins(1000, 2, 100));
  EXPECT_TRUE(cpu_resolve_sdh_wins(10000000, 2, 100));
  EXPECT_FALSE(cpu_resolve_sdh_wins(10000000, 4, 100));
}
