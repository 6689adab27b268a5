// Uniform grid index over non-empty cells (similarity-join paper, section "grid index"; the
// 2-BS framework's Type-III join). Cells are addressed by integer coordinates; only non-empty
// cells are stored, found through an open-addressing hash table, so memory is O(N) whatever eps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "problem.h"

namespace gpu2bs {

// Side of a grid cell for join radius eps over `box`: a little more than eps, so a pair that
// passes the float32 test lies in the same or an adjacent cell despite rounding, and never
// less than extent / 2^40, so cell coordinates stay exact in float64.
double grid_cell_side(double eps, const Bounds& box);

// Cell coordinate of value v along one axis: floor((v - lo) * inv_side), clamped to [0, 2^41].
int64_t grid_cell_coord(double v, double lo, double inv_side);

class Grid {
 public:
  // Builds the grid of `n` points (coordinates coord[k][i], already rounded to the engine's
  // precision) with the given origin and cell side.
  Grid(int dims, size_t n, const double* const* coord, const double* lo, double side);

  int dims() const { return dims_; }
  size_t num_cells() const { return cell_start_.size() - 1; }
  // Point indices (into the input) sorted by cell.
  const std::vector<uint32_t>& order() const { return order_; }
  // Points of cell c are order()[cell_begin(c) .. cell_end(c)).
  size_t cell_begin(size_t c) const { return cell_start_[c]; }
  size_t cell_end(size_t c) const { return cell_start_[c + 1]; }
  const int64_t* cell_coord(size_t c) const { return &cell_coord_[c * dims_]; }
  // Index of the cell with coordinates `key`, or -1 when that cell is empty.
  int64_t find(const int64_t* key) const;

 private:
  int dims_;
  std::vector<uint32_t> order_;
  std::vector<uint32_t> cell_start_;
  std::vector<int64_t> cell_coord_;
  std::vector<uint32_t> slots_;  // cell index + 1, 0 = empty
  uint64_t mask_ = 0;
};

// Neighbour offsets in {-1,0,1}^dims. `forward_only`: the (3^d - 1) / 2 offsets whose first
// non-zero component is +1 (unidirectional pattern: each pair of adjacent cells examined once;
// the own cell is handled apart). Otherwise all 3^d offsets, the own cell included.
std::vector<int> neighbour_offsets(int dims, bool forward_only);

}  // namespace gpu2bs
