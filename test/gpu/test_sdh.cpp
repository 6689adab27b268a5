// Spatial distance histogram on the CUDA engine: bit for bit against the CPU engine and within
// the near-edge pairs of the float64 reference; every privatization; the fast bucket function
// over all 2^32 float bit patterns; the privatization model.
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

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

}  // namespace
