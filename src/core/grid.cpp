// Grid index construction and lookup.
#include "grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gpu2bs {

namespace {

constexpr double kMaxCellCoord = 2199023255552.0;  // 2^41

// 64-bit mix of the cell coordinates (splitmix64 finalizer per word).
uint64_t hash_key(const int64_t* key, int dims) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < dims; ++k) {
    uint64_t z = h ^ (uint64_t(key[k]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return h;
}

// v rounded to float32 and widened back when `round_f32` (the engine's float32 coordinates).
inline double rounded(double v, bool round_f32) { return round_f32 ? double(float(v)) : v; }

// Equal cell coordinates (an inline loop: d is at most 6, a memcmp call costs more).
inline bool same_key(const int64_t* a, const int64_t* b, int dims) {
  for (int k = 0; k < dims; ++k)
    if (a[k] != b[k]) return false;
  return true;
}

}  // namespace

double grid_cell_side(double eps, const Bounds& box) {
  double extent = 0;
  for (int k = 0; k < box.dims; ++k) extent = std::max(extent, box.hi[k] - box.lo[k]);
  double side = eps * (1.0 + 1.0 / 1024.0);
  return std::max(side, extent * std::ldexp(1.0, -40));
}

int64_t grid_cell_coord(double v, double lo, double inv_side) {
  double c = std::floor((v - lo) * inv_side);
  if (!(c > 0)) return 0;
  if (c > kMaxCellCoord) return int64_t(kMaxCellCoord);
  return int64_t(c);
}

// Point indices sorted by the linear keys `lin` (ties by index) with a least-significant-digit
// radix sort over the `bits` low bits, 11 bits per pass; stable, so equal keys keep index order.
static std::vector<uint32_t> radix_order(const std::vector<uint64_t>& lin, int bits) {
  const size_t n = lin.size();
  std::vector<uint32_t> order(n), tmp(n);
  std::iota(order.begin(), order.end(), 0u);
  constexpr int kDigit = 11;
  std::vector<size_t> count(size_t(1) << kDigit);
  for (int shift = 0; shift < bits; shift += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[(lin[i] >> shift) & ((1u << kDigit) - 1)];
    size_t sum = 0;
    for (auto& c : count) {
      const size_t v = c;
      c = sum;
      sum += v;
    }
    for (size_t s = 0; s < n; ++s) {
      const uint32_t i = order[s];
      tmp[count[(lin[i] >> shift) & ((1u << kDigit) - 1)]++] = i;
    }
    order.swap(tmp);
  }
  return order;
}

// Lattice extents (largest cell coordinate per axis + 1, from each axis's largest coordinate:
// the cell formula is monotone) and whether that lattice is indexed densely.
static bool lattice_extents(int dims, size_t n, const double* const* coord, const double* lo,
                            double inv, bool round_f32, int64_t* ext, uint64_t* lattice_out) {
  double lattice = 1;
  for (int k = 0; k < dims; ++k) {
    double vmax = -std::numeric_limits<double>::infinity();
    const double* c = coord[k];
    for (size_t i = 0; i < n; ++i) vmax = c[i] > vmax ? c[i] : vmax;
    ext[k] = (n ? grid_cell_coord(rounded(vmax, round_f32), lo[k], inv) : 0) + 1;
    lattice *= double(ext[k]);
  }
  const bool dense =
      lattice <= kGridDenseCellsPerPoint * double(n) + kGridDenseSlack && lattice < 4294967296.0;
  *lattice_out = dense ? uint64_t(lattice) : 0;
  return dense;
}

static double inverse_side(double side) { return std::isfinite(side) && side > 0 ? 1.0 / side : 0.0; }

// Linear lattice id of every point (dimension 0 most significant, so the ids' order is the
// lexicographic cell order).
static std::vector<uint32_t> lattice_ids(int dims, size_t n, const double* const* coord,
                                         const double* lo, double inv, bool round_f32,
                                         const int64_t* ext) {
  std::vector<uint32_t> lin(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t l = 0;
    for (int k = 0; k < dims; ++k)
      l = l * uint64_t(ext[k]) +
          uint64_t(grid_cell_coord(rounded(coord[k][i], round_f32), lo[k], inv));
    lin[i] = uint32_t(l);
  }
  return lin;
}

double grid_occupancy(int dims, size_t n, const double* const* coord, const double* lo,
                      double side, bool round_f32) {
  if (n == 0) return 0;
  const double inv = inverse_side(side);
  int64_t ext[kMaxDims] = {};
  uint64_t lattice = 0;
  double sq = 0;
  if (lattice_extents(dims, n, coord, lo, inv, round_f32, ext, &lattice)) {
    const std::vector<uint32_t> lin = lattice_ids(dims, n, coord, lo, inv, round_f32, ext);
    std::vector<uint32_t> count(lattice, 0);
    for (size_t i = 0; i < n; ++i) ++count[lin[i]];
    for (uint64_t l = 0; l < lattice; ++l) sq += double(count[l]) * double(count[l]);
  } else {
    const Grid g(dims, n, coord, lo, side, round_f32);
    for (size_t c = 0; c < g.num_cells(); ++c) {
      const double k = double(g.cell_end(c) - g.cell_begin(c));
      sq += k * k;
    }
  }
  return sq / double(n);
}

Grid::Grid(int dims, size_t n, const double* const* coord, const double* lo, double side,
           bool round_f32, bool force_hashed)
    : dims_(dims) {
  const double inv = inverse_side(side);
  uint64_t lattice = 0;
  if (lattice_extents(dims, n, coord, lo, inv, round_f32, ext_, &lattice) && !force_hashed)
    build_dense(n, coord, lo, inv, round_f32, lattice);
  else
    build_hashed(n, coord, lo, inv, round_f32);
}

// Dense lattice: linear cell ids (dimension 0 most significant, so their order is the
// lexicographic cell order), a stable counting sort of the points by id (ties keep index
// order), and the table from lattice id to cell.
void Grid::build_dense(size_t n, const double* const* coord, const double* lo, double inv,
                       bool round_f32, uint64_t lattice) {
  dense_ = true;
  const int dims = dims_;
  const std::vector<uint32_t> lin = lattice_ids(dims, n, coord, lo, inv, round_f32, ext_);
  table_.assign(lattice, 0);
  for (size_t i = 0; i < n; ++i) ++table_[lin[i]];
  // Non-empty cells in lattice order; the table's counts become cell index + 1.
  int64_t cur[kMaxDims] = {};
  uint32_t acc = 0, cells = 0;
  cell_start_.clear();
  for (uint64_t l = 0; l < lattice; ++l) {
    const uint32_t cnt = table_[l];
    if (cnt) {
      cell_start_.push_back(acc);
      acc += cnt;
      cell_coord_.insert(cell_coord_.end(), cur, cur + dims);
      table_[l] = ++cells;
    }
    for (int k = dims - 1; k >= 0; --k) {
      if (++cur[k] < ext_[k]) break;
      cur[k] = 0;
    }
  }
  cell_start_.push_back(acc);
  std::vector<uint32_t> cursor(cell_start_.begin(), cell_start_.end() - 1);
  order_.resize(n);
  for (size_t i = 0; i < n; ++i) order_[cursor[table_[lin[i]] - 1]++] = uint32_t(i);
}

// Sparse lattice: cell coordinates per point, sorted by the linearized key (radix) when it fits
// in 64 bits, else by comparison; cells found through an open-addressing hash table.
void Grid::build_hashed(size_t n, const double* const* coord, const double* lo, double inv,
                        bool round_f32) {
  const int dims = dims_;
  std::vector<int64_t> key(n * size_t(dims));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k)
      key[i * dims + k] = grid_cell_coord(rounded(coord[k][i], round_f32), lo[k], inv);
  // Linearized key (dimension 0 most significant: its order is the lexicographic cell order)
  // when it fits in 64 bits, radix-sorted; otherwise a comparison sort on the coordinates.
  int bits[kMaxDims], total_bits = 0;
  for (int k = 0; k < dims; ++k) {
    const uint64_t top = uint64_t(ext_[k] - 1);
    bits[k] = 0;
    while (bits[k] < 63 && (top >> bits[k]) != 0) ++bits[k];
    total_bits += bits[k];
  }
  if (total_bits <= 64) {
    std::vector<uint64_t> lin(n);
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = 0;
      for (int k = 0; k < dims; ++k)
        v = (bits[k] ? (v << bits[k]) : v) | uint64_t(key[i * dims + k]);
      lin[i] = v;
    }
    order_ = radix_order(lin, total_bits);
  } else {
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      const int64_t* ka = &key[size_t(a) * dims];
      const int64_t* kb = &key[size_t(b) * dims];
      for (int k = 0; k < dims; ++k)
        if (ka[k] != kb[k]) return ka[k] < kb[k];
      return a < b;
    });
  }
  cell_start_.push_back(0);
  for (size_t s = 0; s < n; ++s) {
    const int64_t* kp = &key[size_t(order_[s]) * dims];
    bool fresh = s == 0 || !same_key(kp, &key[size_t(order_[s - 1]) * dims], dims);
    if (fresh) {
      if (s > 0) cell_start_.push_back(uint32_t(s));
      cell_coord_.insert(cell_coord_.end(), kp, kp + dims);
    }
  }
  if (n > 0) cell_start_.push_back(uint32_t(n));
  size_t cells = num_cells();
  size_t cap = 16;
  while (cap < 2 * cells) cap <<= 1;
  table_.assign(cap, 0);
  mask_ = cap - 1;
  for (size_t c = 0; c < cells; ++c) {
    uint64_t h = hash_key(cell_coord(c), dims) & mask_;
    while (table_[h]) h = (h + 1) & mask_;
    table_[h] = uint32_t(c + 1);
  }
}

int64_t Grid::find_hashed(const int64_t* key) const {
  uint64_t h = hash_key(key, dims_) & mask_;
  for (;;) {
    uint32_t s = table_[h];
    if (!s) return -1;
    if (same_key(key, cell_coord(s - 1), dims_)) return int64_t(s) - 1;
    h = (h + 1) & mask_;
  }
}

std::vector<int> forward_rows(int dims) { return neighbour_offsets(dims - 1, true); }

std::vector<int> neighbour_offsets(int dims, bool forward_only) {
  std::vector<int> out;
  int total = 1;
  for (int k = 0; k < dims; ++k) total *= 3;
  for (int code = 0; code < total; ++code) {
    int off[kMaxDims];
    int c = code;
    for (int k = dims - 1; k >= 0; --k) {
      off[k] = c % 3 - 1;
      c /= 3;
    }
    int first = 0;
    for (int k = 0; k < dims && first == 0; ++k) first = off[k];
    if (forward_only && first != 1) continue;
    out.insert(out.end(), off, off + dims);
  }
  return out;
}

}  // namespace gpu2bs
