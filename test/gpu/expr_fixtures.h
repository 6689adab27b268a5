// Fixtures of the pair-expression GPU tests and benchmark (test_expr_gpu.cpp,
// test/bench/bench_expr.cpp): owned column-major sides, hand-written gpu2bs_pair sources in the
// ABI of kernels/expr/expr_gpu.h, and their CPU evaluations with the same operations in the
// same order (host code is compiled with -ffp-contract=off, so it rounds as the device code
// compiled with --fmad=false).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/pair_expr.h"
#include "kernels/expr/expr_gpu.h"

namespace gpu2bs {
namespace exprtest {

// One side's columns, column-major (data[c * n + i]), with optional NULL flags.
struct Cols {
  int ncols = 0;
  int64_t n = 0;
  std::vector<double> data;
  std::vector<uint8_t> nulls;  // empty: no NULLs
  exprgpu::Side side() const {
    exprgpu::Side s;
    s.data = data.empty() ? nullptr : data.data();
    s.nulls = nulls.empty() ? nullptr : nulls.data();
    s.n = n;
    s.ncols = ncols;
    return s;
  }
  double at(int c, int64_t i) const { return data[size_t(c) * size_t(n) + size_t(i)]; }
  bool null(int c, int64_t i) const {
    return !nulls.empty() && nulls[size_t(c) * size_t(n) + size_t(i)] != 0;
  }
};

// n rows of `ncols` uniform values in [lo, hi).
inline Cols uniform_cols(int64_t n, int ncols, uint64_t seed, double lo = 0, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Cols c;
  c.ncols = ncols;
  c.n = n;
  c.data.resize(size_t(ncols) * size_t(n));
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < ncols; ++k) c.data[size_t(k) * size_t(n) + size_t(i)] = u(rng);
  return c;
}

// n random unit vectors (3 columns), uniform on the sphere.
inline Cols unit_vectors(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  Cols c;
  c.ncols = 3;
  c.n = n;
  c.data.resize(3 * size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    double v[3], s = 0;
    do {
      s = 0;
      for (double& x : v) {
        x = g(rng);
        s += x * x;
      }
    } while (s < 1e-12);
    s = std::sqrt(s);
    for (int k = 0; k < 3; ++k) c.data[size_t(k) * size_t(n) + size_t(i)] = v[k] / s;
  }
  return c;
}

// A constant as an exact C++ literal of type real: hexadecimal float64 (float32 values are
// exactly representable in float64).
inline std::string lit(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "((real)%a)", v);
  return buf;
}

// ---- sources and their CPU twins ---------------------------------------------------------------

// Squared Euclidean distance within r: d2 = dx0*dx0, then d2 = fma(dxk, dxk, d2) (the
// hand-written engine's sq_dist order), kept when d2 <= r2.
inline std::string euclid_source(int dims, double r2) {
  std::string s = "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n";
  s += "  real dx = gpu2bs_col(a, 0) - gpu2bs_col(b, 0);\n  real d2 = dx * dx;\n";
  for (int k = 1; k < dims; ++k)
    s += "  dx = gpu2bs_col(a, " + std::to_string(k) + ") - gpu2bs_col(b, " + std::to_string(k) +
         ");\n  d2 = fma(dx, dx, d2);\n";
  s += "  return d2 <= " + lit(r2) + ";\n}\n";
  // float32: the count's key, d2's bit pattern (d2 is +0, positive, +inf or NaN).
  float r2f = float(r2) + 0.0f;  // -0 as +0
  unsigned rb = 0;
  std::memcpy(&rb, &r2f, 4);
  if (r2f >= 0 && r2f == r2f) {
    s += "#if G2_F32\n#define G2_PAIR_KEY 1\n#define G2_KEY_MAX " + std::to_string(rb) + "u\n";
    s += "__device__ unsigned gpu2bs_pair_key(const Row& a, const Row& b) {\n";
    s += "  real dx = gpu2bs_col(a, 0) - gpu2bs_col(b, 0);\n  real d2 = dx * dx;\n";
    for (int k = 1; k < dims; ++k)
      s += "  dx = gpu2bs_col(a, " + std::to_string(k) + ") - gpu2bs_col(b, " + std::to_string(k) +
           ");\n  d2 = fma(dx, dx, d2);\n";
    s += "  return __float_as_uint(d2);\n}\n#endif\n";
  }
  return s;
}
template <typename T>
inline bool euclid_cpu(const Cols& a, int64_t i, const Cols& b, int64_t j, int dims, T r2) {
  T dx = T(a.at(0, i)) - T(b.at(0, j));
  T d2 = dx * dx;
  for (int k = 1; k < dims; ++k) {
    dx = T(a.at(k, i)) - T(b.at(k, j));
    d2 = std::fma(dx, dx, d2);
  }
  return d2 <= r2;
}

// Manhattan band: |a.x - b.x| + |a.y - b.y| <= r AND a.t < b.t (columns x, y, t).
inline std::string manhattan_source(double r) {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  const real d = fabs(gpu2bs_col(a, 0) - gpu2bs_col(b, 0)) +\n"
         "                 fabs(gpu2bs_col(a, 1) - gpu2bs_col(b, 1));\n"
         "  return d <= " + lit(r) + " && gpu2bs_col(a, 2) < gpu2bs_col(b, 2);\n}\n";
}
template <typename T>
inline bool manhattan_cpu(const Cols& a, int64_t i, const Cols& b, int64_t j, T r) {
  const T d = std::fabs(T(a.at(0, i)) - T(b.at(0, j))) + std::fabs(T(a.at(1, i)) - T(b.at(1, j)));
  return d <= r && T(a.at(2, i)) < T(b.at(2, j));
}

// Pair energy 1 / sqrt(d2) over 3-D points, d2 = dx*dx + dy*dy + dz*dz (no fused operations);
// pairs at distance 0 are not kept.
// `scale` != 1 (compile-time benchmarks): scale / sqrt(d2).
inline std::string energy_source(double scale = 1) {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  const real dx = gpu2bs_col(a, 0) - gpu2bs_col(b, 0);\n"
         "  const real dy = gpu2bs_col(a, 1) - gpu2bs_col(b, 1);\n"
         "  const real dz = gpu2bs_col(a, 2) - gpu2bs_col(b, 2);\n"
         "  const real d2 = dx * dx + dy * dy + dz * dz;\n"
         "  if (!(d2 > (real)0)) return false;\n"
         "  *value = " + (scale == 1 ? std::string("(real)1") : lit(scale)) + " / sqrt(d2);\n"
         "  return true;\n}\n";
}
template <typename T>
inline bool energy_cpu(const Cols& a, int64_t i, const Cols& b, int64_t j, T* v) {
  const T dx = T(a.at(0, i)) - T(b.at(0, j));
  const T dy = T(a.at(1, i)) - T(b.at(1, j));
  const T dz = T(a.at(2, i)) - T(b.at(2, j));
  const T d2 = dx * dx + dy * dy + dz * dz;
  if (!(d2 > T(0))) return false;
  *v = T(1) / std::sqrt(d2);
  return true;
}

// Angular separation of unit vectors: acos of the dot product clamped to [-1, 1].
// `scale` != 1 (compile-time benchmarks: a distinct program per scale): acos(d) * scale.
// In float32 the source also defines the threshold table's pair (G2_INNER: g = the dot
// product, F(g) = the clamped acos with the same code as gpu2bs_pair), so a float32
// histogram buckets g through the table as the generated source's does.
inline std::string angle_source(double scale = 1) {
  const std::string f = "  x = x > (real)1 ? (real)1 : (x < (real)-1 ? (real)-1 : x);\n"
                        "  *value = acos(x)" + (scale == 1 ? std::string() : " * " + lit(scale)) + ";\n";
  const std::string dot = "gpu2bs_col(a, 0) * gpu2bs_col(b, 0) + gpu2bs_col(a, 1) * gpu2bs_col(b, 1) +\n"
                          "           gpu2bs_col(a, 2) * gpu2bs_col(b, 2);\n";
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  real x = " + dot + f +
         "  return true;\n}\n"
         "#if G2_F32\n"
         "#define G2_INNER 1\n"
         "#define G2_INNER_NONNEG 0\n"
         "__device__ __forceinline__ int gpu2bs_pair_inner(const Row& a, const Row& b, real* x) {\n"
         "  *x = " + dot +
         "  return *x != *x ? 2 : 1;\n}\n"
         "__device__ __forceinline__ int gpu2bs_outer(real x, bool xnull, real* value) {\n"
         "  if (xnull) return -1;\n" + f +
         "  return 0;\n}\n"
         "#endif\n";
}
// The same angular separation as an analyzed pair expression, as the SQL layer builds it for
// acos(least(1, greatest(-1, a.x * b.x + a.y * b.y + a.z * b.z))) [* scale]; the generated
// source (generate_pair_source) then also has the threshold table's gpu2bs_pair_inner and
// gpu2bs_outer in float32.
inline PairExpr angle_expr(double scale = 1) {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 3;
  auto node = [&](ExprOp op, std::vector<int> args) {
    ExprNode n;
    n.op = op;
    return e.add(n, args);
  };
  auto col = [&](int side, int c) {
    ExprNode n;
    n.op = ExprOp::Col;
    n.side = uint8_t(side);
    n.col = uint16_t(c);
    return e.add(n);
  };
  auto cst = [&](double v) {
    ExprNode n;
    n.op = ExprOp::Const;
    n.value = v;
    return e.add(n);
  };
  int d = node(ExprOp::Mul, {col(0, 0), col(1, 0)});
  d = node(ExprOp::Add, {d, node(ExprOp::Mul, {col(0, 1), col(1, 1)})});
  d = node(ExprOp::Add, {d, node(ExprOp::Mul, {col(0, 2), col(1, 2)})});
  const int one = cst(1), minus_one = cst(-1);
  const int clamped = node(ExprOp::Least, {one, node(ExprOp::Greatest, {minus_one, d})});
  int v = node(ExprOp::Acos, {clamped});
  if (scale != 1) v = node(ExprOp::Mul, {v, cst(scale)});
  e.value = v;
  e.validate();
  return e;
}
// Its generated source in the precision.
inline std::string angle_generated(bool f32, double scale = 1) {
  return generate_pair_source(angle_expr(scale), PairExprKind::Histogram,
                              f32 ? Precision::Float32 : Precision::Float64);
}

template <typename T>
inline T angle_dot(const Cols& a, int64_t i, const Cols& b, int64_t j) {
  T d = T(a.at(0, i)) * T(b.at(0, j)) + T(a.at(1, i)) * T(b.at(1, j)) +
        T(a.at(2, i)) * T(b.at(2, j));
  return d > T(1) ? T(1) : (d < T(-1) ? T(-1) : d);
}

// The value a.c0 - b.c0 (a histogram whose buckets the CPU computes exactly).
inline std::string diff_source() {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  *value = gpu2bs_col(a, 0) - gpu2bs_col(b, 0);\n"
         "  return true;\n}\n";
}

// SQL semantics over column 0 with NULLs: a.c0 < b.c0 is unknown (not kept) when either is
// NULL.
inline std::string null_less_source() {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  if (gpu2bs_isnull(a, 0) || gpu2bs_isnull(b, 0)) return false;\n"
         "  return gpu2bs_col(a, 0) < gpu2bs_col(b, 0);\n}\n";
}

// 1 / (a.c0 - b.c0), raising division by zero (code 1) as PostgreSQL's float8div does.
inline std::string inverse_diff_source() {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  const real d = gpu2bs_col(a, 0) - gpu2bs_col(b, 0);\n"
         "  if (d == (real)0) { gpu2bs_raise(1); return false; }\n"
         "  *value = (real)1 / d;\n"
         "  return true;\n}\n";
}

// An expensive predicate (a chain of `steps` square roots per pair) for cancel tests.
inline std::string slow_source(int steps) {
  return "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
         "  real x = gpu2bs_col(a, 0) + gpu2bs_col(b, 0);\n"
         "  for (int k = 0; k < " + std::to_string(steps) + "; ++k) x = sqrt(x + (real)1);\n"
         "  return x > (real)1.5;\n}\n";
}

// PostgreSQL 15's width_bucket_float8 for lo < hi, minus one: -1 below lo, nbuckets at or
// above hi (and for the rounding case count * (v - lo) / (hi - lo) + 1 >= count + 1).
inline int pg_bucket(double v, double lo, double hi, int nbuckets) {
  if (v < lo) return -1;
  if (v >= hi) return nbuckets;
  const double q = (double(nbuckets) * (v - lo) / (hi - lo)) + 1;
  return int(q) - 1;
}

}  // namespace exprtest
}  // namespace gpu2bs
