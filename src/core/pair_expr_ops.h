// The operations of pair expressions on one value, with PostgreSQL 15's semantics (float.c and
// utils/float.h): the results, and the faults PostgreSQL raises as errors. T is float
// (gpu2bs.precision = float4) or double. Shared by the scalar reference evaluator and the slow
// path of the vectorized CPU evaluator; the generated GPU code (pair_expr_codegen.cpp) spells
// out the same checks in the same order.
#pragma once

#include <cmath>

#include "pair_expr.h"
#include "pair_ir_eval.h"

namespace gpu2bs {
namespace xops {

// PostgreSQL's RADIANS_PER_DEGREE.
constexpr double kRadiansPerDegree = 0.0174532925199432957692;

template <typename T> inline bool isnan_(T x) { return x != x; }
template <typename T> inline bool isinf_(T x) { return std::isinf(x); }

// float8_pl / float8_mi: overflow when an infinite result comes from finite operands.
template <typename T> inline T add(T x, T y, ExprFault& f) {
  const T r = x + y;
  if (isinf_(r) && !isinf_(x) && !isinf_(y)) f = ExprFault::Overflow;
  return r;
}
template <typename T> inline T sub(T x, T y, ExprFault& f) {
  const T r = x - y;
  if (isinf_(r) && !isinf_(x) && !isinf_(y)) f = ExprFault::Overflow;
  return r;
}
// float8_mul: overflow as above; underflow when a zero result comes from non-zero operands.
template <typename T> inline T mul(T x, T y, ExprFault& f) {
  const T r = x * y;
  if (isinf_(r) && !isinf_(x) && !isinf_(y)) f = ExprFault::Overflow;
  else if (r == T(0) && x != T(0) && y != T(0)) f = ExprFault::Underflow;
  return r;
}
// float8_div: division by zero unless the dividend is NaN; overflow; underflow.
template <typename T> inline T div(T x, T y, ExprFault& f) {
  if (y == T(0) && !isnan_(x)) {
    f = ExprFault::DivisionByZero;
    return T(0);
  }
  const T r = x / y;
  if (isinf_(r) && !isinf_(x)) f = ExprFault::Overflow;
  else if (r == T(0) && x != T(0) && !isinf_(y)) f = ExprFault::Underflow;
  return r;
}
// dsqrt.
template <typename T> inline T sqrt_(T x, ExprFault& f) {
  if (x < T(0)) {
    f = ExprFault::SqrtNegative;
    return T(0);
  }
  return std::sqrt(x);
}
// dpow, PostgreSQL's case analysis before and around pow(3).
template <typename T> inline T pow_(T x, T y, ExprFault& f) {
  if (isnan_(x)) return (isnan_(y) || y != T(0)) ? x : T(1);
  if (isnan_(y)) return x != T(1) ? y : T(1);
  if (x == T(0) && y < T(0)) {
    f = ExprFault::PowZeroNegative;
    return T(0);
  }
  if (x < T(0) && std::floor(y) != y) {
    f = ExprFault::PowNegativeFraction;
    return T(0);
  }
  if (isinf_(y)) {
    const T ax = std::fabs(x);
    if (ax == T(1)) return T(1);
    if (y > T(0)) return ax > T(1) ? y : T(0);
    return ax > T(1) ? T(0) : -y;
  }
  if (isinf_(x)) {
    if (y == T(0)) return T(1);
    if (x > T(0)) return y > T(0) ? x : T(0);
    const T half = y / T(2);
    const bool odd = std::floor(half) != half;
    if (y > T(0)) return odd ? x : -x;
    return odd ? T(-0.0) : T(0);
  }
  const T r = std::pow(x, y);
  if (isinf_(r)) f = ExprFault::Overflow;
  else if (r == T(0) && x != T(0)) f = ExprFault::Underflow;
  return r;
}
// dexp.
template <typename T> inline T exp_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (isinf_(x)) return x > T(0) ? x : T(0);
  const T r = std::exp(x);
  if (isinf_(r)) f = ExprFault::Overflow;
  else if (r == T(0)) f = ExprFault::Underflow;
  return r;
}
// dlog1 (ln).
template <typename T> inline T ln_(T x, ExprFault& f) {
  if (x == T(0)) {
    f = ExprFault::LogZero;
    return T(0);
  }
  if (x < T(0)) {
    f = ExprFault::LogNegative;
    return T(0);
  }
  return std::log(x);
}
// dsin, dcos, dtan: NaN for NaN, an error for an infinite input.
template <typename T> inline T sin_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (isinf_(x)) { f = ExprFault::InputOutOfRange; return T(0); }
  return std::sin(x);
}
template <typename T> inline T cos_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (isinf_(x)) { f = ExprFault::InputOutOfRange; return T(0); }
  return std::cos(x);
}
template <typename T> inline T tan_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (isinf_(x)) { f = ExprFault::InputOutOfRange; return T(0); }
  return std::tan(x);
}
// dasin, dacos: an error outside [-1, 1].
template <typename T> inline T asin_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (x < T(-1) || x > T(1)) { f = ExprFault::InputOutOfRange; return T(0); }
  return std::asin(x);
}
template <typename T> inline T acos_(T x, ExprFault& f) {
  if (isnan_(x)) return x;
  if (x < T(-1) || x > T(1)) { f = ExprFault::InputOutOfRange; return T(0); }
  return std::acos(x);
}
template <typename T> inline T atan_(T x) { return isnan_(x) ? x : std::atan(x); }
template <typename T> inline T atan2_(T y, T x) {
  if (isnan_(y)) return y;
  if (isnan_(x)) return x;
  return std::atan2(y, x);
}
// radians = float8_mul(x, RADIANS_PER_DEGREE); degrees = float8_div(x, RADIANS_PER_DEGREE).
template <typename T> inline T radians_(T x, ExprFault& f) { return mul(x, T(kRadiansPerDegree), f); }
template <typename T> inline T degrees_(T x, ExprFault& f) { return div(x, T(kRadiansPerDegree), f); }

// float8_cmp_internal: NaN equals NaN and is above every other value.
template <typename T> inline int cmp(T x, T y) {
  const bool nx = isnan_(x), ny = isnan_(y);
  if (nx) return ny ? 0 : 1;
  if (ny) return -1;
  return x < y ? -1 : (x > y ? 1 : 0);
}
// Whether a three-way comparison result c satisfies op (the pair IR's rule).
using pair_eval::holds;

}  // namespace xops
}  // namespace gpu2bs
