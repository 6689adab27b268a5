// The join, the pair count and DBSCAN over a periodic box on the CUDA engine
// (kernels/periodic.cu): pairs and distances bit for bit equal to the CPU engine's, both equal
// to a brute-force pass with the same arithmetic (test/common/periodic_reference.h) and in
// agreement with the float64 minimum-image reference; self and two sets, axes of 1, 3 and more
// cells, eps exactly half a side, one periodic axis, points on the faces, both precisions, and
// an output larger than one page.
#include "common/periodic_reference.h"
#include "core/dbscan.h"
#include "core/periodic.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;
namespace pr = gpu2bs::periodic_ref;

namespace {

// Uniform points in [0, side)^dims plus points on the faces 0 and side of every axis.
ref::Points with_faces(size_t n, int dims, uint64_t seed, double side) {
  ref::Points p = ref::uniform(n, dims, seed);
  for (auto& c : p.c)
    for (double& x : c) x *= side;
  for (int f = 0; f < 2 * dims; ++f)
    for (int k = 0; k < dims; ++k) p.c[k].push_back(k == f / 2 ? (f % 2 ? side : 0.0) : side / 2);
  return p;
}

// One case on both engines against the references.
void periodic_case(const ref::Points& a, const ref::Points* b, double eps, const double* box,
                   Precision prec, bool brute, const char* what) {
  const PointsView va = a.view();
  PointsView vb;
  if (b) vb = b->view();
  const SimjoinProblem sp = make_simjoin(va, b ? &vb : nullptr, eps, prec, 0);
  const PeriodicJoin pj = make_periodic_join(sp, box, "eps");
  Ctl c1, c2, c3, c4;
  Collect s1, s2;
  cpu()->periodic_join(pj, s1, c1);
  gpu()->periodic_join(pj, s2, c2);
  const auto want = pr::normalized(s1.v, b == nullptr);
  const auto got = pr::normalized(s2.v, b == nullptr);
  EXPECT_EQ(got.size(), want.size()) << what << " " << pname(prec);
  EXPECT_TRUE(got == want) << what << " " << pname(prec) << ": GPU pairs differ from the CPU engine's";
  EXPECT_EQ(gpu()->periodic_count(pj, c3), want.size()) << what;
  EXPECT_EQ(cpu()->periodic_count(pj, c4), want.size()) << what;
  if (brute) {
    const auto ref = prec == Precision::Float32
                         ? pr::brute<float>(va, b ? &vb : nullptr, sp.eps2, sp.eps2_f, box)
                         : pr::brute<double>(va, b ? &vb : nullptr, sp.eps2, sp.eps2_f, box);
    EXPECT_TRUE(got == ref) << what << " " << pname(prec) << ": GPU pairs differ from brute force";
    const double tol = prec == Precision::Float32 ? 1e-5 * eps : 1e-12 * eps;
    EXPECT_EQ(pr::disagreements(got, va, b ? &vb : nullptr, eps, box, tol), 0u) << what;
  }
}

TEST(PeriodicGpu, EqualsCpuEngineAndReference) {
  REQUIRE_GPU();
  const ref::Points a = with_faces(4000, 3, 1, 10), b = with_faces(3000, 3, 2, 10);
  const ref::Points a2 = with_faces(5000, 2, 3, 8), a4 = with_faces(2000, 4, 4, 6);
  const double cube[3] = {10, 10, 10}, one[3] = {0, 10, 0}, flat[2] = {8, 8}, box4[4] = {6, 6, 6, 6};
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    periodic_case(a, nullptr, 0.6, cube, prec, true, "self, 16 cells per axis");
    periodic_case(a, nullptr, 3.3, cube, prec, true, "self, 3 cells per axis");
    periodic_case(a, nullptr, 4.0, cube, prec, true, "self, 1 cell per axis");
    periodic_case(a, nullptr, 5.0, cube, prec, true, "self, eps = L / 2");
    periodic_case(a, nullptr, 0.8, one, prec, true, "self, one periodic axis");
    periodic_case(a, &b, 0.8, cube, prec, true, "two sets");
    periodic_case(a, &b, 5.0, cube, prec, true, "two sets, eps = L / 2");
    periodic_case(a2, nullptr, 2.6, flat, prec, true, "2-D, 3 cells per axis");
    periodic_case(a4, nullptr, 1.1, box4, prec, true, "4-D");
  }
  // About 23 million pairs: more than one output batch of the second pass (2^24 pairs).
  const ref::Points big = with_faces(200000, 3, 5, 10);
  periodic_case(big, nullptr, 0.65, cube, Precision::Float32, false, "200k points");
}

TEST(PeriodicGpu, DbscanEqualsCpuEngine) {
  REQUIRE_GPU();
  const ref::Points a = with_faces(20000, 3, 6, 10);
  const double cube[3] = {10, 10, 10};
  std::vector<int64_t> keys(a.n());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = int64_t(i) * 3 + 1;
  const SimjoinProblem sp = make_simjoin(a.view(), nullptr, 0.35, Precision::Float32, 0);
  PeriodicEngine pc(*cpu(), cube, 3), pg(*gpu(), cube, 3);
  Ctl c1, c2;
  const DbscanResult want = dbscan(pc, sp, keys.data(), 5, c1);
  const DbscanResult got = dbscan(pg, sp, keys.data(), 5, c2);
  EXPECT_GT(want.clusters, 1u);
  EXPECT_EQ(got.cluster, want.cluster);
  EXPECT_EQ(got.core, want.core);
}

}  // namespace
