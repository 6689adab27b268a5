// gpu_rdf on the CUDA engine: counts bit for bit equal to the CPU engine's (both read the same
// cell lists; test/unit/rdf_test.cpp checks the CPU engine against brute force), self and two
// sets, periodic, mixed and non-periodic boxes, 2-D to 4-D, both precisions, the shared and the
// global-memory histogram; the weighted form's counts and 128-bit weight sums likewise.
#include "core/rdf.h"
#include "core/weights.h"
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

// One problem on both engines.
void expect_same(const RdfProblem& p, const char* what) {
  Control c1, c2;
  c1.threads = threads();
  const auto want = cpu()->rdf(p, c1);
  const auto got = gpu()->rdf(p, c2);
  EXPECT_EQ(got, want) << what << " " << pname(p.prec);
}

TEST(RdfGpu, EqualsCpuEngine) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const ref::Points a = scaled(20000, 3, 1, 0, 10), b = scaled(15000, 3, 2, -3, 16);
    const ref::Points a2 = scaled(30000, 2, 3, 0, 10), a4 = scaled(8000, 4, 4, 0, 6);
    const PointsView va = a.view(), vb = b.view(), v2 = a2.view(), v4 = a4.view();
    const double box[4] = {10, 10, 10, 10}, mixed[3] = {10, 0, 10}, box4[4] = {6, 6, 6, 6};
    expect_same(make_rdf(va, nullptr, 500, 2.0, box, 3, prec), "self periodic");
    expect_same(make_rdf(va, nullptr, 100, 5.0, box, 3, prec), "self r_max = L/2");
    expect_same(make_rdf(va, nullptr, 100, 1.0, mixed, 3, prec), "self mixed box");
    expect_same(make_rdf(va, nullptr, 100, 1.0, nullptr, 0, prec), "self not periodic");
    expect_same(make_rdf(va, &vb, 300, 3.0, box, 3, prec), "two sets periodic");
    expect_same(make_rdf(va, &vb, 300, 3.0, nullptr, 0, prec), "two sets not periodic");
    expect_same(make_rdf(v2, nullptr, 200, 1.5, box, 2, prec), "2-D periodic");
    expect_same(make_rdf(v4, nullptr, 50, 1.0, box4, 4, prec), "4-D periodic");
    expect_same(make_rdf(va, nullptr, 100000, 2.0, box, 3, prec), "global-memory histogram");
  }
}

// One weighted problem on both engines: counts and sums bit for bit, counts as the unweighted.
void expect_same_weighted(const RdfProblem& p, const double* wa, const double* wb,
                          const char* what) {
  Control c1, c2, c3;
  c1.threads = threads();
  c3.threads = threads();
  const WeightedCounts want = cpu()->rdf_weighted(p, wa, wb, c1);
  const WeightedCounts got = gpu()->rdf_weighted(p, wa, wb, c2);
  EXPECT_EQ(got.pairs, want.pairs) << what << " " << pname(p.prec);
  EXPECT_EQ(want.pairs, cpu()->rdf(p, c3)) << what << " " << pname(p.prec);
  ASSERT_EQ(got.sums.size(), want.sums.size());
  size_t differ = 0;
  for (size_t k = 0; k < want.sums.size(); ++k) differ += !(got.sums[k] == want.sums[k]);
  EXPECT_EQ(differ, 0u) << what << " " << pname(p.prec);
  EXPECT_EQ(got.scale.shift, want.scale.shift);
}

// Weights in [-1, 3) with 20 significant bits (general values, both signs).
std::vector<double> weights(size_t n, uint64_t seed) {
  std::vector<double> w(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& v : w) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = -1.0 + 4.0 * double(x >> 44) / 1048576.0 + 1e-7 * double(x % 1000);
  }
  return w;
}

TEST(RdfGpu, WeightedEqualsCpuEngine) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const ref::Points a = scaled(20000, 3, 11, 0, 10), b = scaled(15000, 3, 12, -3, 16);
    const ref::Points a2 = scaled(30000, 2, 13, 0, 10);
    const PointsView va = a.view(), vb = b.view(), v2 = a2.view();
    const std::vector<double> wa = weights(a.n(), 1), wb = weights(b.n(), 2), w2 = weights(a2.n(), 3);
    const double box[3] = {10, 10, 10}, mixed[3] = {10, 0, 10};
    expect_same_weighted(make_rdf(va, nullptr, 500, 2.0, box, 3, prec), wa.data(), nullptr, "self periodic");
    expect_same_weighted(make_rdf(va, nullptr, 100, 5.0, box, 3, prec), wa.data(), nullptr, "self r_max = L/2");
    expect_same_weighted(make_rdf(va, nullptr, 100, 1.0, mixed, 3, prec), wa.data(), nullptr, "self mixed box");
    expect_same_weighted(make_rdf(va, nullptr, 100, 1.0, nullptr, 0, prec), wa.data(), nullptr, "self not periodic");
    expect_same_weighted(make_rdf(va, &vb, 300, 3.0, box, 3, prec), wa.data(), wb.data(), "two sets periodic");
    expect_same_weighted(make_rdf(va, &vb, 300, 3.0, nullptr, 0, prec), wa.data(), wb.data(), "two sets not periodic");
    expect_same_weighted(make_rdf(v2, nullptr, 200, 1.5, box, 2, prec), w2.data(), nullptr, "2-D periodic");
    expect_same_weighted(make_rdf_edges(va, &vb, {0.0, 0.2, 0.7, 1.5, 3.0}, box, 3, prec), wa.data(),
                         wb.data(), "edges");
    expect_same_weighted(make_rdf(va, nullptr, 50000, 2.0, box, 3, prec), wa.data(), nullptr,
                         "global-memory histogram");
  }
}

}  // namespace
