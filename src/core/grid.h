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

// Lattices of at most this many cells per point (plus kGridDenseSlack) are indexed densely: a
// counting sort orders the points and a table over the whole lattice finds a cell in O(1)
// without hashing; sparser lattices use the radix sort and the hash table.
constexpr double kGridDenseCellsPerPoint = 4.0;
constexpr double kGridDenseSlack = 65536.0;

// Mean population of the cell each point lies in, itself included (sum over cells of the
// squared point count, divided by n; 0 when n is 0), for the grid Grid(dims, n, coord, lo, side)
// would build, without building it when its lattice is dense.
double grid_occupancy(int dims, size_t n, const double* const* coord, const double* lo,
                      double side, bool round_f32 = false);

class Grid {
 public:
  // Builds the grid of `n` points (coordinates coord[k][i] in the engine's precision: rounded
  // to float32 here when `round_f32`, else taken as they are) with the given origin and cell
  // side. `force_hashed` takes the sparse path whatever the lattice (tests compare the paths).
  Grid(int dims, size_t n, const double* const* coord, const double* lo, double side,
       bool round_f32 = false, bool force_hashed = false);

  int dims() const { return dims_; }
  size_t num_cells() const { return cell_start_.size() - 1; }
  // Point indices (into the input) sorted by cell.
  const std::vector<uint32_t>& order() const { return order_; }
  // Points of cell c are order()[cell_begin(c) .. cell_end(c)).
  size_t cell_begin(size_t c) const { return cell_start_[c]; }
  size_t cell_end(size_t c) const { return cell_start_[c + 1]; }
  const int64_t* cell_coord(size_t c) const { return &cell_coord_[c * dims_]; }
  // Sorted positions [*begin, *end) of the points of the cells with coordinates key[0 .. d-2]
  // and key[d-1] + {-1, 0, +1}: consecutive cells in the lexicographic order, so one range.
  // Empty (*begin == *end) when none of the three cells holds points.
  void row_range(const int64_t* key, size_t* begin, size_t* end) const {
    int64_t k[kMaxDims];
    for (int a = 0; a < dims_; ++a) k[a] = key[a];
    *begin = *end = 0;
    bool found = false;
    for (int64_t dz = -1; dz <= 1; ++dz) {
      k[dims_ - 1] = key[dims_ - 1] + dz;
      const int64_t c = find(k);
      if (c < 0) continue;
      if (!found) *begin = cell_start_[size_t(c)];
      *end = cell_start_[size_t(c) + 1];
      found = true;
    }
  }
  // True when cells are found through the dense lattice table (else the hash table).
  bool dense() const { return dense_; }
  // Index of the cell with coordinates `key`, or -1 when that cell is empty.
  int64_t find(const int64_t* key) const {
    if (!dense_) return find_hashed(key);
    uint64_t lin = 0;
    for (int k = 0; k < dims_; ++k) {
      if (uint64_t(key[k]) >= uint64_t(ext_[k])) return -1;  // negative keys wrap past ext
      lin = lin * uint64_t(ext_[k]) + uint64_t(key[k]);
    }
    return int64_t(table_[lin]) - 1;
  }

 private:
  void build_dense(size_t n, const double* const* coord, const double* lo, double inv,
                   bool round_f32, uint64_t lattice);
  void build_hashed(size_t n, const double* const* coord, const double* lo, double inv,
                    bool round_f32);
  int64_t find_hashed(const int64_t* key) const;

  int dims_;
  bool dense_ = false;
  int64_t ext_[kMaxDims] = {};  // lattice extent per axis (largest cell coordinate + 1)
  std::vector<uint32_t> order_;
  std::vector<uint32_t> cell_start_;
  std::vector<int64_t> cell_coord_;
  // Dense: one entry per lattice cell; hashed: open-addressing slots. Cell index + 1, 0 = empty.
  std::vector<uint32_t> table_;
  uint64_t mask_ = 0;
};

// Row offsets of the unidirectional pattern over a grid of `dims` >= 2 axes: the offsets on
// axes 0 .. dims-2 whose first non-zero component is +1 (neighbour_offsets(dims - 1, true));
// each row spans -1 .. +1 on the last axis (Grid::row_range). With the own row's next cell
// they cover the (3^dims - 1) / 2 forward neighbours.
std::vector<int> forward_rows(int dims);

// Neighbour offsets in {-1,0,1}^dims. `forward_only`: the (3^d - 1) / 2 offsets whose first
// non-zero component is +1 (unidirectional pattern: each pair of adjacent cells examined once;
// the own cell is handled apart). Otherwise all 3^d offsets, the own cell included.
std::vector<int> neighbour_offsets(int dims, bool forward_only);

}  // namespace gpu2bs
