// CPU construction of the density map: Z-order keys of the leaf cells, an LSD radix sort of
// (key, index), then each level's cells as runs of equal keys (leaf) or equal parent keys, with
// point ranges, child ranges and point bounding boxes.
#include "density_map.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine.h"
#include "error.h"
#include "parallel.h"

namespace gpu2bs {

DensityGeometry density_geometry(size_t n, const Bounds& box, double leaf_points) {
  DensityGeometry g;
  g.dims = box.dims;
  double extent = 0;
  for (int k = 0; k < box.dims && k < 3; ++k) {
    g.lo[k] = box.lo[k];
    extent = std::max(extent, box.hi[k] - box.lo[k]);
  }
  const double per_axis = std::pow(std::max(1.0, double(n) / std::max(1.0, leaf_points)),
                                   1.0 / box.dims);
  int leaf = int(std::ceil(std::log2(std::max(1.0, per_axis))));
  leaf = std::max(0, std::min(leaf, kResolveMaxLevel));
  if (!(extent > 0) || !std::isfinite(extent)) leaf = 0;  // all points coincide: one cell
  g.leaf = leaf;
  g.cells = uint32_t(1) << leaf;
  g.scale = extent > 0 && std::isfinite(extent) ? double(g.cells) / extent : 0.0;
  return g;
}

namespace {

// Chunk of [0, n) for parallel loops over points.
constexpr size_t kChunk = 1 << 16;

// LSD radix sort of (keys, vals) by the low `bits` bits of the keys, 11 bits per pass.
void radix_sort(std::vector<uint64_t>& keys, std::vector<uint32_t>& vals, int bits) {
  const size_t n = keys.size();
  std::vector<uint64_t> k2(n);
  std::vector<uint32_t> v2(n);
  constexpr int kDigit = 11;
  for (int shift = 0; shift < bits; shift += kDigit) {
    size_t count[1 << kDigit] = {};
    for (size_t i = 0; i < n; ++i) count[(keys[i] >> shift) & ((1u << kDigit) - 1)]++;
    size_t acc = 0;
    for (auto& c : count) {
      size_t t = c;
      c = acc;
      acc += t;
    }
    for (size_t i = 0; i < n; ++i) {
      size_t d = (keys[i] >> shift) & ((1u << kDigit) - 1);
      k2[count[d]] = keys[i];
      v2[count[d]++] = vals[i];
    }
    keys.swap(k2);
    vals.swap(v2);
  }
}

}  // namespace

template <typename T>
DensityMap<T> build_density_map(int dims, size_t n, const T* const* c, double leaf_points,
                                Control& ctl) {
  if (dims != 2 && dims != 3)
    throw Error(ErrorCode::Internal, "density map needs 2 or 3 coordinates");
  if (n > UINT32_MAX) throw Error(ErrorCode::ProgramLimit, "too many points for the density map");
  DensityMap<T> m;
  Bounds box;
  box.dims = dims;
  for (int k = 0; k < dims; ++k) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (size_t i = 0; i < n; ++i) {
      lo = std::min(lo, double(c[k][i]));
      hi = std::max(hi, double(c[k][i]));
    }
    if (n == 0) lo = hi = 0;
    box.lo[k] = lo;
    box.hi[k] = hi;
  }
  m.geo = density_geometry(n, box, leaf_points);
  const DensityGeometry geo = m.geo;
  const int L = geo.leaf;

  // Keys of the leaf cells, then sorted with the point indices.
  std::vector<uint64_t> keys(n);
  m.order.resize(n);
  parallel_for(ctl, (n + kChunk - 1) / kChunk, [&](size_t ch, int) {
    const size_t i1 = std::min(n, (ch + 1) * kChunk);
    for (size_t i = ch * kChunk; i < i1; ++i) {
      double x[3];
      for (int k = 0; k < dims; ++k) x[k] = double(c[k][i]);
      keys[i] = geo.key(x);
      m.order[i] = uint32_t(i);
    }
  });
  radix_sort(keys, m.order, dims * L);

  m.level.resize(size_t(L) + 1);
  // Leaf level: runs of equal keys.
  {
    DensityLevel<T>& lv = m.level[size_t(L)];
    std::vector<uint64_t> cell_keys;
    for (size_t i = 0; i < n; ++i)
      if (i == 0 || keys[i] != keys[i - 1]) {
        lv.begin.push_back(uint32_t(i));
        cell_keys.push_back(keys[i]);
      }
    lv.cells = lv.begin.size();
    lv.begin.push_back(uint32_t(n));
    lv.child.assign(lv.cells + 1, 0);
    lv.box.resize(2 * size_t(dims) * lv.cells);
    parallel_for(ctl, (lv.cells + 4095) / 4096, [&](size_t ch, int) {
      const size_t c1 = std::min(lv.cells, (ch + 1) * 4096);
      for (size_t cell = ch * 4096; cell < c1; ++cell)
        for (int k = 0; k < dims; ++k) {
          T lo = c[k][m.order[lv.begin[cell]]], hi = lo;
          for (size_t s = lv.begin[cell] + 1; s < lv.begin[cell + 1]; ++s) {
            const T v = c[k][m.order[s]];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
          }
          lv.box[cell * 2 * dims + k] = lo;
          lv.box[cell * 2 * dims + dims + k] = hi;
        }
    });
    keys.swap(cell_keys);
  }
  // Coarser levels: runs of equal parent keys over the finer level's cells.
  for (int l = L - 1; l >= 0; --l) {
    const DensityLevel<T>& f = m.level[size_t(l) + 1];
    DensityLevel<T>& lv = m.level[size_t(l)];
    std::vector<uint64_t> parent_keys;
    for (size_t cc = 0; cc < f.cells; ++cc) {
      const uint64_t pk = keys[cc] >> dims;
      if (cc == 0 || pk != parent_keys.back()) {
        lv.child.push_back(uint32_t(cc));
        lv.begin.push_back(f.begin[cc]);
        parent_keys.push_back(pk);
      }
    }
    lv.cells = lv.child.size();
    lv.child.push_back(uint32_t(f.cells));
    lv.begin.push_back(uint32_t(n));
    lv.box.resize(2 * size_t(dims) * lv.cells);
    const size_t bd = 2 * size_t(dims);
    for (size_t cell = 0; cell < lv.cells; ++cell)
      for (int k = 0; k < dims; ++k) {
        T lo = f.box[lv.child[cell] * bd + k], hi = f.box[lv.child[cell] * bd + dims + k];
        for (size_t cc = lv.child[cell] + 1; cc < lv.child[cell + 1]; ++cc) {
          lo = f.box[cc * bd + k] < lo ? f.box[cc * bd + k] : lo;
          hi = f.box[cc * bd + dims + k] > hi ? f.box[cc * bd + dims + k] : hi;
        }
        lv.box[cell * bd + k] = lo;
        lv.box[cell * bd + dims + k] = hi;
      }
    keys.swap(parent_keys);
  }
  return m;
}

template DensityMap<float> build_density_map<float>(int, size_t, const float* const*, double,
                                                    Control&);
template DensityMap<double> build_density_map<double>(int, size_t, const double* const*, double,
                                                      Control&);

}  // namespace gpu2bs
