// Grid index: cell assignment, lookup, neighbour patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string>

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

// Both construction paths (dense lattice with counting sort, hash table with radix sort) build
// the same grid: order, cells, coordinates, lookups (present, absent, outside the lattice),
// row ranges; rounding inside the grid equals rounding before it.
TEST(Grid, DenseAndHashedPathsAgree) {
  int variant = 0, dense_cases = 0;
  for (int dims = 2; dims <= 6; ++dims)
    for (double eps : {0.02, 0.1, 0.3})
      for (bool f32 : {false, true}) {
        const size_t n = 6000;
        auto pts = ref::exponential(n, dims, 40 + variant++, 3.0);
        for (size_t i = 0; i < n; i += 5)
          for (int k = 0; k < dims; ++k) pts.c[k][i] = pts.c[k][7];
        Bounds box = compute_bounds(pts.view());
        const double side = grid_cell_side(eps, box);
        const double* c[kMaxDims] = {};
        std::vector<std::vector<double>> rc{size_t(dims), std::vector<double>(n)};
        const double* r[kMaxDims] = {};
        for (int k = 0; k < dims; ++k) {
          c[k] = pts.c[k].data();
          for (size_t i = 0; i < n; ++i) rc[k][i] = f32 ? double(float(c[k][i])) : c[k][i];
          r[k] = rc[k].data();
        }
        Grid hashed(dims, n, r, box.lo, side, false, true);
        Grid dense(dims, n, c, box.lo, side, f32);
        const std::string what = "dims " + std::to_string(dims) + " eps " + std::to_string(eps);
        ASSERT_FALSE(hashed.dense());
        if (!dense.dense()) continue;  // a 6-D lattice of small cells is too sparse to be dense
        ++dense_cases;
        ASSERT_EQ(dense.order(), hashed.order()) << what;
        ASSERT_EQ(dense.num_cells(), hashed.num_cells()) << what;
        for (size_t cell = 0; cell < dense.num_cells(); ++cell) {
          ASSERT_EQ(dense.cell_begin(cell), hashed.cell_begin(cell));
          ASSERT_EQ(dense.cell_end(cell), hashed.cell_end(cell));
          for (int k = 0; k < dims; ++k)
            ASSERT_EQ(dense.cell_coord(cell)[k], hashed.cell_coord(cell)[k]);
          int64_t key[kMaxDims];
          for (int k = 0; k < dims; ++k) key[k] = dense.cell_coord(cell)[k];
          ASSERT_EQ(dense.find(key), int64_t(cell));
          for (int k = 0; k < dims; ++k) {
            for (int64_t d : {-1, 1, 1000000}) {
              key[k] += d;
              ASSERT_EQ(dense.find(key), hashed.find(key)) << what;
              key[k] -= d;
            }
          }
          size_t b1, e1, b2, e2;
          dense.row_range(key, &b1, &e1);
          hashed.row_range(key, &b2, &e2);
          ASSERT_EQ(b1, b2);
          ASSERT_EQ(e1, e2);
        }
      }
  EXPECT_GE(dense_cases, 10);  // 12 of the 30: the others have too sparse a lattice
}

// A row range is exactly the union of the three cells along the last axis.
TEST(Grid, RowRangeIsTheThreeCells) {
  auto pts = ref::uniform(3000, 3, 21);
  Bounds box = compute_bounds(pts.view());
  const double side = grid_cell_side(0.1, box);
  const double* c[3] = {pts.c[0].data(), pts.c[1].data(), pts.c[2].data()};
  Grid g(3, 3000, c, box.lo, side);
  for (int64_t x = -1; x <= 11; ++x)
    for (int64_t y = -1; y <= 11; ++y)
      for (int64_t z = -1; z <= 11; ++z) {
        int64_t key[3] = {x, y, z};
        size_t b, e, count = 0, lo = SIZE_MAX, hi = 0;
        g.row_range(key, &b, &e);
        for (int64_t dz = -1; dz <= 1; ++dz) {
          int64_t k2[3] = {x, y, z + dz};
          const int64_t cell = g.find(k2);
          if (cell < 0) continue;
          count += g.cell_end(size_t(cell)) - g.cell_begin(size_t(cell));
          lo = std::min(lo, g.cell_begin(size_t(cell)));
          hi = std::max(hi, g.cell_end(size_t(cell)));
        }
        ASSERT_EQ(e - b, count);
        if (count) {
          ASSERT_EQ(b, lo);
          ASSERT_EQ(e, hi);
        }
      }
}

// The occupancy computed without a grid equals the grid's sum of squared cell sizes / n, on
// the dense and the sparse (hashed) lattice.
TEST(Grid, OccupancyMatchesTheGrid) {
  for (int dims : {2, 3, 6})
    for (double eps : {1e-6, 0.01, 0.2}) {
      auto pts = ref::uniform(5000, dims, 77);
      Bounds box = compute_bounds(pts.view());
      const double side = grid_cell_side(eps, box);
      const double* c[kMaxDims] = {};
      for (int k = 0; k < dims; ++k) c[k] = pts.c[k].data();
      Grid g(dims, 5000, c, box.lo, side, true);
      double sq = 0;
      for (size_t cell = 0; cell < g.num_cells(); ++cell) {
        const double k = double(g.cell_end(cell) - g.cell_begin(cell));
        sq += k * k;
      }
      EXPECT_EQ(grid_occupancy(dims, 5000, c, box.lo, side, true), sq / 5000) << dims << " " << eps;
    }
  EXPECT_EQ(grid_occupancy(3, 0, nullptr, nullptr, 1.0), 0.0);
}
