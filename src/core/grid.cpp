// Grid index construction and lookup.
#include "grid.h"

#include <algorithm>
#include <cmath>
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

Grid::Grid(int dims, size_t n, const double* const* coord, const double* lo, double side)
    : dims_(dims) {
  const double inv = std::isfinite(side) && side > 0 ? 1.0 / side : 0.0;
  std::vector<int64_t> key(n * size_t(dims));
  int64_t top[kMaxDims] = {};
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) {
      key[i * dims + k] = grid_cell_coord(coord[k][i], lo[k], inv);
      top[k] = std::max(top[k], key[i * dims + k]);
    }
  // Linearized key (dimension 0 most significant: its order is the lexicographic cell order)
  // when it fits in 64 bits, radix-sorted; otherwise a comparison sort on the coordinates.
  int bits[kMaxDims], total_bits = 0;
  for (int k = 0; k < dims; ++k) {
    bits[k] = 0;
    while (bits[k] < 63 && (uint64_t(top[k]) >> bits[k]) != 0) ++bits[k];
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
    bool fresh = s == 0 || !std::equal(kp, kp + dims, &key[size_t(order_[s - 1]) * dims]);
    if (fresh) {
      if (s > 0) cell_start_.push_back(uint32_t(s));
      cell_coord_.insert(cell_coord_.end(), kp, kp + dims);
    }
  }
  if (n > 0) cell_start_.push_back(uint32_t(n));
  size_t cells = num_cells();
  size_t cap = 16;
  while (cap < 2 * cells) cap <<= 1;
  slots_.assign(cap, 0);
  mask_ = cap - 1;
  for (size_t c = 0; c < cells; ++c) {
    uint64_t h = hash_key(cell_coord(c), dims) & mask_;
    while (slots_[h]) h = (h + 1) & mask_;
    slots_[h] = uint32_t(c + 1);
  }
}

int64_t Grid::find(const int64_t* key) const {
  uint64_t h = hash_key(key, dims_) & mask_;
  for (;;) {
    uint32_t s = slots_[h];
    if (!s) return -1;
    if (std::equal(key, key + dims_, cell_coord(s - 1))) return int64_t(s) - 1;
    h = (h + 1) & mask_;
  }
}

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
