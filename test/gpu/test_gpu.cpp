// Differential tests of the CUDA engine: bit for bit against the CPU engine (histograms equal,
// counts equal, join pair sets equal with identical distances), and both against the float64
// reference of test/common/reference.h, where disagreement is allowed only on near-boundary
// pairs. Also: drain/resume of the paged output buffer, max_pairs, cancel, memory limit,
// engine facts. Every GPU test skips (GTEST_SKIP) on a machine without a usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/grid.h"
#include "kernels/host_api.h"
#include "kernels/tuning.h"

using namespace gpu2bs;


namespace {

using Clock = std::chrono::steady_clock;

std::string g_why;

Engine* gpu() {
  static Engine* e = cuda_engine(&g_why);
  return e;
}

Engine* cpu() {
  static std::unique_ptr<Engine> e = make_cpu_engine();
  return e.get();
}

int threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

#define REQUIRE_GPU()                                          \
  do {                                                         \
    if (!gpu()) GTEST_SKIP() << "no usable GPU: " << g_why;    \
  } while (0)

const char* pname(Precision p) { return p == Precision::Float32 ? "f32" : "f64"; }

// ---- data ------------------------------------------------------------------------------------

// All points equal.
ref::Points same_point(size_t n, int dims, double v = 0.25) {
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n, v));
  return p;
}

// Integer lattice points in [0, side)^dims (many equal distances, exactly on edges).
ref::Points lattice(size_t n, int dims, uint64_t seed, int side) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, side - 1);
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = u(rng);
  return p;
}

// Points drawn from a small set of distinct points (duplicates).
ref::Points few_distinct(size_t n, int dims, uint64_t seed, size_t distinct) {
  auto base = ref::uniform(distinct, dims, seed);
  std::mt19937_64 rng(seed + 7);
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    size_t s = rng() % distinct;
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = base.c[size_t(k)][s];
  }
  return p;
}

// eps for about `nb` neighbours per point of n uniform points in the unit cube.
double eps_for(size_t n, int dims, double nb) {
  const double unit_ball[7] = {0, 2, M_PI, 4.18879, 4.9348, 5.26379, 5.16771};
  return std::pow(nb / (double(std::max<size_t>(n, 1)) * unit_ball[dims]), 1.0 / dims);
}

// ---- engines ---------------------------------------------------------------------------------

// Code paths the running test forces: every Control a test builds starts from them.
EngineOverrides& forced() {
  static EngineOverrides o;
  return o;
}

struct Ctl : Control {
  Ctl() {
    threads = ::threads();
    overrides = forced();
  }
};

std::vector<uint64_t> run_sdh(Engine* e, const ref::Points& pts, Precision prec, int nb,
                              double width) {
  SdhProblem p;
  p.pts = pts.view();
  p.prec = prec;
  p.params = make_sdh_params(nb, width, width > 0, compute_bounds(p.pts), prec);
  Ctl ctl;
  return e->sdh(p, ctl);
}

uint64_t run_count(Engine* e, const ref::Points& pts, Precision prec, double r) {
  auto p = make_pair_count(pts.view(), r, prec);
  Ctl ctl;
  return e->pair_count(p, ctl);
}

struct Collect : PairSink {
  std::vector<PairRecord> v;
  size_t calls = 0;
  void consume(const PairRecord* p, size_t n) override {
    ++calls;
    v.insert(v.end(), p, p + n);
  }
};

using Pair3 = std::tuple<uint32_t, uint32_t, double>;

// Join pairs, normalized (i < j for a self-join) and sorted.
std::vector<Pair3> normalized(const std::vector<PairRecord>& v, bool self) {
  std::vector<Pair3> out;
  out.reserve(v.size());
  for (auto& r : v) {
    uint32_t i = r.i, j = r.j;
    if (self && i > j) std::swap(i, j);
    out.emplace_back(i, j, r.dist);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Pair3> run_join(Engine* e, const ref::Points& a, const ref::Points* b, double eps,
                            Precision prec, Control* ctl_in = nullptr, uint64_t max_pairs = 0) {
  PointsView bv;
  if (b) bv = b->view();
  auto p = make_simjoin(a.view(), b ? &bv : nullptr, eps, prec, max_pairs);
  Ctl local;
  Control& ctl = ctl_in ? *ctl_in : local;
  Collect sink;
  e->simjoin(p, sink, ctl);
  EXPECT_EQ(ctl.stats.pairs_emitted, sink.v.size());
  return normalized(sink.v, b == nullptr);
}

// First difference of two join results, for messages.
std::string first_diff(const std::vector<Pair3>& x, const std::vector<Pair3>& y) {
  char buf[256];
  size_t n = std::min(x.size(), y.size());
  for (size_t k = 0; k < n; ++k) {
    if (x[k] != y[k]) {
      snprintf(buf, sizeof buf, "at %zu: (%u,%u,%.17g) vs (%u,%u,%.17g)", k, std::get<0>(x[k]),
               std::get<1>(x[k]), std::get<2>(x[k]), std::get<0>(y[k]), std::get<1>(y[k]),
               std::get<2>(y[k]));
      return buf;
    }
  }
  snprintf(buf, sizeof buf, "sizes %zu vs %zu", x.size(), y.size());
  return buf;
}

std::string first_diff(const std::vector<uint64_t>& x, const std::vector<uint64_t>& y) {
  char buf[160];
  for (size_t k = 0; k < std::min(x.size(), y.size()); ++k)
    if (x[k] != y[k]) {
      snprintf(buf, sizeof buf, "bucket %zu: %llu vs %llu", k, (unsigned long long)x[k],
               (unsigned long long)y[k]);
      return buf;
    }
  snprintf(buf, sizeof buf, "sizes %zu vs %zu", x.size(), y.size());
  return buf;
}

// Join result vs the float64 reference: every disagreement is a near-boundary pair.
void check_join_vs_reference(const std::vector<Pair3>& got, const ref::Points& a,
                             const ref::Points* b, double eps, Precision prec) {
  auto want = ref::simjoin(a, b, eps, prec);
  std::set<std::pair<uint32_t, uint32_t>> g;
  for (auto& t : got) g.insert({std::get<0>(t), std::get<1>(t)});
  EXPECT_EQ(g.size(), got.size()) << "duplicate pairs";
  size_t missing = 0, extra = 0, unexplained = 0;
  for (auto& pr : want.pairs)
    if (!g.count(pr)) {
      ++missing;
      if (!want.near.count(pr)) ++unexplained;
    }
  for (auto& pr : g)
    if (!want.pairs.count(pr)) {
      ++extra;
      if (!want.near.count(pr)) ++unexplained;
    }
  EXPECT_EQ(unexplained, 0u) << "missing " << missing << " extra " << extra << " near "
                             << want.near.size();
}

// ---- engine facts ----------------------------------------------------------------------------

TEST(CudaEngine, BuildAndInitialization) {
  EXPECT_TRUE(built_with_cuda());
  std::string why;
  Engine* e = cuda_engine(&why);
  if (!e) {
    EXPECT_FALSE(why.empty());
    printf("CUDA engine unavailable: %s\n", why.c_str());
    EXPECT_TRUE(cuda_info().empty());
    GTEST_SKIP() << why;
  }
  EXPECT_EQ(e, cuda_engine(nullptr)) << "the engine is cached";
  EXPECT_EQ(e->name().rfind("cuda (", 0), 0u) << e->name();
  printf("engine: %s\n", e->name().c_str());
  auto rows = cuda_info();
  std::map<std::string, std::string> m(rows.begin(), rows.end());
  for (auto& r : rows) printf("  %-24s %s\n", r.first.c_str(), r.second.c_str());
  for (const char* k : {"gpu_device", "gpu_sm_count", "gpu_compute_capability",
                        "gpu_memory_total_mb", "gpu_memory_free_mb", "gpu_memory_in_use_mb",
                        "cuda_driver_version", "cuda_runtime_version"})
    EXPECT_TRUE(m.count(k)) << k;
}

// The privatization model (pure host code, runs without a GPU): with the H100 constants it
// keeps the most copies that do not lower the occupancy, one copy for large histograms, and
// global memory only when one copy does not fit.
TEST(PrivatizationModel, H100Table) {
  cuda::PrivMachine m;  // H100 defaults
  m.reg_blocks_per_sm = 4;  // the SDH kernel's register limit (63 registers x 256 threads)
  int prev = -1;
  printf("H100 model: buckets -> private copies per block (0 = global memory)\n");
  for (int nb = 1; nb <= 60000; nb += (nb < 100 ? 1 : nb < 3000 ? 7 : 997)) {
    auto c = cuda::choose_privatization(nb, 256, 512 * 12, 1e6, m);
    const int h = c.global ? 0 : c.copies;
    EXPECT_LE(c.smem_bytes, m.smem_per_block_optin);
    // no feasible choice with more copies has a higher occupancy
    if (!c.global) {
      const double mine = cuda::priv_estimate(nb, c.copies, 256, 512 * 12, 1e6, m);
      for (int k = 1; k <= 32; k *= 2) {
        const double e = cuda::priv_estimate(nb, k, 256, 512 * 12, 1e6, m);
        if (e > 0) {
          EXPECT_LE(mine, e) << nb << " copies " << c.copies << " vs " << k;
        }
      }
    }
    if (h != prev) printf("  from %6d buckets: %d\n", nb, h);
    prev = h;
  }
  EXPECT_EQ(prev, 0);
  EXPECT_EQ(cuda::choose_privatization(1, 256, 6144, 1e6, m).copies, 32);
  EXPECT_EQ(cuda::choose_privatization(500, 256, 6144, 1e6, m).copies, 16);
  EXPECT_EQ(cuda::choose_privatization(30000, 256, 6144, 1e6, m).copies, 1);
  EXPECT_FALSE(cuda::choose_privatization(56000, 256, 6144, 1e6, m).global);
  EXPECT_TRUE(cuda::choose_privatization(57000, 256, 6144, 1e6, m).global);
  // Forcing works while the copies fit; beyond, global memory.
  EXPECT_EQ(cuda::choose_privatization(500, 256, 6144, 1e6, m, 4).copies, 4);
  EXPECT_TRUE(cuda::choose_privatization(50000, 256, 6144, 1e6, m, 32).global);
  EXPECT_TRUE(cuda::choose_privatization(10, 256, 6144, 1e6, m, -1).global);
}

// ---- SDH -------------------------------------------------------------------------------------

struct SdhCase {
  size_t n;
  int dims;
  Precision prec;
  int nb;
  bool explicit_width;
  uint64_t seed;
};

void sdh_case(const ref::Points& pts, Precision prec, int nb, double width, bool check_ref,
              const std::string& what) {
  auto c = run_sdh(cpu(), pts, prec, nb, width);
  auto g = run_sdh(gpu(), pts, prec, nb, width);
  ASSERT_EQ(g.size(), size_t(nb)) << what;
  EXPECT_TRUE(g == c) << what << ": GPU vs CPU differ, " << first_diff(g, c)
                      << " copies=" << cuda::last_run().sdh_copies;
  if (width <= 0) {
    uint64_t total = 0;
    for (auto v : g) total += v;
    EXPECT_EQ(total, uint64_t(pts.n()) * (pts.n() ? pts.n() - 1 : 0) / 2) << what;
  }
  if (check_ref) {
    SdhParams sp = make_sdh_params(nb, width, width > 0, compute_bounds(pts.view()), prec);
    auto want = ref::sdh(pts, sp, prec);
    uint64_t diff = ref::histogram_disagreement(g, want);
    EXPECT_LE(diff, 2 * want.near) << what << ": vs float64 reference";
  }
}

TEST(Sdh, RandomSmallAllBucketCounts) {
  REQUIRE_GPU();
  for (size_t n : {0, 1, 2, 3, 1000, 5000})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64})
        for (int nb : {1, 10, 500, 5000, 50000})
          for (bool ew : {false, true}) {
            if (n <= 3 && (nb == 5000 || prec == Precision::Float64)) continue;
            uint64_t seed = 11 + n + dims;
            auto pts = ref::uniform(n, dims, seed, -3, 5);
            // explicit width: about half the pairs beyond the last bucket
            double width = ew ? 8.0 * std::sqrt(double(dims)) / (2.0 * nb) : 0;
            char what[128];
            snprintf(what, sizeof what, "n=%zu d=%d %s nb=%d %s", n, dims, pname(prec), nb,
                     ew ? "explicit" : "derived");
            sdh_case(pts, prec, nb, width, n <= 5000, what);
          }
}

TEST(Sdh, SeedsAndHigherDims) {
  REQUIRE_GPU();
  for (uint64_t seed : {1, 2, 3})
    for (int dims : {2, 3, 4, 5, 6})
      for (Precision prec : {Precision::Float32, Precision::Float64}) {
        auto pts = ref::uniform(1500 + 37 * seed, dims, seed);
        char what[96];
        snprintf(what, sizeof what, "seed=%llu d=%d %s", (unsigned long long)seed, dims,
                 pname(prec));
        sdh_case(pts, prec, 100, 0, true, what);
      }
}

TEST(Sdh, Large100k) {
  REQUIRE_GPU();
  auto p3 = ref::uniform(100000, 3, 5);
  sdh_case(p3, Precision::Float32, 500, 0, false, "100k 3-D f32 500");
  sdh_case(p3, Precision::Float32, 50000, 0, false, "100k 3-D f32 50000");
  sdh_case(p3, Precision::Float64, 500, 0, false, "100k 3-D f64 500");
  auto p2 = ref::uniform(100000, 2, 6);
  sdh_case(p2, Precision::Float32, 10, 0.01, false, "100k 2-D f32 10 explicit");
}

TEST(Sdh, DuplicatesAndLattice) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    sdh_case(same_point(3000, 3), prec, 10, 0, true, "all equal, derived width");
    sdh_case(same_point(3000, 3), prec, 10, 0.5, true, "all equal, explicit width");
    sdh_case(few_distinct(4000, 3, 9, 20), prec, 500, 0, true, "20 distinct points");
    // integer lattice, width 1: many distances exactly on bucket edges
    sdh_case(lattice(4000, 3, 4, 12), prec, 30, 1.0, true, "lattice width 1");
    sdh_case(lattice(4000, 2, 5, 40), prec, 57, 1.0, true, "2-D lattice width 1");
    sdh_case(lattice(3000, 3, 6, 9), prec, 7, 0, true, "lattice derived width");
  }
}

TEST(Sdh, EveryPrivatizationGivesTheSameHistogram) {
  REQUIRE_GPU();
  auto pts = ref::uniform(5000, 3, 21);
  for (int nb : {1, 10, 500, 5000})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto want = run_sdh(cpu(), pts, prec, nb, 0);
      for (int copies : {-1, 1, 2, 4, 8, 16, 32}) {
        forced().sdh_copies = copies;
        auto g = run_sdh(gpu(), pts, prec, nb, 0);
        int used = cuda::last_run().sdh_copies;
        forced().sdh_copies = 0;
        EXPECT_TRUE(g == want) << "nb=" << nb << " " << pname(prec) << " copies=" << copies
                               << " (used " << used << "): " << first_diff(g, want);
      }
    }
}

// The float32 fast path (thresholds + approximate square root) against sdh_bucket, for every
// float d2 (all 2^32 bit patterns: +0, denormals, every value at and around every threshold,
// +inf, NaNs, negatives), over bucket counts and widths: derived from boxes, explicit, random,
// the largest 1/width the path accepts (2^40) and 0 (all points equal).
TEST(SdhFastBucket, EveryFloat) {
  REQUIRE_GPU();
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> lg(-6.0, 9.0);
  int checked = 0;
  auto t0 = Clock::now();
  for (int nb : {1, 2, 3, 7, 10, 30, 50, 57, 100, 500, 1000, 5000, 50000, 65536}) {
    std::vector<float> invs = {float(nb / std::sqrt(3.0)), float(nb / (8 * std::sqrt(3.0))),
                               float(nb / (8 * std::sqrt(2.0))), 1.0f, 100.0f,
                               float(std::pow(10.0, lg(rng))), float(std::pow(10.0, lg(rng)))};
    if (nb == 1 || nb == 500 || nb == 65536) {
      invs.push_back(1099511627776.0f);  // 2^40
      invs.push_back(0.0f);
    }
    for (float inv_w : invs)
      for (bool clamp : {true, false}) {
        const int cap = clamp ? nb - 1 : nb;
        // 0: clamped variant, every d2; then unclamped with the largest d2 just past the last
        // bucket and well past it
        const double d2maxes[3] = {0, inv_w > 0 ? std::pow((cap + 0.5) / inv_w, 2) : 1e30,
                                   inv_w > 0 ? std::pow((cap * 1.2 + 10) / inv_w, 2) : 1e30};
        for (double d2max : d2maxes) {
          unsigned first = 0;
          const long long bad = cuda::sdh_fast_check_all(nb, inv_w, clamp, &first, d2max);
          if (bad == -2) continue;  // unclamped variant not applicable (too far past)
          ASSERT_GE(bad, 0) << "fast path refused nb=" << nb << " inv_w=" << inv_w;
          EXPECT_EQ(bad, 0) << "nb=" << nb << " inv_w=" << inv_w << " clamp=" << clamp
                            << " d2max=" << d2max << ": first mismatch at d2 bits 0x" << std::hex
                            << first << " (" << __builtin_bit_cast(float, first) << ")";
          ++checked;
        }
      }
  }
  // Outside the proven range the path must refuse (the exact kernel runs instead).
  EXPECT_EQ(cuda::sdh_fast_check_all(65537, 1.0f, true, nullptr), -1);
  EXPECT_EQ(cuda::sdh_fast_check_all(10, 2199023255552.0f, true, nullptr), -1);
  printf("%d configurations x 2^32 values of d2 in %.2f s\n", checked,
         std::chrono::duration<double>(Clock::now() - t0).count());
}

// The differential tests above run the fast path for float32 up to 65536 buckets when the
// thresholds and one copy fit in shared memory: check that it is taken, and on edges.
TEST(SdhFastBucket, TakenAndEqualOnEdges) {
  REQUIRE_GPU();
  auto pts = ref::uniform(20000, 3, 91);
  for (int nb : {1, 10, 500, 5000}) {
    sdh_case(pts, Precision::Float32, nb, 0, false, "fast nb=" + std::to_string(nb));
    EXPECT_TRUE(cuda::sdh_last_fast()) << nb;
    sdh_case(pts, Precision::Float32, nb, 0.7 / nb, false,
             "fast explicit nb=" + std::to_string(nb));
    EXPECT_TRUE(cuda::sdh_last_fast()) << nb;
  }
  // integer lattice, width 1 and 0.5: distances exactly on bucket edges
  sdh_case(lattice(30000, 3, 12, 20), Precision::Float32, 40, 1.0, false, "lattice width 1");
  EXPECT_TRUE(cuda::sdh_last_fast());
  sdh_case(lattice(30000, 2, 13, 64), Precision::Float32, 200, 0.5, false, "lattice width 0.5");
  EXPECT_TRUE(cuda::sdh_last_fast());
  sdh_case(lattice(30000, 3, 14, 20), Precision::Float32, 35, 0, false, "lattice derived");
  EXPECT_TRUE(cuda::sdh_last_fast());
  // 50000 buckets: the thresholds do not fit, the exact kernel runs
  sdh_case(pts, Precision::Float32, 50000, 0, false, "nb=50000");
  EXPECT_FALSE(cuda::sdh_last_fast());
  // both layouts (thresholds per copy, one shared table), every copy count, clamp or not
  auto small = ref::uniform(4000, 3, 92);
  for (int layout : {1, 2})
    for (int nb : {7, 500, 3000})
      for (int copies : {1, 4, 32})
        for (double w : {0.0, 0.9 / nb}) {
          forced().sdh_layout = layout;
          forced().sdh_copies = copies;
          auto g = run_sdh(gpu(), small, Precision::Float32, nb, w);
          const bool fast = cuda::sdh_last_fast(), sh = cuda::sdh_last_shared_thresholds();
          const int used = cuda::last_run().sdh_copies;
          forced().sdh_copies = 0;
          forced().sdh_layout = 0;
          auto c = run_sdh(cpu(), small, Precision::Float32, nb, w);
          EXPECT_TRUE(g == c) << "layout " << layout << " nb " << nb << " copies " << copies
                              << " (used " << used << ") w " << w << ": " << first_diff(g, c);
          if (used == copies) {
            EXPECT_TRUE(fast);
            EXPECT_EQ(sh, layout == 2);
          }
        }
}

// ---- pair count ------------------------------------------------------------------------------

void count_case(const ref::Points& pts, Precision prec, double r, bool check_ref,
                const std::string& what) {
  const uint64_t want = run_count(cpu(), pts, prec, r);
  for (int path : {0, 1, 2}) {
    forced().count_path = path;
    const uint64_t got = run_count(gpu(), pts, prec, r);
    const int used = cuda::last_run().count_path;
    forced().count_path = 0;
    EXPECT_EQ(got, want) << what << " path=" << path << " (used " << used << ")";
  }
  if (check_ref) {
    auto rr = ref::pair_count(pts, r, prec);
    const uint64_t d = want > rr.first ? want - rr.first : rr.first - want;
    EXPECT_LE(d, rr.second) << what << ": vs float64 reference";
  }
}

TEST(PairCount, Random) {
  REQUIRE_GPU();
  for (size_t n : {0, 1, 2, 3, 1000, 5000})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64})
        for (double nbrs : {0.5, 20.0, 300.0}) {
          auto pts = ref::uniform(n, dims, 31 + n, 0, 1);
          const double r = eps_for(n, dims, nbrs);
          char what[96];
          snprintf(what, sizeof what, "n=%zu d=%d %s r=%g", n, dims, pname(prec), r);
          count_case(pts, prec, r, true, what);
        }
}

TEST(PairCount, SpecialRadiiDimsAndDuplicates) {
  REQUIRE_GPU();
  auto pts = ref::uniform(3000, 3, 41);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    count_case(pts, prec, 0.0, true, "r=0");
    count_case(pts, prec, INFINITY, true, "r=inf");
    count_case(pts, prec, 10.0, true, "r beyond the box");
    count_case(same_point(2000, 3), prec, 0.0, true, "all equal r=0");
    count_case(few_distinct(3000, 2, 3, 50), prec, 0.05, true, "50 distinct points");
    count_case(lattice(4000, 3, 8, 10), prec, 2.0, true, "lattice r=2 (on edges)");
    count_case(lattice(4000, 3, 8, 10), prec, 3.0, true, "lattice r=3 (on edges)");
    for (int dims : {4, 5, 6}) {
      auto p = ref::uniform(2500, dims, 50 + dims);
      count_case(p, prec, eps_for(2500, dims, 15), true, "dims " + std::to_string(dims));
    }
  }
}

// Cells with more than 256 points (r = 0.3 in the unit cube): both GPU paths agree with each
// other and with the float64 reference.
TEST(PairCount, CrowdedCellsVsReference) {
  REQUIRE_GPU();
  auto pts = ref::uniform(20000, 3, 63);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto want = ref::pair_count(pts, 0.3, prec);
    uint64_t got[3] = {};
    for (int path : {1, 2}) {
      forced().count_path = path;
      got[path] = run_count(gpu(), pts, prec, 0.3);
      forced().count_path = 0;
      const uint64_t d = got[path] > want.first ? got[path] - want.first : want.first - got[path];
      EXPECT_LE(d, want.second) << pname(prec) << " path " << path << ": " << got[path]
                                << " vs reference " << want.first;
    }
    EXPECT_EQ(got[1], got[2]) << pname(prec);
  }
}

// Sparse sets whose CPU grid is widened (about one point per cell of side r) on a dense
// lattice (uniform) and on a hashed one (skewed, wide box), 2-D to 6-D, and the 1e6-point 3-D
// case of the benchmarks: the CPU engine's grid count (forward rows of three cells) equals
// every GPU path bit for bit.
TEST(PairCount, SparseWidenedGridsMatchCpu) {
  REQUIRE_GPU();
  for (int dims = 2; dims <= 6; ++dims)
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      const size_t n = 60000;
      auto u = ref::uniform(n, dims, 70 + dims);
      count_case(u, prec, eps_for(n, dims, 1.0), false, "sparse uniform d=" + std::to_string(dims));
      auto e = ref::exponential(n, dims, 80 + dims, 30.0);
      count_case(e, prec, eps_for(n, dims, 1.0) / 30, false, "sparse skewed d=" + std::to_string(dims));
    }
  auto big = ref::uniform(1000000, 3, 1);
  count_case(big, Precision::Float32, 0.01, false, "1e6 3-D r=0.01 f32");
}

TEST(PairCount, Large100k) {
  REQUIRE_GPU();
  auto p3 = ref::uniform(100000, 3, 61);
  count_case(p3, Precision::Float32, eps_for(100000, 3, 30), false, "100k 3-D f32");
  count_case(p3, Precision::Float64, eps_for(100000, 3, 30), false, "100k 3-D f64");
  count_case(p3, Precision::Float32, 0.3, false, "100k 3-D f32 r=0.3");
  auto p2 = ref::uniform(100000, 2, 62);
  count_case(p2, Precision::Float32, eps_for(100000, 2, 10), false, "100k 2-D f32");
}

// ---- similarity join -------------------------------------------------------------------------

void join_case(const ref::Points& a, const ref::Points* b, double eps, Precision prec,
               bool check_ref, const std::string& what) {
  auto want = run_join(cpu(), a, b, eps, prec);
  auto got = run_join(gpu(), a, b, eps, prec);
  EXPECT_TRUE(got == want) << what << ": GPU vs CPU differ, " << first_diff(got, want)
                           << " (host grid " << cuda::last_run().host_grid << ")";
  if (check_ref) check_join_vs_reference(got, a, b, eps, prec);
}

TEST(Simjoin, RandomSelfJoin) {
  REQUIRE_GPU();
  for (size_t n : {0, 1, 2, 3, 1000, 5000})
    for (int dims : {2, 3, 4, 5, 6})
      for (Precision prec : {Precision::Float32, Precision::Float64}) {
        if (n >= 5000 && dims >= 5) continue;
        auto pts = ref::uniform(n, dims, 70 + n + dims);
        const double eps = eps_for(n, dims, 20);
        char what[96];
        snprintf(what, sizeof what, "self n=%zu d=%d %s eps=%g", n, dims, pname(prec), eps);
        join_case(pts, nullptr, eps, prec, true, what);
      }
}

TEST(Simjoin, TwoRelations) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto a = ref::uniform(2000, dims, 80 + dims);
      auto b = ref::uniform(3000, dims, 90 + dims, 0.2, 1.1);
      const double eps = eps_for(3000, dims, 20);
      join_case(a, &b, eps, prec, true, "two relations d=" + std::to_string(dims));
      auto one = ref::uniform(1, dims, 5);
      join_case(one, &b, 0.3, prec, true, "one point vs many");
      join_case(b, &one, 0.3, prec, true, "many vs one point");
    }
}

TEST(Simjoin, DuplicatesLatticeAndInfiniteEps) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    join_case(same_point(2500, 3), nullptr, 0.1, prec, true, "all equal");
    join_case(few_distinct(3000, 2, 4, 40), nullptr, 0.01, prec, true, "40 distinct points");
    join_case(lattice(3000, 3, 12, 15), nullptr, 1.0, prec, true, "lattice eps=1");
    join_case(lattice(3000, 2, 13, 60), nullptr, 2.0, prec, true, "2-D lattice eps=2");
    join_case(ref::uniform(1200, 3, 14), nullptr, INFINITY, prec, true, "eps=inf");
    join_case(ref::uniform(1500, 4, 15), nullptr, 10.0, prec, true, "eps beyond the box");
  }
}

TEST(Simjoin, Large100k) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6}) {
    auto pts = ref::uniform(100000, dims, 100 + dims);
    join_case(pts, nullptr, eps_for(100000, dims, 30), Precision::Float32, false,
              "100k self d=" + std::to_string(dims));
  }
  auto pts = ref::uniform(100000, 3, 103);
  join_case(pts, nullptr, eps_for(100000, 3, 30), Precision::Float64, false, "100k f64");
}

TEST(Simjoin, HostGridFallback) {
  REQUIRE_GPU();
  // Forced: the host-built grid gives the same result.
  forced().host_grid = true;
  auto pts = ref::uniform(4000, 3, 110);
  auto got = run_join(gpu(), pts, nullptr, eps_for(4000, 3, 20), Precision::Float32);
  const bool host = cuda::last_run().host_grid;
  forced().host_grid = false;
  EXPECT_TRUE(host);
  EXPECT_TRUE(got == run_join(cpu(), pts, nullptr, eps_for(4000, 3, 20), Precision::Float32));
  // Natural: 6-D with a far outlier needs more than 64 key bits.
  auto out = ref::uniform(3000, 6, 111);
  for (int k = 0; k < 6; ++k) out.c[size_t(k)][0] = 1e7;
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto g = run_join(gpu(), out, nullptr, 0.2, prec);
    EXPECT_TRUE(cuda::last_run().host_grid) << "key bits should exceed 64";
    auto c = run_join(cpu(), out, nullptr, 0.2, prec);
    EXPECT_TRUE(g == c) << first_diff(g, c);
  }
}

TEST(Simjoin, TinyPoolManyDrains) {
  REQUIRE_GPU();
  auto pts = ref::uniform(5000, 3, 120);
  const double eps = eps_for(5000, 3, 40);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  for (size_t pages : {1, 2, 7}) {
    Ctl ctl;
    ctl.page_pairs = 64;
    ctl.max_pages = pages;
    auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << "pages=" << pages << ": " << first_diff(got, want);
    EXPECT_EQ(lr.pool_pages, pages);
    EXPECT_EQ(lr.page_pairs, 64u);
    EXPECT_GE(lr.drains, int(want.size() / (64 * pages)));
    printf("pool %zu x 64 pairs: %zu pairs, %d launches, %d drains\n", pages, got.size(),
           lr.launches, lr.drains);
  }
  // Two relations through a tiny pool.
  auto b = ref::uniform(3000, 3, 121);
  auto want2 = run_join(cpu(), pts, &b, eps, Precision::Float64);
  Ctl ctl;
  ctl.page_pairs = 100;
  ctl.max_pages = 3;
  auto got2 = run_join(gpu(), pts, &b, eps, Precision::Float64, &ctl);
  EXPECT_TRUE(got2 == want2) << first_diff(got2, want2);
}

TEST(Simjoin, MaxPairsExceeded) {
  REQUIRE_GPU();
  auto pts = ref::uniform(5000, 3, 130);
  const double eps = eps_for(5000, 3, 20);
  const size_t total = run_join(cpu(), pts, nullptr, eps, Precision::Float32).size();
  ASSERT_GT(total, 100u);
  std::string cpu_msg, gpu_msg;
  try {
    run_join(cpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 2);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
    cpu_msg = e.what();
  }
  for (size_t pages : {0, 2}) {
    Ctl ctl;
    ctl.max_pages = pages;
    ctl.page_pairs = pages ? 64 : ctl.page_pairs;
    try {
      run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl, total / 2);
      ADD_FAILURE() << "max_pairs not enforced";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
      gpu_msg = e.what();
    }
    EXPECT_EQ(gpu_msg, cpu_msg);
  }
  // Exactly at the limit: no error.
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total);
  EXPECT_EQ(got.size(), total);
}

// ---- load balancing: strategies x lanes per query point ----------------------------------------

const JoinBalance kBalances[] = {JoinBalance::WorkQueue, JoinBalance::Cell,
                                 JoinBalance::SortByWorkload, JoinBalance::Auto};
const char* bname(JoinBalance b) {
  return b == JoinBalance::WorkQueue ? "workqueue"
         : b == JoinBalance::Cell    ? "cell"
         : b == JoinBalance::Auto    ? "auto"
                                     : "sortbywl";
}
int log2_of(int k) {
  int e = 0;
  while ((1 << e) < k) ++e;
  return e;
}

// The GPU join under every strategy and every k in `ks` (0 = automatic) equals the CPU join
// (`want`); candidate pairs examined are the same for all and equal the workload estimate, and
// the compare loop issued exactly the steps the estimate predicts for the K used (also across
// stop/resume). pages > 0: a pool of `pages` pages of 64 pairs (many drains and resumes).
void balance_case(const ref::Points& a, const ref::Points* b, double eps, Precision prec,
                  const std::vector<int>& ks, size_t pages, const std::string& what) {
  const auto want = run_join(cpu(), a, b, eps, prec);
  uint64_t examined = 0;
  bool first = true;
  for (JoinBalance bal : kBalances)
    for (int k : ks) {
      Ctl ctl;
      ctl.join_balance = bal;
      ctl.join_threads_per_point = k;
      if (pages) {
        ctl.page_pairs = 64;
        ctl.max_pages = pages;
      }
      const auto got = run_join(gpu(), a, b, eps, prec, &ctl);
      const cuda::LastRun lr = cuda::last_run();
      const std::string tag = what + " " + pname(prec) + " " + bname(bal) + " k=" +
                              std::to_string(k) + " (used " + std::to_string(lr.join_k) + ")";
      EXPECT_TRUE(got == want) << tag << ": GPU vs CPU differ, " << first_diff(got, want);
      // auto runs the measured GPU default (kernels/tuning.h kJoinAutoBalance).
      if (bal == JoinBalance::Auto) bal = cuda_tuning::kJoinAutoBalance;
      EXPECT_EQ(lr.join_balance, int(bal)) << tag;
      if (k) {
        EXPECT_EQ(lr.join_k, k) << tag;
      }
      EXPECT_TRUE(lr.join_k >= 1 && lr.join_k <= 32 && (lr.join_k & (lr.join_k - 1)) == 0) << tag;
      if (first) examined = ctl.stats.pairs_examined;
      first = false;
      EXPECT_EQ(ctl.stats.pairs_examined, examined) << tag;
      if (bal == JoinBalance::Cell) {  // no estimate
        EXPECT_EQ(lr.join_work, 0u) << tag;
        if (k == 0) {
          EXPECT_EQ(lr.join_k, cuda_tuning::kJoinAutoKWithoutEstimate) << tag;
        }
      } else {  // the estimate ran
        EXPECT_EQ(lr.join_work, ctl.stats.pairs_examined) << tag;
        EXPECT_EQ(lr.join_slots, 32 * lr.join_steps[log2_of(lr.join_k)]) << tag;
        EXPECT_LE(ctl.stats.pairs_examined, lr.join_slots) << tag;
        if (k == 0) {
          EXPECT_EQ(lr.join_k, cuda::join_auto_threads_per_point(lr.join_steps)) << tag;
        }
      }
      if (pages && want.size() > 4 * 64 * pages) {
        EXPECT_GT(lr.drains, 2) << tag;
      }
    }
}

const std::vector<int> kAllK = {0, 1, 2, 4, 8, 16, 32};

TEST(JoinBalance, UniformEveryStrategyAndK) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 4, 5, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto pts = ref::uniform(2500, dims, 300 + dims);
      balance_case(pts, nullptr, eps_for(2500, dims, 20), prec, kAllK, 0,
                   "uniform self d=" + std::to_string(dims));
    }
}

TEST(JoinBalance, ExponentialSkew) {
  REQUIRE_GPU();
  // lambda = 40 as the paper's Expo sets: most points within 0.1 of the origin, a sparse tail.
  for (int dims : {2, 3, 4, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto pts = ref::exponential(4000, dims, 310 + dims, 40.0);
      const double eps = eps_for(4000, dims, 20) / 20.0;  // ~20 neighbours at the mean density
      balance_case(pts, nullptr, eps, prec, kAllK, 0, "exponential self d=" + std::to_string(dims));
    }
}

TEST(JoinBalance, DuplicatesAndCrowdedCells) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    balance_case(few_distinct(3000, 2, 320, 25), nullptr, 0.01, prec, kAllK, 0, "25 distinct 2-D");
    balance_case(few_distinct(2000, 5, 321, 12), nullptr, 0.2, prec, kAllK, 0, "12 distinct 5-D");
    balance_case(same_point(1100, 3), nullptr, 0.1, prec, {0, 1, 8, 32}, 0, "all equal");
    balance_case(lattice(2000, 3, 322, 12), nullptr, 1.0, prec, {0, 2, 16}, 0, "lattice");
  }
}

TEST(JoinBalance, TwoRelations) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto a = ref::exponential(1500, dims, 330 + dims, 40.0);
      auto b = ref::uniform(2500, dims, 340 + dims, 0.0, 0.1);
      const double eps = eps_for(2500, dims, 20) * 0.1;
      balance_case(a, &b, eps, prec, kAllK, 0, "two relations expo x uniform d=" +
                                                   std::to_string(dims));
      auto d = few_distinct(800, dims, 350 + dims, 10);
      balance_case(d, &a, 0.05, prec, {0, 1, 4, 32}, 0, "duplicates x expo d=" +
                                                          std::to_string(dims));
    }
}

TEST(JoinBalance, TinyPoolsStopAndResume) {
  REQUIRE_GPU();
  // Many pool-full stops in the middle of chunks and sub-chunks: every stop position of every K.
  auto u = ref::uniform(4000, 3, 360);
  auto e = ref::exponential(4000, 2, 361, 40.0);
  auto dup = few_distinct(2500, 4, 362, 30);
  auto u2 = ref::uniform(3000, 2, 364, 0.0, 0.1);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    balance_case(u, nullptr, eps_for(4000, 3, 40), prec, kAllK, 2, "tiny pool uniform 3-D");
    balance_case(e, nullptr, eps_for(4000, 2, 40) / 20.0, prec, {1, 4, 32}, 1,
                 "tiny pool expo 2-D");
    balance_case(dup, nullptr, 0.1, prec, {0, 2, 8, 32}, 3, "tiny pool duplicates 4-D");
    balance_case(e, &u2, eps_for(3000, 2, 40) * 0.1, prec, {1, 16, 32}, 2,
                 "tiny pool two relations");
  }
  auto six = ref::uniform(2000, 6, 363);
  balance_case(six, nullptr, eps_for(2000, 6, 30), Precision::Float32, {1, 8, 32}, 2,
               "tiny pool 6-D");
}

TEST(JoinBalance, GridPairCountEveryStrategyAndK) {
  REQUIRE_GPU();
  auto e = ref::exponential(20000, 3, 370, 40.0);
  const double r = eps_for(20000, 3, 30) / 20.0;
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const uint64_t want = run_count(cpu(), e, prec, r);
    forced().count_path = 2;
    for (JoinBalance bal : kBalances)
      for (int k : kAllK) {
        auto p = make_pair_count(e.view(), r, prec);
        Ctl ctl;
        ctl.join_balance = bal;
        ctl.join_threads_per_point = k;
        EXPECT_EQ(gpu()->pair_count(p, ctl), want) << bname(bal) << " k=" << k;
        EXPECT_EQ(cuda::last_run().count_path, 2);
      }
    forced().count_path = 0;
  }
}

TEST(JoinBalance, RejectsOtherLaneCountsAndAutoRule) {
  REQUIRE_GPU();
  auto pts = ref::uniform(500, 2, 380);
  for (int k : {3, 64, -1}) {
    Ctl ctl;
    ctl.join_threads_per_point = k;
    try {
      run_join(gpu(), pts, nullptr, 0.05, Precision::Float32, &ctl);
      ADD_FAILURE() << "k=" << k << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidParameter) << e.what();
    }
  }
  // The rule picks the cheapest predicted K; ties go to more lanes per point.
  unsigned long long flat[6] = {100, 100, 100, 100, 100, 100};
  EXPECT_EQ(cuda::join_auto_threads_per_point(flat), 32);
  for (int e = 0; e < 6; ++e) {
    unsigned long long s[6] = {1000000, 1000000, 1000000, 1000000, 1000000, 1000000};
    s[e] = 1000;
    EXPECT_EQ(cuda::join_auto_threads_per_point(s), 1 << e);
  }
}

// ---- cancel, memory, stats ---------------------------------------------------------------------

// interrupt_pending() turns true 100 ms after the first poll.
struct LateCancel : Control {
  LateCancel() { overrides = forced(); }
  Clock::time_point start{};
  bool started = false;
  Clock::time_point fired{};
  bool interrupt_pending() override {
    auto now = Clock::now();
    if (!started) {
      started = true;
      start = now;
    }
    if (now - start >= std::chrono::milliseconds(100)) {
      if (fired == Clock::time_point{}) fired = now;
      return true;
    }
    return false;
  }
};

void expect_cancel(const std::function<void(Control&)>& fn, const char* what) {
  LateCancel ctl;
  auto t0 = Clock::now();
  try {
    fn(ctl);
    ADD_FAILURE() << what << ": finished before the cancel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted) << what << ": " << e.what();
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_NE(ctl.fired, Clock::time_point{}) << what;
  const double after = std::chrono::duration<double>(Clock::now() - ctl.fired).count();
  printf("%s: cancelled %.1f ms after the interrupt (%.1f ms in all)\n", what, after * 1e3,
         total * 1e3);
  EXPECT_LT(after, 1.0) << what;
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u) << what << ": device memory not freed";
}

TEST(Cancel, StopsWithinOneSecondAndFreesMemory) {
  REQUIRE_GPU();
  auto big = ref::uniform(3000000, 3, 140);
  expect_cancel(
      [&](Control& ctl) {
        SdhProblem p;
        p.pts = big.view();
        p.params = make_sdh_params(500, 0, false, compute_bounds(p.pts), p.prec);
        gpu()->sdh(p, ctl);
      },
      "sdh 3M");
  expect_cancel(
      [&](Control& ctl) {
        ctl.overrides.count_path = 1;
        gpu()->pair_count(make_pair_count(big.view(), 0.5, Precision::Float64), ctl);
      },
      "pair count tiles 3M f64");
  auto mid = ref::uniform(300000, 3, 141);
  expect_cancel(
      [&](Control& ctl) {
        auto p = make_simjoin(mid.view(), nullptr, INFINITY, Precision::Float32, 0);
        struct Null : PairSink {
          void consume(const PairRecord*, size_t) override {}
        } sink;
        gpu()->simjoin(p, sink, ctl);
      },
      "simjoin 300k eps=inf");
  // The engine still answers correctly afterwards.
  auto small = ref::uniform(2000, 3, 142);
  EXPECT_EQ(run_sdh(gpu(), small, Precision::Float32, 64, 0),
            run_sdh(cpu(), small, Precision::Float32, 64, 0));
}

// ---- batched join output (issue 5) ------------------------------------------------------------

// Restores the batched join's forced paths when a test ends (also after a failed assertion).
struct JoinHooks {
  JoinHooks() { reset(); }
  ~JoinHooks() { reset(); }
  // The defaults: batched, tuning.h streams, the sampled estimate as is.
  static void reset() {
    forced().join_serial_drain = false;
    forced().join_streams = 0;
    forced().join_estimate_scale = 1.0;
  }
};

// 2-D points x = k, y = 0 (k < n; eps 0.5 pairs none of them, one cell and one work item each)
// plus `cluster` equal points at (at, 5): all their pairs, in a cell whose items come right after
// the line point `at` in cell order, between the items a strided sample takes.
ref::Points line_with_cluster(size_t n, size_t at, size_t cluster) {
  ref::Points p;
  p.dims = 2;
  p.c.assign(2, std::vector<double>());
  for (size_t k = 0; k < n; ++k) {
    p.c[0].push_back(double(k));
    p.c[1].push_back(0.0);
  }
  for (size_t k = 0; k < cluster; ++k) {
    p.c[0].push_back(double(at));
    p.c[1].push_back(5.0);
  }
  return p;
}

// Counts pairs and sums a hash of each record (an order-independent checksum of the multiset).
struct ChecksumSink : PairSink {
  uint64_t count = 0, sum = 0;
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      uint64_t bits;
      std::memcpy(&bits, &p[k].dist, 8);
      sum += ((uint64_t(p[k].i) << 32) | p[k].j) * 0x9E3779B97F4A7C15ull + (bits ^ (bits >> 29));
    }
    count += n;
  }
};

TEST(Batch, EstimateSizesTheBanks) {
  REQUIRE_GPU();
  JoinHooks hooks;
  // Uniform data: the sampled estimate is close, and the result equals the CPU engine's.
  auto pts = ref::uniform(100000, 3, 200);
  const double eps = eps_for(100000, 3, 100);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32);
  auto lr = cuda::last_run();
  EXPECT_TRUE(got == want) << first_diff(got, want);
  EXPECT_EQ(lr.join_pairs, want.size());
  const double ratio = double(lr.join_estimate) / double(want.size());
  printf("uniform 100k: estimate %llu, real %zu (ratio %.3f), %zu sample items, sample %.3f ms, "
         "%d batches on %d streams, banks %zu x %zu pairs, %d launches, %d drains\n",
         lr.join_estimate, want.size(), ratio, lr.sample_items, lr.sample_ms, lr.join_batches,
         lr.join_streams, lr.bank_pages, lr.page_pairs, lr.launches, lr.drains);
  EXPECT_NEAR(ratio, 1.0, 0.15);
  EXPECT_GT(lr.sample_items, 0u);
  EXPECT_GE(lr.join_batches, 2) << "~5 M pairs are split for overlap";
  // A join of ~100 pairs: the result banks stay small (no pool sized from the memory budget).
  auto few = ref::uniform(2000, 3, 201);
  cuda::reset_engine_peak_bytes();
  auto small = run_join(gpu(), few, nullptr, eps_for(2000, 3, 0.1), Precision::Float32);
  lr = cuda::last_run();
  EXPECT_TRUE(small == run_join(cpu(), few, nullptr, eps_for(2000, 3, 0.1), Precision::Float32));
  const double bank_mb = double(lr.pool_pages * lr.page_pairs * sizeof(PairRecord)) / 1048576.0;
  printf("%zu pairs: estimate %llu, banks %.1f MB in all, peak device memory %.1f MB\n",
         small.size(), lr.join_estimate, bank_mb, double(cuda::engine_peak_bytes()) / 1048576.0);
  EXPECT_LT(bank_mb, 16.0);
  EXPECT_LT(cuda::engine_peak_bytes(), size_t(32) << 20);
  // A memory limit bounds the engine's device memory; the result stays exact.
  Ctl lim;
  lim.device_memory_limit = size_t(80) << 20;
  cuda::reset_engine_peak_bytes();
  auto bounded = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &lim);
  lr = cuda::last_run();
  EXPECT_TRUE(bounded == want) << first_diff(bounded, want);
  EXPECT_LE(cuda::engine_peak_bytes(), lim.device_memory_limit);
  printf("limit 80 MB: peak %.1f MB, %d batches, banks %zu x %zu pairs, %d drains\n",
         double(cuda::engine_peak_bytes()) / 1048576.0, lr.join_batches, lr.bank_pages,
         lr.page_pairs, lr.drains);
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(Batch, TinyBanksManyOverflows) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(5000, 3, 210);
  auto b = ref::uniform(3000, 3, 211);
  const double eps = eps_for(5000, 3, 40);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  auto want2 = run_join(cpu(), pts, &b, eps, Precision::Float64);
  for (int streams : {1, 2, 3})
    for (size_t pages : {3, 7, 12}) {
      forced().join_streams = streams;
      Ctl ctl;
      ctl.page_pairs = 64;
      ctl.max_pages = pages;
      auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl);
      auto lr = cuda::last_run();
      EXPECT_TRUE(got == want) << streams << " streams, " << pages << " pages: "
                               << first_diff(got, want);
      EXPECT_EQ(lr.join_streams, int(std::min<size_t>(size_t(streams), pages)));
      EXPECT_EQ(lr.pool_pages, pages);
      EXPECT_GT(lr.join_batches, 10);
      EXPECT_GE(lr.drains, int(want.size() / (64 * pages)));
      Ctl ctl2;
      ctl2.page_pairs = 100;
      ctl2.max_pages = pages;
      auto got2 = run_join(gpu(), pts, &b, eps, Precision::Float64, &ctl2);
      EXPECT_TRUE(got2 == want2) << "two relations, " << streams << " streams: "
                                 << first_diff(got2, want2);
    }
  // Banks of one page each: every batch overflows its bank many times.
  forced().join_streams = 3;
  forced().join_estimate_scale = 1e-6;
  Ctl one;
  one.page_pairs = 64;
  one.max_pages = 3;
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &one);
  EXPECT_TRUE(got == want) << first_diff(got, want);
  printf("3 banks of 64 pairs, estimate x 1e-6: %d batches, %d launches, %d drains\n",
         cuda::last_run().join_batches, cuda::last_run().launches, cuda::last_run().drains);
}

TEST(Batch, EstimateFarOff) {
  REQUIRE_GPU();
  JoinHooks hooks;
  // Clustered data the sample misses (or, in another item order, hits and extrapolates).
  auto pts = line_with_cluster(100000, 1000, 64);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto want = run_join(cpu(), pts, nullptr, 0.5, prec);
    ASSERT_EQ(want.size(), 64u * 63 / 2);
    auto got = run_join(gpu(), pts, nullptr, 0.5, prec);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << first_diff(got, want);
    printf("line + cluster %s: estimate %llu, real %zu, %d batches, %d drains\n", pname(prec),
           lr.join_estimate, got.size(), lr.join_batches, lr.drains);
    EXPECT_TRUE(double(lr.join_estimate) < 0.5 * double(got.size()) ||
                double(lr.join_estimate) > 2.0 * double(got.size()))
        << "the sample should miss (or overweight) the cluster: estimate " << lr.join_estimate;
  }
  // Estimates forced far too low and far too high: the same pairs.
  auto u = ref::uniform(60000, 3, 220);
  const double eps = eps_for(60000, 3, 60);
  auto want = run_join(cpu(), u, nullptr, eps, Precision::Float32);
  for (double scale : {1e-4, 0.1, 10.0, 1e3}) {
    forced().join_estimate_scale = scale;
    Ctl lim;
    lim.device_memory_limit = size_t(200) << 20;
    auto got = run_join(gpu(), u, nullptr, eps, Precision::Float32, &lim);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << "scale " << scale << ": " << first_diff(got, want);
    printf("estimate x %g: estimate %llu real %zu, %d batches, %d launches, %d drains\n", scale,
           lr.join_estimate, got.size(), lr.join_batches, lr.launches, lr.drains);
  }
}

TEST(Batch, ConfigurationsGiveTheSamePairs) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto a = ref::uniform(80000, 3, 230);
  auto b = ref::uniform(50000, 3, 231, 0.1, 0.9);
  const double eps = eps_for(80000, 3, 120);
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (bool self : {true, false}) {
      const ref::Points* bp = self ? nullptr : &b;
      auto want = run_join(cpu(), a, bp, eps, prec);
      uint64_t sum0 = 0;
      for (int conf = 0; conf < 5; ++conf) {
        // 0 serial drain, 1..3 streams, 4: 3 streams under a 64 MB device memory limit
        forced().join_serial_drain = conf == 0;
        forced().join_streams = conf == 0 ? 0 : std::min(conf, 3);
        Ctl ctl;
        if (conf == 4) ctl.device_memory_limit = size_t(64) << 20;
        auto got = run_join(gpu(), a, bp, eps, prec, &ctl);
        auto lr = cuda::last_run();
        EXPECT_TRUE(got == want) << pname(prec) << (self ? " self" : " two relations")
                                 << " config " << conf << ": " << first_diff(got, want);
        // The raw records (orientation and all) too, through a checksum.
        PointsView bv;
        if (bp) bv = bp->view();
        auto p = make_simjoin(a.view(), bp ? &bv : nullptr, eps, prec, 0);
        Ctl c2;
        if (conf == 4) c2.device_memory_limit = size_t(64) << 20;
        ChecksumSink cs;
        gpu()->simjoin(p, cs, c2);
        if (conf == 0) sum0 = cs.sum;
        EXPECT_EQ(cs.sum, sum0) << "config " << conf;
        EXPECT_EQ(cs.count, want.size());
        printf("%s %s config %d: %zu pairs, estimate %llu, %d batches on %d streams, %d drains\n",
               pname(prec), self ? "self" : "two", conf, got.size(), lr.join_estimate,
               lr.join_batches, lr.join_streams, lr.drains);
      }
    }
}

TEST(Batch, MaxResultRowsStops) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(60000, 3, 240);
  const double eps = eps_for(60000, 3, 150);
  const size_t total = run_join(cpu(), pts, nullptr, eps, Precision::Float32).size();
  std::string cpu_msg;
  try {
    run_join(cpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 3);
  } catch (const Error& e) {
    cpu_msg = e.what();
  }
  ASSERT_FALSE(cpu_msg.empty());
  for (int streams : {1, 3}) {
    forced().join_streams = streams;
    try {
      run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 3);
      ADD_FAILURE() << "max_pairs not enforced with " << streams << " streams";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
      EXPECT_EQ(std::string(e.what()), cpu_msg);
    }
    EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
    auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total);
    EXPECT_EQ(got.size(), total);
  }
}

TEST(Batch, CancelMidJoin) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(1000000, 3, 250);
  auto p = make_simjoin(pts.view(), nullptr, eps_for(1000000, 3, 1000), Precision::Float32, 0);
  for (int streams : {1, 3}) {
    forced().join_streams = streams;
    ChecksumSink sink;
    expect_cancel([&](Control& ctl) { gpu()->simjoin(p, sink, ctl); },
                  streams == 1 ? "batched join 1 stream, 5e8 pairs" : "batched join 3 streams");
    printf("  %llu pairs reached the sink before the cancel\n", (unsigned long long)sink.count);
    EXPECT_GT(sink.count, 0u) << "cancelled before any batch was drained";
    EXPECT_LT(sink.count, uint64_t(4e8));
  }
}

TEST(Memory, LimitIsEnforcedAndEverythingIsFreed) {
  REQUIRE_GPU();
  auto pts = ref::uniform(1000000, 3, 150);
  Ctl ctl;
  ctl.device_memory_limit = 1 << 20;  // 1 MiB: the points alone need 12 MB
  SdhProblem p;
  p.pts = pts.view();
  p.params = make_sdh_params(100, 0, false, compute_bounds(p.pts), p.prec);
  try {
    gpu()->sdh(p, ctl);
    ADD_FAILURE() << "memory limit not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
  // A join whose pool must fit a small limit still completes.
  auto q = ref::uniform(20000, 3, 151);
  const double eps = eps_for(20000, 3, 30);
  Ctl small;
  small.device_memory_limit = 24 << 20;
  auto got = run_join(gpu(), q, nullptr, eps, Precision::Float32, &small);
  EXPECT_TRUE(got == run_join(cpu(), q, nullptr, eps, Precision::Float32));
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(Stats, Filled) {
  REQUIRE_GPU();
  auto pts = ref::uniform(20000, 3, 160);
  {
    SdhProblem p;
    p.pts = pts.view();
    p.params = make_sdh_params(500, 0, false, compute_bounds(p.pts), p.prec);
    Ctl ctl;
    gpu()->sdh(p, ctl);
    EXPECT_EQ(ctl.stats.pairs_examined, uint64_t(20000) * 19999 / 2);
    EXPECT_GT(ctl.stats.kernel_s, 0);
    EXPECT_GT(ctl.stats.transfer_s, 0);
    EXPECT_GT(cuda::last_run().kernel_ms, 0);
  }
  {
    auto p = make_simjoin(pts.view(), nullptr, eps_for(20000, 3, 30), Precision::Float32, 0);
    Ctl ctl;
    Collect sink;
    gpu()->simjoin(p, sink, ctl);
    EXPECT_EQ(ctl.stats.pairs_emitted, sink.v.size());
    EXPECT_GE(ctl.stats.pairs_examined, sink.v.size());
    EXPECT_GT(ctl.stats.prepare_s, 0);
    EXPECT_GT(ctl.stats.kernel_s, 0);
    printf("join stats: prepare %.3f ms transfer %.3f ms kernel %.3f ms merge %.3f ms, "
           "examined %llu emitted %llu, %d launches %d drains\n",
           ctl.stats.prepare_s * 1e3, ctl.stats.transfer_s * 1e3, ctl.stats.kernel_s * 1e3,
           ctl.stats.merge_s * 1e3, (unsigned long long)ctl.stats.pairs_examined,
           (unsigned long long)ctl.stats.pairs_emitted, cuda::last_run().launches,
           cuda::last_run().drains);
  }
}

// Small cases of every kernel and path, for compute-sanitizer (memcheck, racecheck):
//   compute-sanitizer --tool memcheck build/test_gpu --gtest_filter='Sanitizer.*'
TEST(Sanitizer, SmallEveryPath) {
  REQUIRE_GPU();
  auto pts = ref::uniform(3000, 3, 170);
  auto p2 = ref::uniform(1100, 2, 171);
  auto a3 = ref::uniform(900, 3, 172, 0.3, 0.8);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    for (int copies : {0, -1, 1, 32}) {
      forced().sdh_copies = copies;
      EXPECT_EQ(run_sdh(gpu(), pts, prec, 500, 0), run_sdh(cpu(), pts, prec, 500, 0));
      EXPECT_EQ(run_sdh(gpu(), p2, prec, 7, 0.01), run_sdh(cpu(), p2, prec, 7, 0.01));
    }
    forced().sdh_copies = 0;
    count_case(pts, prec, eps_for(3000, 3, 20), false, "sanitizer count");
    const double eps = eps_for(3000, 3, 20);
    join_case(pts, nullptr, eps, prec, false, "sanitizer self join");
    join_case(a3, &pts, eps, prec, false, "sanitizer two-relation join");
    Ctl ctl;
    ctl.page_pairs = 64;
    ctl.max_pages = 3;
    auto got = run_join(gpu(), pts, nullptr, eps, prec, &ctl);
    EXPECT_TRUE(got == run_join(cpu(), pts, nullptr, eps, prec));
    // every strategy, K at both ends and between, through a tiny pool (stop/resume)
    const auto want = run_join(cpu(), a3, &pts, eps, prec);
    for (JoinBalance bal : kBalances)
      for (int k : {0, 1, 8, 32}) {
        Ctl c2;
        c2.join_balance = bal;
        c2.join_threads_per_point = k;
        c2.page_pairs = 64;
        c2.max_pages = 2;
        EXPECT_TRUE(run_join(gpu(), a3, &pts, eps, prec, &c2) == want) << bname(bal) << k;
      }
    forced().host_grid = true;
    auto hg = run_join(gpu(), p2, nullptr, 0.05, prec);
    forced().host_grid = false;
    EXPECT_TRUE(hg == run_join(cpu(), p2, nullptr, 0.05, prec));
  }
}

}  // namespace

// ---- resolution of cell pairs (kernels/resolve.cu) --------------------------------------------
// gpu2bs.sdh_method = resolve must give exactly the brute-force histogram / count: GPU resolve
// vs GPU brute vs CPU resolve, bit for bit, on random, clustered, lattice (exact ties at bucket
// edges) and coincident points, both precisions, derived and explicit widths.

namespace {

std::vector<uint64_t> sdh_with(Engine* e, const ref::Points& pts, Precision prec, int nb,
                               double width, SdhMethod m, ResolveStats* st = nullptr) {
  SdhProblem p;
  p.pts = pts.view();
  p.prec = prec;
  p.params = make_sdh_params(nb, width, width > 0, compute_bounds(p.pts), prec);
  Ctl ctl;
  ctl.sdh_method = m;
  ctl.resolve_stats = st;
  return e->sdh(p, ctl);
}

uint64_t count_with(Engine* e, const ref::Points& pts, Precision prec, double r, SdhMethod m,
                    ResolveStats* st = nullptr) {
  auto p = make_pair_count(pts.view(), r, prec);
  Ctl ctl;
  ctl.sdh_method = m;
  ctl.resolve_stats = st;
  return e->pair_count(p, ctl);
}

// GPU resolve == GPU brute (and == CPU resolve when `cpu_too`).
void resolve_sdh_case(const ref::Points& pts, Precision prec, int nb, double width, bool cpu_too,
                      const char* what) {
  ResolveStats st;
  const auto r = sdh_with(gpu(), pts, prec, nb, width, SdhMethod::Resolve, &st);
  EXPECT_EQ(r, sdh_with(gpu(), pts, prec, nb, width, SdhMethod::Brute)) << what;
  if (cpu_too) {
    EXPECT_EQ(r, sdh_with(cpu(), pts, prec, nb, width, SdhMethod::Resolve)) << what;
  }
  const uint64_t n = pts.n();
  EXPECT_EQ(st.resolved_pairs + st.examined_pairs, n * (n - 1) / 2) << what;
}

void resolve_count_case(const ref::Points& pts, Precision prec, double r, bool cpu_too,
                        const char* what) {
  const uint64_t c = count_with(gpu(), pts, prec, r, SdhMethod::Resolve);
  EXPECT_EQ(c, count_with(gpu(), pts, prec, r, SdhMethod::Brute)) << what;
  if (cpu_too) {
    EXPECT_EQ(c, count_with(cpu(), pts, prec, r, SdhMethod::Resolve)) << what;
  }
}

}  // namespace

TEST(Resolve, SmallEveryShape) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int dims : {2, 3})
      for (size_t n : {size_t(2), size_t(3), size_t(100), size_t(3000), size_t(10000)}) {
        char what[96];
        snprintf(what, sizeof what, "n=%zu d=%d %s", n, dims, pname(prec));
        resolve_sdh_case(ref::uniform(n, dims, n + 1), prec, 10, 0, true, what);
        resolve_sdh_case(ref::clustered(n, dims, n + 2), prec, 100, 0, true, what);
        resolve_sdh_case(ref::clustered(n, dims, n + 3), prec, 37, 0.01, true, what);
        resolve_sdh_case(ref::lattice(n, dims, n + 4, 12), prec, 20, 1.0, true, what);
        resolve_sdh_case(ref::lattice(n, dims, n + 5, 12), prec, 17, 0, true, what);
        resolve_sdh_case(same_point(n, dims), prec, 10, 0, true, what);
        resolve_sdh_case(ref::uniform(n, dims, n + 6), prec, 20000, 0, n <= 3000, what);
        resolve_count_case(ref::uniform(n, dims, n + 7), prec, 0.05, true, what);
        resolve_count_case(ref::lattice(n, dims, n + 8, 12), prec, 2.0, true, what);
        resolve_count_case(same_point(n, dims), prec, 0.0, true, what);
      }
}

TEST(Resolve, MillionsBitIdenticalToBrute) {
  REQUIRE_GPU();
  const size_t n = size_t(1) << 22;  // 4,194,304
  {
    auto pts = ref::uniform(n, 2, 901);
    ResolveStats st;
    const auto r = sdh_with(gpu(), pts, Precision::Float32, 100, 0, SdhMethod::Resolve, &st);
    EXPECT_EQ(r, sdh_with(gpu(), pts, Precision::Float32, 100, 0, SdhMethod::Brute));
    printf("2-D uniform 4M, 100 buckets: resolved fraction %.4f, build %.3f s, walk %.3f s\n",
           st.resolved_fraction(), st.build_s, st.walk_s);
    EXPECT_EQ(count_with(gpu(), pts, Precision::Float32, 0.01, SdhMethod::Resolve),
              count_with(gpu(), pts, Precision::Float32, 0.01, SdhMethod::Brute));
  }
  {
    auto pts = ref::clustered(n, 3, 902, 16, 0.05);
    EXPECT_EQ(sdh_with(gpu(), pts, Precision::Float32, 50, 0, SdhMethod::Resolve),
              sdh_with(gpu(), pts, Precision::Float32, 50, 0, SdhMethod::Brute));
    EXPECT_EQ(count_with(gpu(), pts, Precision::Float32, 0.01, SdhMethod::Resolve),
              count_with(gpu(), pts, Precision::Float32, 0.01, SdhMethod::Brute));
  }
  {
    auto pts = ref::lattice(n, 3, 903, 64);  // width 1: ties on every square distance
    EXPECT_EQ(sdh_with(gpu(), pts, Precision::Float32, 60, 1.0, SdhMethod::Resolve),
              sdh_with(gpu(), pts, Precision::Float32, 60, 1.0, SdhMethod::Brute));
  }
}
