// Pair count on the CUDA engine: every path (cost rule, all-pairs tiles, grid) bit for bit
// against the CPU engine and within the near-r pairs of the float64 reference.
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

TEST(PairCount, Random) {
  REQUIRE_GPU();
  for (size_t n : {0, 1, 2, 3, 1000, 5000})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64})
        for (double nbrs : {0.5, 20.0, 300.0}) {
          auto pts = ref::uniform(n, dims, 31 + n, 0, 1);
          const double r = eps_for(n, dims, nbrs);
          char what[96];
          snprintf(what, sizeof what, "n=%zu d=%d %s r=%g", n, dims, pname(prec), r);
          count_case(pts, prec, r, true, what);
        }
}

TEST(PairCount, SpecialRadiiDimsAndDuplicates) {
  REQUIRE_GPU();
  auto pts = ref::uniform(3000, 3, 41);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    count_case(pts, prec, 0.0, true, "r=0");
    count_case(pts, prec, INFINITY, true, "r=inf");
    count_case(pts, prec, 10.0, true, "r beyond the box");
    count_case(same_point(2000, 3), prec, 0.0, true, "all equal r=0");
    count_case(few_distinct(3000, 2, 3, 50), prec, 0.05, true, "50 distinct points");
    count_case(lattice(4000, 3, 8, 10), prec, 2.0, true, "lattice r=2 (on edges)");
    count_case(lattice(4000, 3, 8, 10), prec, 3.0, true, "lattice r=3 (on edges)");
    for (int dims : {4, 5, 6}) {
      auto p = ref::uniform(2500, dims, 50 + dims);
      count_case(p, prec, eps_for(2500, dims, 15), true, "dims " + std::to_string(dims));
    }
  }
}

// Cells with more than 256 points (r = 0.3 in the unit cube): both GPU paths agree with each
// other and with the float64 reference.
TEST(PairCount, CrowdedCellsVsReference) {
  REQUIRE_GPU();
  auto pts = ref::uniform(20000, 3, 63);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto want = ref::pair_count(pts, 0.3, prec);
    uint64_t got[3] = {};
    for (int path : {1, 2}) {
      forced().count_path = path;
      got[path] = run_count(gpu(), pts, prec, 0.3);
      forced().count_path = 0;
      const uint64_t d = got[path] > want.first ? got[path] - want.first : want.first - got[path];
      EXPECT_LE(d, want.second) << pname(prec) << " path " << path << ": " << got[path]
                                << " vs reference " << want.first;
    }
    EXPECT_EQ(got[1], got[2]) << pname(prec);
  }
}

// Sparse sets whose CPU grid is widened (about one point per cell of side r) on a dense
// lattice (uniform) and on a hashed one (skewed, wide box), 2-D to 6-D, and the 1e6-point 3-D
// case of the benchmarks: the CPU engine's grid count (forward rows of three cells) equals
// every GPU path bit for bit.
TEST(PairCount, SparseWidenedGridsMatchCpu) {
  REQUIRE_GPU();
  for (int dims = 2; dims <= 6; ++dims)
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      const size_t n = 60000;
      auto u = ref::uniform(n, dims, 70 + dims);
      count_case(u, prec, eps_for(n, dims, 1.0), false, "sparse uniform d=" + std::to_string(dims));
      auto e = ref::exponential(n, dims, 80 + dims, 30.0);
      count_case(e, prec, eps_for(n, dims, 1.0) / 30, false, "sparse skewed d=" + std::to_string(dims));
    }
  auto big = ref::uniform(1000000, 3, 1);
  count_case(big, Precision::Float32, 0.01, false, "1e6 3-D r=0.01 f32");
}

TEST(PairCount, Large100k) {
  REQUIRE_GPU();
  auto p3 = ref::uniform(100000, 3, 61);
  count_case(p3, Precision::Float32, eps_for(100000, 3, 30), false, "100k 3-D f32");
  count_case(p3, Precision::Float64, eps_for(100000, 3, 30), false, "100k 3-D f64");
  count_case(p3, Precision::Float32, 0.3, false, "100k 3-D f32 r=0.3");
  auto p2 = ref::uniform(100000, 2, 62);
  count_case(p2, Precision::Float32, eps_for(100000, 2, 10), false, "100k 2-D f32");
}

}  // namespace
