// The CPU engine's all-pairs vectors (gpu_pairwise) against (1) a brute force with the same
// float32 arithmetic (bit for bit: same keys, same lists), and (2) a float64 reference, where
// lists may differ only on near-ties (pairs whose float64 values lie within float32 rounding of
// the k-th value or of the threshold), which are counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <random>

#include "core/engine.h"
#include "core/error.h"
#include "core/pairwise.h"
#include "core/pairwise_cpu.h"

using namespace gpu2bs;

namespace {

class Ctl : public Control {
 public:
  explicit Ctl(int t = 2) { threads = t; }
};

struct Collect : PairSink {
  std::vector<PairRecord> rec;
  void consume(const PairRecord* p, size_t n) override { rec.insert(rec.end(), p, p + n); }
};

// Row-major float64 data.
struct Data {
  size_t n;
  int d;
  std::vector<double> v;
};

Data normal(size_t n, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Data x{n, d, std::vector<double>(n * size_t(d))};
  for (auto& e : x.v) e = g(rng);
  return x;
}

// Small integers: many exact ties and duplicates.
Data lattice(size_t n, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> g(-2, 2);
  Data x{n, d, std::vector<double>(n * size_t(d))};
  for (auto& e : x.v) e = g(rng);
  return x;
}

// Float64 value of (u, v) for the metric, from float64 inputs.
double ref_value(const PairwiseMetric& m, const double* u, const double* v, int d) {
  double s = 0, nu = 0, nv = 0;
  for (int k = 0; k < d; ++k) {
    const double t = u[k] - v[k];
    switch (m.kind) {
      case PairMetric::L1: s += std::fabs(t); break;
      case PairMetric::L2:
      case PairMetric::SqEuclidean: s += t * t; break;
      case PairMetric::Lp: s += std::pow(std::fabs(t), m.p); break;
      case PairMetric::Dot:
      case PairMetric::Cosine:
        s += u[k] * v[k];
        nu += u[k] * u[k];
        nv += v[k] * v[k];
        break;
    }
  }
  switch (m.kind) {
    case PairMetric::L2: return std::sqrt(s);
    case PairMetric::Lp: return std::pow(s, 1.0 / m.p);
    case PairMetric::Cosine: return (nu == 0 || nv == 0) ? 1.0 : 1.0 - s / std::sqrt(nu * nv);
    default: return s;
  }
}

// Float64 bound of a pair's rounding error (float32 inputs and a float32 sum of d terms).
double ref_tol(const PairwiseMetric& m, const double* u, const double* v, int d) {
  double s = 0;
  for (int k = 0; k < d; ++k) {
    const double w = std::fabs(u[k]) + std::fabs(v[k]);
    switch (m.kind) {
      case PairMetric::Dot: s += std::fabs(u[k] * v[k]); break;
      case PairMetric::Cosine: s = 1; break;
      case PairMetric::L1: s += w; break;
      case PairMetric::Lp: s += std::pow(w, m.p); break;
      default: s += w * w;
    }
  }
  const double e = s * (d + 8) * 2.4e-7 + 1e-30;
  if (m.kind == PairMetric::L2) return std::sqrt(e);
  if (m.kind == PairMetric::Lp) return std::pow(e, 1.0 / m.p);
  return e;
}

struct PwRun {
  PairwiseProblem p;
  VectorSet a, b;
  std::vector<PairRecord> out;
};

void run(PwRun& r, const std::string& metric, const Data& a, const Data* b, int k, double thr,
         int threads = 2) {
  const PairwiseMetric m = parse_pairwise_metric(metric);
  prepare_vectors(m, a.v.data(), a.n, a.d, &r.a);
  if (b) prepare_vectors(m, b->v.data(), b->n, b->d, &r.b);
  r.p = make_pairwise(m, r.a, b ? &r.b : nullptr, k, k > 0, thr, k <= 0,
                      PairwisePrecision::Exact, 0);
  Ctl ctl(threads);
  Collect sink;
  make_cpu_engine()->pairwise(r.p, sink, ctl);
  r.out = std::move(sink.rec);
}

// The lists / pairs a brute force with the engine arithmetic gives.
std::vector<PairRecord> brute(const PairwiseProblem& p) {
  std::vector<PairRecord> out;
  for (size_t i = 0; i < p.a->n; ++i) {
    std::vector<KnnEntry> row;
    for (size_t j = 0; j < p.b->n; ++j) {
      if (p.self && (p.k > 0 ? j == i : j <= i)) continue;
      const float key = pairwise_key(p, i, j);
      if (p.k > 0 || (!p.none_pass && key <= p.key_max)) row.push_back({key, uint32_t(j)});
    }
    if (p.k > 0) knn_merge(row, size_t(p.k));
    for (auto& e : row) out.push_back({uint32_t(i), e.j, pairwise_value(p.metric, e.key)});
  }
  return out;
}

void expect_same(std::vector<PairRecord> x, std::vector<PairRecord> y, bool sort_them) {
  auto lt = [](const PairRecord& a, const PairRecord& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; };
  if (sort_them) {
    std::sort(x.begin(), x.end(), lt);
    std::sort(y.begin(), y.end(), lt);
  }
  ASSERT_EQ(x.size(), y.size());
  for (size_t t = 0; t < x.size(); ++t) {
    ASSERT_EQ(x[t].i, y[t].i) << t;
    ASSERT_EQ(x[t].j, y[t].j) << t;
    ASSERT_EQ(std::memcmp(&x[t].dist, &y[t].dist, 8), 0) << t << " " << x[t].dist << " " << y[t].dist;
  }
}

// Checks kNN lists against float64: values close, and the sets agree except near-ties.
// Returns the number of near-tie disagreements.
size_t check_knn_f64(const PwRun& r, const Data& a, const Data& b) {
  const auto& m = r.p.metric;
  const int d = a.d;
  const size_t kk = pairwise_row_k(r.p);
  std::map<uint32_t, std::vector<std::pair<uint32_t, double>>> got;
  for (auto& e : r.out) got[e.i].push_back({e.j, e.dist});
  size_t near = 0;
  for (size_t i = 0; i < a.n; ++i) {
    std::vector<std::pair<double, uint32_t>> all;
    double tol = 0;
    for (size_t j = 0; j < b.n; ++j) {
      if (r.p.self && j == i) continue;
      const double* u = &a.v[i * size_t(d)];
      const double* v = &b.v[j * size_t(d)];
      double val = ref_value(m, u, v, d);
      tol = std::max(tol, ref_tol(m, u, v, d));
      all.push_back({m.larger_is_better() ? -val : val, uint32_t(j)});
    }
    std::sort(all.begin(), all.end());
    auto& g = got[uint32_t(i)];
    EXPECT_EQ(g.size(), kk) << "row " << i;
    if (kk == 0) continue;
    const double kth = all[kk - 1].first;
    std::map<uint32_t, double> refv;
    for (auto& e : all) refv[e.second] = e.first;
    for (auto& e : g) {
      const double want = m.larger_is_better() ? -refv[e.first] : refv[e.first];
      EXPECT_NEAR(e.second, want, tol) << "row " << i << " col " << e.first;
      const double bad = m.larger_is_better() ? -want : want;
      if (bad > kth + tol) ADD_FAILURE() << "row " << i << " col " << e.first << " is not among the best";
      bool in_ref = false;
      for (size_t t = 0; t < kk; ++t) in_ref |= all[t].second == e.first;
      if (!in_ref) ++near;
    }
    for (size_t t = 0; t < kk; ++t)
      if (all[t].first < kth - tol) {
        bool found = false;
        for (auto& e : g) found |= e.first == all[t].second;
        EXPECT_TRUE(found) << "row " << i << " misses col " << all[t].second;
      }
  }
  return near;
}

const char* kMetrics[] = {"l1", "l2", "sqeuclidean", "cosine", "dot", "lp:3", "lp:1.5"};

}  // namespace

TEST(Pairwise, MetricNames) {
  EXPECT_EQ(parse_pairwise_metric("l2").kind, PairMetric::L2);
  EXPECT_EQ(parse_pairwise_metric("lp:1").kind, PairMetric::L1);
  EXPECT_EQ(parse_pairwise_metric("lp:2").kind, PairMetric::L2);
  EXPECT_EQ(parse_pairwise_metric("lp:2.5").kind, PairMetric::Lp);
  for (const char* bad : {"", "L2", "lp:", "lp:0.5", "lp:x", "lp:65", "lp:nan", "hamming", "lp:3x"})
    EXPECT_THROW(parse_pairwise_metric(bad), Error) << bad;
}

TEST(Pairwise, PowMatchesLibm) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-30, 30), pp(1, 64);
  for (int t = 0; t < 20000; ++t) {
    const float x = float(std::exp(u(rng)));
    const double p = pp(rng);
    const double want = std::pow(double(x), p);
    const float got = pw_pow(x, p);
    if (want > 3e38 || want < 1e-37) continue;
    EXPECT_NEAR(double(got), want, std::fabs(want) * 1.2e-7) << x << " " << p;
  }
  EXPECT_EQ(pw_pow(0.0f, 3.0), 0.0f);
  EXPECT_EQ(pw_pow(1.0f, 7.5), 1.0f);
}

TEST(Pairwise, KnnBitIdenticalToBruteAndNearFloat64) {
  for (int d : {1, 3, 768}) {
    for (const char* metric : kMetrics) {
      const size_t n = d == 768 ? 70 : 150;
      Data a = normal(n, d, 7 + d), b = normal(n + 13, d, 11 + d);
      for (bool self : {true, false}) {
        SCOPED_TRACE(std::string(metric) + " d=" + std::to_string(d) + (self ? " self" : " two"));
        PwRun r;
        run(r, metric, a, self ? nullptr : &b, 5, 0);
        expect_same(r.out, brute(r.p), false);
        const size_t near = check_knn_f64(r, a, self ? a : b);
        if (d == 768) {
          EXPECT_LT(near, n / 4);  // d = 1 and 3 have many exact ties (cosine with d = 1: all)
        }
      }
    }
  }
}

TEST(Pairwise, Dim4096AndThreadCounts) {
  Data a = normal(40, 4096, 5), b = normal(37, 4096, 6);
  for (const char* metric : {"l2", "cosine", "l1", "dot"}) {
    PwRun r1, r2;
    run(r1, metric, a, &b, 3, 0, 1);
    run(r2, metric, a, &b, 3, 0, 3);
    expect_same(r1.out, r2.out, false);
    expect_same(r1.out, brute(r1.p), false);
    check_knn_f64(r1, a, b);
  }
}

TEST(Pairwise, ThresholdBitIdenticalToBrute) {
  for (int d : {1, 3, 768}) {
    Data a = lattice(90, d, 17 + d), b = lattice(77, d, 19 + d);
    for (const char* metric : kMetrics) {
      for (bool self : {true, false}) {
        SCOPED_TRACE(std::string(metric) + " d=" + std::to_string(d));
        // A threshold hit exactly by lattice pairs (ties on the boundary are inside).
        double thr = std::string(metric) == "dot" ? 0.0 : std::string(metric) == "cosine" ? 0.5 : d == 1 ? 1.0 : 2.0 * d / 3;
        PwRun r;
        run(r, metric, a, self ? nullptr : &b, 0, thr);
        auto want = brute(r.p);
        expect_same(r.out, want, true);
        // Float64: every pair strictly inside by more than the tolerance is present.
        const Data& bb = self ? a : b;
        std::set<std::pair<uint32_t, uint32_t>> got;
        for (auto& e : r.out) got.insert({e.i, e.j});
        const auto& m = r.p.metric;
        for (size_t i = 0; i < a.n; ++i)
          for (size_t j = self ? i + 1 : 0; j < bb.n; ++j) {
            const double* u = &a.v[i * size_t(d)];
            const double* v = &bb.v[j * size_t(d)];
            const double val = ref_value(m, u, v, d), tol = ref_tol(m, u, v, d);
            const double margin = m.larger_is_better() ? val - thr : thr - val;
            if (margin > tol) {
              EXPECT_TRUE(got.count({uint32_t(i), uint32_t(j)})) << i << " " << j;
            }
            if (margin < -tol) {
              EXPECT_FALSE(got.count({uint32_t(i), uint32_t(j)})) << i << " " << j;
            }
          }
      }
    }
  }
}

TEST(Pairwise, DuplicatesTiesAndBigK) {
  // Every row equal: all distances 0, ties broken by column index.
  Data a{20, 3, std::vector<double>(60, 1.5)};
  PwRun r;
  run(r, "l2", a, nullptr, 4, 0);
  ASSERT_EQ(r.out.size(), 80u);
  for (size_t t = 0; t < r.out.size(); ++t) {
    const uint32_t i = r.out[t].i;
    std::vector<uint32_t> want;
    for (uint32_t j = 0; j < 20 && want.size() < 4; ++j)
      if (j != i) want.push_back(j);
    EXPECT_EQ(r.out[t].j, want[t % 4]);
    EXPECT_EQ(r.out[t].dist, 0.0);
  }
  // k larger than the other side: every column, sorted.
  Data b = normal(5, 3, 1), q = normal(3, 3, 2);
  PwRun r2;
  run(r2, "l1", q, &b, 100, 0);
  EXPECT_EQ(r2.out.size(), 15u);
  expect_same(r2.out, brute(r2.p), false);
  PwRun r3;
  run(r3, "dot", b, nullptr, 100, 0);
  EXPECT_EQ(r3.out.size(), 20u);
  expect_same(r3.out, brute(r3.p), false);
  for (size_t t = 1; t < r3.out.size(); ++t)
    if (r3.out[t].i == r3.out[t - 1].i) {
      EXPECT_GE(r3.out[t - 1].dist, r3.out[t].dist);
    }
}

TEST(Pairwise, ZeroVectorsCosineAndEmpty) {
  Data a{3, 2, {0, 0, 1, 0, 0, 2}};
  PwRun r;
  run(r, "cosine", a, nullptr, 2, 0);
  ASSERT_EQ(r.out.size(), 6u);
  for (auto& e : r.out)
    if (e.i == 0 || e.j == 0) {
      EXPECT_EQ(e.dist, 1.0);
    }
  EXPECT_EQ(r.out[0].i, 0u);
  EXPECT_EQ(r.out[0].j, 1u);  // tie at 1: smaller index first
  Data empty{0, 0, {}};
  PwRun r2;
  run(r2, "l2", empty, &a, 3, 0);
  EXPECT_TRUE(r2.out.empty());
  PwRun r3;
  run(r3, "l2", a, &empty, 0, 10.0);
  EXPECT_TRUE(r3.out.empty());
  Data one{1, 2, {1, 2}};
  PwRun r4;
  run(r4, "l2", one, nullptr, 3, 0);
  EXPECT_TRUE(r4.out.empty());
}

TEST(Pairwise, Errors) {
  VectorSet a, b;
  const PairwiseMetric m = parse_pairwise_metric("l2");
  std::vector<double> x = {1, 2, 3, 4};
  prepare_vectors(m, x.data(), 2, 2, &a);
  prepare_vectors(m, x.data(), 1, 4, &b);
  EXPECT_THROW(make_pairwise(m, a, nullptr, 0, false, 0, false, PairwisePrecision::Exact, 0), Error);
  EXPECT_THROW(make_pairwise(m, a, nullptr, 1, true, 1, true, PairwisePrecision::Exact, 0), Error);
  EXPECT_THROW(make_pairwise(m, a, nullptr, 0, true, 0, false, PairwisePrecision::Exact, 0), Error);
  EXPECT_THROW(make_pairwise(m, a, nullptr, 0, false, NAN, true, PairwisePrecision::Exact, 0), Error);
  EXPECT_THROW(make_pairwise(m, a, &b, 1, true, 0, false, PairwisePrecision::Exact, 0), Error);
  EXPECT_THROW(make_pairwise(m, a, nullptr, 5, true, 0, false, PairwisePrecision::Exact, 1), Error);
  std::vector<double> big = {1e39, 0};
  EXPECT_THROW(prepare_vectors(m, big.data(), 1, 2, &b), Error);
  // Threshold of -1 on a distance: nothing passes.
  auto p = make_pairwise(m, a, nullptr, 0, false, -1, true, PairwisePrecision::Exact, 0);
  EXPECT_TRUE(p.none_pass);
}

TEST(Pairwise, IsaVariantsBitIdentical) {
  // Every variant the processor runs gives the same lists and pairs (different tile shapes).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  Data a = normal(45, 300, 9), b = normal(70, 300, 10);
  for (const char* metric : kMetrics) {
    std::vector<std::vector<PairRecord>> knn, thr;
    PwRun r0;
    run(r0, metric, a, &b, 6, 0);
    const double t = r0.out[40].dist;  // a value of the data: some pairs pass, some do not
    for (int isa : {1, 2, 3}) {
      if ((isa == 2 && !avx2) || (isa == 3 && !avx512)) continue;
      set_cpu_pairwise_isa(isa);
      PwRun r1, r2;
      run(r1, metric, a, &b, 6, 0);
      run(r2, metric, a, nullptr, 0, t);
      knn.push_back(r1.out);
      thr.push_back(r2.out);
    }
    set_cpu_pairwise_isa(0);
    for (size_t v = 1; v < knn.size(); ++v) {
      SCOPED_TRACE(std::string(metric) + " variant " + std::to_string(v));
      expect_same(knn[0], knn[v], false);
      expect_same(thr[0], thr[v], true);
    }
  }
}
