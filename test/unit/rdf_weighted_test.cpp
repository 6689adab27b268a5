// The weighted RDF of the CPU engine (src/core/rdf.h cpu_rdf_weighted) against a brute-force
// float64 reference over every pair: the counts equal the unweighted ones, the weight sums equal
// the exact sums of w_i * w_j (integer and dyadic weights, where float64 sums are exact) or lie
// within the documented bound (real weights), every instruction-set variant and thread count
// gives the same bits, and the weighted g(r) equals its formula and gpu_rdf's g when every
// weight is 1.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/rdf.h"
#include "core/rdf_cpu.h"
#include "core/xi.h"

using namespace gpu2bs;

namespace {

struct Pts {
  int dims;
  std::vector<double> c[3];
  std::vector<double> w;
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = c[0].size();
    for (int k = 0; k < dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// n uniform points in [lo, hi)^dims with weights from `weight(i, rng)`.
template <typename W>
Pts uniform(size_t n, int dims, double lo, double hi, unsigned seed, W weight) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Pts p{dims, {}, {}};
  for (int k = 0; k < dims; ++k)
    for (size_t i = 0; i < n; ++i) p.c[k].push_back(u(g));
  for (size_t i = 0; i < n; ++i) p.w.push_back(weight(i, g));
  return p;
}

// Small integer weights -3..5 (products and their sums exact in float64).
double int_weight(size_t, std::mt19937_64& g) { return double(int(g() % 9) - 3); }
// Dyadic weights k / 64, k in 0..255.
double dyadic_weight(size_t, std::mt19937_64& g) { return double(g() % 256) / 64.0; }
// Real weights in [0.1, 2).
double real_weight(size_t, std::mt19937_64& g) {
  return 0.1 + 1.9 * std::uniform_real_distribution<double>(0, 1)(g);
}
double one_weight(size_t, std::mt19937_64&) { return 1.0; }

// The reference: every pair (self: i < j) with the engines' bucket arithmetic on coordinates
// wrapped as documented; per bucket the count, the float64 sum of fl(w_i w_j) in pair order and
// the sum of |fl(w_i w_j)| (for the bound).
struct Ref {
  std::vector<uint64_t> pairs;
  std::vector<double> sum;
  std::vector<long double> lsum;
};

template <typename T>
Ref brute(const RdfProblem& p, const double* wa, const double* wb) {
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
  std::vector<T> e2;
  for (double e : p.edges) e2.push_back(T(e * e));
  Ref r;
  r.pairs.assign(size_t(p.nbuckets), 0);
  r.sum.assign(size_t(p.nbuckets), 0);
  r.lsum.assign(size_t(p.nbuckets), 0);
  const double* wbb = p.self ? wa : wb;
  for (size_t i = 0; i < p.a.n; ++i)
    for (size_t j = p.self ? i + 1 : 0; j < p.b.n; ++j) {
      T a[3], b[3];
      for (int k = 0; k < D; ++k) {
        a[k] = wrap(p.a.coord[k][i], k);
        b[k] = wrap(p.b.coord[k][j], k);
      }
      const T d2 = D == 2 ? periodic_sq_dist<T, 2>(a, b, len, half) : periodic_sq_dist<T, 3>(a, b, len, half);
      const int kb = e2.empty() ? rdf_bucket<T>(d2, cut2, inv_w, T(p.nbuckets))
                                : (d2 < e2.back() ? edges_bucket<T>(d2, e2.data(), p.nbuckets) : -1);
      if (kb < 0) continue;
      ++r.pairs[size_t(kb)];
      r.sum[size_t(kb)] += wa[i] * wbb[j];
      r.lsum[size_t(kb)] += (long double)(wa[i] * wbb[j]);
    }
  return r;
}

// The weighted run on the CPU engine with `threads` workers.
WeightedCounts run(const RdfProblem& p, const double* wa, const double* wb, int threads = 3) {
  auto e = make_cpu_engine();
  Control c;
  c.threads = threads;
  return e->rdf_weighted(p, wa, wb, c);
}

// Checks one problem: counts equal the unweighted engine's and the reference's, sums exact
// (`exact`) or within the documented bound, both variants and thread counts bit-identical.
void check(const RdfProblem& p, const double* wa, const double* wb, bool exact, const char* what) {
  const Ref ref = p.prec == Precision::Float32 ? brute<float>(p, wa, wb) : brute<double>(p, wa, wb);
  const WeightedCounts got = run(p, wa, wb);
  auto e = make_cpu_engine();
  Control c;
  c.threads = 2;
  EXPECT_EQ(got.pairs, e->rdf(p, c)) << what;
  EXPECT_EQ(got.pairs, ref.pairs) << what;
  double wmax = 0;
  for (size_t i = 0; i < p.a.n; ++i) wmax = std::max(wmax, std::fabs(wa[i]));
  if (!p.self)
    for (size_t i = 0; i < p.b.n; ++i) wmax = std::max(wmax, std::fabs(wb[i]));
  for (size_t k = 0; k < got.sums.size(); ++k) {
    const double v = weight_value(got.sums[k], got.scale);
    if (exact) {
      EXPECT_EQ(v, ref.sum[k]) << what << " bucket " << k;
    } else {
      const double bound = 0.5 * std::fabs(v) * 0x1p-52 +
                           double(ref.pairs[k]) * wmax * wmax * 0x1p-62 + 1e-300;
      EXPECT_LE(std::fabs(double((long double)v - ref.lsum[k])), 2 * bound) << what << " bucket " << k;
    }
  }
  const WeightedCounts one = run(p, wa, wb, 1);
  const WeightScale s = rdf_weight_scale(p, wa, wb);
  Control c1, c2;
  c1.threads = 3;
  c2.threads = 3;
  const WeightedCounts gen = rdf_generic::run_weighted(p, wa, p.self ? wa : wb, s, c1);
  // The AVX2 variant only where the processor runs it (else the generic one twice).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const WeightedCounts avx = avx2 ? rdf_avx2::run_weighted(p, wa, p.self ? wa : wb, s, c2)
                                  : rdf_generic::run_weighted(p, wa, p.self ? wa : wb, s, c2);
  for (const WeightedCounts* o : {&one, &gen, &avx}) {
    EXPECT_EQ(o->pairs, got.pairs) << what;
    ASSERT_EQ(o->sums.size(), got.sums.size());
    for (size_t k = 0; k < got.sums.size(); ++k) EXPECT_TRUE(o->sums[k] == got.sums[k]) << what << " bucket " << k;
  }
}

TEST(RdfWeighted, EqualsBruteForce) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const Pts a = uniform(1200, 3, 0, 10, 1, int_weight), b = uniform(900, 3, -4, 14, 2, dyadic_weight);
    const Pts r = uniform(1000, 3, 0, 10, 3, real_weight), s2 = uniform(1500, 2, 0, 8, 4, int_weight);
    const PointsView va = a.view(), vb = b.view(), vr = r.view(), v2 = s2.view();
    const double box3[3] = {10, 10, 10}, mixed[3] = {10, 0, 10}, box2[2] = {8, 8};
    check(make_rdf(va, nullptr, 50, 3.0, box3, 3, prec), a.w.data(), nullptr, true, "self periodic");
    check(make_rdf(va, nullptr, 50, 5.0, box3, 3, prec), a.w.data(), nullptr, true, "r_max = L/2");
    check(make_rdf(va, nullptr, 30, 2.0, nullptr, 0, prec), a.w.data(), nullptr, true, "not periodic");
    check(make_rdf(va, nullptr, 30, 1.5, mixed, 3, prec), a.w.data(), nullptr, true, "mixed box");
    check(make_rdf(va, &vb, 40, 2.5, box3, 3, prec), a.w.data(), b.w.data(), true, "two sets");
    check(make_rdf(va, &vb, 40, 2.5, nullptr, 0, prec), a.w.data(), b.w.data(), true, "two sets open");
    check(make_rdf(v2, nullptr, 60, 4.0, box2, 2, prec), s2.w.data(), nullptr, true, "2-D");
    check(make_rdf(vr, nullptr, 25, 2.0, box3, 3, prec), r.w.data(), nullptr, false, "real weights");
    check(make_rdf_edges(va, &vr, {0.0, 0.1, 0.5, 1.0, 2.5, 4.0}, box3, 3, prec), a.w.data(),
          r.w.data(), false, "edges");
  }
}

TEST(RdfWeighted, FacesAndDuplicates) {
  // Points on the box faces (x = 0 and x = L wrap to the same place) and repeated points.
  Pts p{3, {}, {}};
  const double L = 4;
  const double xs[] = {0, L, 0, 2, 2, 2, L, 1, 3, 0.5};
  for (int i = 0; i < 10; ++i) {
    p.c[0].push_back(xs[i]);
    p.c[1].push_back(i % 2 ? L : 0);
    p.c[2].push_back(xs[9 - i]);
    p.w.push_back(double(i % 4) + 0.5);
  }
  const double box[3] = {L, L, L};
  for (Precision prec : {Precision::Float32, Precision::Float64})
    check(make_rdf(p.view(), nullptr, 8, 2.0, box, 3, prec), p.w.data(), nullptr, true, "faces");
}

TEST(RdfWeighted, UnitWeightsGiveTheUnweightedRdf) {
  const Pts a = uniform(700, 3, 0, 6, 5, one_weight), b = uniform(500, 3, 0, 6, 6, one_weight);
  const PointsView va = a.view(), vb = b.view();
  const double box[3] = {6, 6, 6};
  for (const RdfProblem& p : {make_rdf(va, nullptr, 20, 3.0, box, 3, Precision::Float64),
                              make_rdf(va, &vb, 20, 3.0, box, 3, Precision::Float64),
                              make_rdf(va, nullptr, 20, 1.0, nullptr, 0, Precision::Float64)}) {
    const WeightedCounts w = run(p, a.w.data(), b.w.data());
    const auto plain = rdf_rows(p, w.pairs);
    const auto rows = rdf_rows_weighted(p, w, rdf_weight_totals(p, a.w.data(), b.w.data()));
    for (size_t k = 0; k < rows.size(); ++k) {
      EXPECT_EQ(rows[k].weight_sum, double(rows[k].pairs));
      EXPECT_EQ(rows[k].has_g, plain[k].has_g);
      EXPECT_NEAR(rows[k].g, plain[k].g, 1e-13 * std::fabs(plain[k].g));
    }
  }
}

TEST(RdfWeighted, Normalization) {
  const Pts a = uniform(400, 3, 0, 5, 7, dyadic_weight), b = uniform(300, 3, 0, 5, 8, int_weight);
  const PointsView va = a.view(), vb = b.view();
  const double box[3] = {5, 6, 7};
  double sa = 0, sq = 0, sb = 0;
  for (double w : a.w) sa += w, sq += w * w;
  for (double w : b.w) sb += w;
  for (bool self : {true, false}) {
    const RdfProblem p = make_rdf(va, self ? nullptr : &vb, 10, 2.0, box, 3, Precision::Float64);
    const WeightedCounts w = run(p, a.w.data(), b.w.data());
    const RdfWeightTotals t = rdf_weight_totals(p, a.w.data(), b.w.data());
    EXPECT_EQ(t.sum_a, sa);
    EXPECT_EQ(t.sum_sq_a, sq);
    EXPECT_EQ(t.sum_b, self ? sa : sb);
    const auto rows = rdf_rows_weighted(p, w, t);
    for (int k = 0; k < 10; ++k) {
      const double lo = k * 0.2, hi = (k + 1) * 0.2;
      const double shell = 4.0 / 3.0 * M_PI * (hi * hi * hi - lo * lo * lo);
      const double rho = self ? (sa * sa - sq) / 210.0 : sa * sb / 210.0;
      const double g = (self ? 2.0 : 1.0) * rows[size_t(k)].weight_sum / (rho * shell);
      EXPECT_TRUE(rows[size_t(k)].has_g);
      EXPECT_NEAR(rows[size_t(k)].g, g, 1e-12 * std::fabs(g));
    }
  }
  // One point: no pairs of distinct points, the expected weight is 0 and g undefined.
  const Pts one = uniform(1, 3, 0, 5, 9, dyadic_weight);
  const RdfProblem p1 = make_rdf(one.view(), nullptr, 3, 1.0, box, 3, Precision::Float64);
  const WeightedCounts w1 = run(p1, one.w.data(), nullptr);
  for (const RdfRow& r : rdf_rows_weighted(p1, w1, rdf_weight_totals(p1, one.w.data(), nullptr)))
    EXPECT_FALSE(r.has_g);
}

TEST(RdfWeighted, WeightTotalIsExactAndOrderFree) {
  std::vector<double> w = {1e16, 1.0, -1e16, 3.0, 0.25};
  EXPECT_EQ(weight_total(w.data(), w.size(), false, "t"), 4.25);
  std::vector<double> r(w.rbegin(), w.rend());
  EXPECT_EQ(weight_total(r.data(), r.size(), false, "t"), 4.25);
  std::vector<double> q = {3, -2, 0.5};
  EXPECT_EQ(weight_total(q.data(), q.size(), true, "t"), 13.25);
  EXPECT_EQ(weight_total(q.data(), 0, false, "t"), 0.0);
  std::vector<double> bad = {1, NAN};
  try {
    weight_total(bad.data(), bad.size(), false, "t");
    ADD_FAILURE() << "NaN weight accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidParameter);
  }
  const Pts a = uniform(50, 3, 0, 4, 10, one_weight);
  std::vector<double> inf(50, 1.0);
  inf[7] = INFINITY;
  const double box[3] = {4, 4, 4};
  const RdfProblem p = make_rdf(a.view(), nullptr, 4, 1.0, box, 3, Precision::Float32);
  try {
    run(p, inf.data(), nullptr);
    ADD_FAILURE() << "infinite weight accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidParameter);
  }
}

TEST(XiWeighted, UnitWeightsGiveGpuXiAndSumsMatchTheCounts) {
  const Pts d = uniform(600, 3, 0, 8, 11, one_weight), r = uniform(900, 3, 0, 8, 12, one_weight);
  const PointsView vd = d.view(), vr = r.view();
  const double box[3] = {8, 8, 8};
  const std::vector<double> edges = {0.2, 0.5, 1.0, 2.0, 3.5};
  auto e = make_cpu_engine();
  Control c;
  c.threads = 3;
  for (bool analytic : {false, true}) {
    const PointsView* rp = analytic ? nullptr : &vr;
    const auto plain = xi_run(*e, c, XiEstimator::LandySzalay, vd, rp, edges, edges, box, 3,
                              Precision::Float64, nullptr, nullptr);
    const auto w = xi_run_weighted(*e, c, XiEstimator::LandySzalay, vd, d.w.data(), rp,
                                   r.w.data(), edges, edges, box, 3, Precision::Float64);
    ASSERT_EQ(w.size(), plain.size());
    for (size_t k = 0; k < w.size(); ++k) {
      EXPECT_EQ(w[k].dd, plain[k].dd);
      EXPECT_EQ(w[k].dr, plain[k].dr);
      EXPECT_EQ(w[k].dd_w, double(w[k].dd));
      EXPECT_EQ(w[k].has_dr, !analytic);
      if (!analytic) {
        EXPECT_EQ(w[k].dr_w, double(w[k].dr));
        EXPECT_EQ(w[k].rr_w, plain[k].rr);
      } else {
        EXPECT_NEAR(w[k].rr_w, plain[k].rr, 1e-12 * plain[k].rr);
      }
      EXPECT_EQ(w[k].has_xi, plain[k].has_xi);
      EXPECT_NEAR(w[k].xi, plain[k].xi, 1e-12 * (1 + std::fabs(plain[k].xi)));
    }
  }
}

TEST(XiWeighted, LandySzalayFromTheWeightSums) {
  const Pts d = uniform(500, 3, 0, 8, 13, dyadic_weight), r = uniform(700, 3, 0, 8, 14, int_weight);
  Pts rp = r;
  for (double& w : rp.w) w = std::fabs(w) + 1;  // positive random weights
  const PointsView vd = d.view(), vr = rp.view();
  const double box[3] = {8, 8, 8};
  const std::vector<double> edges = {0.3, 1.0, 2.0, 3.0};
  auto e = make_cpu_engine();
  Control c;
  c.threads = 2;
  for (XiEstimator est : {XiEstimator::LandySzalay, XiEstimator::Natural}) {
    const auto rows = xi_run_weighted(*e, c, est, vd, d.w.data(), &vr, rp.w.data(), edges, edges,
                                      box, 3, Precision::Float64);
    double sd = 0, sd2 = 0, sr = 0, sr2 = 0;
    for (double w : d.w) sd += w, sd2 += w * w;
    for (double w : rp.w) sr += w, sr2 += w * w;
    const RdfProblem pdd = make_rdf_edges(vd, nullptr, edges, box, 3, Precision::Float64);
    const RdfProblem pdr = make_rdf_edges(vd, &vr, edges, box, 3, Precision::Float64);
    const RdfProblem prr = make_rdf_edges(vr, nullptr, edges, box, 3, Precision::Float64);
    const Ref dd = brute<double>(pdd, d.w.data(), nullptr);
    const Ref dr = brute<double>(pdr, d.w.data(), rp.w.data());
    const Ref rr = brute<double>(prr, rp.w.data(), nullptr);
    for (size_t k = 0; k < rows.size(); ++k) {
      EXPECT_EQ(rows[k].dd_w, dd.sum[k]);
      EXPECT_EQ(rows[k].dr_w, dr.sum[k]);
      EXPECT_EQ(rows[k].rr_w, rr.sum[k]);
      const double fdd = dd.sum[k] / ((sd * sd - sd2) / 2), fdr = dr.sum[k] / (sd * sr);
      const double frr = rr.sum[k] / ((sr * sr - sr2) / 2);
      const double xi = est == XiEstimator::Natural ? fdd / frr - 1 : (fdd - 2 * fdr + frr) / frr;
      EXPECT_TRUE(rows[k].has_xi);
      EXPECT_NEAR(rows[k].xi, xi, 1e-12 * (1 + std::fabs(xi)));
    }
  }
}

TEST(XiWeighted, JackknifeWithUnitWeightsIsGpuXis) {
  const Pts d = uniform(700, 3, 0, 8, 15, one_weight), r = uniform(900, 3, 0, 8, 16, one_weight);
  const PointsView vd = d.view(), vr = r.view();
  std::vector<int64_t> pd(d.w.size()), pr(r.w.size());
  for (size_t i = 0; i < pd.size(); ++i) pd[i] = int64_t(d.c[0][i] / 2);  // 4 slabs along x
  for (size_t i = 0; i < pr.size(); ++i) pr[i] = int64_t(r.c[0][i] / 2);
  const double box[3] = {8, 8, 8};
  const std::vector<double> edges = {0.3, 0.8, 1.5, 3.0};
  auto e = make_cpu_engine();
  Control c;
  c.threads = 2;
  const auto plain = xi_run(*e, c, XiEstimator::LandySzalay, vd, &vr, edges, edges, box, 3,
                            Precision::Float64, pd.data(), pr.data());
  const auto w = xi_run_weighted(*e, c, XiEstimator::LandySzalay, vd, d.w.data(), &vr,
                                 r.w.data(), edges, edges, box, 3, Precision::Float64, pd.data(),
                                 pr.data());
  ASSERT_EQ(w.size(), plain.size());
  for (size_t k = 0; k < w.size(); ++k) {
    EXPECT_TRUE(plain[k].has_err);
    EXPECT_EQ(w[k].has_err, plain[k].has_err);
    EXPECT_NEAR(w[k].xi_err, plain[k].xi_err, 1e-10 * plain[k].xi_err + 1e-15);
  }
}

}  // namespace
