// Grid index: cell assignment, lookup, neighbour patterns.
#include <gtest/gtest.h>

#include <set>

#include "common/reference.h"
#include "core/grid.h"

using namespace gpu2bs;

TEST(Grid, EveryPointInItsCellAndCellsSorted) {
  auto pts = ref::uniform(5000, 3, 4);
  Bounds box = compute_bounds(pts.view());
  double side = grid_cell_side(0.05, box);
  const double* c[3] = {pts.c[0].data(), pts.c[1].data(), pts.c[2].data()};
  Grid g(3, 5000, c, box.lo, side);
  size_t total = 0;
  for (size_t cell = 0; cell < g.num_cells(); ++cell) {
    EXPECT_EQ(g.find(g.cell_coord(cell)), int64_t(cell));
    for (size_t s = g.cell_begin(cell); s < g.cell_end(cell); ++s) {
      uint32_t i = g.order()[s];
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(grid_cell_coord(c[k][i], box.lo[k], 1.0 / side), g.cell_coord(cell)[k]);
      total++;
    }
  }
  EXPECT_EQ(total, 5000u);
  int64_t absent[3] = {-5, -5, -5};
  EXPECT_EQ(g.find(absent), -1);
}

// The order is (cell coordinates lexicographically, then input index) on both construction
// paths: radix sort of the linearized key (<= 64 bits) and the comparison sort (a 6-D grid of a
// tiny side over a wide box needs 6 x 41 bits).
TEST(Grid, OrderIsLexicographicThenIndexOnBothPaths) {
  for (int variant = 0; variant < 3; ++variant) {
    const int dims = variant == 2 ? 6 : 3;
    auto pts = ref::uniform(20000, dims, 11 + variant);
    // Duplicates: every 7th point repeats point 3, so ties on the cell are common.
    for (size_t i = 0; i < 20000; i += 7)
      for (int k = 0; k < dims; ++k) pts.c[k][i] = pts.c[k][3];
    Bounds box = compute_bounds(pts.view());
    const double eps = variant == 0 ? 0.05 : variant == 1 ? 0.3 : 1e-9;
    double side = grid_cell_side(eps, box);
    const double* c[kMaxDims] = {};
    for (int k = 0; k < dims; ++k) c[k] = pts.c[k].data();
    Grid g(dims, 20000, c, box.lo, side);
    const auto& o = g.order();
    ASSERT_EQ(o.size(), 20000u);
    auto key = [&](uint32_t i, int k) { return grid_cell_coord(c[k][i], box.lo[k], 1.0 / side); };
    for (size_t s = 1; s < o.size(); ++s) {
      int cmp = 0;
      for (int k = 0; k < dims && cmp == 0; ++k)
        cmp = key(o[s - 1], k) < key(o[s], k) ? -1 : key(o[s - 1], k) > key(o[s], k) ? 1 : 0;
      ASSERT_TRUE(cmp < 0 || (cmp == 0 && o[s - 1] < o[s])) << "variant " << variant << " at " << s;
    }
  }
}

TEST(Grid, NeighbourPatterns) {
  for (int d = 2; d <= 6; ++d) {
    auto fwd = neighbour_offsets(d, true);
    auto all = neighbour_offsets(d, false);
    int full = 1;
    for (int k = 0; k < d; ++k) full *= 3;
    EXPECT_EQ(all.size(), size_t(full * d));
    EXPECT_EQ(fwd.size(), size_t((full - 1) / 2 * d));
    // No offset and its negation are both in the forward set.
    std::set<std::vector<int>> seen;
    for (size_t o = 0; o < fwd.size(); o += size_t(d)) {
      std::vector<int> v(fwd.begin() + long(o), fwd.begin() + long(o) + d), neg(v);
      for (auto& x : neg) x = -x;
      EXPECT_EQ(seen.count(neg), 0u);
      seen.insert(v);
    }
  }
}

TEST(Grid, CellSideCoversFloat32Rounding) {
  Bounds box;
  box.dims = 2;
  box.hi[0] = box.hi[1] = 1e6;
  EXPECT_GT(grid_cell_side(1.0, box), 1.0);
  EXPECT_GE(grid_cell_side(1e-30, box), 1e6 * std::ldexp(1.0, -40));
  EXPECT_EQ(grid_cell_coord(-1.0, 0, 1.0), 0);
  EXPECT_EQ(grid_cell_coord(1e300, 0, 1.0), int64_t(1) << 41);
}
