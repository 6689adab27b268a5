// References for the joins over a periodic box (src/core/periodic.h), shared by the CPU unit
// test and the GPU test: a brute-force pass over every pair with the engines' arithmetic (the
// coordinates wrapped and rounded as build_rdf_cells does, periodic_sq_dist in the working
// precision), which the grid must match exactly, and a float64 minimum-image distance.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "core/periodic.h"

namespace gpu2bs {
namespace periodic_ref {

using Pair = std::tuple<uint32_t, uint32_t, double>;  // (i, j, dist), i < j for a self-join

// Coordinate wrapped into [0, L) in float64 as build_rdf_cells wraps it (L = 0: unchanged).
inline double wrap(double x, double L) {
  if (!(L > 0)) return x;
  double w = x - L * std::floor(x / L);
  if (!(w < L) || w < 0) w = 0;
  return w;
}

// Float64 minimum-image distance of points i of a and j of b.
inline double dist64(const PointsView& a, size_t i, const PointsView& b, size_t j, const double* box) {
  double s = 0;
  for (int k = 0; k < a.dims; ++k) {
    double d = wrap(a.coord[k][i], box[k]) - wrap(b.coord[k][j], box[k]);
    if (box[k] > 0) {
      if (d > box[k] / 2) d -= box[k];
      if (d < -box[k] / 2) d += box[k];
    }
    s += d * d;
  }
  return std::sqrt(s);
}

// Every pair within eps by brute force in precision T with the engines' arithmetic, sorted.
template <typename T>
std::vector<Pair> brute(const PointsView& a, const PointsView* b, double eps2_64, float eps2_32,
                        const double* box) {
  const bool self = b == nullptr;
  const PointsView& bb = self ? a : *b;
  const int D = a.dims;
  T len[kMaxDims], half[kMaxDims];
  for (int k = 0; k < D; ++k) {
    len[k] = box[k] > 0 ? T(box[k]) : T(0);
    half[k] = box[k] > 0 ? T(box[k] / 2) : std::numeric_limits<T>::infinity();
  }
  auto pt = [&](const PointsView& v, size_t i, T* out) {
    for (int k = 0; k < D; ++k) out[k] = T(wrap(v.coord[k][i], box[k]));
  };
  const T eps2 = sizeof(T) == 4 ? T(eps2_32) : T(eps2_64);
  std::vector<Pair> out;
  for (size_t i = 0; i < a.n; ++i) {
    T p[kMaxDims];
    pt(a, i, p);
    for (size_t j = self ? i + 1 : 0; j < bb.n; ++j) {
      T q[kMaxDims];
      pt(bb, j, q);
      T d2;
      switch (D) {
        case 2: d2 = periodic_sq_dist<T, 2>(p, q, len, half); break;
        case 3: d2 = periodic_sq_dist<T, 3>(p, q, len, half); break;
        default: d2 = periodic_sq_dist<T, 4>(p, q, len, half); break;
      }
      if (d2 <= eps2) out.emplace_back(uint32_t(i), uint32_t(j), double(std::sqrt(d2)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Engine pairs normalized (i < j in a self-join) and sorted.
inline std::vector<Pair> normalized(const std::vector<PairRecord>& v, bool self) {
  std::vector<Pair> out;
  out.reserve(v.size());
  for (const PairRecord& r : v) {
    uint32_t i = r.i, j = r.j;
    if (self && i > j) std::swap(i, j);
    out.emplace_back(i, j, r.dist);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Pairs of `got` and `want` (float64 reference within eps) that differ, counting only those
// whose float64 distance lies farther than `tol` from eps (a float32 rounding near eps may
// decide either way): 0 when the engine agrees with the float64 reference.
inline size_t disagreements(const std::vector<Pair>& got, const PointsView& a, const PointsView* b,
                            double eps, const double* box, double tol) {
  const bool self = b == nullptr;
  const PointsView& bb = self ? a : *b;
  std::vector<std::pair<uint32_t, uint32_t>> g;
  for (const Pair& p : got) g.emplace_back(std::get<0>(p), std::get<1>(p));
  size_t bad = 0;
  for (size_t i = 0; i < a.n; ++i)
    for (size_t j = self ? i + 1 : 0; j < bb.n; ++j) {
      const double d = dist64(a, i, bb, j, box);
      if (std::fabs(d - eps) <= tol) continue;
      const bool in = std::binary_search(g.begin(), g.end(), std::make_pair(uint32_t(i), uint32_t(j)));
      if (in != (d <= eps)) ++bad;
    }
  return bad;
}

}  // namespace periodic_ref
}  // namespace gpu2bs
