// Pair counts in bins of explicit edges (gpu_xi's DD, DR and RR on the RDF cell lists) on the CPU
// engine against a brute-force pass over every pair with a linear scan of the squared edges, and
// against a float64 reference that tolerates only pairs within rounding of an edge; the
// estimators and the analytic RR against their formulas; the unit-sphere conversion; the checks
// of the edges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/rdf.h"
#include "core/xi.h"

using namespace gpu2bs;

namespace {

struct Pts {
  int dims;
  std::vector<double> c[3];
  // The points as an engine view.
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

// Log-spaced edges from lo to hi (nb bins).
std::vector<double> log_edges(double lo, double hi, int nb) {
  std::vector<double> e;
  for (int k = 0; k <= nb; ++k) e.push_back(lo * std::pow(hi / lo, double(k) / nb));
  return e;
}

// Wraps x into [0, L) as the cell lists do (no-op on a non-periodic axis).
double wrap(double x, double L) {
  if (!(L > 0)) return x;
  x = x - L * std::floor(x / L);
  if (!(x < L) || x < 0) x = 0;
  return x;
}

// Every pair (self: i < j) with the engines' arithmetic, each bin found by a linear scan of the
// squared edges rounded to T.
template <typename T>
std::vector<uint64_t> brute(const RdfProblem& p) {
  const int D = p.a.dims;
  T len[3], half[3];
  for (int k = 0; k < D; ++k) {
    len[k] = p.box[k] > 0 ? T(p.box[k]) : T(0);
    half[k] = p.box[k] > 0 ? T(p.box[k] / 2) : std::numeric_limits<T>::infinity();
  }
  std::vector<T> e2;
  for (double e : p.edges) e2.push_back(T(e * e));
  std::vector<uint64_t> h(p.edges.size() - 1, 0);
  for (size_t i = 0; i < p.a.n; ++i)
    for (size_t j = p.self ? i + 1 : 0; j < p.b.n; ++j) {
      T a[3], b[3];
      for (int k = 0; k < D; ++k) {
        a[k] = T(wrap(p.a.coord[k][i], p.box[k]));
        b[k] = T(wrap(p.b.coord[k][j], p.box[k]));
      }
      const T d2 = D == 2 ? periodic_sq_dist<T, 2>(a, b, len, half)
                          : periodic_sq_dist<T, 3>(a, b, len, half);
      for (size_t k = 0; k + 1 < e2.size(); ++k)
        if (e2[k] <= d2 && d2 < e2[k + 1]) ++h[k];
    }
  return h;
}

// float64 reference: bins of the exact-ish distance (long double, minimum image on wrapped
// float64 coordinates), and the number of pairs whose distance lies within `rel` of an edge.
std::vector<uint64_t> reference(const RdfProblem& p, double rel, uint64_t* near) {
  const int D = p.a.dims;
  std::vector<uint64_t> h(p.edges.size() - 1, 0);
  *near = 0;
  for (size_t i = 0; i < p.a.n; ++i)
    for (size_t j = p.self ? i + 1 : 0; j < p.b.n; ++j) {
      long double s = 0;
      for (int k = 0; k < D; ++k) {
        long double d = (long double)wrap(p.a.coord[k][i], p.box[k]) -
                        (long double)wrap(p.b.coord[k][j], p.box[k]);
        const long double L = p.box[k];
        if (L > 0) {
          if (d > L / 2) d -= L;
          if (d < -L / 2) d += L;
        }
        s += d * d;
      }
      const double dist = double(std::sqrt(s));
      for (double e : p.edges)
        if (std::fabs(dist - e) <= rel * e) ++*near;
      for (size_t k = 0; k + 1 < p.edges.size(); ++k)
        if (p.edges[k] <= dist && dist < p.edges[k + 1]) ++h[k];
    }
  return h;
}

// The CPU engine's counts of a problem (3 threads).
std::vector<uint64_t> run(const RdfProblem& p) {
  auto e = make_cpu_engine();
  Control c;
  c.threads = 3;
  return e->rdf(p, c);
}

// The engine's counts equal the brute force bit for bit and the float64 reference up to the
// pairs within rounding of an edge.
void check(const RdfProblem& p, const char* what) {
  const auto got = run(p);
  const auto want = p.prec == Precision::Float32 ? brute<float>(p) : brute<double>(p);
  EXPECT_EQ(got, want) << what;
  uint64_t near = 0;
  const auto ref = reference(p, p.prec == Precision::Float32 ? 1e-5 : 1e-12, &near);
  uint64_t diff = 0;
  for (size_t k = 0; k < ref.size(); ++k)
    diff += got[k] > ref[k] ? got[k] - ref[k] : ref[k] - got[k];
  EXPECT_LE(diff, 2 * near) << what;
  uint64_t total = 0;
  for (uint64_t c : got) total += c;
  EXPECT_GT(total, 0u) << what;
}

TEST(XiCounts, EqualBruteForceAndReference) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const Pts a = uniform(3000, 3, 0, 10, 1), b = uniform(2500, 3, -1, 11, 2);
    const Pts a2 = uniform(4000, 2, 0, 10, 3);
    const std::vector<double> e = log_edges(0.05, 2.0, 30), lin = {0, 0.5, 1, 1.5};
    const double box[3] = {10, 10, 10}, mixed[3] = {10, 0, 10};
    check(make_rdf_edges(a.view(), nullptr, e, nullptr, 0, prec), "self");
    check(make_rdf_edges(a.view(), nullptr, e, box, 3, prec), "self periodic");
    check(make_rdf_edges(a.view(), nullptr, lin, mixed, 3, prec), "self mixed box, edge 0");
    const PointsView vb = b.view();
    check(make_rdf_edges(a.view(), &vb, e, nullptr, 0, prec), "two sets");
    check(make_rdf_edges(a.view(), &vb, e, box, 3, prec), "two sets periodic");
    check(make_rdf_edges(a2.view(), nullptr, log_edges(0.01, 5.0, 12), box, 2, prec),
          "2-D, last edge = L/2");
  }
}

// Lattice points: distances exactly on the edges fall in the bin they open (half-open bins).
TEST(XiCounts, EdgesAreHalfOpen) {
  Pts p{3, {}};
  for (int x = 0; x < 4; ++x)
    for (int y = 0; y < 4; ++y)
      for (int z = 0; z < 2; ++z) {
        p.c[0].push_back(x);
        p.c[1].push_back(y);
        p.c[2].push_back(z);
      }
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const RdfProblem rp = make_rdf_edges(p.view(), nullptr, {1, 2, 3}, nullptr, 0, prec);
    const auto got = run(rp);
    uint64_t b0 = 0, b1 = 0;
    for (size_t i = 0; i < p.c[0].size(); ++i)
      for (size_t j = i + 1; j < p.c[0].size(); ++j) {
        double s = 0;
        for (int k = 0; k < 3; ++k) s += (p.c[k][i] - p.c[k][j]) * (p.c[k][i] - p.c[k][j]);
        if (s >= 1 && s < 4) ++b0;
        if (s >= 4 && s < 9) ++b1;
      }
    EXPECT_EQ(got, (std::vector<uint64_t>{b0, b1}));
  }
}

TEST(XiRows, EstimatorsAndAnalyticRR) {
  XiCounts c;
  c.dd = {10, 40};
  c.dr = {30, 100};
  c.rr = {20, 60};
  c.nd = 100;
  c.nr = 200;
  const std::vector<double> e = {1, 2, 3};
  const double fdd = 10.0 / 4950, fdr = 30.0 / 20000, frr = 20.0 / 19900;
  auto ls = xi_rows(XiEstimator::LandySzalay, e, e, c);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_DOUBLE_EQ(ls[0].xi, (fdd - 2 * fdr + frr) / frr);
  auto nat = xi_rows(XiEstimator::Natural, e, e, c);
  EXPECT_DOUBLE_EQ(nat[0].xi, fdd / frr - 1);
  EXPECT_TRUE(nat[1].has_dr && nat[1].has_rr && nat[1].has_xi);
  XiCounts a;
  a.dd = {10, 40};
  a.nd = 100;
  a.dims = 3;
  a.volume = 1000;
  auto an = xi_rows(XiEstimator::LandySzalay, e, e, a);
  const double s0 = 4.0 / 3.0 * M_PI * (8 - 1);
  EXPECT_NEAR(an[0].rr, 4950 * s0 / 1000, 1e-9);
  EXPECT_NEAR(an[0].xi, 10 / an[0].rr - 1, 1e-12);
  EXPECT_FALSE(an[0].has_dr);
  XiCounts one = c;
  one.nd = 1;
  EXPECT_FALSE(xi_rows(XiEstimator::Natural, e, e, one)[0].has_xi);
  XiCounts norr = c;
  norr.rr = {0, 60};
  EXPECT_FALSE(xi_rows(XiEstimator::LandySzalay, e, e, norr)[0].has_xi);
  EXPECT_TRUE(xi_rows(XiEstimator::LandySzalay, e, e, norr)[1].has_xi);
}

TEST(XiAngular, ChordsAndUnitVectors) {
  const auto ch = chord_edges({0, 60, 180});
  EXPECT_EQ(ch[0], 0.0);
  EXPECT_NEAR(ch[1], 1.0, 1e-15);
  EXPECT_EQ(ch[2], 2.0);
  std::vector<double> ra = {0, 90, 10}, dec = {0, 0, 90};
  PointsView v;
  v.dims = 2;
  v.n = 3;
  v.coord[0] = ra.data();
  v.coord[1] = dec.data();
  const SpherePoints s = sphere_points(v);
  EXPECT_EQ(s.c[0][0], 1.0);
  EXPECT_NEAR(s.c[1][1], 1.0, 1e-15);
  EXPECT_NEAR(s.c[2][2], 1.0, 1e-15);
  dec[2] = 90.5;
  EXPECT_THROW(sphere_points(v), Error);
  EXPECT_THROW(chord_edges({0, 181}), Error);
  EXPECT_THROW(chord_edges({0, NAN}), Error);
}

TEST(XiEdges, Checks) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    EXPECT_NO_THROW(check_edges({0, 1e-3, 1}, prec, "edges"));
    EXPECT_THROW(check_edges({1}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({1, 1}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({2, 1}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({-1, 1}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({0, NAN}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({0, INFINITY}, prec, "edges"), Error);
    EXPECT_THROW(check_edges({1e-300, 1}, prec, "edges"), Error);
  }
  // Distinct in float8, equal squares in float4.
  EXPECT_THROW(check_edges({1, 1 + 1e-9}, Precision::Float32, "edges"), Error);
  EXPECT_NO_THROW(check_edges({1, 1 + 1e-9}, Precision::Float64, "edges"));
  const Pts a = uniform(10, 3, 0, 10, 1);
  const double box[3] = {10, 10, 10};
  EXPECT_THROW(make_rdf_edges(a.view(), nullptr, {0, 5.5}, box, 3, Precision::Float64), Error);
  std::vector<double> many(size_t(kMaxEdgeBins) + 2);
  for (size_t k = 0; k < many.size(); ++k) many[k] = double(k);
  EXPECT_THROW(check_edges(many, Precision::Float64, "edges"), Error);
  EXPECT_EQ(parse_xi_estimator("LS"), XiEstimator::LandySzalay);
  EXPECT_EQ(parse_xi_estimator("Natural"), XiEstimator::Natural);
  EXPECT_THROW(parse_xi_estimator("hamilton"), Error);
}

// The jackknife of xi_run against xi recomputed by hand from brute-force counts of the subsets
// without each patch.
TEST(XiJackknife, EqualsLeaveOnePatchOut) {
  const Pts d = uniform(1200, 3, 0, 10, 31), r = uniform(1500, 3, 0, 10, 32);
  std::vector<int64_t> pd(d.c[0].size()), pr(r.c[0].size());
  for (size_t i = 0; i < pd.size(); ++i) pd[i] = int64_t(i % 5) * 7 - 3;
  for (size_t i = 0; i < pr.size(); ++i) pr[i] = int64_t(i % 5) * 7 - 3;
  const std::vector<double> e = {0.5, 1, 2, 3};
  auto eng = make_cpu_engine();
  Control ctl;
  ctl.threads = 2;
  const PointsView vd = d.view(), vr = r.view();
  const auto rows = xi_run(*eng, ctl, XiEstimator::LandySzalay, vd, &vr, e, e, nullptr, 0,
                           Precision::Float64, pd.data(), pr.data());
  std::vector<std::vector<double>> xk(3);
  for (int64_t skip = -3; skip <= 25; skip += 7) {
    Pts sd{3, {}}, sr{3, {}};
    for (size_t i = 0; i < pd.size(); ++i)
      if (pd[i] != skip)
        for (int k = 0; k < 3; ++k) sd.c[k].push_back(d.c[k][i]);
    for (size_t i = 0; i < pr.size(); ++i)
      if (pr[i] != skip)
        for (int k = 0; k < 3; ++k) sr.c[k].push_back(r.c[k][i]);
    const PointsView a = sd.view(), b = sr.view();
    XiCounts c;
    c.dd = brute<double>(make_rdf_edges(a, nullptr, e, nullptr, 0, Precision::Float64));
    c.dr = brute<double>(make_rdf_edges(a, &b, e, nullptr, 0, Precision::Float64));
    c.rr = brute<double>(make_rdf_edges(b, nullptr, e, nullptr, 0, Precision::Float64));
    c.nd = double(a.n);
    c.nr = double(b.n);
    const auto rk = xi_rows(XiEstimator::LandySzalay, e, e, c);
    for (size_t k = 0; k < 3; ++k) xk[k].push_back(rk[k].xi);
  }
  for (size_t k = 0; k < 3; ++k) {
    double mean = 0, ss = 0;
    for (double x : xk[k]) mean += x / 5;
    for (double x : xk[k]) ss += (x - mean) * (x - mean);
    ASSERT_TRUE(rows[k].has_err);
    EXPECT_NEAR(rows[k].xi_err, std::sqrt(4.0 / 5.0 * ss), 1e-12 * rows[k].xi_err) << k;
    EXPECT_GT(rows[k].xi_err, 0.0);
  }
  EXPECT_THROW(xi_run(*eng, ctl, XiEstimator::Natural, vd, nullptr, e, e, nullptr, 0,
                      Precision::Float64, pd.data(), nullptr),
               Error);
}

// Empty and one-point inputs count nothing.
TEST(XiCounts, EmptyAndOnePoint) {
  Pts none{3, {}}, one{3, {{1.0}, {2.0}, {3.0}}};
  const Pts b = uniform(50, 3, 0, 10, 5);
  const PointsView vb = b.view();
  for (const Pts* p : {&none, &one}) {
    EXPECT_EQ(run(make_rdf_edges(p->view(), nullptr, {0, 1, 2}, nullptr, 0, Precision::Float64)),
              (std::vector<uint64_t>{0, 0}));
    const auto dr = run(make_rdf_edges(p->view(), &vb, {0, 1, 20}, nullptr, 0, Precision::Float64));
    uint64_t t = dr[0] + dr[1];
    EXPECT_EQ(t, p->c[0].size() * 50);
  }
}

}  // namespace
