// The CPU engine's join and pair count over a periodic box (src/core/periodic.h): the wrapping
// grid against a brute-force pass with the same arithmetic (every pair found once, none
// missed: axes of 1, 3 and more cells, points on the faces 0 and L, eps exactly half a side,
// one periodic axis), against the float64 minimum-image reference, and the box checks.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/periodic_reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/periodic.h"

using namespace gpu2bs;
namespace pr = gpu2bs::periodic_ref;

namespace {

struct Pts {
  int dims;
  std::vector<double> c[kMaxDims];
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = c[0].size();
    for (int k = 0; k < dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// n uniform points in [0, side)^dims plus points on the faces 0 and side of every axis.
Pts with_faces(size_t n, int dims, double side, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, side);
  Pts p{dims, {}};
  for (int k = 0; k < dims; ++k)
    for (size_t i = 0; i < n; ++i) p.c[k].push_back(u(g));
  for (int f = 0; f < 2 * dims; ++f)
    for (int k = 0; k < dims; ++k) p.c[k].push_back(k == f / 2 ? (f % 2 ? side : 0.0) : side / 2);
  return p;
}

struct Collect : PairSink {
  std::vector<PairRecord> v;
  void consume(const PairRecord* p, size_t n) override { v.insert(v.end(), p, p + n); }
};

// The engine's pairs and count for one case, against the same-arithmetic brute force and the
// float64 reference.
void check_case(const Pts& a, const Pts* b, double eps, const double* box, Precision prec,
                const char* what) {
  const PointsView va = a.view();
  PointsView vb;
  if (b) vb = b->view();
  const SimjoinProblem sp = make_simjoin(va, b ? &vb : nullptr, eps, prec, 0);
  const PeriodicJoin pj = make_periodic_join(sp, box, "eps");
  Control ctl;
  ctl.threads = 3;
  ctl.page_pairs = 1000;
  Collect sink;
  cpu_periodic_join(pj, sink, ctl);
  const auto got = pr::normalized(sink.v, b == nullptr);
  const auto want = prec == Precision::Float32
                        ? pr::brute<float>(va, b ? &vb : nullptr, sp.eps2, sp.eps2_f, box)
                        : pr::brute<double>(va, b ? &vb : nullptr, sp.eps2, sp.eps2_f, box);
  EXPECT_EQ(got, want) << what;
  Control c2;
  c2.threads = 2;
  EXPECT_EQ(cpu_periodic_count(pj, c2), want.size()) << what;
  const double tol = prec == Precision::Float32 ? 1e-5 * eps : 1e-12 * eps;
  EXPECT_EQ(pr::disagreements(got, va, b ? &vb : nullptr, eps, box, tol), 0u) << what;
}

TEST(Periodic, GridWrapsLikeBruteForce) {
  const Pts a3 = with_faces(1500, 3, 10, 1), b3 = with_faces(900, 3, 10, 2);
  const Pts a2 = with_faces(2000, 2, 8, 3);
  const double cube[3] = {10, 10, 10}, one[3] = {10, 0, 0}, flat[2] = {8, 8};
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    check_case(a3, nullptr, 0.9, cube, prec, "self, 11 cells per axis");
    check_case(a3, nullptr, 3.3, cube, prec, "self, 3 cells per axis");
    check_case(a3, nullptr, 4.0, cube, prec, "self, 2 -> 1 cell per axis");
    check_case(a3, nullptr, 5.0, cube, prec, "self, eps = L / 2");
    check_case(a3, nullptr, 1.2, one, prec, "self, one periodic axis");
    check_case(a3, &b3, 1.2, cube, prec, "two sets");
    check_case(a3, &b3, 5.0, cube, prec, "two sets, eps = L / 2");
    check_case(a2, nullptr, 2.6, flat, prec, "2-D, 3 cells per axis");
  }
}

TEST(Periodic, FacesAreOnePoint) {
  Pts p{2, {}};
  p.c[0] = {0, 10, 5};
  p.c[1] = {3, 3, 3};
  const double box[2] = {10, 0};
  const SimjoinProblem sp = make_simjoin(p.view(), nullptr, 0.5, Precision::Float32, 0);
  Collect sink;
  Control ctl;
  cpu_periodic_join(make_periodic_join(sp, box, "eps"), sink, ctl);
  ASSERT_EQ(sink.v.size(), 1u);
  EXPECT_EQ(sink.v[0].dist, 0.0);
}

TEST(Periodic, ZeroRadiusAndFlatAxis) {
  // r = 0 counts coincident points (faces included); the open axis z holds one value.
  Pts p{3, {}};
  p.c[0] = {0, 10, 5, 5, 2};
  p.c[1] = {1, 1, 3, 3, 4};
  p.c[2] = {0, 0, 0, 0, 0};
  const double box[3] = {10, 10, 0};
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const SimjoinProblem sp = make_simjoin(p.view(), nullptr, make_radius(0, prec), prec, 0);
    Control ctl;
    EXPECT_EQ(cpu_periodic_count(make_periodic_join(sp, box, "r"), ctl), 2u);
  }
}

TEST(Periodic, BoxChecks) {
  double out[kMaxDims];
  const double ok[3] = {10, 0, 8}, bad[3] = {10, -1, 8}, nan[3] = {10, NAN, 8};
  EXPECT_TRUE(check_box(ok, 3, 3, 4.0, "eps", out));
  EXPECT_EQ(out[1], 0.0);
  EXPECT_FALSE(check_box(nullptr, 0, 3, 1e300, "eps", out));
  EXPECT_THROW(check_box(ok, 3, 3, 4.0000001, "eps", out), Error);
  EXPECT_THROW(check_box(ok, 2, 3, 1.0, "eps", out), Error);
  EXPECT_THROW(check_box(bad, 3, 3, 1.0, "eps", out), Error);
  EXPECT_THROW(check_box(nan, 3, 3, 1.0, "eps", out), Error);
  try {
    check_box(ok, 3, 3, 4.5, "r", out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidParameter);
  }
}

}  // namespace
