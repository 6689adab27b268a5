// The pushed-down filter and reductions of the similarity join on the device (PairReduce,
// SimjoinProblem::filter; kernels/join/kernel.cu kModeReduce and the emit filter) against the
// CPU pipeline (pipeline.h sinks fed by the CPU engine): the same kept pairs, counts, minima,
// maxima, groups and top-k rows, on random points and predicates, self and two-relation joins,
// both precisions, duplicates and ties.
#include <random>

#include "core/pair_ir.h"
#include "core/pipeline.h"
#include "core/problem.h"
#include "fixtures.h"

namespace gpu2bs {
namespace gputest {
namespace {

// A random predicate over (id1, id2, dist): comparisons, id % m = c, AND/OR/NOT, NULL truth.
PairPredicate random_predicate(std::mt19937_64& rng, double eps, int64_t nkeys) {
  PairPredicate p;
  auto leaf = [&]() {
    PairInstr in;
    const int kind = int(rng() % 6);
    const CmpOp ops[6] = {CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne, CmpOp::Ge, CmpOp::Gt};
    in.op = ops[rng() % 6];
    if (kind <= 1) {
      in.kind = PairInstr::CmpConst;
      in.col = PairCol::Dist;
      in.dval = eps * double(rng() % 1000) / 1000.0;
    } else if (kind == 2) {
      in.kind = PairInstr::CmpConst;
      in.col = rng() % 2 ? PairCol::Id1 : PairCol::Id2;
      in.ival = int64_t(rng() % uint64_t(nkeys + 2)) - 1;
    } else if (kind == 3) {
      in.kind = PairInstr::ModCmp;
      in.col = rng() % 2 ? PairCol::Id1 : PairCol::Id2;
      in.modulus = int64_t(rng() % 5) + 2;
      in.ival = int64_t(rng() % uint64_t(in.modulus));
    } else if (kind == 4) {
      in.kind = PairInstr::CmpCols;
      in.col = PairCol::Id1;
      in.col2 = PairCol::Id2;
    } else {
      in.kind = PairInstr::Truth;
      in.truth = rng() % 3 == 0 ? Tri::Unknown : Tri::True;
    }
    p.code.push_back(in);
  };
  const int shape = int(rng() % 4);
  if (shape == 0) {
    leaf();
  } else if (shape == 1 || shape == 2) {
    const uint32_t n = 2 + uint32_t(rng() % 2);
    for (uint32_t k = 0; k < n; ++k) leaf();
    PairInstr op;
    op.kind = shape == 1 ? PairInstr::And : PairInstr::Or;
    op.n = n;
    p.code.push_back(op);
  } else {
    leaf();
    leaf();
    PairInstr o;
    o.kind = PairInstr::Or;
    o.n = 2;
    p.code.push_back(o);
    PairInstr n;
    n.kind = PairInstr::Not;
    p.code.push_back(n);
  }
  p.validate();
  return p;
}

struct Case {
  ref::Points a, b;
  bool self;
  double eps;
  Precision prec;
  std::vector<int64_t> ka, kb;  // keys by input index (duplicates among them)
};

Case make_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c;
  const int dims = 2 + int(seed % 3);
  const size_t n = 500 + size_t(rng() % 3000);
  c.self = seed % 3 != 0;
  c.prec = seed % 2 ? Precision::Float32 : Precision::Float64;
  c.a = seed % 5 == 0 ? few_distinct(n, dims, seed, 40) : ref::uniform(n, dims, seed);
  c.b = c.self ? c.a : ref::uniform(n / 2 + 7, dims, seed + 1);
  c.eps = eps_for(n, dims, 8 + double(rng() % 40));
  for (size_t i = 0; i < n; ++i) c.ka.push_back(int64_t(rng() % (n / 2 + 1)));
  for (size_t i = 0; i < (c.self ? n : c.b.c[0].size()); ++i) c.kb.push_back(int64_t(rng() % (n / 2 + 1)));
  if (c.self) c.kb = c.ka;
  return c;
}

// The problem of a case (no filter, no reduction).
SimjoinProblem problem_of(const Case& c, PointsView* bv) {
  *bv = c.b.view();
  return make_simjoin(c.a.view(), c.self ? nullptr : bv, c.eps, c.prec, 0);
}

TEST(PushdownGpu, FilterAndReductionsMatchTheCpuPipeline) {
  REQUIRE_GPU();
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Case c = make_case(seed);
    std::mt19937_64 rng(seed * 7919);
    const PairPredicate pred = random_predicate(rng, c.eps, int64_t(c.ka.size() / 2 + 1));
    const PairKeys keys{c.ka.data(), c.kb.data(), c.self};
    const PairFilter filter(pred, keys);
    SCOPED_TRACE("seed " + std::to_string(seed) + " " + pname(c.prec) + (c.self ? " self " : " two ") +
                 pred.describe());
    PointsView bv;
    // The CPU pipeline: every pair, filtered on the host.
    Collect all;
    {
      SimjoinProblem p = problem_of(c, &bv);
      Ctl ctl;
      cpu()->simjoin(p, all, ctl);
    }
    std::vector<PairRecord> kept;
    for (const PairRecord& r : all.v) {
      int64_t x, y;
      keys.get(r, &x, &y);
      if (pred.keep(x, y, r.dist)) kept.push_back(r);
    }

    // Emit mode with the device filter: the same kept pairs.
    {
      SimjoinProblem p = problem_of(c, &bv);
      p.filter = &filter;
      Collect got;
      Ctl ctl;
      gpu()->simjoin(p, got, ctl);
      const auto g = normalized(got.v, c.self), w = normalized(kept, c.self);
      EXPECT_TRUE(g == w) << "filter: " << first_diff(g, w);
    }
    // The same through a pool of two 64-pair pages (warps stop and resume mid-chunk, steps run
    // again): the kept pairs once each, and the pairs within eps counted once each, so a limit
    // of exactly that many passes and one less is 54000 (the CPU's rule: before the filter).
    for (int off : {0, 1}) {
      const uint64_t within = all.v.size();
      if (within <= 1 && off == 1) continue;  // a limit of 0 means none
      SimjoinProblem p = make_simjoin(c.a.view(), c.self ? nullptr : &bv, c.eps, c.prec, within - uint64_t(off));
      p.filter = &filter;
      Collect got;
      Ctl ctl;
      ctl.max_pages = 2;
      ctl.page_pairs = 64;
      ctl.overrides.join_serial_drain = seed % 2 == 0;
      try {
        gpu()->simjoin(p, got, ctl);
        EXPECT_EQ(off, 0) << "no error with a limit of " << within - 1 << " pairs";
        const auto g = normalized(got.v, c.self), w = normalized(kept, c.self);
        EXPECT_TRUE(g == w) << "small pool: " << first_diff(g, w);
      } catch (const Error& e) {
        EXPECT_EQ(off, 1) << e.what();
        EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
      }
    }
    // Aggregate.
    {
      AggregateSink want;
      want.consume(kept.data(), kept.size());
      SimjoinProblem p = problem_of(c, &bv);
      p.filter = &filter;
      PairReduce red;
      red.kind = PairReduce::Aggregate;
      p.reduce = &red;
      Collect none;
      Ctl ctl;
      gpu()->simjoin(p, none, ctl);
      EXPECT_TRUE(red.done);
      EXPECT_TRUE(none.v.empty());
      EXPECT_EQ(red.count, want.count);
      if (want.count) {
        EXPECT_EQ(red.min, want.min);
        EXPECT_EQ(red.max, want.max);
        EXPECT_NEAR(red.sum + red.comp, want.sum(), 1e-12 * std::max(1.0, std::fabs(want.sum())));
      }
    }
    // Group by id1 and by id2.
    for (int side = 0; side < 2; ++side) {
      GroupSink want(keys, side, c.ka.size(), c.kb.size());
      want.consume(kept.data(), kept.size());
      SimjoinProblem p = problem_of(c, &bv);
      p.filter = &filter;
      PairReduce red;
      red.kind = PairReduce::Group;
      red.side = side;
      red.keys_a = c.ka.data();
      red.keys_b = c.kb.data();
      p.reduce = &red;
      Collect none;
      Ctl ctl;
      gpu()->simjoin(p, none, ctl);
      GroupSink got(keys, side, c.ka.size(), c.kb.size());
      got.merge(red);
      const auto g = got.finish(), w = want.finish();
      ASSERT_EQ(g.size(), w.size()) << "side " << side;
      for (size_t k = 0; k < g.size(); ++k) {
        EXPECT_EQ(g[k].key, w[k].key);
        EXPECT_EQ(g[k].count, w[k].count) << "key " << w[k].key;
        EXPECT_EQ(g[k].min, w[k].min);
        EXPECT_EQ(g[k].max, w[k].max);
      }
    }
    // Top-k, ascending and descending, k from 0 to more than the kept pairs.
    for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(10), uint64_t(257), uint64_t(kept.size() + 3)}) {
      for (bool desc : {false, true}) {
        TopKSink want(keys, size_t(k), desc);
        want.consume(kept.data(), kept.size());
        SimjoinProblem p = problem_of(c, &bv);
        p.filter = &filter;
        PairReduce red;
        red.kind = PairReduce::TopK;
        red.k = k;
        red.descending = desc;
        p.reduce = &red;
        TopKSink got(keys, size_t(k), desc);
        Ctl ctl;
        gpu()->simjoin(p, got, ctl);
        EXPECT_TRUE(red.done);
        const auto g = got.finish(), w = want.finish();
        ASSERT_EQ(g.size(), w.size()) << "k " << k << (desc ? " desc" : " asc");
        for (size_t q = 0; q < g.size(); ++q) {
          EXPECT_EQ(g[q].dist, w[q].dist) << "k " << k << " row " << q;
          EXPECT_EQ(g[q].id1, w[q].id1);
          EXPECT_EQ(g[q].id2, w[q].id2);
        }
      }
    }
  }
}

// All points equal: every pair in the first bucket (the top-k second pass emits them all), and
// the limit on pairs within eps applies before the filter, as on the CPU.
TEST(PushdownGpu, TiesAndTheResultLimit) {
  REQUIRE_GPU();
  const ref::Points pts = same_point(3000, 3);
  std::vector<int64_t> keys(3000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = int64_t(i % 1000);
  const PairKeys pk{keys.data(), keys.data(), true};
  PairPredicate none;
  const PairFilter filter(none, pk);
  auto p = make_simjoin(pts.view(), nullptr, 0.5, Precision::Float32, 0);
  PairReduce red;
  red.kind = PairReduce::TopK;
  red.k = 5;
  p.reduce = &red;
  p.filter = &filter;
  TopKSink got(pk, 5, false);
  Ctl ctl;
  gpu()->simjoin(p, got, ctl);
  EXPECT_TRUE(red.done);
  // Keys i % 1000: three points have key 0, so the best rows are (0, 0) three times, then (0, 1).
  const auto rows = got.finish();
  ASSERT_EQ(rows.size(), 5u);
  const int64_t want2[5] = {0, 0, 0, 1, 1};
  for (size_t q = 0; q < rows.size(); ++q) {
    EXPECT_EQ(rows[q].dist, 0.0);
    EXPECT_EQ(rows[q].id1, 0);
    EXPECT_EQ(rows[q].id2, want2[q]);
  }
  // 3000 * 2999 / 2 pairs within eps: a limit below that is 54000 for every reduction.
  for (auto kind : {PairReduce::Aggregate, PairReduce::Group, PairReduce::TopK}) {
    auto q = make_simjoin(pts.view(), nullptr, 0.5, Precision::Float32, 1000000);
    PairReduce r2;
    r2.kind = kind;
    r2.k = 3;
    r2.keys_a = r2.keys_b = keys.data();
    q.reduce = &r2;
    Collect sink;
    Ctl c2;
    try {
      gpu()->simjoin(q, sink, c2);
      ADD_FAILURE() << "no error for kind " << int(kind);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
    }
  }
}

}  // namespace
}  // namespace gputest
}  // namespace gpu2bs
