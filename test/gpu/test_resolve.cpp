// Resolution of cell pairs (kernels/resolve.cu): gpu2bs.sdh_method = resolve gives exactly the
// brute-force histogram / count. GPU resolve vs GPU brute vs CPU resolve, bit for bit, on
// random, clustered, lattice (exact ties at bucket edges) and coincident points, both
// precisions, derived and explicit widths.
#include "core/density_map.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// The walk's stop size of the GPU calls below (0: the tuning table's).
unsigned long long g_min_pairs = 0;

std::vector<uint64_t> sdh_with(Engine* e, const ref::Points& pts, Precision prec, int nb,
                               double width, SdhMethod m, ResolveStats* st = nullptr) {
  const SdhProblem p = make_sdh(pts.view(), nb, width, width > 0, prec);
  Ctl ctl;
  ctl.overrides.resolve_min_pairs = g_min_pairs;
  ctl.sdh_method = m;
  ctl.resolve_stats = st;
  return e->sdh(p, ctl);
}

uint64_t count_with(Engine* e, const ref::Points& pts, Precision prec, double r, SdhMethod m,
                    ResolveStats* st = nullptr) {
  auto p = make_pair_count(pts.view(), r, prec);
  Ctl ctl;
  ctl.overrides.resolve_min_pairs = g_min_pairs;
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

// The walk's stop size (EngineOverrides::resolve_min_pairs) moves the work entries between
// levels: the tuning table's stop size, tiny cells (lanes mostly padding), cells of about 32
// points, and cells of hundreds of points (cell a in several chunks of 32 lanes); every one must
// give the brute-force answer.
TEST(Resolve, StopSizes) {
  REQUIRE_GPU();
  for (unsigned long long mp : {0ull, 16ull, 1024ull, 300000ull}) {
    g_min_pairs = mp;
    for (Precision prec : {Precision::Float32, Precision::Float64})
      for (int dims : {2, 3}) {
        char what[96];
        snprintf(what, sizeof what, "min_pairs=%llu d=%d %s", mp, dims, pname(prec));
        const size_t n = 20000;
        resolve_sdh_case(ref::uniform(n, dims, 11), prec, 100, 0, false, what);
        resolve_sdh_case(ref::uniform(n, dims, 12), prec, 7, 0, false, what);
        resolve_sdh_case(ref::clustered(n, dims, 13), prec, 50, 0, false, what);
        resolve_sdh_case(ref::clustered(n, dims, 14), prec, 40, 0.02, false, what);
        resolve_sdh_case(ref::lattice(n, dims, 15, 24), prec, 30, 1.0, false, what);
        resolve_count_case(ref::uniform(n, dims, 16), prec, 0.03, false, what);
        resolve_count_case(ref::lattice(n, dims, 17, 24), prec, 3.0, false, what);
      }
  }
  g_min_pairs = 0;
}

// Both tests of the work kernel: entries with a cell of fewer than 64 points take the one-sided
// point test, larger ones the two-sided test. Stop sizes of 1024 pairs (cells of about 32
// points), 300,000 pairs (hundreds) and the tuning table's, on uniform and clustered points (the
// clustered ones mix both sizes in one call), with 60 and 5 buckets (in 3-D only few buckets
// leave cell pairs of hundreds of points within the fast path's three buckets); each answer
// equals GPU brute force, CPU resolution and, within the pairs near a bucket edge or r, the
// float64 reference, and both tests must have taken entries in every dimension, for the SDH
// and the pair count.
TEST(Resolve, BothWorkPaths) {
  REQUIRE_GPU();
  const size_t n = 12000;
  for (int dims : {2, 3})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      uint64_t sdh_one = 0, sdh_two = 0, cnt_one = 0, cnt_two = 0;
      const ref::Points sets[2] = {ref::uniform(n, dims, 21),
                                   ref::clustered(n, dims, 22, 8, 0.05)};
      for (int si = 0; si < 2; ++si) {
        const ref::Points& pts = sets[si];
        for (int nb : {60, 5}) {
          const SdhParams sp = make_sdh_params(nb, 0, false, compute_bounds(pts.view()), prec);
          const ref::SdhRef want = ref::sdh(pts, sp, prec);
          g_min_pairs = 0;
          const auto cpu_h = sdh_with(cpu(), pts, prec, nb, 0, SdhMethod::Resolve);
          const auto brute_h = sdh_with(gpu(), pts, prec, nb, 0, SdhMethod::Brute);
          EXPECT_LE(ref::histogram_disagreement(cpu_h, want), 2 * want.near);
          for (unsigned long long mp : {0ull, 1024ull, 300000ull}) {
            g_min_pairs = mp;
            char what[96];
            snprintf(what, sizeof what, "set=%d nb=%d min_pairs=%llu d=%d %s", si, nb, mp, dims,
                     pname(prec));
            ResolveStats st;
            EXPECT_EQ(sdh_with(gpu(), pts, prec, nb, 0, SdhMethod::Resolve, &st), cpu_h) << what;
            EXPECT_EQ(sdh_with(gpu(), pts, prec, nb, 0, SdhMethod::Resolve), brute_h) << what;
            EXPECT_EQ(st.resolved_pairs + st.examined_pairs, uint64_t(n) * (n - 1) / 2) << what;
            sdh_one += st.one_sided_entries;
            sdh_two += st.two_sided_entries;
          }
        }
        const double r = 0.04;
        const auto want_count = ref::pair_count(pts, r, prec);
        g_min_pairs = 0;
        const uint64_t cpu_c = count_with(cpu(), pts, prec, r, SdhMethod::Resolve);
        EXPECT_EQ(cpu_c, count_with(gpu(), pts, prec, r, SdhMethod::Brute));
        const uint64_t dc =
            cpu_c > want_count.first ? cpu_c - want_count.first : want_count.first - cpu_c;
        EXPECT_LE(dc, want_count.second);
        for (unsigned long long mp : {0ull, 1024ull, 300000ull}) {
          g_min_pairs = mp;
          char what[96];
          snprintf(what, sizeof what, "set=%d r=%g min_pairs=%llu d=%d %s", si, r, mp, dims,
                   pname(prec));
          ResolveStats sc;
          EXPECT_EQ(count_with(gpu(), pts, prec, r, SdhMethod::Resolve, &sc), cpu_c) << what;
          cnt_one += sc.one_sided_entries;
          cnt_two += sc.two_sided_entries;
        }
      }
      g_min_pairs = 0;
      EXPECT_GT(sdh_one, 0u) << "d=" << dims << " " << pname(prec);
      EXPECT_GT(sdh_two, 0u) << "d=" << dims << " " << pname(prec);
      EXPECT_GT(cnt_one, 0u) << "d=" << dims << " " << pname(prec);
      EXPECT_GT(cnt_two, 0u) << "d=" << dims << " " << pname(prec);
      printf("d=%d %s: work entries one-sided/two-sided: sdh %llu/%llu, count %llu/%llu\n", dims,
             pname(prec), (unsigned long long)sdh_one, (unsigned long long)sdh_two,
             (unsigned long long)cnt_one, (unsigned long long)cnt_two);
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

// A work entry of more than 2^32 point pairs (two leaf cells of 66,000 coincident-ish points
// each, whose distances straddle a bucket edge and the radius): its counts take the 64-bit warp
// sums. GPU resolve = GPU brute force, and the entry is computed, not resolved whole.
TEST(Resolve, EntriesBeyond32BitPairs) {
  REQUIRE_GPU();
  const size_t m = 66000;
  ref::Points pts;
  pts.dims = 2;
  pts.c.assign(2, std::vector<double>());
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> u(0.0, 1e-4);
  for (double base : {0.1, 0.5})
    for (size_t i = 0; i < m; ++i) {
      pts.c[0].push_back(base + u(rng));
      pts.c[1].push_back(base + u(rng));
    }
  pts.c[0].push_back(1.0);  // an outlier stretches the box: cells of ~0.0035, one per cluster
  pts.c[1].push_back(1.0);
  const double centre = 0.4 * std::sqrt(2.0);  // distance of the clusters' corners
  g_min_pairs = 0;
  // Float32 only: the entry is one warp's (4.4e9 pairs, seconds of one warp).
  for (Precision prec : {Precision::Float32}) {
    ResolveStats st;
    const auto h = sdh_with(gpu(), pts, prec, 20, centre / 10, SdhMethod::Resolve, &st);
    EXPECT_EQ(h, sdh_with(gpu(), pts, prec, 20, centre / 10, SdhMethod::Brute)) << pname(prec);
    // Cell level: the cross pair is one work entry (pairs that the entry's point-by-box test
    // settles count as resolved: the points whose range to a staged box misses the edge).
    EXPECT_GE(st.examined_pairs, uint64_t(m) * m / 2) << pname(prec);
    EXPECT_GT(h[9], 0u) << pname(prec);
    EXPECT_GT(h[10], 0u) << pname(prec);
    ResolveStats sc;
    const uint64_t c = count_with(gpu(), pts, prec, centre, SdhMethod::Resolve, &sc);
    EXPECT_EQ(c, count_with(gpu(), pts, prec, centre, SdhMethod::Brute)) << pname(prec);
    EXPECT_GE(sc.examined_pairs, uint64_t(m) * m / 2) << pname(prec);
    EXPECT_GT(c, 2 * (uint64_t(m) * (m - 1) / 2)) << pname(prec);  // both clusters and some across
    // Every pair is resolved (a cell pair whole, or a point against a staged box) or examined
    // once, and only the cross entry is examined: the clusters' own pairs and the outlier's
    // resolve whole.
    const uint64_t all = uint64_t(pts.n()) * (pts.n() - 1) / 2;
    EXPECT_EQ(st.resolved_pairs + st.examined_pairs, all) << pname(prec);
    EXPECT_EQ(sc.resolved_pairs + sc.examined_pairs, all) << pname(prec);
    EXPECT_LE(st.examined_pairs, uint64_t(m) * m) << pname(prec);
    EXPECT_LE(sc.examined_pairs, uint64_t(m) * m) << pname(prec);
    printf("%s: sdh examined %llu of %llu, count examined %llu, count %llu, h[9] %llu h[10] %llu\n",
           pname(prec), (unsigned long long)st.examined_pairs,
           (unsigned long long)(st.examined_pairs + st.resolved_pairs),
           (unsigned long long)sc.examined_pairs, (unsigned long long)c,
           (unsigned long long)h[9], (unsigned long long)h[10]);
  }
}

// Points whose float64 coordinates take at least kParallelUploadBytes go to the device through
// the engine's threads (each converts slices into its own part of the staging halves): 2,000,003
// points in 3-D (48 MB, in slices whose size follows the thread count and the staging halves,
// the last one short) on 4 threads. The GPU count (resolution and the grid path) equals the CPU engine's, which reads
// the float64 input directly.
TEST(Resolve, ThreadedUploadEqualsCpu) {
  REQUIRE_GPU();
  const size_t n = 2000003;
  const ref::Points pts = ref::uniform(n, 3, 61);
  ASSERT_GE(n * 3 * sizeof(double), cuda_tuning::kParallelUploadBytes);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const PairCountProblem p = make_pair_count(pts.view(), 0.02, prec);
    uint64_t got[3];
    const SdhMethod how[3] = {SdhMethod::Resolve, SdhMethod::Brute, SdhMethod::Resolve};
    for (int i = 0; i < 3; ++i) {
      Ctl ctl;
      ctl.threads = std::max(ctl.threads, 4);
      ctl.sdh_method = how[i];
      got[i] = (i < 2 ? gpu() : cpu())->pair_count(p, ctl);
    }
    EXPECT_EQ(got[0], got[2]) << pname(prec);
    EXPECT_EQ(got[1], got[2]) << pname(prec);
    EXPECT_GT(got[2], uint64_t(n) * 10) << pname(prec);  // ~34 neighbours a point at r = 0.02
    printf("%s: count %llu\n", pname(prec), (unsigned long long)got[2]);
  }
}

// The device map goes only as deep as the walk can split: on uniform points it stops at the
// first level whose cells hold at most sqrt(stop size) points (3-D, 16384 pairs: 128 points;
// 30,000 points: level 3, cells of ~59, where the full depth of ~4 points a cell is level 5);
// where a cell there holds more (slab-shaped points) it goes one level deeper, and on clustered
// points it keeps every level. Either way the count equals GPU brute force, CPU resolution and,
// within the pairs near r, the float64 reference, and every pair is counted once.
TEST(Resolve, MapDepthFollowsTheWalk) {
  REQUIRE_GPU();
  const size_t n = 30000;
  const double r = 0.03;
  // Stop size 16384 pairs: levels whose cells hold at most 128 points end the walk (reset to
  // the tuning table's on every exit).
  g_min_pairs = 16384;
  struct Reset {
    ~Reset() { g_min_pairs = 0; }
  } reset;
  ref::Points slab = ref::uniform(n, 3, 33);
  for (double& z : slab.c[2]) z *= 0.125;  // a 1 x 1 x 1/8 box: half the cube's cells stay empty
  const ref::Points sets[3] = {ref::uniform(n, 3, 31), slab, ref::clustered(n, 3, 32, 8, 0.05)};
  // Uniform: the first level of at most 128 points a cell in the cube, 8^3 cells of ~59 points
  // (levels 0..3). The slab: 8 x 8 x 1 cells of ~469 points there, so one level deeper (16 x 16
  // x 2 cells of ~59). Clustered: a cluster's densest cell holds more than 128 points at every
  // level above the leaves, so the map goes to its full depth.
  const int full =
      density_geometry(n, compute_bounds(sets[2].view()), cuda_tuning::kResolveLeafPoints).leaf;
  const int want_levels[3] = {int(std::ceil(std::log2(double(n) / 128.0) / 3)) + 1,
                              int(std::ceil(std::log2(double(n) / 128.0) / 3)) + 2, full + 1};
  ASSERT_LT(want_levels[1], full + 1);  // the slab must not need the full depth
  for (int si = 0; si < 3; ++si)
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      char what[64];
      snprintf(what, sizeof what, "set=%d %s", si, pname(prec));
      const ref::Points& pts = sets[si];
      ResolveStats st;
      const uint64_t c = count_with(gpu(), pts, prec, r, SdhMethod::Resolve, &st);
      EXPECT_EQ(st.levels, want_levels[si]) << what;
      EXPECT_EQ(c, count_with(gpu(), pts, prec, r, SdhMethod::Brute)) << what;
      EXPECT_EQ(c, count_with(cpu(), pts, prec, r, SdhMethod::Resolve)) << what;
      const auto want = ref::pair_count(pts, r, prec);
      const uint64_t d = c > want.first ? c - want.first : want.first - c;
      EXPECT_LE(d, want.second) << what;
      EXPECT_EQ(st.resolved_pairs + st.examined_pairs, uint64_t(n) * (n - 1) / 2) << what;
      printf("%s: map levels %d, build %.4f s, walk %.4f s\n", what, st.levels, st.build_s,
             st.walk_s);
    }
  g_min_pairs = 0;
}

}  // namespace
