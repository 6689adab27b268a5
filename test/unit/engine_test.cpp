// CPU engine against the float64 reference (test/common/reference.h): SDH, pair count and
// similarity join on random data and edge cases, both precisions, both instruction-set
// variants bit for bit, cancel and result limits.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <chrono>
#include <thread>

#include "common/reference.h"
#include "core/cpu_kernels.h"
#include "core/engine.h"
#include "core/error.h"

using namespace gpu2bs;

namespace {

// Control with a fixed thread count and optional cancel after a delay.
class TestControl : public Control {
 public:
  explicit TestControl(int t = 2) { threads = t; }
  bool interrupt_pending() override {
    if (cancel_after_ms < 0) return false;
    auto el = std::chrono::steady_clock::now() - start;
    return std::chrono::duration_cast<std::chrono::milliseconds>(el).count() >= cancel_after_ms;
  }
  int cancel_after_ms = -1;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Collects join output as a set of (i, j) (i < j for a self-join) and checks dist values.
class CollectSink : public PairSink {
 public:
  explicit CollectSink(bool self) : self_(self) {}
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      uint32_t i = p[k].i, j = p[k].j;
      if (self_ && i > j) std::swap(i, j);
      auto ins = pairs.insert({i, j});
      if (!ins.second) duplicates++;
      dist[{i, j}] = p[k].dist;
    }
    pages++;
  }
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  std::map<std::pair<uint32_t, uint32_t>, double> dist;
  size_t duplicates = 0, pages = 0;

 private:
  bool self_;
};

struct Case {
  size_t n;
  int dims;
  Precision prec;
};

std::vector<Case> sizes() {
  std::vector<Case> out;
  for (size_t n : {0, 1, 2, 3, 17, 500, 2100})
    for (int d : {2, 3})
      for (Precision p : {Precision::Float32, Precision::Float64}) out.push_back({n, d, p});
  return out;
}

std::vector<uint64_t> run_sdh(const ref::Points& pts, const SdhParams& sp, Precision prec, int threads = 2) {
  SdhProblem prob;
  prob.pts = pts.view();
  prob.params = sp;
  prob.prec = prec;
  TestControl ctl(threads);
  return make_cpu_engine()->sdh(prob, ctl);
}

}  // namespace

TEST(Sdh, MatchesReferenceDerivedWidth) {
  uint64_t seed = 1;
  for (const Case& c : sizes()) {
    for (int nb : {1, 7, 500}) {
      auto pts = ref::uniform(c.n, c.dims, seed++);
      Bounds box = compute_bounds(pts.view());
      SdhParams sp = make_sdh_params(nb, 0, false, box, c.prec);
      auto got = run_sdh(pts, sp, c.prec);
      auto want = ref::sdh(pts, sp, c.prec);
      uint64_t total = 0;
      for (auto v : got) total += v;
      EXPECT_EQ(total, uint64_t(c.n) * (c.n ? c.n - 1 : 0) / 2) << "n=" << c.n;
      uint64_t dis = ref::histogram_disagreement(got, want);
      EXPECT_LE(dis, 2 * want.near) << "n=" << c.n << " dims=" << c.dims << " nb=" << nb;
    }
  }
}

TEST(Sdh, MatchesReferenceExplicitWidthDropsFarPairs) {
  auto pts = ref::uniform(1500, 3, 42, -5, 5);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    Bounds box = compute_bounds(pts.view());
    SdhParams sp = make_sdh_params(20, 0.25, true, box, prec);
    auto got = run_sdh(pts, sp, prec);
    auto want = ref::sdh(pts, sp, prec);
    EXPECT_LE(ref::histogram_disagreement(got, want), 2 * want.near + 1);
    uint64_t total = 0;
    for (auto v : got) total += v;
    EXPECT_LT(total, uint64_t(1500) * 1499 / 2);  // far pairs are not counted
  }
}

TEST(Sdh, BoundaryPairsAreCountedAndRare) {
  // Integer grid: many distances fall exactly on bucket edges of width 1; the float64 engine
  // must match the reference exactly there, since every value is exactly representable.
  ref::Points pts;
  pts.dims = 2;
  pts.c.assign(2, {});
  for (int x = 0; x < 30; ++x)
    for (int y = 0; y < 30; ++y) {
      pts.c[0].push_back(x);
      pts.c[1].push_back(y);
    }
  Bounds box = compute_bounds(pts.view());
  SdhParams sp = make_sdh_params(50, 1.0, true, box, Precision::Float64);
  auto got = run_sdh(pts, sp, Precision::Float64);
  auto want = ref::sdh(pts, sp, Precision::Float64);
  EXPECT_EQ(got, want.hist);
  EXPECT_GT(want.near, 0u);  // the near-boundary counter sees them
}

TEST(Sdh, AllPointsEqualGoToBucketZero) {
  ref::Points pts;
  pts.dims = 3;
  pts.c.assign(3, std::vector<double>(300, 1.25));
  Bounds box = compute_bounds(pts.view());
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    SdhParams sp = make_sdh_params(10, 0, false, box, prec);
    auto got = run_sdh(pts, sp, prec);
    EXPECT_EQ(got[0], 300u * 299 / 2);
    for (size_t k = 1; k < got.size(); ++k) EXPECT_EQ(got[k], 0u);
  }
}

TEST(Sdh, ThreadCountDoesNotChangeResult) {
  auto pts = ref::uniform(3000, 3, 7);
  Bounds box = compute_bounds(pts.view());
  SdhParams sp = make_sdh_params(500, 0, false, box, Precision::Float32);
  auto one = run_sdh(pts, sp, Precision::Float32, 1);
  auto four = run_sdh(pts, sp, Precision::Float32, 4);
  EXPECT_EQ(one, four);
}

TEST(Sdh, InstructionSetVariantsBitIdentical) {
  auto pts = ref::uniform(1024, 3, 9);
  Bounds box = compute_bounds(pts.view());
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    SdhParams sp = make_sdh_params(997, 0, false, box, prec);
    std::vector<float> f[3];
    const float* fc[3];
    const double* dc[3];
    for (int k = 0; k < 3; ++k) {
      for (double v : pts.c[k]) f[k].push_back(float(v));
      fc[k] = f[k].data();
      dc[k] = pts.c[k].data();
    }
    std::vector<uint64_t> a(997), b(997 * 4), b1(997);
    const CpuKernels& g = cpu_kernels_generic();
    const CpuKernels& best = cpu_kernels();
    if (prec == Precision::Float32) {
      g.sdh_f32(3, fc, 0, 1024, 0, 1024, true, sp, a.data(), 1);
      best.sdh_f32(3, fc, 0, 1024, 0, 1024, true, sp, b.data(), 4);
    } else {
      g.sdh_f64(3, dc, 0, 1024, 0, 1024, true, sp, a.data(), 1);
      best.sdh_f64(3, dc, 0, 1024, 0, 1024, true, sp, b.data(), 4);
    }
    for (size_t k = 0; k < b.size(); ++k) b1[k % 997] += b[k];
    EXPECT_EQ(a, b1) << best.isa;
  }
}

TEST(PairCount, GridRowsEqualAllPairsExactly) {
  // The grid path (shared join grid, widened when sparse, forward rows of three cells) counts
  // exactly the pairs the all-pairs kernel counts, in the same arithmetic: 2-D to 6-D, both
  // precisions, uniform and skewed points with duplicates, dense and sparse lattices.
  const auto& kern = cpu_kernels();
  uint64_t seed = 500;
  for (int dims = 2; dims <= 6; ++dims)
    for (Precision prec : {Precision::Float32, Precision::Float64})
      for (int skew = 0; skew < 2; ++skew) {
        const size_t n = 9000;
        auto pts = skew ? ref::exponential(n, dims, seed++, 4.0) : ref::uniform(n, dims, seed++);
        for (size_t i = 0; i < n; i += 11)
          for (int k = 0; k < dims; ++k) pts.c[k][i] = pts.c[k][i / 2];
        const double r = dims <= 3 ? 0.02 : 0.12;
        std::vector<std::vector<float>> f{size_t(dims), std::vector<float>(n)};
        std::vector<std::vector<double>> d{size_t(dims), std::vector<double>(n)};
        const float* fc[kMaxDims] = {};
        const double* dc[kMaxDims] = {};
        for (int k = 0; k < dims; ++k) {
          for (size_t i = 0; i < n; ++i) {
            f[k][i] = float(pts.c[k][i]);
            d[k][i] = pts.c[k][i];
          }
          fc[k] = f[k].data();
          dc[k] = d[k].data();
        }
        auto prob = make_pair_count(pts.view(), r, prec);
        const uint64_t want =
            prec == Precision::Float32
                ? kern.count_f32(dims, fc, 0, n, fc, 0, n, true, prob.r2_f)
                : kern.count_f64(dims, dc, 0, n, dc, 0, n, true, prob.r2);
        for (int threads : {1, 3}) {
          TestControl ctl;
          ctl.threads = threads;
          const uint64_t got = make_cpu_engine()->pair_count(prob, ctl);
          EXPECT_EQ(got, want) << "dims " << dims << " skew " << skew << " threads " << threads;
          EXPECT_LT(ctl.stats.pairs_examined, uint64_t(n) * (n - 1) / 2) << "grid path not taken";
        }
      }
}

TEST(PairCount, MatchesReference) {
  uint64_t seed = 100;
  for (const Case& c : sizes()) {
    for (double r : {0.0, 0.01, 0.1, 0.5, 2.0}) {
      auto pts = ref::uniform(c.n, c.dims, seed++);
      TestControl ctl;
      auto prob = make_pair_count(pts.view(), r, c.prec);
      uint64_t got = make_cpu_engine()->pair_count(prob, ctl);
      auto want = ref::pair_count(pts, r, c.prec);
      uint64_t diff = got > want.first ? got - want.first : want.first - got;
      EXPECT_LE(diff, want.second) << "n=" << c.n << " r=" << r;
    }
  }
}

TEST(PairCount, GridAndTilesAgreeBitForBit) {
  // Small r takes the grid path, r = +inf the tiles; r just past the extent too.
  auto pts = ref::uniform(4000, 3, 5);
  TestControl ctl;
  auto eng = make_cpu_engine();
  uint64_t all = eng->pair_count(make_pair_count(pts.view(), INFINITY, Precision::Float32), ctl);
  EXPECT_EQ(all, 4000u * 3999 / 2);
  for (double r : {0.02, 0.05, 0.3}) {
    auto want = ref::pair_count(pts, r, Precision::Float32);
    uint64_t got = eng->pair_count(make_pair_count(pts.view(), r, Precision::Float32), ctl);
    uint64_t diff = got > want.first ? got - want.first : want.first - got;
    EXPECT_LE(diff, want.second);
  }
}

TEST(PairCount, GridPathWithCrowdedCells) {
  // 12,000 points, r = 0.3: grid cells hold about 320 points, more than one work item's rows,
  // so each cell is split into several items (a pair inside a cell must be counted once).
  auto pts = ref::uniform(12000, 3, 8);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    TestControl ctl;
    uint64_t got = make_cpu_engine()->pair_count(make_pair_count(pts.view(), 0.3, prec), ctl);
    auto want = ref::pair_count(pts, 0.3, prec);
    uint64_t diff = got > want.first ? got - want.first : want.first - got;
    EXPECT_LE(diff, want.second) << got << " vs " << want.first;
  }
}

TEST(Simjoin, SelfJoinMatchesReference) {
  uint64_t seed = 300;
  for (int dims = 2; dims <= 6; ++dims)
    for (Precision prec : {Precision::Float32, Precision::Float64})
      for (size_t n : {0, 1, 2, 50, 1500}) {
        auto pts = ref::uniform(n, dims, seed++);
        double eps = dims <= 3 ? 0.05 : 0.25;
        auto prob = make_simjoin(pts.view(), nullptr, eps, prec, 0);
        CollectSink sink(true);
        TestControl ctl;
        make_cpu_engine()->simjoin(prob, sink, ctl);
        auto want = ref::simjoin(pts, nullptr, eps, prec);
        EXPECT_EQ(sink.duplicates, 0u);
        for (auto& p : sink.pairs) EXPECT_TRUE(want.pairs.count(p) || want.near.count(p));
        for (auto& p : want.pairs) EXPECT_TRUE(sink.pairs.count(p) || want.near.count(p));
        for (auto& [p, d] : sink.dist) EXPECT_NEAR(d, ref::dist(pts, p.first, pts, p.second), 1e-6);
      }
}

// Sparse sets (about one point per cell at side eps) take the widened grid (engine
// sparse_widening: n >= 4096): same pairs as the reference, self and two-relation joins.
TEST(Simjoin, SparseGridWideningKeepsThePairs) {
  for (int dims : {2, 3, 5})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto a = ref::uniform(6000, dims, 40 + dims);
      auto b = ref::uniform(5000, dims, 50 + dims);
      const double eps = dims == 2 ? 0.004 : dims == 3 ? 0.02 : 0.08;
      for (bool self : {true, false}) {
        PointsView bv = b.view();
        auto prob = make_simjoin(a.view(), self ? nullptr : &bv, eps, prec, 0);
        CollectSink sink(self);
        TestControl ctl;
        make_cpu_engine()->simjoin(prob, sink, ctl);
        auto want = ref::simjoin(a, self ? nullptr : &b, eps, prec);
        EXPECT_EQ(sink.duplicates, 0u);
        for (auto& p : sink.pairs) EXPECT_TRUE(want.pairs.count(p) || want.near.count(p));
        for (auto& p : want.pairs) EXPECT_TRUE(sink.pairs.count(p) || want.near.count(p));
        EXPECT_GT(want.pairs.size(), 20u) << dims << "-D";
      }
    }
}

TEST(Simjoin, TwoRelationJoinMatchesReference) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto a = ref::uniform(700, 3, 11);
    auto b = ref::uniform(900, 3, 12);
    PointsView bv = b.view();
    auto prob = make_simjoin(a.view(), &bv, 0.08, prec, 0);
    CollectSink sink(false);
    TestControl ctl;
    make_cpu_engine()->simjoin(prob, sink, ctl);
    auto want = ref::simjoin(a, &b, 0.08, prec);
    for (auto& p : sink.pairs) EXPECT_TRUE(want.pairs.count(p) || want.near.count(p));
    for (auto& p : want.pairs) EXPECT_TRUE(sink.pairs.count(p) || want.near.count(p));
    EXPECT_GT(sink.pairs.size(), 100u);
  }
}

TEST(Simjoin, DuplicatesHugeAndTinyEps) {
  ref::Points pts;
  pts.dims = 2;
  pts.c.assign(2, std::vector<double>(400, 3.0));
  TestControl ctl;
  CollectSink all(true);
  // coincident points are within any accepted eps (the smallest: its square is normal)
  make_cpu_engine()->simjoin(make_simjoin(pts.view(), nullptr, 1.5e-154, Precision::Float64, 0), all, ctl);
  EXPECT_EQ(all.pairs.size(), 400u * 399 / 2);
  EXPECT_THROW(make_simjoin(pts.view(), nullptr, 1e-300, Precision::Float64, 0), Error);
  auto u = ref::uniform(300, 3, 77, -1e6, 1e6);
  CollectSink huge(true);
  make_cpu_engine()->simjoin(make_simjoin(u.view(), nullptr, INFINITY, Precision::Float32, 0), huge, ctl);
  EXPECT_EQ(huge.pairs.size(), 300u * 299 / 2);
  CollectSink tiny(true);
  make_cpu_engine()->simjoin(make_simjoin(u.view(), nullptr, 1e-9, Precision::Float32, 0), tiny, ctl);
  EXPECT_EQ(tiny.pairs.size(), 0u);
}

TEST(Simjoin, SmallPagesAndQueueGiveSameResult) {
  auto pts = ref::uniform(3000, 2, 21);
  auto prob = make_simjoin(pts.view(), nullptr, 0.03, Precision::Float32, 0);
  CollectSink big(true), small(true);
  TestControl c1, c2;
  c2.page_pairs = 64;
  c2.max_pages = 1;
  make_cpu_engine()->simjoin(prob, big, c1);
  make_cpu_engine()->simjoin(prob, small, c2);
  EXPECT_EQ(big.pairs, small.pairs);
  EXPECT_GT(small.pages, 10u);
}

TEST(Simjoin, MaxPairsStopsWithProgramLimit) {
  auto pts = ref::uniform(2000, 2, 3);
  auto prob = make_simjoin(pts.view(), nullptr, 0.5, Precision::Float32, 1000);
  CollectSink sink(true);
  TestControl ctl;
  ctl.page_pairs = 256;
  try {
    make_cpu_engine()->simjoin(prob, sink, ctl);
    FAIL() << "expected ProgramLimit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
  }
}

TEST(Cancel, LongSdhStopsWithinOneSecond) {
  auto pts = ref::uniform(400000, 3, 1);
  Bounds box = compute_bounds(pts.view());
  SdhProblem prob;
  prob.pts = pts.view();
  prob.params = make_sdh_params(500, 0, false, box, Precision::Float64);
  prob.prec = Precision::Float64;
  TestControl ctl;
  ctl.cancel_after_ms = 100;
  auto t0 = std::chrono::steady_clock::now();
  try {
    make_cpu_engine()->sdh(prob, ctl);
    FAIL() << "expected Interrupted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.1);
}

TEST(Cancel, LongJoinStopsWithinOneSecond) {
  ref::Points pts;
  pts.dims = 2;
  pts.c.assign(2, std::vector<double>(60000, 0.5));  // 1.8e9 pairs in one cell
  auto prob = make_simjoin(pts.view(), nullptr, 1.0, Precision::Float32, 0);
  class Drop : public PairSink {
    void consume(const PairRecord*, size_t) override {}
  } sink;
  TestControl ctl;
  ctl.cancel_after_ms = 100;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(make_cpu_engine()->simjoin(prob, sink, ctl), Error);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.1);
}

TEST(Params, Validation) {
  Bounds box = compute_bounds(ref::uniform(10, 3, 1).view());
  EXPECT_THROW(make_sdh_params(0, 0, false, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(kMaxBuckets + 1, 0, false, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(10, 0, true, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(10, -1, true, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(10, 1e-45, true, box, Precision::Float32), Error);
  auto pts = ref::uniform(10, 3, 1);
  EXPECT_THROW(make_pair_count(pts.view(), -1, Precision::Float32), Error);
  EXPECT_THROW(make_pair_count(pts.view(), NAN, Precision::Float32), Error);
  EXPECT_THROW(make_simjoin(pts.view(), nullptr, 0, Precision::Float32, 0), Error);
  EXPECT_THROW(make_simjoin(pts.view(), nullptr, NAN, Precision::Float32, 0), Error);
  Bounds big = compute_bounds(ref::uniform(10, 3, 1, -1e30, 1e30).view());
  EXPECT_THROW(check_range(big, Precision::Float32), Error);
  EXPECT_NO_THROW(check_range(big, Precision::Float64));
}

TEST(Simjoin, RunawayJoinFailsBeforeEmitting) {
  // 30,000 identical points: 449,985,000 pairs. With max_pairs = 1e6 the count pass refuses
  // it before a single page reaches the sink.
  ref::Points pts;
  pts.dims = 3;
  pts.c.assign(3, std::vector<double>(30000, 0.25));
  auto prob = make_simjoin(pts.view(), nullptr, 1.0, Precision::Float32, 1000000);
  CollectSink sink(true);
  TestControl ctl;
  try {
    make_cpu_engine()->simjoin(prob, sink, ctl);
    FAIL() << "expected ProgramLimit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
    EXPECT_NE(std::string(e.detail()).find("449985000"), std::string::npos) << e.detail();
  }
  EXPECT_EQ(sink.pages, 0u);
}

TEST(Simjoin, BalancingStrategiesGiveTheSamePairs) {
  // Skewed data (exponential-like: squares of uniforms) so cells differ widely in size.
  auto pts = ref::uniform(6000, 2, 31);
  for (auto& col : pts.c)
    for (auto& v : col) v = v * v * v;
  for (bool self : {true, false}) {
    auto other = ref::uniform(3000, 2, 32);
    PointsView ov = other.view();
    auto prob = make_simjoin(pts.view(), self ? nullptr : &ov, 0.01, Precision::Float32, 0);
    std::set<std::pair<uint32_t, uint32_t>> first;
    for (JoinBalance b : {JoinBalance::WorkQueue, JoinBalance::Cell, JoinBalance::SortByWorkload}) {
      CollectSink sink(self);
      TestControl ctl(3);
      ctl.join_balance = b;
      make_cpu_engine()->simjoin(prob, sink, ctl);
      EXPECT_EQ(sink.duplicates, 0u);
      if (b == JoinBalance::WorkQueue) first = sink.pairs;
      else EXPECT_EQ(sink.pairs, first) << int(b);
      EXPECT_GT(sink.pairs.size(), 1000u);
    }
  }
}
