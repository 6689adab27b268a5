// Density map (Tu, Chen, Pandit: "Computing distance histograms efficiently in scientific
// databases", the quad-tree/density-map SDH the 2-BS framework paper cites): levels 0..L of
// uniform grids over the cube that covers the points, level l with 2^l cells per axis. Points
// are sorted by the Z-order (Morton) key of their level-L cell, so every cell of every level
// holds a contiguous range of the sorted points and the children of a cell are a contiguous
// range of the next level's cells. Only non-empty cells are stored. Each cell keeps the
// bounding box of its points (in the engine's precision T: the coordinates the distance
// arithmetic sees), which bounds its pairs far tighter than the cell's geometric box.
// 2-D and 3-D; the CUDA engine builds the same layout on the device (kernels/resolve.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "arith.h"
#include "engine.h"
#include "problem.h"
#include "resolve.h"

namespace gpu2bs {

// Spreads the low 21 bits of v so that bit k lands on bit 2k (2-D Z-order).
G2_HD uint64_t morton_spread2(uint64_t v) {
  v &= 0x1fffffull;
  v = (v | (v << 16)) & 0x0000ffff0000ffffull;
  v = (v | (v << 8)) & 0x00ff00ff00ff00ffull;
  v = (v | (v << 4)) & 0x0f0f0f0f0f0f0f0full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  v = (v | (v << 1)) & 0x5555555555555555ull;
  return v;
}

// Spreads the low 21 bits of v so that bit k lands on bit 3k (3-D Z-order).
G2_HD uint64_t morton_spread3(uint64_t v) {
  v &= 0x1fffffull;
  v = (v | (v << 32)) & 0x1f00000000ffffull;
  v = (v | (v << 16)) & 0x1f0000ff0000ffull;
  v = (v | (v << 8)) & 0x100f00f00f00f00full;
  v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
  v = (v | (v << 2)) & 0x1249249249249249ull;
  return v;
}

// Cell coordinate of v on an axis of `cells` cells: floor((v - lo) * scale) clamped to
// [0, cells - 1]. Any mapping is correct (cell boxes are the boxes of the points they hold);
// this one makes cells of equal side.
G2_HD uint32_t density_cell(double v, double lo, double scale, uint32_t cells) {
  const double u = (v - lo) * scale;
  if (!(u > 0)) return 0;
  return u >= double(cells) ? cells - 1 : uint32_t(u);
}

// Geometry of the map: origin, cells per axis at the leaf level and the scale to cell units.
struct DensityGeometry {
  int dims = 0;
  int leaf = 0;          // L: the deepest level
  double lo[3] = {};     // origin (bounding box minimum)
  double scale = 0;      // 2^L / (largest extent), 0 when all points coincide
  uint32_t cells = 1;    // 2^L
  // Z-order key of the leaf cell of the point with coordinates x[0..dims).
  G2_HD uint64_t key(const double* x) const {
    uint64_t k = 0;
    if (dims == 2)
      k = morton_spread2(density_cell(x[0], lo[0], scale, cells)) |
          (morton_spread2(density_cell(x[1], lo[1], scale, cells)) << 1);
    else
      k = morton_spread3(density_cell(x[0], lo[0], scale, cells)) |
          (morton_spread3(density_cell(x[1], lo[1], scale, cells)) << 1) |
          (morton_spread3(density_cell(x[2], lo[2], scale, cells)) << 2);
    return k;
  }
};

// Leaf level for n points: about `leaf_points` points per leaf cell for uniform data, at most
// kResolveMaxLevel; geometry over the bounding box `box` (of the rounded coordinates).
DensityGeometry density_geometry(size_t n, const Bounds& box, double leaf_points);

// One level of the map: `cells` non-empty cells in Z-order.
template <typename T>
struct DensityLevel {
  size_t cells = 0;
  std::vector<uint32_t> begin;   // cells + 1: points of cell c are sorted [begin[c], begin[c+1])
  std::vector<uint32_t> child;   // cells + 1: children of c are [child[c], child[c+1]) of level+1
  // Bounding box of the cell's points, one cell after the other: box[c*2*dims + k] is the
  // minimum of coordinate k, box[c*2*dims + dims + k] its maximum (one cache line per cell).
  std::vector<T> box;
};

// The density map of a point set (CPU construction).
template <typename T>
struct DensityMap {
  DensityGeometry geo;
  std::vector<uint32_t> order;          // input index of each sorted point
  std::vector<DensityLevel<T>> level;   // level[0] is the root (one cell), level[L] the leaves
  int levels() const { return int(level.size()); }
};

// Builds the map of the points `c[k][i]` (already in precision T), n < 2^32, dims 2 or 3.
// Sorting and per-level reductions run on `ctl.threads` workers.
template <typename T>
DensityMap<T> build_density_map(int dims, size_t n, const T* const* c, double leaf_points,
                                Control& ctl);

}  // namespace gpu2bs
