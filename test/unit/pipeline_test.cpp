// The pair pipeline (src/core/pair_ir, pipeline): predicate evaluation in SQL's three-valued
// logic, in-place select, aggregates, per-key groups, top-k and the page pipe, each against a
// direct computation over random pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "core/error.h"
#include "core/pipeline.h"

using namespace gpu2bs;

namespace {

PairInstr cmp(PairCol c, CmpOp op, double v) {
  PairInstr in;
  in.kind = PairInstr::CmpConst;
  in.col = c;
  in.op = op;
  in.dval = v;
  in.ival = int64_t(v);
  return in;
}

PairInstr logic(PairInstr::Kind k, uint32_t n) {
  PairInstr in;
  in.kind = k;
  in.n = n;
  return in;
}

struct Data {
  std::vector<int64_t> ids;
  std::vector<PairRecord> pairs;
};

Data random_pairs(size_t npts, size_t npairs, unsigned seed) {
  std::mt19937_64 rng(seed);
  Data d;
  for (size_t k = 0; k < npts; ++k) d.ids.push_back(int64_t(rng() % (npts / 2 + 1)) - 3);  // duplicates
  for (size_t k = 0; k < npairs; ++k) {
    PairRecord r;
    r.i = uint32_t(rng() % npts);
    r.j = uint32_t(rng() % npts);
    r.dist = double(rng() % 50) / 8;  // ties
    d.pairs.push_back(r);
  }
  return d;
}

}  // namespace

TEST(PairIr, ThreeValuedLogic) {
  PairPredicate p;
  PairInstr unknown;
  unknown.kind = PairInstr::Truth;
  unknown.truth = Tri::Unknown;
  // (dist > 1 OR unknown) AND NOT (id1 % 3 = 1)
  p.code = {cmp(PairCol::Dist, CmpOp::Gt, 1.0), unknown, logic(PairInstr::Or, 2)};
  PairInstr mod;
  mod.kind = PairInstr::ModCmp;
  mod.col = PairCol::Id1;
  mod.modulus = 3;
  mod.ival = 1;
  mod.op = CmpOp::Eq;
  p.code.push_back(mod);
  p.code.push_back(logic(PairInstr::Not, 0));
  p.code.push_back(logic(PairInstr::And, 2));
  p.validate();
  EXPECT_EQ(p.eval(3, 9, 2.0), Tri::True);
  EXPECT_EQ(p.eval(3, 9, 0.5), Tri::Unknown);
  EXPECT_EQ(p.eval(4, 9, 2.0), Tri::False);
  EXPECT_EQ(p.eval(-2, 9, 2.0), Tri::True);  // -2 % 3 = -2 in SQL
  EXPECT_FALSE(p.keep(3, 9, 0.5));
  EXPECT_EQ(p.describe(), "(((dist > 1) OR null) AND (NOT ((id1 % 3) = 1)))");
  PairPredicate bad;
  bad.code = {logic(PairInstr::And, 2)};
  EXPECT_THROW(bad.validate(), Error);
}

TEST(PairIr, SelectIsStableAndInPlace) {
  Data d = random_pairs(1000, 20000, 1);
  PairPredicate p;
  p.code = {cmp(PairCol::Dist, CmpOp::Le, 3.0), cmp(PairCol::Id1, CmpOp::Ne, 5), logic(PairInstr::And, 2)};
  PairKeys keys{d.ids.data(), d.ids.data(), true};
  std::vector<PairRecord> want;
  for (auto& r : d.pairs) {
    int64_t a, b;
    keys.get(r, &a, &b);
    if (r.dist <= 3.0 && a != 5) want.push_back(r);
  }
  PairFilter f(p, keys);
  std::vector<PairRecord> got = d.pairs;
  got.resize(f.select(got.data(), got.size()));
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(got[k].i == want[k].i && got[k].j == want[k].j);
  EXPECT_EQ(f.select(got.data(), 0), 0u);
}

TEST(Pipeline, AggregateGroupTopK) {
  for (bool self : {true, false}) {
    Data d = random_pairs(500, 30000, self ? 2 : 3);
    PairKeys keys{d.ids.data(), d.ids.data(), self};
    AggregateSink agg;
    GroupSink g1(keys, 0, d.ids.size(), d.ids.size()), g2(keys, 1, d.ids.size(), d.ids.size());
    TopKSink top(keys, 25, false), bottom(keys, 25, true);
    for (size_t off = 0; off < d.pairs.size(); off += 777) {
      size_t n = std::min<size_t>(777, d.pairs.size() - off);
      for (PairSink* s : std::initializer_list<PairSink*>{&agg, &g1, &g2, &top, &bottom}) s->consume(&d.pairs[off], n);
    }
    double sum = 0;
    std::map<int64_t, GroupRow> w1, w2;
    std::vector<TopRow> all;
    for (auto& r : d.pairs) {
      sum += r.dist;
      int64_t a, b;
      keys.get(r, &a, &b);
      all.push_back(TopRow{r.dist, a, b});
      for (auto* w : {&w1, &w2}) {
        int64_t k = w == &w1 ? a : b;
        auto it = w->find(k);
        if (it == w->end()) (*w)[k] = GroupRow{k, 1, r.dist, r.dist};
        else {
          it->second.count++;
          it->second.min = std::min(it->second.min, r.dist);
          it->second.max = std::max(it->second.max, r.dist);
        }
      }
    }
    EXPECT_EQ(agg.count, d.pairs.size());
    EXPECT_NEAR(agg.sum(), sum, 1e-9 * sum);
    for (auto [sink, want] : {std::make_pair(&g1, &w1), std::make_pair(&g2, &w2)}) {
      auto rows = sink->finish();
      ASSERT_EQ(rows.size(), want->size());
      for (auto& r : rows) {
        const GroupRow& w = want->at(r.key);
        EXPECT_EQ(r.count, w.count);
        EXPECT_EQ(r.min, w.min);
        EXPECT_EQ(r.max, w.max);
      }
    }
    for (TopKSink* t : {&top, &bottom}) {
      std::vector<TopRow> s = all;
      std::sort(s.begin(), s.end(), [&](const TopRow& x, const TopRow& y) { return t->before(x, y); });
      s.resize(25);
      auto got = t->finish();
      ASSERT_EQ(got.size(), 25u);
      for (size_t k = 0; k < 25; ++k)
        EXPECT_TRUE(got[k].dist == s[k].dist && got[k].id1 == s[k].id1 && got[k].id2 == s[k].id2);
    }
  }
}

TEST(Pipeline, PagePipeStopsProducer) {
  PagePipe pipe(2);
  std::atomic<int> produced{0};
  pipe.start([&](PairSink& sink) {
    PairRecord r{1, 2, 0.5};
    for (int k = 0; k < 1000000; ++k) {
      sink.consume(&r, 1);
      produced++;
    }
  });
  PagePipe::Page page;
  int got = 0;
  while (got < 5) {
    if (pipe.next(&page, 100) == PagePipe::Status::Page) got++;
  }
  pipe.stop();
  EXPECT_LT(produced.load(), 100);
  // errors come back on the reading side
  PagePipe bad(2);
  bad.start([](PairSink&) { throw Error(ErrorCode::ProgramLimit, "too many"); });
  PagePipe::Status st;
  EXPECT_THROW(
      {
        do st = bad.next(&page, 100);
        while (st == PagePipe::Status::Wait);
      },
      Error);
}

TEST(Pipeline, AggregateStageMatchesSink) {
  Data d = random_pairs(300, 50000, 4);
  PairPredicate p;
  p.code = {cmp(PairCol::Dist, CmpOp::Gt, 1.0)};
  PairKeys keys{d.ids.data(), d.ids.data(), true};
  PairFilter f(p, keys);
  AggregateSink want;
  FilterSink fs(&f, want);
  fs.consume(d.pairs.data(), d.pairs.size());
  AggregateStage stage(&p);
  stage.start(3);
  for (size_t off = 0, w = 0; off < d.pairs.size(); off += 1000, w = (w + 1) % 3)
    stage.consume(&d.pairs[off], std::min<size_t>(1000, d.pairs.size() - off), int(w));
  AggregateSink got;
  stage.finish(&got);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_NEAR(got.sum(), want.sum(), 1e-12 * want.sum());
  AggregateStage empty(nullptr);
  empty.start(2);
  AggregateSink none;
  empty.finish(&none);
  EXPECT_EQ(none.count, 0u);
}

// dist_interval: for random AND-chains of dist comparisons (ties at the bounds, infinities) the
// interval keeps exactly the distances the program keeps; other shapes are refused.
TEST(PairIr, DistIntervalMatchesTheProgram) {
  std::mt19937_64 rng(7);
  const CmpOp ops[] = {CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge};
  const double consts[] = {0.0, 0.5, 1.0, 1.5, 2.0, HUGE_VAL, -HUGE_VAL};
  for (int t = 0; t < 2000; ++t) {
    PairPredicate p;
    const int n = 1 + int(rng() % 4);
    for (int k = 0; k < n; ++k) p.code.push_back(cmp(PairCol::Dist, ops[rng() % 4], consts[rng() % 7]));
    if (n > 1) p.code.push_back(logic(PairInstr::And, uint32_t(n)));
    p.validate();
    double lo, hi;
    bool lo_in, hi_in;
    ASSERT_TRUE(p.dist_interval(&lo, &lo_in, &hi, &hi_in)) << p.describe();
    for (double d : {0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, HUGE_VAL}) {
      const bool in = (lo_in ? d >= lo : d > lo) && (hi_in ? d <= hi : d < hi);
      EXPECT_EQ(in, p.keep(0, 0, d)) << p.describe() << " at " << d;
    }
  }
  PairPredicate other;
  other.code = {cmp(PairCol::Dist, CmpOp::Gt, 1.0), cmp(PairCol::Dist, CmpOp::Lt, 0.5), logic(PairInstr::Or, 2)};
  double lo, hi;
  bool lo_in, hi_in;
  EXPECT_FALSE(other.dist_interval(&lo, &lo_in, &hi, &hi_in));
  other.code = {cmp(PairCol::Id1, CmpOp::Gt, 1.0)};
  EXPECT_FALSE(other.dist_interval(&lo, &lo_in, &hi, &hi_in));
  other.code = {cmp(PairCol::Dist, CmpOp::Eq, 1.0)};
  EXPECT_FALSE(other.dist_interval(&lo, &lo_in, &hi, &hi_in));
  other.code = {cmp(PairCol::Dist, CmpOp::Gt, std::nan(""))};
  EXPECT_FALSE(other.dist_interval(&lo, &lo_in, &hi, &hi_in));
}
