// Pair weights (src/core/weights.h): the 128-bit fixed-point accumulator (carries, signs, order
// independence, extremes), the grid and the final rounding, and the CPU engine's weighted SDH
// and pair count against the unweighted counts and a long double reference, for several thread
// counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/weights.h"
#include "core/weights_cpu.h"

namespace gpu2bs {
namespace {

// The accumulator's value as a signed 128-bit integer.
__int128 as_int(const WeightSum& s) {
  return static_cast<__int128>(static_cast<unsigned __int128>(s.hi) << 64 | s.lo);
}

TEST(WeightSum, CarriesAndSigns) {
  WeightSum s;
  const int64_t big = int64_t(1) << 62;
  for (int k = 0; k < 1000; ++k) s.add(big);  // the low limb wraps many times
  EXPECT_EQ(as_int(s), static_cast<__int128>(big) * 1000);
  for (int k = 0; k < 1500; ++k) s.add(-big);
  EXPECT_EQ(as_int(s), static_cast<__int128>(big) * -500);
  s.add(int64_t(-1));
  EXPECT_EQ(as_int(s), static_cast<__int128>(big) * -500 - 1);
  WeightSum t;
  t.add(int64_t(1));
  WeightSum u = s;
  u.add(t);  // merging accumulators carries as adding their terms does
  EXPECT_EQ(as_int(u), static_cast<__int128>(big) * -500);
  WeightSum z;
  z.add(int64_t(5));
  z.add(int64_t(-5));
  EXPECT_EQ(z.lo, 0u);
  EXPECT_EQ(z.hi, 0u);
}

TEST(WeightSum, OrderIndependent) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> q(20000);
  for (auto& v : q) v = int64_t(rng() >> 1) - (int64_t(1) << 62);  // |v| <= 2^62
  WeightSum a;
  for (int64_t v : q) a.add(v);
  __int128 exact = 0;
  for (int64_t v : q) exact += v;
  EXPECT_EQ(as_int(a), exact);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(q.begin(), q.end(), rng);
    // Split into random parts summed separately and merged in another order.
    std::vector<WeightSum> parts(1 + rng() % 17);
    for (int64_t v : q) parts[rng() % parts.size()].add(v);
    std::shuffle(parts.begin(), parts.end(), rng);
    WeightSum b;
    for (const auto& p : parts) b.add(p);
    EXPECT_TRUE(b == a) << "trial " << trial;
  }
}

TEST(WeightScale, GridAndRounding) {
  // max|w| = 1: max|w|^2 = 1 lies in [2^0, 2^1), so E = 1 and the grid is 2^-61.
  const WeightScale s = make_weight_scale(1.0);
  EXPECT_EQ(s.shift, 61);
  EXPECT_EQ(weight_fixed(1.0, 1.0, s), int64_t(1) << 61);
  EXPECT_EQ(weight_fixed(-1.0, 1.0, s), -(int64_t(1) << 61));
  EXPECT_EQ(weight_fixed(0.5, 0.25, s), int64_t(1) << 58);
  // Ties to even on the grid: 2^-62 is half a grid step (rounds to 0), 3 * 2^-62 to 2 steps.
  EXPECT_EQ(weight_fixed(std::ldexp(1.0, -62), 1.0, s), 0);
  EXPECT_EQ(weight_fixed(3 * std::ldexp(1.0, -62), 1.0, s), 2);
  // The sum of fixed-point integers reads back exactly where the products are on the grid.
  WeightSum sum;
  for (int k = 0; k < 3; ++k) sum.add(weight_fixed(0.75, -0.5, s));
  EXPECT_EQ(weight_value(sum, s), -1.125);
  // Integer weights up to 2^31: integer products are exact.
  const WeightScale si = make_weight_scale(2147483647.0);
  WeightSum s2;
  s2.add(weight_fixed(2147483647.0, 2147483647.0, si));
  s2.add(weight_fixed(-3.0, 5.0, si));
  EXPECT_EQ(weight_value(s2, si), 2147483647.0 * 2147483647.0 - 15.0);
  // No weights, or all zero: every product is 0.
  const WeightScale s0 = make_weight_scale(0.0);
  EXPECT_EQ(weight_fixed(0.0, 0.0, s0), 0);
}

TEST(WeightScale, Extremes) {
  // Tiny and huge magnitudes: the largest product maps to at most 2^62 on the grid.
  for (double wmax : {std::ldexp(1.0, -537), 1e-150, 3e-10, 0.7, 12345.0, 1e150,
                      std::sqrt(std::numeric_limits<double>::max()) * 0.999}) {
    const WeightScale s = make_weight_scale(wmax);
    const int64_t q = weight_fixed(wmax, wmax, s);
    EXPECT_GT(q, int64_t(1) << 60) << wmax;
    EXPECT_LE(q, int64_t(1) << 62) << wmax;
    EXPECT_EQ(weight_fixed(-wmax, wmax, s), -q) << wmax;
    WeightSum sum;
    sum.add(q);
    const double back = weight_value(sum, s);
    EXPECT_LE(std::fabs(back - wmax * wmax), std::fabs(wmax * wmax) * std::ldexp(1.0, -52)) << wmax;
  }
  // A square beyond float8 range is refused.
  EXPECT_THROW(make_weight_scale(1e160), Error);
  // A total beyond float8 range is refused.
  const WeightScale s = make_weight_scale(1.3e154);
  WeightSum sum;
  for (int k = 0; k < 4; ++k) sum.add(weight_fixed(1.3e154, 1.3e154, s));
  EXPECT_THROW(weight_value(sum, s), Error);
  // Non-finite weights are refused by weight_max.
  const double bad[3] = {1.0, std::nan(""), 2.0};
  EXPECT_THROW(weight_max(bad, 3, "t"), Error);
  const double inf[2] = {1.0, -HUGE_VAL};
  EXPECT_THROW(weight_max(inf, 2, "t"), Error);
}

// Random 3-D points and weights of both signs spread over 2^-20..2^20.
struct Cloud {
  std::vector<double> x, y, z, w;
  PointsView view() const {
    PointsView v;
    v.dims = 3;
    v.n = x.size();
    v.coord[0] = x.data();
    v.coord[1] = y.data();
    v.coord[2] = z.data();
    return v;
  }
};

// The cloud of `n` points.
Cloud cloud(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 5), e(-20, 20);
  Cloud c;
  for (size_t i = 0; i < n; ++i) {
    c.x.push_back(u(rng));
    c.y.push_back(u(rng));
    c.z.push_back(u(rng));
    c.w.push_back((rng() & 1 ? 1 : -1) * std::exp2(e(rng)));
  }
  return c;
}

TEST(CpuWeighted, MatchesCountsReferenceAndThreadCounts) {
  const Cloud c = cloud(1300, 3);
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  double wmax = 0;
  for (double v : c.w) wmax = std::max(wmax, std::fabs(v));
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const SdhProblem sp = make_sdh(c.view(), 23, 0, false, prec);
    const PairCountProblem pp = make_pair_count(c.view(), 1.25, prec);
    Control one;
    one.threads = 1;
    const WeightedCounts h1 = cpu->sdh_weighted(sp, c.w.data(), one);
    const WeightedCounts p1 = cpu->pair_count_weighted(pp, c.w.data(), one);
    EXPECT_EQ(h1.pairs, cpu->sdh(sp, one));
    EXPECT_EQ(p1.pairs[0], cpu->pair_count(pp, one));
    for (int threads : {2, 3, 8}) {
      Control ctl;
      ctl.threads = threads;
      const WeightedCounts h = cpu->sdh_weighted(sp, c.w.data(), ctl);
      const WeightedCounts p = cpu->pair_count_weighted(pp, c.w.data(), ctl);
      EXPECT_EQ(h.pairs, h1.pairs);
      for (size_t k = 0; k < h.sums.size(); ++k) EXPECT_TRUE(h.sums[k] == h1.sums[k]) << threads << " " << k;
      EXPECT_TRUE(p.sums[0] == p1.sums[0]) << threads;
    }
    // The pair count's sum against a long double sum of the float64 products of its pairs.
    long double ref = 0, mag = 0;
    uint64_t n = 0;
    for (size_t i = 0; i < c.x.size(); ++i)
      for (size_t j = i + 1; j < c.x.size(); ++j) {
        bool in;
        if (prec == Precision::Float32) {
          const float a[3] = {float(c.x[i]), float(c.y[i]), float(c.z[i])};
          const float b[3] = {float(c.x[j]), float(c.y[j]), float(c.z[j])};
          in = sq_dist<float, 3>(a, b) <= pp.r2_f;
        } else {
          const double a[3] = {c.x[i], c.y[i], c.z[i]};
          const double b[3] = {c.x[j], c.y[j], c.z[j]};
          in = sq_dist<double, 3>(a, b) <= pp.r2;
        }
        if (!in) continue;
        const double prod = c.w[i] * c.w[j];
        ref += prod;
        mag += std::fabs(prod);
        ++n;
      }
    ASSERT_EQ(n, p1.pairs[0]);
    const double got = weight_value(p1.sums[0], p1.scale);
    const double bound = 0.5 * std::fabs(std::nextafter(got, HUGE_VAL) - got) +
                         double(n) * wmax * wmax * std::ldexp(1.0, -62) +
                         double(mag) * double(n) * std::ldexp(1.0, -63);  // the reference's own error
    EXPECT_LE(std::fabs(double(ref - (long double)got)), bound);
  }
}

TEST(CpuWeighted, AllOnesSumToCountsAndExplicitWidth) {
  Cloud c = cloud(700, 9);
  std::fill(c.w.begin(), c.w.end(), 1.0);
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  Control ctl;
  ctl.threads = 2;
  const SdhProblem sp = make_sdh(c.view(), 40, 0.1, true, Precision::Float32);
  const WeightedCounts h = cpu->sdh_weighted(sp, c.w.data(), ctl);
  EXPECT_EQ(h.pairs, cpu->sdh(sp, ctl));
  for (size_t k = 0; k < h.pairs.size(); ++k) EXPECT_EQ(weight_value(h.sums[k], h.scale), double(h.pairs[k]));
}

}  // namespace
}  // namespace gpu2bs

namespace gpu2bs {
namespace {

// The generic and AVX2+FMA kernel variants give the same counts and sums on the same tiles.
TEST(CpuWeighted, KernelVariantsAgree) {
#if defined(__x86_64__)
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) GTEST_SKIP() << "no AVX2+FMA";
#endif
  const Cloud c = cloud(kWeightTile, 21);
  const WeightScale s = make_weight_scale(std::exp2(20.0));
  std::vector<float> f[3];
  const double* d[3] = {c.x.data(), c.y.data(), c.z.data()};
  for (int k = 0; k < 3; ++k) f[k].assign(d[k], d[k] + c.x.size());
  const float* cf[3] = {f[0].data(), f[1].data(), f[2].data()};
  const WeightKernels& g = weight_kernels_generic();
  const WeightKernels& a = weight_kernels_avx2();
  for (bool diag : {true, false}) {
    std::vector<uint64_t> pg(50), pa(50);
    std::vector<WeightSum> sg(50), sa(50);
    g.sdh_f32(3, cf, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 3.0f, 50, true, s, pg.data(), sg.data());
    a.sdh_f32(3, cf, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 3.0f, 50, true, s, pa.data(), sa.data());
    EXPECT_EQ(pg, pa);
    for (size_t k = 0; k < 50; ++k) EXPECT_TRUE(sg[k] == sa[k]) << k;
    g.sdh_f64(3, d, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 7.0, 50, false, s, pg.data(), sg.data());
    a.sdh_f64(3, d, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 7.0, 50, false, s, pa.data(), sa.data());
    EXPECT_EQ(pg, pa);
    for (size_t k = 0; k < 50; ++k) EXPECT_TRUE(sg[k] == sa[k]) << k;
    uint64_t ng = 0, na = 0;
    WeightSum cg, ca;
    g.count_f64(3, d, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 1.2, s, &ng, &cg);
    a.count_f64(3, d, c.w.data(), 0, 300, diag ? 0 : 300, kWeightTile, diag, 1.2, s, &na, &ca);
    EXPECT_EQ(ng, na);
    EXPECT_GT(ng, 0u);
    EXPECT_TRUE(cg == ca);
  }
}

}  // namespace
}  // namespace gpu2bs
