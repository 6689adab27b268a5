// The CPU engine's reductions inside the join: groups and top-k reduced in the worker threads
// (PairReduce, Engine::reduces_pairs_in_workers) and aggregates over an interval of dist reduced
// in the kernel (AggregateStage), each against the same sink fed with every pair of the plain
// join; and the aggregate kernel's AVX2 lanes against the generic lanes, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/reference.h"
#include "core/cpu_kernels.h"
#include "core/engine.h"
#include "core/pipeline.h"

using namespace gpu2bs;

namespace {

class FixedThreads : public Control {
 public:
  explicit FixedThreads(int t) { threads = t; }
};

PairInstr cmp(PairCol c, CmpOp op, double v) {
  PairInstr in;
  in.kind = PairInstr::CmpConst;
  in.col = c;
  in.op = op;
  in.dval = v;
  in.ival = int64_t(v);
  return in;
}

// Points with exact duplicates (ties at dist 0 and equal distances) and keys that repeat.
struct Input {
  ref::Points pts;
  std::vector<int64_t> keys;
};

Input make_input(size_t n, int dims, uint64_t seed) {
  Input in{ref::uniform(n, dims, seed), {}};
  for (size_t i = 0; i < n; i += 7)
    for (int k = 0; k < dims; ++k) in.pts.c[k][i] = in.pts.c[k][i / 3];
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) in.keys.push_back(int64_t(rng() % (n - n / 5)) - 10);
  return in;
}

// The predicates the cases run under: none, one on the keys, one on dist and the keys.
std::vector<PairPredicate> predicates(double eps) {
  std::vector<PairPredicate> out(3);
  out[1].code = {cmp(PairCol::Id1, CmpOp::Gt, 100.0)};
  PairInstr both;
  both.kind = PairInstr::And;
  both.n = 2;
  out[2].code = {cmp(PairCol::Dist, CmpOp::Gt, eps / 5), cmp(PairCol::Id2, CmpOp::Le, 2000.0), both};
  for (auto& p : out) p.validate();
  return out;
}

struct Case {
  int dims;
  Precision prec;
  bool self;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int dims : {2, 3, 5})
    for (Precision prec : {Precision::Float32, Precision::Float64})
      for (bool self : {true, false}) out.push_back({dims, prec, self});
  return out;
}

}  // namespace

TEST(CpuReduce, GroupsInWorkersMatchGroupSink) {
  auto eng = make_cpu_engine();
  ASSERT_TRUE(eng->reduces_pairs_in_workers(PairReduce::Group));
  uint64_t seed = 40;
  for (const Case& c : cases()) {
    const Input a = make_input(3000, c.dims, seed++), b = make_input(2500, c.dims, seed++);
    const double eps = c.dims == 2 ? 0.02 : c.dims == 3 ? 0.06 : 0.2;
    const PointsView vb = b.pts.view();
    const SimjoinProblem p = make_simjoin(a.pts.view(), c.self ? nullptr : &vb, eps, c.prec, 0);
    const PairKeys keys{a.keys.data(), c.self ? a.keys.data() : b.keys.data(), c.self};
    for (const PairPredicate& pred : predicates(eps)) {
      PairFilter filter(pred, keys);
      for (int side : {0, 1})
        for (int threads : {1, 3})
          for (bool minmax : {true, false}) {  // counts alone: counted in the kernel
          GroupSink want(keys, side, a.pts.n(), b.pts.n());
          FilterSink fs(pred.empty() ? nullptr : &filter, want);
          FixedThreads ctl(threads);
          eng->simjoin(p, fs, ctl);
          PairReduce red;
          red.kind = PairReduce::Group;
          red.side = side;
          red.want_min = red.want_max = minmax;
          red.keys_a = keys.a;
          red.keys_b = keys.b;
          SimjoinProblem q = p;
          q.reduce = &red;
          q.filter = pred.empty() ? nullptr : &filter;
          GroupSink got(keys, side, a.pts.n(), b.pts.n());
          eng->simjoin(q, got, ctl);
          ASSERT_TRUE(red.done);
          got.merge(red);
          const auto w = want.finish(), g = got.finish();
          ASSERT_EQ(w.size(), g.size()) << c.dims << "-D self " << c.self << " side " << side;
          ASSERT_FALSE(w.empty());
          for (size_t k = 0; k < w.size(); ++k) {
            EXPECT_EQ(w[k].key, g[k].key);
            EXPECT_EQ(w[k].count, g[k].count);
            if (!minmax) continue;
            EXPECT_EQ(w[k].min, g[k].min);
            EXPECT_EQ(w[k].max, g[k].max);
          }
        }
    }
  }
}

TEST(CpuReduce, TopKInWorkersMatchesTopKSink) {
  auto eng = make_cpu_engine();
  ASSERT_TRUE(eng->reduces_pairs_in_workers(PairReduce::TopK));
  uint64_t seed = 70;
  for (const Case& c : cases()) {
    const Input a = make_input(3000, c.dims, seed++), b = make_input(2500, c.dims, seed++);
    const double eps = c.dims == 2 ? 0.02 : c.dims == 3 ? 0.06 : 0.2;
    const PointsView vb = b.pts.view();
    const SimjoinProblem p = make_simjoin(a.pts.view(), c.self ? nullptr : &vb, eps, c.prec, 0);
    const PairKeys keys{a.keys.data(), c.self ? a.keys.data() : b.keys.data(), c.self};
    for (const PairPredicate& pred : predicates(eps)) {
      PairFilter filter(pred, keys);
      // k = 70,000 exceeds the per-worker heaps (the pages go to the sink).
      for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(25), uint64_t(700), uint64_t(70000)})
        for (bool desc : {false, true}) {
          FixedThreads ctl(3);
          TopKSink want(keys, size_t(k), desc);
          FilterSink fs(pred.empty() ? nullptr : &filter, want);
          eng->simjoin(p, fs, ctl);
          PairReduce red;
          red.kind = PairReduce::TopK;
          red.k = k;
          red.descending = desc;
          red.keys_a = keys.a;
          red.keys_b = keys.b;
          SimjoinProblem q = p;
          q.reduce = &red;
          q.filter = pred.empty() ? nullptr : &filter;
          TopKSink got(keys, size_t(k), desc);
          eng->simjoin(q, got, ctl);
          ASSERT_TRUE(red.done);
          const auto w = want.finish(), g = got.finish();
          ASSERT_EQ(w.size(), g.size()) << c.dims << "-D k " << k;
          for (size_t r = 0; r < w.size(); ++r) {
            EXPECT_EQ(w[r].dist, g[r].dist);
            EXPECT_EQ(w[r].id1, g[r].id1);
            EXPECT_EQ(w[r].id2, g[r].id2);
          }
        }
    }
  }
}

TEST(CpuReduce, IntervalAggregateInKernelMatchesPages) {
  auto eng = make_cpu_engine();
  uint64_t seed = 90;
  for (const Case& c : cases()) {
    const Input a = make_input(4000, c.dims, seed++), b = make_input(3000, c.dims, seed++);
    const double eps = c.dims == 2 ? 0.02 : c.dims == 3 ? 0.06 : 0.2;
    const PointsView vb = b.pts.view();
    SimjoinProblem p = make_simjoin(a.pts.view(), c.self ? nullptr : &vb, eps, c.prec, 0);
    const PairKeys keys{a.keys.data(), c.self ? a.keys.data() : b.keys.data(), c.self};
    std::vector<PairPredicate> preds(4);
    preds[1].code = {cmp(PairCol::Dist, CmpOp::Gt, eps / 2)};
    PairInstr both;
    both.kind = PairInstr::And;
    both.n = 2;
    preds[2].code = {cmp(PairCol::Dist, CmpOp::Ge, eps / 4), cmp(PairCol::Dist, CmpOp::Lt, eps / 2), both};
    preds[3].code = {cmp(PairCol::Dist, CmpOp::Le, 0.0)};  // the duplicates only
    for (auto& pred : preds) {
      pred.validate();
      PairFilter filter(pred, keys);
      AggregateSink want;
      FilterSink fs(pred.empty() ? nullptr : &filter, want);
      FixedThreads ctl(3);
      eng->simjoin(p, fs, ctl);
      AggregateStage stage(&pred);
      double lo, hi;
      bool li, hi_in;
      ASSERT_TRUE(stage.dist_interval(&lo, &li, &hi, &hi_in));
      SimjoinProblem q = p;
      q.stage = &stage;
      AggregateSink none, got;
      eng->simjoin(q, none, ctl);
      stage.finish(&got);
      EXPECT_EQ(none.count, 0u);
      EXPECT_EQ(got.count, want.count) << c.dims << "-D self " << c.self << " " << pred.describe();
      if (c.self || &pred != &preds[3]) EXPECT_GT(want.count, 0u);  // two sets share no point
      if (want.count) {
        EXPECT_EQ(got.min, want.min);
        EXPECT_EQ(got.max, want.max);
        EXPECT_NEAR(got.sum(), want.sum(), 1e-12 * want.sum());
      }
    }
  }
}

TEST(CpuReduce, AggregateLanesEqualAcrossInstructionSets) {
  // Ranges of every length 0..40 (the masked last block), both precisions, intervals open and
  // closed: the AVX2 lanes hold the generic lanes' bits.
  const size_t n = 600;
  auto pts = ref::uniform(n, 2, 3);
  for (size_t i = 0; i < n; i += 5) pts.c[0][i] = pts.c[0][i / 2], pts.c[1][i] = pts.c[1][i / 2];
  std::vector<float> f(2 * n + kCpuJoinPad, 0.0f);
  std::vector<double> d(2 * n + kCpuJoinPad, 0.0);
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < n; ++i) {
      f[k * n + i] = float(pts.c[k][i]);
      d[k * n + i] = pts.c[k][i];
    }
  const float* fc[2] = {f.data(), f.data() + n};
  const double* dc[2] = {d.data(), d.data() + n};
  const CpuKernels& g = cpu_kernels_generic();
  const CpuKernels& best = cpu_kernels();
  for (int iv = 0; iv < 3; ++iv)
    for (size_t len = 0; len <= 40; ++len)
      for (bool diag : {false, true}) {
        DistAgg x, y;
        if (iv == 1) x.lo = y.lo = 0.05, x.lo_incl = y.lo_incl = false;
        if (iv == 2) x.hi = y.hi = 0.1, x.lo = y.lo = 0.0, x.lo_incl = y.lo_incl = true, x.hi_incl = y.hi_incl = false;
        const size_t j0 = diag ? 0 : 100, j1 = j0 + len;
        for (int prec = 0; prec < 2; ++prec) {
          if (prec == 0) {
            g.agg_f32(2, fc, 0, diag ? len : 50, fc, j0, j1, diag, 0.04f, x);
            best.agg_f32(2, fc, 0, diag ? len : 50, fc, j0, j1, diag, 0.04f, y);
          } else {
            g.agg_f64(2, dc, 0, diag ? len : 50, dc, j0, j1, diag, 0.04, x);
            best.agg_f64(2, dc, 0, diag ? len : 50, dc, j0, j1, diag, 0.04, y);
          }
        }
        for (int l = 0; l < DistAgg::kLanes; ++l) {
          EXPECT_EQ(x.cnt[l], y.cnt[l]) << best.isa << " len " << len;
          EXPECT_EQ(x.sum[l], y.sum[l]);
          EXPECT_EQ(x.comp[l], y.comp[l]);
          if (x.cnt[l]) {
            EXPECT_EQ(x.mn[l], y.mn[l]);
            EXPECT_EQ(x.mx[l], y.mx[l]);
          }
        }
      }
}
