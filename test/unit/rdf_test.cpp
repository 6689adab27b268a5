// The RDF counts of the CPU engine (cell lists, src/core/rdf.h) against a brute-force pass over
// every pair with the same arithmetic, the two-relation form against the self form, the
// normalization against its formula, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/rdf.h"

using namespace gpu2bs;

namespace {

struct Pts {
  int dims;
  std::vector<double> c[3];
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = c[0].size();
    for (int k = 0; k < dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// n uniform points in [lo, hi)^dims.
Pts uniform(size_t n, int dims, double lo, double hi, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Pts p{dims, {}};
  for (int k = 0; k < dims; ++k)
    for (size_t i = 0; i < n; ++i) p.c[k].push_back(u(g));
  return p;
}

// Every pair (self: i < j) with the engines' arithmetic on coordinates wrapped as documented.
template <typename T>
std::vector<uint64_t> brute(const RdfProblem& p) {
  const int D = p.a.dims;
  T len[3], half[3];
  for (int k = 0; k < D; ++k) {
    len[k] = p.box[k] > 0 ? T(p.box[k]) : T(0);
    half[k] = p.box[k] > 0 ? T(p.box[k] / 2) : std::numeric_limits<T>::infinity();
  }
  auto wrap = [&](double x, int k) {
    const double L = p.box[k];
    if (L > 0) {
      x = x - L * std::floor(x / L);
      if (!(x < L) || x < 0) x = 0;
    }
    return T(x);
  };
  const T cut2 = T(p.r_max * p.r_max * (1.0 + 0x1p-10));
  const T inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  std::vector<uint64_t> h(size_t(p.nbuckets), 0);
  for (size_t i = 0; i < p.a.n; ++i)
    for (size_t j = p.self ? i + 1 : 0; j < p.b.n; ++j) {
      T a[3], b[3];
      for (int k = 0; k < D; ++k) {
        a[k] = wrap(p.a.coord[k][i], k);
        b[k] = wrap(p.b.coord[k][j], k);
      }
      const T d2 = D == 2 ? periodic_sq_dist<T, 2>(a, b, len, half) : periodic_sq_dist<T, 3>(a, b, len, half);
      const int kb = rdf_bucket<T>(d2, cut2, inv_w, T(p.nbuckets));
      if (kb >= 0) ++h[size_t(kb)];
    }
  return h;
}

std::vector<uint64_t> run(const RdfProblem& p) {
  auto e = make_cpu_engine();
  Control c;
  c.threads = 3;
  return e->rdf(p, c);
}

TEST(Rdf, CellListsEqualBruteForce) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const Pts a = uniform(1500, 3, 0, 10, 1), b = uniform(1200, 3, -4, 14, 2), s2 = uniform(2000, 2, 0, 8, 3);
    const PointsView va = a.view(), vb = b.view(), v2 = s2.view();
    const double box3[3] = {10, 10, 10}, mixed[3] = {10, 0, 10}, box2[2] = {8, 8};
    const RdfProblem probs[] = {
        make_rdf(va, nullptr, 50, 3.0, box3, 3, prec),   // self, periodic
        make_rdf(va, nullptr, 50, 5.0, box3, 3, prec),   // r_max = L/2: one cell per axis
        make_rdf(va, nullptr, 30, 2.0, nullptr, 0, prec),  // not periodic
        make_rdf(va, nullptr, 30, 1.5, mixed, 3, prec),  // one axis not periodic
        make_rdf(va, &vb, 40, 2.5, box3, 3, prec),       // two sets, b outside the box
        make_rdf(va, &vb, 40, 2.5, nullptr, 0, prec),
        make_rdf(v2, nullptr, 60, 4.0, box2, 2, prec),   // 2-D
    };
    for (const RdfProblem& p : probs) {
      const auto want = prec == Precision::Float32 ? brute<float>(p) : brute<double>(p);
      EXPECT_EQ(run(p), want) << "r_max " << p.r_max << " self " << p.self;
    }
  }
}

TEST(Rdf, TwoSetsOverTheSameRowsCountEachPairTwice) {
  const Pts a = uniform(800, 3, 0, 6, 4);
  const PointsView va = a.view();
  const double box[3] = {6, 6, 6};
  const auto self = run(make_rdf(va, nullptr, 20, 3.0, box, 3, Precision::Float32));
  const auto two = run(make_rdf(va, &va, 20, 3.0, box, 3, Precision::Float32));
  for (size_t k = 0; k < self.size(); ++k) EXPECT_EQ(two[k], 2 * self[k] + (k == 0 ? 800 : 0));
}

TEST(Rdf, Normalization) {
  const Pts a = uniform(500, 3, 0, 5, 5);
  const PointsView va = a.view();
  const double box[3] = {5, 6, 7};
  const RdfProblem p = make_rdf(va, nullptr, 10, 2.0, box, 3, Precision::Float64);
  const auto h = run(p);
  const auto rows = rdf_rows(p, h);
  EXPECT_DOUBLE_EQ(rdf_volume(p), 210.0);
  for (int k = 0; k < 10; ++k) {
    const double lo = k * 0.2, hi = (k + 1) * 0.2;
    const double shell = 4.0 / 3.0 * M_PI * (hi * hi * hi - lo * lo * lo);
    const double g = 2.0 * double(h[size_t(k)]) / (500.0 * 499.0 / 210.0 * shell);
    EXPECT_NEAR(rows[size_t(k)].g, g, 1e-12 * g);
    EXPECT_TRUE(rows[size_t(k)].has_g);
  }
  const Pts one = uniform(1, 3, 0, 5, 6);
  const PointsView v1 = one.view();
  const RdfProblem p1 = make_rdf(v1, nullptr, 3, 1.0, box, 3, Precision::Float64);
  for (const RdfRow& r : rdf_rows(p1, run(p1))) EXPECT_FALSE(r.has_g);
}

TEST(Rdf, Errors) {
  const Pts a = uniform(10, 3, 0, 5, 7);
  const PointsView va = a.view();
  const double box[3] = {5, 5, 5}, neg[3] = {5, -1, 5}, nan[3] = {5, NAN, 5};
  auto code = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::Internal;
  };
  EXPECT_EQ(code([&] { make_rdf(va, nullptr, 10, 2.5000001, box, 3, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_NO_THROW(make_rdf(va, nullptr, 10, 2.5, box, 3, Precision::Float32));
  EXPECT_EQ(code([&] { make_rdf(va, nullptr, 10, 1.0, box, 2, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_EQ(code([&] { make_rdf(va, nullptr, 10, 1.0, neg, 3, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_EQ(code([&] { make_rdf(va, nullptr, 10, 1.0, nan, 3, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_EQ(code([&] { check_rdf_args(0, 1.0, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_EQ(code([&] { check_rdf_args(10, 0.0, Precision::Float32); }), ErrorCode::InvalidParameter);
  EXPECT_EQ(code([&] { check_rdf_args(10, INFINITY, Precision::Float32); }), ErrorCode::InvalidParameter);
}

}  // namespace
