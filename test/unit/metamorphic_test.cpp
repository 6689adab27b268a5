// The CPU engine's answers for a pair depend on that pair and the parameters alone: far-away
// points added to the input (moving the bounding box, the grid origin and the cell size) never
// change the join pairs, the pair count or the explicit-width SDH among the others; and
// parameters whose square underflows or overflows the precision are refused, whatever the data.
#include <gtest/gtest.h>

#include <cfloat>

#include "common/metamorphic.h"

using namespace gpu2bs;

namespace {

Engine& cpu() {
  static std::unique_ptr<Engine> e = make_cpu_engine();
  return *e;
}

// Seeds 0..N-1, both precisions, 2 to 4 dimensions (make_case draws them).
TEST(Metamorphic, FarPointsChangeNothing) {
  int ran = 0, refused = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const meta::Case c = meta::make_case(seed);
    SCOPED_TRACE(c.describe());
    const meta::Outcome a = meta::run(cpu(), c, c.s);
    const meta::Outcome b = meta::run(cpu(), c, c.sf, 1 + int(seed % 3));
    ASSERT_EQ(a.refused, b.refused) << a.why << " / " << b.why;
    if (a.refused) {
      ++refused;
      continue;
    }
    ++ran;
    EXPECT_EQ(b.far_pairs, 0u);
    EXPECT_EQ(a.join, b.join);
    EXPECT_EQ(a.join2, b.join2);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.count, uint64_t(a.join.size()));
    EXPECT_EQ(a.hist, b.hist);
  }
  EXPECT_GT(ran, 150);
  EXPECT_GT(refused, 0);  // scales near the underflow limit are drawn too
}

// The reproduction: float4, (0,0) and (1e-24,0). eps 1e-25 used to find no pair alone and the
// pair at dist 0 once (1e-12,0) was added; its square underflows float4, so it is refused.
TEST(Metamorphic, TinyEpsRefusedWhateverTheData) {
  ref::Points two;
  two.dims = 2;
  two.c = {{0, 1e-24}, {0, 0}};
  ref::Points three = two;
  three.c[0].push_back(1e-12);
  three.c[1].push_back(0);
  for (const ref::Points* p : {&two, &three}) {
    EXPECT_THROW(make_simjoin(p->view(), nullptr, 1e-25, Precision::Float32, 0), Error);
    EXPECT_THROW(make_pair_count(p->view(), 1e-25, Precision::Float32), Error);
    EXPECT_THROW(make_sdh(p->view(), 4, 1e-25, true, Precision::Float32), Error);
  }
  // float8 accepts 1e-25 and finds no pair (1e-24 > 1e-25) with or without the third point.
  for (const ref::Points* p : {&two, &three}) {
    meta::Case c;
    c.dims = 2;
    c.prec = Precision::Float64;
    c.eps = 1e-25;
    c.nb = 4;
    c.width = 1e-25;
    c.s = two;
    const meta::Outcome o = meta::run(cpu(), c, *p);
    ASSERT_FALSE(o.refused) << o.why;
    EXPECT_TRUE(o.join.empty());
    EXPECT_EQ(o.count, 0u);
  }
}

// Limits of the refusal, in each precision: the square of eps, r or the width must be a normal
// number; r = 0 and +Infinity stay accepted.
TEST(Metamorphic, SquareLimits) {
  ref::Points p = ref::uniform(10, 3, 1);
  const double f4min = std::sqrt(double(FLT_MIN)), f8min = std::sqrt(DBL_MIN);
  const double f4max = std::sqrt(double(FLT_MAX)), f8max = std::sqrt(DBL_MAX);
  EXPECT_NO_THROW(make_eps(f4min * 1.001, Precision::Float32));
  EXPECT_THROW(make_eps(f4min * 0.999, Precision::Float32), Error);
  EXPECT_NO_THROW(make_eps(f8min * 1.001, Precision::Float64));
  EXPECT_THROW(make_eps(f8min * 0.999, Precision::Float64), Error);
  EXPECT_NO_THROW(make_eps(f4max * 0.999, Precision::Float32));
  EXPECT_THROW(make_eps(f4max * 1.001, Precision::Float32), Error);
  EXPECT_THROW(make_eps(f8max * 1.001, Precision::Float64), Error);
  EXPECT_THROW(make_eps(4e-320, Precision::Float64), Error);  // subnormal eps
  EXPECT_NO_THROW(make_eps(INFINITY, Precision::Float32));
  EXPECT_NO_THROW(make_radius(0, Precision::Float32));
  EXPECT_NO_THROW(make_radius(INFINITY, Precision::Float64));
  EXPECT_THROW(make_radius(1e-30, Precision::Float32), Error);
  EXPECT_THROW(make_radius(1e-160, Precision::Float64), Error);
  const Bounds box = compute_bounds(p.view());
  EXPECT_THROW(make_sdh_params(4, 1e-20, true, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(4, 1e20, true, box, Precision::Float32), Error);
  EXPECT_THROW(make_sdh_params(4, 1e-160, true, box, Precision::Float64), Error);
  EXPECT_THROW(make_sdh_params(4, 1e200, true, box, Precision::Float64), Error);
  EXPECT_NO_THROW(make_sdh_params(4, 1e-15, true, box, Precision::Float32));
  // A derived width whose square underflows (an extent of 1e-30) is refused in float4.
  ref::Points tiny = p;
  for (auto& col : tiny.c)
    for (double& v : col) v *= 1e-30;
  EXPECT_THROW(make_sdh(tiny.view(), 4, 0, false, Precision::Float32), Error);
  EXPECT_NO_THROW(make_sdh(tiny.view(), 4, 0, false, Precision::Float64));
}

}  // namespace
