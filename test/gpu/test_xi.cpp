// gpu_xi's pair counts on the CUDA engine: bins of explicit (log-spaced, linear, from 0) edges,
// bit for bit equal to the CPU engine's (test/unit/xi_test.cpp checks the CPU engine against
// brute force and a float64 reference): DD, DR and RR shapes, periodic and open boxes, unit-sphere
// points of w(theta), both precisions, up to the largest number of bins.
#include <cmath>

#include "core/rdf.h"
#include "core/xi.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// Points scaled from the unit cube to [lo, lo + side)^dims.
ref::Points scaled(size_t n, int dims, uint64_t seed, double lo, double side) {
  ref::Points p = ref::uniform(n, dims, seed);
  for (auto& c : p.c)
    for (double& x : c) x = lo + side * x;
  return p;
}

// nb log-spaced bins from lo to hi.
std::vector<double> log_edges(double lo, double hi, int nb) {
  std::vector<double> e;
  for (int k = 0; k <= nb; ++k) e.push_back(lo * std::pow(hi / lo, double(k) / nb));
  return e;
}

// One problem on both engines; some pair must be counted.
void expect_same(const RdfProblem& p, const char* what) {
  Control c1, c2;
  c1.threads = threads();
  const auto want = cpu()->rdf(p, c1);
  const auto got = gpu()->rdf(p, c2);
  EXPECT_EQ(got, want) << what << " " << pname(p.prec);
  uint64_t total = 0;
  for (uint64_t c : want) total += c;
  EXPECT_GT(total, 0u) << what;
}

TEST(XiGpu, EqualsCpuEngine) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const ref::Points d = scaled(30000, 3, 11, 0, 10), r = scaled(40000, 3, 12, 0, 10);
    const ref::Points d2 = scaled(30000, 2, 13, 0, 10);
    const PointsView vd = d.view(), vr = r.view(), v2 = d2.view();
    const double box[3] = {10, 10, 10};
    const auto e = log_edges(0.01, 1.0, 30);
    expect_same(make_rdf_edges(vd, nullptr, e, nullptr, 0, prec), "DD open");
    expect_same(make_rdf_edges(vd, &vr, e, nullptr, 0, prec), "DR open");
    expect_same(make_rdf_edges(vr, nullptr, e, box, 3, prec), "RR periodic");
    expect_same(make_rdf_edges(vd, &vr, log_edges(0.05, 5.0, 20), box, 3, prec), "DR last edge L/2");
    expect_same(make_rdf_edges(vd, nullptr, {0, 0.25, 0.5, 1, 2}, box, 3, prec), "first edge 0");
    expect_same(make_rdf_edges(v2, nullptr, log_edges(0.01, 2.0, 25), box, 2, prec), "2-D");
    std::vector<double> many(kMaxEdgeBins + 1);
    for (int k = 0; k <= kMaxEdgeBins; ++k) many[size_t(k)] = 1.5 * k / kMaxEdgeBins;
    expect_same(make_rdf_edges(vd, nullptr, many, box, 3, prec), "4096 bins");
  }
}

TEST(XiGpu, AngularEqualsCpuEngine) {
  REQUIRE_GPU();
  const ref::Points a = ref::uniform(50000, 2, 21), b = ref::uniform(50000, 2, 22);
  // ra in [0, 360), dec in [-90, 90] (uniform on the sphere through asin).
  std::vector<double> ra[2], dec[2];
  const ref::Points* src[2] = {&a, &b};
  PointsView v[2];
  for (int s = 0; s < 2; ++s) {
    for (size_t i = 0; i < src[s]->c[0].size(); ++i) {
      ra[s].push_back(360 * src[s]->c[0][i]);
      dec[s].push_back(std::asin(2 * src[s]->c[1][i] - 1) * 180 / M_PI);
    }
    v[s].dims = 2;
    v[s].n = ra[s].size();
    v[s].coord[0] = ra[s].data();
    v[s].coord[1] = dec[s].data();
  }
  const SpherePoints sa = sphere_points(v[0]), sb = sphere_points(v[1]);
  const PointsView va = sa.view(), vb = sb.view();
  const auto e = chord_edges(log_edges(0.01, 5.0, 20));
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    expect_same(make_rdf_edges(va, nullptr, e, nullptr, 0, prec), "w(theta) DD");
    expect_same(make_rdf_edges(va, &vb, e, nullptr, 0, prec), "w(theta) DR");
  }
}

}  // namespace
