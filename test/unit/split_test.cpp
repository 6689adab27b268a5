// Splitting one call across devices and slabs (src/core/split.h): triangle and block-pair
// shares balanced by point pairs, device lists, the join's slab plan (halo bounds, ownership),
// and the slab join run through the CPU engine against the in-memory CPU join and the float64
// reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/split.h"

using namespace gpu2bs;

namespace {

// Point pairs of the tile pairs [0, t) counted one tile pair at a time.
uint64_t brute_pairs_before(uint64_t n, uint64_t tile, uint64_t t) {
  const uint64_t M = (n + tile - 1) / tile;
  auto rows = [&](uint64_t a) { return std::min(tile, n - a * tile); };
  uint64_t item = 0, pairs = 0;
  for (uint64_t a = 0; a < M; ++a)
    for (uint64_t b = a; b < M; ++b, ++item) {
      if (item >= t) return pairs;
      pairs += a == b ? rows(a) * (rows(a) - 1) / 2 : rows(a) * rows(b);
    }
  return pairs;
}

// Pairs of a join as (i, j) -> dist bits (i < j for a self-join), with a duplicate count.
class Collect : public PairSink {
 public:
  explicit Collect(bool self) : self_(self) {}
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      uint32_t i = p[k].i, j = p[k].j;
      if (self_ && i > j) std::swap(i, j);
      uint64_t bits;
      std::memcpy(&bits, &p[k].dist, 8);
      if (!pairs.emplace(std::make_pair(i, j), bits).second) ++duplicates;
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> pairs;
  size_t duplicates = 0;

 private:
  bool self_;
};

// Forwards pairs with their positions replaced by the points' input indices.
class IndexSink : public PairSink {
 public:
  IndexSink(PairSink& out, const uint32_t* ia, const uint32_t* ib) : out_(out), ia_(ia), ib_(ib) {}
  void consume(const PairRecord* p, size_t n) override {
    std::vector<PairRecord> v(p, p + n);
    for (auto& r : v) {
      r.i = ia_[r.i];
      r.j = ib_[r.j];
    }
    out_.consume(v.data(), n);
  }

 private:
  PairSink& out_;
  const uint32_t* ia_;
  const uint32_t* ib_;
};

// Runs `p` in memory and in `slabs` slabs on the CPU engine; expects the same pairs and bits,
// and the float64 reference's pairs for float64.
void expect_slab_join_equal(const ref::Points& a, const ref::Points* b, double eps, Precision prec,
                            int slabs) {
  PointsView bv;
  if (b) bv = b->view();
  const SimjoinProblem p = make_simjoin(a.view(), b ? &bv : nullptr, eps, prec, 0);
  auto cpu = make_cpu_engine();
  Control ctl;
  ctl.threads = 2;
  Collect whole(p.self), parts(p.self);
  cpu->simjoin(p, whole, ctl);
  const split::SlabPlan plan = split::plan_slabs(p, slabs);
  split::slab_simjoin(p, plan, parts, [&](const SimjoinProblem& sub, PairSink& out) {
    cpu->simjoin(sub, out, ctl);
  });
  EXPECT_EQ(parts.duplicates, 0u) << "slabs " << slabs;
  EXPECT_EQ(whole.pairs.size(), parts.pairs.size()) << "slabs " << slabs;
  EXPECT_TRUE(whole.pairs == parts.pairs) << "slabs " << slabs;
  // An engine that emits the sub-problems' PointsView::index values (as the GPU join does),
  // emulated by mapping the CPU engine's positions through them: the same pairs, unmapped here.
  Collect mapped(p.self);
  split::slab_simjoin(
      p, plan, mapped,
      [&](const SimjoinProblem& sub, PairSink& out) {
        EXPECT_NE(sub.a.index, nullptr);
        EXPECT_NE(sub.b.index, nullptr);
        IndexSink by_index(out, sub.a.index, sub.b.index);
        cpu->simjoin(sub, by_index, ctl);
      },
      true);
  EXPECT_EQ(mapped.duplicates, 0u) << "slabs " << slabs;
  EXPECT_TRUE(whole.pairs == mapped.pairs) << "slabs " << slabs;
  if (prec == Precision::Float64) {
    const ref::JoinRef want = ref::simjoin(a, b, eps, prec);
    size_t missing = 0;
    for (const auto& q : want.pairs)
      if (!parts.pairs.count(q) && !want.near.count(q)) ++missing;
    EXPECT_EQ(missing, 0u) << "slabs " << slabs;
  }
}

}  // namespace

TEST(Split, TrianglePairsBeforeMatchesCounting) {
  for (uint64_t n : {0ull, 1ull, 2ull, 7ull, 64ull, 100ull, 1000ull})
    for (uint64_t tile : {4ull, 32ull, 128ull}) {
      const uint64_t M = (n + tile - 1) / tile;
      for (uint64_t t = 0; t <= M * (M + 1) / 2 + 1; ++t)
        ASSERT_EQ(split::triangle_pairs_before(n, tile, t), brute_pairs_before(n, tile, t))
            << "n " << n << " tile " << tile << " t " << t;
    }
}

TEST(Split, TriangleSharesAreBalancedByPairs) {
  for (uint64_t n : {3ull, 5000ull, 100000ull, 4194304ull})
    for (int shares : {1, 2, 3, 4, 7, 8}) {
      const uint64_t tile = 1024;
      const std::vector<uint64_t> b = split::triangle_shares(n, tile, shares);
      const uint64_t M = (n + tile - 1) / tile;
      ASSERT_EQ(b.size(), size_t(shares) + 1);
      EXPECT_EQ(b.front(), 0u);
      EXPECT_EQ(b.back(), M * (M + 1) / 2);
      const double P = double(n) * double(n - 1) / 2;
      uint64_t sum = 0;
      for (int k = 0; k < shares; ++k) {
        ASSERT_LE(b[size_t(k)], b[size_t(k) + 1]);
        const uint64_t got = split::triangle_pairs_before(n, tile, b[size_t(k) + 1]) -
                             split::triangle_pairs_before(n, tile, b[size_t(k)]);
        sum += got;
        // Within one tile pair of the ideal share.
        EXPECT_LE(std::fabs(double(got) - P / shares), double(tile) * double(tile) + 1)
            << "n " << n << " shares " << shares << " share " << k;
      }
      EXPECT_EQ(sum, n * (n - 1) / 2);
    }
}

TEST(Split, WeightedSharesCoverEveryItemOnce) {
  std::mt19937_64 rng(7);
  for (int shares : {1, 2, 3, 5, 16}) {
    std::vector<uint64_t> w(37);
    for (auto& x : w) x = rng() % 1000;
    const std::vector<size_t> b = split::weighted_shares(w, shares);
    ASSERT_EQ(b.size(), size_t(shares) + 1);
    EXPECT_EQ(b.front(), 0u);
    EXPECT_EQ(b.back(), w.size());
    uint64_t W = 0, maxw = 0;
    for (auto x : w) W += x, maxw = std::max(maxw, x);
    for (int k = 0; k < shares; ++k) {
      ASSERT_LE(b[size_t(k)], b[size_t(k) + 1]);
      uint64_t s = 0;
      for (size_t i = b[size_t(k)]; i < b[size_t(k) + 1]; ++i) s += w[i];
      EXPECT_LE(std::fabs(double(s) - double(W) / shares), double(maxw) + 1) << "shares " << shares;
    }
  }
  // More shares than items: the extra shares are empty.
  const std::vector<size_t> b = split::weighted_shares({5, 5}, 4);
  EXPECT_EQ(b.back(), 2u);
}

TEST(Split, BlockPairWeightsCountEveryPair) {
  for (uint64_t n : {1ull, 8192ull, 20000ull, 100001ull}) {
    const std::vector<uint64_t> w = split::block_pair_weights(n, 8192);
    const uint64_t K = (n + 8191) / 8192;
    EXPECT_EQ(w.size(), K * (K + 1) / 2);
    uint64_t s = 0;
    for (auto x : w) s += x;
    EXPECT_EQ(s, n * (n - 1) / 2);
  }
}

TEST(Split, ParseDevices) {
  std::vector<int> d;
  std::string err;
  EXPECT_TRUE(split::parse_devices("all", 3, &d, &err));
  EXPECT_EQ(d, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(split::parse_devices(" ALL ", 0, &d, &err));
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(split::parse_devices("1, 0", 2, &d, &err));
  EXPECT_EQ(d, (std::vector<int>{1, 0}));
  for (const char* bad : {"", ",", "0,", "a", "-1", "0,0", "2", "1.5", "0;1"}) {
    EXPECT_FALSE(split::parse_devices(bad, 2, &d, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
  EXPECT_FALSE(split::parse_devices("2", 2, &d, &err));
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
  EXPECT_FALSE(split::parse_devices("1,1", 2, &d, &err));
  EXPECT_NE(err.find("twice"), std::string::npos) << err;
}

// Every pair within eps has exactly one owning slab that sees it (both points its own, or one
// its own and the other in its halo, the halo holding later slabs' points only).
TEST(Split, SlabPlanOwnsEveryPairOnce) {
  auto a = ref::uniform(1500, 2, 11);
  auto b = ref::uniform(1300, 2, 12);
  const double eps = 0.03;
  for (bool self : {true, false})
    for (int slabs : {1, 2, 3, 8, 40}) {
      PointsView bv = b.view();
      const SimjoinProblem p = make_simjoin(a.view(), self ? nullptr : &bv, eps, Precision::Float32, 0);
      const split::SlabPlan plan = split::plan_slabs(p, slabs);
      ASSERT_EQ(plan.slabs.size(), size_t(slabs));
      EXPECT_GE(plan.halo, eps);
      std::vector<int> slab_of(a.n(), -1);
      size_t owned = 0;
      for (size_t s = 0; s < plan.slabs.size(); ++s)
        for (uint32_t i : plan.slabs[s].own) {
          EXPECT_EQ(slab_of[i], -1);
          slab_of[i] = int(s);
          ++owned;
        }
      EXPECT_EQ(owned, a.n());
      std::vector<std::set<uint32_t>> own(plan.slabs.size()), halo(plan.slabs.size());
      for (size_t s = 0; s < plan.slabs.size(); ++s) {
        own[s].insert(plan.slabs[s].own.begin(), plan.slabs[s].own.end());
        halo[s].insert(plan.slabs[s].halo.begin(), plan.slabs[s].halo.end());
        if (self)
          for (uint32_t i : plan.slabs[s].halo) EXPECT_GT(slab_of[i], int(s));
      }
      const ref::Points& bb = self ? a : b;
      for (size_t i = 0; i < a.n(); ++i)
        for (size_t j = self ? i + 1 : 0; j < bb.n(); ++j) {
          if (ref::dist(a, i, bb, j) > eps * 1.001) continue;
          int seen = 0;
          for (size_t s = 0; s < plan.slabs.size(); ++s) {
            if (self) {
              const bool io = own[s].count(uint32_t(i)), jo = own[s].count(uint32_t(j));
              seen += (io && jo) || (io && halo[s].count(uint32_t(j))) ||
                      (jo && halo[s].count(uint32_t(i)));
            } else {
              seen += own[s].count(uint32_t(i)) && halo[s].count(uint32_t(j));
            }
          }
          ASSERT_EQ(seen, 1) << "self " << self << " slabs " << slabs << " pair " << i << "," << j;
        }
    }
}

TEST(Split, SlabJoinEqualsInMemoryJoin) {
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int dims : {2, 3}) {
      auto a = ref::uniform(3000, dims, 20 + dims);
      auto b = ref::clustered(2500, dims, 30 + dims);
      const double eps = dims == 2 ? 0.01 : 0.04;
      for (int slabs : {2, 5, 16}) {
        expect_slab_join_equal(a, nullptr, eps, prec, slabs);
        expect_slab_join_equal(a, &b, eps, prec, slabs);
      }
    }
}

// Points exactly eps apart across every cut, all points in one slab (one x value: the other
// slabs empty), and many equal coordinates (repeated cuts, empty slabs between them).
TEST(Split, SlabJoinHaloEdgeCases) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const double eps = 0.25;
    ref::Points line;  // x = 0, 0.25, 0.5, ...: every neighbour exactly eps apart
    line.dims = 2;
    line.c.assign(2, {});
    for (int i = 0; i < 64; ++i) {
      line.c[0].push_back(0.25 * i);
      line.c[1].push_back(0.0);
    }
    for (int slabs : {2, 4, 8, 63, 64})
      expect_slab_join_equal(line, nullptr, eps, prec, slabs);
    ref::Points other = line;  // shifted by eps along y: pairs straight across and diagonal
    for (auto& y : other.c[1]) y = 0.25;
    expect_slab_join_equal(line, &other, eps, prec, 8);
    ref::Points column;  // one x value: every point in the last slab
    column.dims = 2;
    column.c.assign(2, {});
    for (int i = 0; i < 500; ++i) {
      column.c[0].push_back(1.5);
      column.c[1].push_back(0.001 * i);
    }
    expect_slab_join_equal(column, nullptr, 0.002, prec, 4);
    expect_slab_join_equal(column, &line, 0.3, prec, 4);
    ref::Points few = ref::uniform(800, 2, 5);  // x in four values only
    for (auto& x : few.c[0]) x = std::floor(x * 4) / 4;
    expect_slab_join_equal(few, nullptr, 0.25, prec, 16);
    expect_slab_join_equal(few, &line, 0.25, prec, 16);
  }
}

TEST(Split, SlabJoinKeepsMaxPairs) {
  auto a = ref::uniform(2000, 2, 3);
  const SimjoinProblem whole = make_simjoin(a.view(), nullptr, 0.02, Precision::Float32, 0);
  auto cpu = make_cpu_engine();
  Control ctl;
  Collect all(true);
  cpu->simjoin(whole, all, ctl);
  ASSERT_GT(all.pairs.size(), 10u);
  const SimjoinProblem capped = make_simjoin(a.view(), nullptr, 0.02, Precision::Float32, all.pairs.size() - 1);
  Collect some(true);
  const auto run = [&](const SimjoinProblem& sub, PairSink& out) { cpu->simjoin(sub, out, ctl); };
  try {
    split::slab_simjoin(capped, split::plan_slabs(capped, 4), some, run);
    FAIL() << "no error past max_pairs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
  }
  const SimjoinProblem exact = make_simjoin(a.view(), nullptr, 0.02, Precision::Float32, all.pairs.size());
  Collect every(true);
  split::slab_simjoin(exact, split::plan_slabs(exact, 4), every, run);
  EXPECT_EQ(every.pairs.size(), all.pairs.size());
}

// The cuts are the order statistics at n k / slabs of the axis coordinate, whether selected at
// once (plan_slabs) or level by level while the budget's slab count is searched.
TEST(Split, SlabCutsAreQuantiles) {
  auto a = ref::uniform(30000, 2, 17);
  for (auto& x : a.c[0]) x = std::floor(x * 500) / 500;  // repeated values: equal cuts
  const SimjoinProblem p = make_simjoin(a.view(), nullptr, 0.001, Precision::Float32, 0);
  const int axis = split::plan_slabs(p, 2).axis;
  std::vector<double> sorted(a.c[size_t(axis)]);
  std::sort(sorted.begin(), sorted.end());
  auto expect_quantiles = [&](const split::SlabPlan& plan) {
    const size_t S = plan.slabs.size(), n = sorted.size();
    ASSERT_EQ(plan.cuts.size() + 1, S);
    for (size_t k = 1; k < S; ++k) EXPECT_EQ(plan.cuts[k - 1], sorted[n * k / S]) << "slabs " << S << " cut " << k;
  };
  for (int slabs : {2, 3, 5, 8, 64, 1000}) expect_quantiles(split::plan_slabs(p, slabs));
  const uint64_t core = split::join_core_bytes(p.a.n, 0, true, 2, p.prec);
  const uint64_t fixed = split::join_core_bytes(0, 0, true, 2, p.prec);
  for (uint64_t div : {3, 8, 40}) {
    // A quarter for the banks (budgets below 256 MiB), the rest a 1/div share of the points.
    const uint64_t budget = (fixed + (core - fixed) / div) / 3 * 4;
    const split::SlabPlan plan = split::plan_slabs_for_budget(p, budget);
    ASSERT_GT(plan.slabs.size(), 1u) << "budget 1/" << div;
    expect_quantiles(plan);
    // Few slabs: half as many do not fit.
    const uint64_t avail = budget - split::join_bank_reserve(budget);
    if (plan.slabs.size() > 2) {
      const split::SlabPlan fewer = split::plan_slabs(p, int(plan.slabs.size() / 2));
      uint64_t need = 0;
      for (const auto& sl : fewer.slabs)
        need = std::max({need, split::join_core_bytes(sl.own.size(), 0, true, 2, p.prec),
                         split::join_core_bytes(sl.own.size(), sl.halo.size(), false, 2, p.prec)});
      EXPECT_GT(need, avail) << "budget 1/" << div;
    }
  }
}

TEST(Split, SlabsForBudget) {
  auto a = ref::uniform(200000, 3, 9);
  const SimjoinProblem p = make_simjoin(a.view(), nullptr, 0.01, Precision::Float32, 0);
  const uint64_t core = split::join_core_bytes(p.a.n, 0, true, 3, p.prec);
  EXPECT_EQ(split::plan_slabs_for_budget(p, core + split::kJoinMinBankBytes).slabs.size(), 1u);
  // Under half the in-memory need: slabs, each within the budget less the banks' part.
  const uint64_t budget = core / 2;
  const uint64_t avail = budget - split::join_bank_reserve(budget);
  const split::SlabPlan plan = split::plan_slabs_for_budget(p, budget);
  EXPECT_GE(plan.slabs.size(), 4u);
  for (const auto& s : plan.slabs)
    EXPECT_LE(split::join_core_bytes(s.own.size(), s.halo.size(), false, 3, p.prec), avail);
  // A small join runs in memory under a budget below kJoinMinBankBytes (a quarter goes to the banks).
  auto q = ref::uniform(20000, 3, 10);
  const SimjoinProblem small = make_simjoin(q.view(), nullptr, 0.01, Precision::Float32, 0);
  EXPECT_EQ(split::plan_slabs_for_budget(small, uint64_t(24) << 20).slabs.size(), 1u);
  try {
    (void)split::plan_slabs_for_budget(p, split::join_core_bytes(1, 0, true, 3, p.prec));
    FAIL() << "no error under a budget below the fixed part of one slab and its banks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
  }
  // Skewed inputs (dense near the origin: halos far wider than on uniform points at the dense
  // end) and a x b joins: every sub-join fits, and half as many slabs do not.
  auto e = ref::exponential(600000, 2, 11, 40);
  auto f = ref::exponential(400000, 2, 12, 40);
  const PointsView fv = f.view();
  for (bool self : {true, false})
    for (uint64_t div : {2, 5}) {
      const SimjoinProblem q = make_simjoin(e.view(), self ? nullptr : &fv, 0.0005, Precision::Float32, 0);
      const uint64_t qcore = split::join_core_bytes(q.a.n, self ? 0 : q.b.n, self, 2, q.prec);
      const uint64_t qbudget = (qcore / div) / 3 * 4;
      const uint64_t qavail = qbudget - split::join_bank_reserve(qbudget);
      auto largest = [&](const split::SlabPlan& pl) {
        uint64_t need = 0;
        for (const auto& s : pl.slabs) {
          if (self) need = std::max(need, split::join_core_bytes(s.own.size(), 0, true, 2, q.prec));
          need = std::max(need, split::join_core_bytes(s.own.size(), s.halo.size(), false, 2, q.prec));
        }
        return need;
      };
      const split::SlabPlan qp = split::plan_slabs_for_budget(q, qbudget);
      ASSERT_GT(qp.slabs.size(), 1u) << "self " << self << " budget 1/" << div;
      EXPECT_LE(largest(qp), qavail) << "self " << self << " budget 1/" << div;
      if (qp.slabs.size() >= 4) {
        EXPECT_GT(largest(split::plan_slabs(q, int(qp.slabs.size() / 2))), qavail)
            << "self " << self << " budget 1/" << div;
      }
    }
}

// Large inputs take the plan's parallel passes (counts, lists, and the bracketed selection of
// the cuts): the cuts are the quantiles, and the lists equal those written out from their
// definition, in ascending order.
TEST(Split, SlabListsOfLargeInputs) {
  auto a = ref::uniform(1200000, 2, 31);
  auto b = ref::uniform(250000, 2, 32);
  for (auto& c : a.c)
    for (auto& x : c) x = std::floor(x * 20000) / 20000;  // repeated values
  const double eps = 0.002;
  {
    // Every 4,096th point (the strided sample's positions) at one value: the brackets of the
    // sample do not hold the quantiles, and the selection falls back to the exact partition.
    auto skew = a;
    for (auto& c : skew.c)
      for (size_t i = 0; i < c.size(); i += 4096) c[i] = 0.25;
    const SimjoinProblem p = make_simjoin(skew.view(), nullptr, eps, Precision::Float32, 0);
    const split::SlabPlan plan = split::plan_slabs(p, 8);
    std::vector<double> sorted(p.a.coord[plan.axis], p.a.coord[plan.axis] + p.a.n);
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 1; k < 8; ++k) EXPECT_EQ(plan.cuts[k - 1], sorted[p.a.n * k / 8]) << "skewed, cut " << k;
  }
  for (bool self : {true, false})
    for (int slabs : {8, 33}) {
      PointsView bv = b.view();
      const SimjoinProblem p = make_simjoin(a.view(), self ? nullptr : &bv, eps, Precision::Float32, 0);
      const split::SlabPlan plan = split::plan_slabs(p, slabs);
      ASSERT_EQ(plan.slabs.size(), size_t(slabs));
      const auto& cuts = plan.cuts;
      std::vector<double> sorted(p.a.coord[plan.axis], p.a.coord[plan.axis] + p.a.n);
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 1; k < size_t(slabs); ++k)
        EXPECT_EQ(cuts[k - 1], sorted[p.a.n * k / size_t(slabs)]) << "slabs " << slabs << " cut " << k;
      const double h = plan.halo;
      auto slab_of = [&](double x) {
        return size_t(std::upper_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
      };
      std::vector<std::vector<uint32_t>> own(static_cast<size_t>(slabs)), halo(static_cast<size_t>(slabs));
      const double* xa = p.a.coord[plan.axis];
      for (size_t i = 0; i < p.a.n; ++i) {
        const size_t t = slab_of(xa[i]);
        own[t].push_back(uint32_t(i));
        if (self)
          for (size_t s = slab_of(xa[i] - h); s < t; ++s) halo[s].push_back(uint32_t(i));
      }
      if (!self) {
        const double* xb = p.b.coord[plan.axis];
        for (size_t j = 0; j < p.b.n; ++j)
          for (size_t s = slab_of(xb[j] - h); s <= slab_of(xb[j] + h) && s < size_t(slabs); ++s)
            halo[s].push_back(uint32_t(j));
      }
      size_t halo_points = 0;
      for (size_t s = 0; s < size_t(slabs); ++s) {
        EXPECT_TRUE(plan.slabs[s].own == own[s]) << "self " << self << " slabs " << slabs << " slab " << s;
        EXPECT_TRUE(plan.slabs[s].halo == halo[s]) << "self " << self << " slabs " << slabs << " slab " << s;
        halo_points += halo[s].size();
      }
      EXPECT_GT(halo_points, 0u);
      // The same plan whatever the planner's threads (1: the selection by copy, 3 and 7: the
      // bracketed selection over parts of other sizes).
      for (int threads : {1, 3, 7}) {
        const split::SlabPlan t = split::plan_slabs(p, slabs, threads);
        ASSERT_EQ(t.cuts, plan.cuts) << "threads " << threads;
        for (size_t s = 0; s < size_t(slabs); ++s) {
          EXPECT_TRUE(t.slabs[s].own == plan.slabs[s].own) << "threads " << threads << " slab " << s;
          EXPECT_TRUE(t.slabs[s].halo == plan.slabs[s].halo) << "threads " << threads << " slab " << s;
        }
      }
      // The same lists from the budget planner, whose counts it takes from its fitting pass.
      const uint64_t core = split::join_core_bytes(p.a.n, self ? 0 : p.b.n, self, 2, p.prec);
      const split::SlabPlan fit = split::plan_slabs_for_budget(p, core / 2);
      ASSERT_GT(fit.slabs.size(), 1u);
      const split::SlabPlan again = split::plan_slabs(p, int(fit.slabs.size()));
      ASSERT_EQ(fit.cuts, again.cuts);
      for (size_t s = 0; s < fit.slabs.size(); ++s) {
        EXPECT_TRUE(fit.slabs[s].own == again.slabs[s].own) << "slab " << s;
        EXPECT_TRUE(fit.slabs[s].halo == again.slabs[s].halo) << "slab " << s;
      }
    }
}
