// Weighted SDH and pair count on the device (kernels/weights.cu) against the CPU engine, bit for
// bit (counts and 128-bit sums; both layouts of the shared sums), the counts against the CPU engine's unweighted SDH and pair
// count, the sums against a long double reference within the documented bound, and two GPU runs
// against each other. Uses weighted_run and the core only (no engine), so it also builds alone
// (make -C test/gpu weights); skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/weights.h"
#include "kernels/weights.h"

namespace gpu2bs {
namespace {

// Throws on a failed CUDA call (the test fails with the call's text).
void wcheck(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(expr) + " at " + file + ":" + std::to_string(line) + ": " +
                             cudaGetErrorName(e));
}
#define WC(expr) wcheck((expr), #expr, __FILE__, __LINE__)

// True when a CUDA device is usable.
bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Random points (uniform in a box with a few duplicates) and weights of the kind `wkind`:
// 0 small integers in [-3, 3], 1 uniform doubles in [-1, 1], 2 magnitudes spread over 2^-30..2^30
// with both signs, 3 all ones.
struct Data {
  int dims;
  size_t n;
  std::vector<std::vector<double>> c;
  std::vector<double> w;
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = n;
    for (int k = 0; k < dims; ++k) v.coord[k] = c[size_t(k)].data();
    return v;
  }
};

// The data set of one case.
Data make_data(int dims, size_t n, int wkind, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 10.0), uw(-1.0, 1.0), ue(-30.0, 30.0);
  Data d{dims, n, std::vector<std::vector<double>>(size_t(dims), std::vector<double>(n)), std::vector<double>(n)};
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < dims; ++k) d.c[size_t(k)][i] = i % 17 == 3 && i > 0 ? d.c[size_t(k)][i - 1] : u(rng);
    switch (wkind) {
      case 0: d.w[i] = double(int64_t(rng() % 7) - 3); break;
      case 1: d.w[i] = uw(rng); break;
      case 2: d.w[i] = (rng() & 1 ? -1.0 : 1.0) * std::exp2(ue(rng)); break;
      default: d.w[i] = 1.0; break;
    }
  }
  return d;
}

// The GPU's counts and sums through weighted_run for nb buckets (0: the pair count).
WeightedCounts gpu_weighted(const Data& d, Precision prec, int nb, const SdhParams* sp, double r2,
                            float r2_f, const WeightScale& s, bool split32 = true) {
  const bool f32 = prec == Precision::Float32;
  const size_t es = f32 ? 4 : 8;
  cuda::WeightedDeviceArgs a;
  a.dims = d.dims;
  a.n = d.n;
  a.f32 = f32;
  std::vector<void*> bufs;
  for (int k = 0; k < d.dims; ++k) {
    void* p = nullptr;
    WC(cudaMalloc(&p, d.n * es));
    bufs.push_back(p);
    if (f32) {
      std::vector<float> h(d.n);
      for (size_t i = 0; i < d.n; ++i) h[i] = float(d.c[size_t(k)][i]);
      WC(cudaMemcpy(p, h.data(), d.n * es, cudaMemcpyHostToDevice));
    } else {
      WC(cudaMemcpy(p, d.c[size_t(k)].data(), d.n * es, cudaMemcpyHostToDevice));
    }
    a.coord[k] = p;
  }
  double* dw = nullptr;
  WC(cudaMalloc(&dw, d.n * 8));
  WC(cudaMemcpy(dw, d.w.data(), d.n * 8, cudaMemcpyHostToDevice));
  const size_t slots = nb ? size_t(nb) : 1;
  unsigned long long* out = nullptr;
  WC(cudaMalloc(&out, 3 * slots * 8));
  WC(cudaMemset(out, 0, 3 * slots * 8));
  a.w = dw;
  a.nbuckets = nb;
  if (sp) {
    a.clamp = !sp->explicit_width;
    a.inv_w = sp->inv_width;
    a.inv_w_f = sp->inv_width_f;
  }
  a.r2 = r2;
  a.r2_f = r2_f;
  a.scale = s;
  a.split32 = split32;
  a.pairs = out;
  a.lo = out + slots;
  a.hi = out + 2 * slots;
  int sms = 0;
  WC(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cuda::weighted_run(a, nullptr, sms, {}, &wcheck);
  std::vector<unsigned long long> h(3 * slots);
  WC(cudaMemcpy(h.data(), out, h.size() * 8, cudaMemcpyDeviceToHost));
  for (void* p : bufs) WC(cudaFree(p));
  WC(cudaFree(dw));
  WC(cudaFree(out));
  WeightedCounts r;
  r.scale = s;
  r.pairs.resize(slots);
  r.sums.resize(slots);
  for (size_t k = 0; k < slots; ++k) {
    r.pairs[k] = h[k];
    r.sums[k].lo = h[slots + k];
    r.sums[k].hi = h[2 * slots + k];
  }
  return r;
}

// Expects equal counts and sums, entry by entry.
void expect_same(const WeightedCounts& g, const WeightedCounts& c, const std::string& what) {
  ASSERT_EQ(g.pairs.size(), c.pairs.size()) << what;
  EXPECT_EQ(g.scale.shift, c.scale.shift) << what;
  for (size_t k = 0; k < g.pairs.size(); ++k) {
    EXPECT_EQ(g.pairs[k], c.pairs[k]) << what << " bucket " << k;
    EXPECT_TRUE(g.sums[k] == c.sums[k]) << what << " bucket " << k << " gpu " << g.sums[k].hi << ":"
                                        << g.sums[k].lo << " cpu " << c.sums[k].hi << ":" << c.sums[k].lo;
  }
}

// Checks each bucket's sum against the long double sum of the float64 products over the
// pairs the counts say are there (the SDH buckets of the CPU engine, recomputed here per pair
// with the same arithmetic), within 0.5 ulp + pairs * max|w|^2 * 2^-62 (plus the reference's
// own error).
template <typename T, int D>
void check_reference(const Data& d, const SdhParams* sp, T r2, const WeightedCounts& res,
                     const std::string& what) {
  const size_t slots = res.pairs.size();
  std::vector<long double> ref(slots, 0.0L), mag(slots, 0.0L);
  std::vector<uint64_t> cnt(slots, 0);
  std::vector<T> c[D];
  for (int k = 0; k < D; ++k) {
    c[k].resize(d.n);
    for (size_t i = 0; i < d.n; ++i) c[k][i] = T(d.c[size_t(k)][i]);
  }
  const T inv_w = sp ? (sizeof(T) == 4 ? T(sp->inv_width_f) : T(sp->inv_width)) : T(0);
  const int nb = sp ? sp->nbuckets : 1;
  const T beyond = sdh_beyond<T>(nb, sp ? !sp->explicit_width : true);
  double wmax = 0;
  for (double x : d.w) wmax = std::max(wmax, std::fabs(x));
  for (size_t i = 0; i < d.n; ++i)
    for (size_t j = i + 1; j < d.n; ++j) {
      T p[D], q[D];
      for (int k = 0; k < D; ++k) {
        p[k] = c[k][i];
        q[k] = c[k][j];
      }
      const T d2 = sq_dist<T, D>(p, q);
      int b = 0;
      if (sp) {
        b = sdh_bucket<T>(d2, inv_w, T(nb), beyond);
        if (b < 0) continue;
      } else if (!(d2 <= r2)) {
        continue;
      }
      const double prod = d.w[i] * d.w[j];
      ref[size_t(b)] += prod;
      mag[size_t(b)] += std::fabs(prod);
      cnt[size_t(b)]++;
    }
  for (size_t k = 0; k < slots; ++k) {
    EXPECT_EQ(cnt[k], res.pairs[k]) << what << " bucket " << k;
    const double got = weight_value(res.sums[k], res.scale);
    const double bound = 0.5 * std::fabs(std::nextafter(got, HUGE_VAL) - got) +
                         double(cnt[k]) * wmax * wmax * std::exp2(-62.0) +
                         double(mag[k]) * double(cnt[k]) * std::exp2(-63.0);  // the reference's own error
    EXPECT_LE(std::fabs(double(ref[k] - (long double)got)), bound) << what << " bucket " << k;
  }
}

// One case: the SDH (derived and explicit width) and the pair count on both engines.
template <int D>
void run_case(Precision prec, size_t n, int wkind, unsigned seed) {
  const Data d = make_data(D, n, wkind, seed);
  const std::string what = std::string("dims ") + std::to_string(D) + (prec == Precision::Float32 ? " f32" : " f64") +
                           " n " + std::to_string(n) + " weights " + std::to_string(wkind);
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  Control ctl;
  ctl.threads = 4;
  double wmax = 0;
  for (double x : d.w) wmax = std::max(wmax, std::fabs(x));
  const WeightScale s = make_weight_scale(wmax);
  for (int variant = 0; variant < 2; ++variant) {
    const SdhProblem sp = variant == 0 ? make_sdh(d.view(), 37, 0, false, prec)
                                       : make_sdh(d.view(), 700, 0.02, true, prec);
    const WeightedCounts c = cpu->sdh_weighted(sp, d.w.data(), ctl);
    const WeightedCounts g = gpu_weighted(d, prec, sp.params.nbuckets, &sp.params, 0, 0, s);
    expect_same(g, c, what + " sdh " + std::to_string(variant));
    const WeightedCounts g2 = gpu_weighted(d, prec, sp.params.nbuckets, &sp.params, 0, 0, s);
    expect_same(g2, g, what + " sdh rerun " + std::to_string(variant));
    const WeightedCounts g3 = gpu_weighted(d, prec, sp.params.nbuckets, &sp.params, 0, 0, s, false);
    expect_same(g3, g, what + " sdh 64-bit limbs " + std::to_string(variant));
    const std::vector<uint64_t> plain = cpu->sdh(sp, ctl);
    for (size_t k = 0; k < plain.size(); ++k) EXPECT_EQ(plain[k], g.pairs[k]) << what << " bucket " << k;
    if (prec == Precision::Float32)
      check_reference<float, D>(d, &sp.params, 0.0f, g, what + " sdh ref");
    else
      check_reference<double, D>(d, &sp.params, 0.0, g, what + " sdh ref");
  }
  const PairCountProblem pp = make_pair_count(d.view(), 1.5, prec);
  const WeightedCounts c = cpu->pair_count_weighted(pp, d.w.data(), ctl);
  const WeightedCounts g = gpu_weighted(d, prec, 0, nullptr, pp.r2, pp.r2_f, s);
  expect_same(g, c, what + " count");
  EXPECT_EQ(cpu->pair_count(pp, ctl), g.pairs[0]) << what;
  if (prec == Precision::Float32)
    check_reference<float, D>(d, nullptr, pp.r2_f, g, what + " count ref");
  else
    check_reference<double, D>(d, nullptr, pp.r2, g, what + " count ref");
  if (wkind == 3) {  // weights all 1: every sum is its count
    for (size_t k = 0; k < g.pairs.size(); ++k) EXPECT_EQ(weight_value(g.sums[k], s), double(g.pairs[k]));
  }
}

TEST(WeightsGpu, SdhAndPairCountMatchCpuBitForBit) {
  if (!have_gpu()) GTEST_SKIP() << "no usable GPU";
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int wkind = 0; wkind < 4; ++wkind) {
      run_case<2>(prec, 1000, wkind, 11 + wkind);
      run_case<3>(prec, 1537, wkind, 23 + wkind);
      run_case<5>(prec, 700, wkind, 37 + wkind);
    }
  run_case<4>(Precision::Float32, 513, 2, 5);
  run_case<6>(Precision::Float64, 300, 1, 6);
}

// Histograms too large for shared memory take the global-memory path: the same bits.
TEST(WeightsGpu, GlobalHistogramMatchesCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no usable GPU";
  const Data d = make_data(3, 2000, 2, 99);
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  Control ctl;
  ctl.threads = 4;
  const SdhProblem sp = make_sdh(d.view(), 5000, 0, false, Precision::Float32);
  const WeightedCounts c = cpu->sdh_weighted(sp, d.w.data(), ctl);
  const WeightedCounts g = gpu_weighted(d, Precision::Float32, 5000, &sp.params, 0, 0, c.scale);
  expect_same(g, c, "5000 buckets");
}

}  // namespace
}  // namespace gpu2bs
