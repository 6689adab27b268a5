// Code generation: a pair expression (the analyzed tree, never user text) as the CUDA source of
// `gpu2bs_pair` (kernels/expr/expr_gpu.h). The source is straight-line code, one local per node
// (v<k> value, n<k> NULL flag, t<k> truth: 0 false, 1 true, 2 unknown), AND / OR / CASE nested as
// branches so later operands run only where SQL evaluates them. + - * / and sqrt use the
// round-to-nearest intrinsics (never contracted), constants are exact hexadecimal literals, and
// PostgreSQL's checks raise the same faults as the CPU evaluator (pair_expr_ops.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "error.h"
#include "pair_expr.h"

namespace gpu2bs {

namespace {

// Helpers of the generated source: fixed text, the same for every expression of a precision.
// Each mirrors the function of pair_expr_ops.h of the same name; `f` receives the fault.
const char* kHelpers = R"(
__device__ __forceinline__ bool g2x_isnan(real x) { return x != x; }
__device__ __forceinline__ bool g2x_isinf(real x) { return isinf(x); }
__device__ __forceinline__ int g2x_cmp(real x, real y) {
  const bool nx = x != x, ny = y != y;
  if (nx) return ny ? 0 : 1;
  if (ny) return -1;
  return x < y ? -1 : (x > y ? 1 : 0);
}
__device__ __forceinline__ real g2x_add(real x, real y, int& f) {
  const real r = G2X_ADD(x, y);
  if (g2x_isinf(r) && !g2x_isinf(x) && !g2x_isinf(y)) f = 2;
  return r;
}
__device__ __forceinline__ real g2x_sub(real x, real y, int& f) {
  const real r = G2X_SUB(x, y);
  if (g2x_isinf(r) && !g2x_isinf(x) && !g2x_isinf(y)) f = 2;
  return r;
}
__device__ __forceinline__ real g2x_mul(real x, real y, int& f) {
  const real r = G2X_MUL(x, y);
  if (g2x_isinf(r) && !g2x_isinf(x) && !g2x_isinf(y)) f = 2;
  else if (r == (real)0 && x != (real)0 && y != (real)0) f = 3;
  return r;
}
__device__ __forceinline__ real g2x_div(real x, real y, int& f) {
  if (y == (real)0 && !g2x_isnan(x)) { f = 1; return (real)0; }
  const real r = G2X_DIV(x, y);
  if (g2x_isinf(r) && !g2x_isinf(x)) f = 2;
  else if (r == (real)0 && x != (real)0 && !g2x_isinf(y)) f = 3;
  return r;
}
__device__ __forceinline__ real g2x_sqrt(real x, int& f) {
  if (x < (real)0) { f = 6; return (real)0; }
  return G2X_SQRT(x);
}
__device__ __forceinline__ real g2x_square(real x, int& f) {
  if (g2x_isnan(x)) return x;
  const real r = G2X_MUL(x, x);
  if (g2x_isinf(r) && !g2x_isinf(x)) f = 2;
  else if (r == (real)0 && x != (real)0) f = 3;
  return r;
}
__device__ real g2x_pow(real x, real y, int& f) {
  if (g2x_isnan(x)) return (g2x_isnan(y) || y != (real)0) ? x : (real)1;
  if (g2x_isnan(y)) return x != (real)1 ? y : (real)1;
  if (x == (real)0 && y < (real)0) { f = 8; return (real)0; }
  if (x < (real)0 && floor(y) != y) { f = 9; return (real)0; }
  if (g2x_isinf(y)) {
    const real ax = fabs(x);
    if (ax == (real)1) return (real)1;
    if (y > (real)0) return ax > (real)1 ? y : (real)0;
    return ax > (real)1 ? (real)0 : -y;
  }
  if (g2x_isinf(x)) {
    if (y == (real)0) return (real)1;
    if (x > (real)0) return y > (real)0 ? x : (real)0;
    const real half = y / (real)2;
    const bool odd = floor(half) != half;
    if (y > (real)0) return odd ? x : -x;
    return odd ? -(real)0 : (real)0;
  }
  const real r = pow(x, y);
  if (g2x_isinf(r)) f = 2;
  else if (r == (real)0 && x != (real)0) f = 3;
  return r;
}
__device__ __forceinline__ real g2x_exp(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (g2x_isinf(x)) return x > (real)0 ? x : (real)0;
  const real r = exp(x);
  if (g2x_isinf(r)) f = 2;
  else if (r == (real)0) f = 3;
  return r;
}
__device__ __forceinline__ real g2x_ln(real x, int& f) {
  if (x == (real)0) { f = 4; return (real)0; }
  if (x < (real)0) { f = 5; return (real)0; }
  return log(x);
}
__device__ __forceinline__ real g2x_sin(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (g2x_isinf(x)) { f = 7; return (real)0; }
  return sin(x);
}
__device__ __forceinline__ real g2x_cos(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (g2x_isinf(x)) { f = 7; return (real)0; }
  return cos(x);
}
__device__ __forceinline__ real g2x_tan(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (g2x_isinf(x)) { f = 7; return (real)0; }
  return tan(x);
}
__device__ __forceinline__ real g2x_asin(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (x < (real)-1 || x > (real)1) { f = 7; return (real)0; }
  return asin(x);
}
__device__ __forceinline__ real g2x_acos(real x, int& f) {
  if (g2x_isnan(x)) return x;
  if (x < (real)-1 || x > (real)1) { f = 7; return (real)0; }
  return acos(x);
}
__device__ __forceinline__ real g2x_atan(real x) { return g2x_isnan(x) ? x : atan(x); }
__device__ __forceinline__ real g2x_atan2(real y, real x) {
  if (g2x_isnan(y)) return y;
  if (g2x_isnan(x)) return x;
  return atan2(y, x);
}
__device__ __forceinline__ real g2x_radians(real x, int& f) { return g2x_mul(x, G2X_RADIANS_PER_DEGREE, f); }
__device__ __forceinline__ real g2x_degrees(real x, int& f) { return g2x_div(x, G2X_RADIANS_PER_DEGREE, f); }
)";

// An exact literal of `v` in the precision's type: hexadecimal floating constants for finite
// values, bit patterns for infinities and NaN.
std::string literal(double v, bool f32) {
  char buf[64];
  if (f32) {
    const float x = float(v);
    if (std::isnan(x)) return "__int_as_float(0x7fc00000)";
    if (std::isinf(x)) return x > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    snprintf(buf, sizeof buf, "%af", double(x));
    return buf;
  }
  if (std::isnan(v)) return "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double((long long)0xfff0000000000000ULL)";
  snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

class Gen {
 public:
  Gen(const PairExpr& e, bool f32) : e_(e), f32_(f32) {}

  // Emits the code of node k (and its operands) at indentation `ind`.
  void node(int k, int ind) {
    const ExprNode& n = e_.node(k);
    const std::string K = std::to_string(k);
    auto a = [&](int i) { return std::to_string(e_.arg(k, i)); };
    if (k == subst) {
      line(ind, "const bool n" + K + " = xnull;");
      line(ind, "const real v" + K + " = x;");
      return;
    }
    switch (n.op) {
      case ExprOp::Col: {
        const char* row = n.side ? "b" : "a";
        line(ind, "const bool n" + K + " = gpu2bs_isnull(" + row + ", " + std::to_string(n.col) + ");");
        line(ind, "const real v" + K + " = n" + K + " ? (real)0 : gpu2bs_col(" + row + ", " +
                      std::to_string(n.col) + ");");
        return;
      }
      case ExprOp::Const:
        line(ind, std::string("const bool n") + K + " = " + (n.is_null ? "true" : "false") + ";");
        line(ind, "const real v" + K + " = " + (n.is_null ? std::string("(real)0") : literal(n.value, f32_)) + ";");
        return;
      case ExprOp::Truth:
        line(ind, "const unsigned char t" + K + " = " + std::to_string(int(n.truth)) + ";");
        return;
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
      case ExprOp::Pow: {
        node(e_.arg(k, 0), ind);
        node(e_.arg(k, 1), ind);
        const std::string x = a(0), y = a(1);
        line(ind, "const bool n" + K + " = n" + x + " || n" + y + ";");
        line(ind, "real v" + K + " = (real)0;");
        std::string call;
        if (n.op == ExprOp::Pow && is_const(e_.arg(k, 1), 2.0))
          call = "g2x_square(v" + x + ", f)";
        else
          call = std::string(n.op == ExprOp::Add ? "g2x_add" : n.op == ExprOp::Sub ? "g2x_sub"
                             : n.op == ExprOp::Mul ? "g2x_mul" : n.op == ExprOp::Div ? "g2x_div"
                             : "g2x_pow") + "(v" + x + ", v" + y + ", f)";
        if (!safe.empty() && safe[size_t(k)]) {
          // No fault possible for the values of G2_SAFE inputs (safe_nodes): the bare operation.
          const std::string bare = n.op == ExprOp::Add ? "G2X_ADD(v" + x + ", v" + y + ")"
                                   : n.op == ExprOp::Sub ? "G2X_SUB(v" + x + ", v" + y + ")"
                                   : n.op == ExprOp::Mul ? "G2X_MUL(v" + x + ", v" + y + ")"
                                                         : "G2X_MUL(v" + x + ", v" + x + ")";
          line(ind, "if (!n" + K + ") v" + K + " = " + bare + ";");
          return;
        }
        line(ind, "if (!n" + K + ") { v" + K + " = " + call + "; if (f) { " + raise + fail + " } }");
        return;
      }
      case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Atan: {
        node(e_.arg(k, 0), ind);
        const std::string x = a(0);
        const std::string expr = n.op == ExprOp::Neg ? "-v" + x : n.op == ExprOp::Abs ? "fabs(v" + x + ")" : "g2x_atan(v" + x + ")";
        line(ind, "const bool n" + K + " = n" + x + ";");
        line(ind, "const real v" + K + " = n" + K + " ? (real)0 : " + expr + ";");
        return;
      }
      case ExprOp::Atan2: {
        node(e_.arg(k, 0), ind);
        node(e_.arg(k, 1), ind);
        const std::string y = a(0), x = a(1);
        line(ind, "const bool n" + K + " = n" + y + " || n" + x + ";");
        line(ind, "const real v" + K + " = n" + K + " ? (real)0 : g2x_atan2(v" + y + ", v" + x + ");");
        return;
      }
      case ExprOp::Sqrt: case ExprOp::Sin: case ExprOp::Cos: case ExprOp::Tan: case ExprOp::Asin:
      case ExprOp::Acos: case ExprOp::Exp: case ExprOp::Ln: case ExprOp::Radians: case ExprOp::Degrees: {
        node(e_.arg(k, 0), ind);
        const std::string x = a(0);
        line(ind, "const bool n" + K + " = n" + x + ";");
        line(ind, "real v" + K + " = (real)0;");
        line(ind, "if (!n" + K + ") { v" + K + " = " + unary_helper(n.op) + "(v" + x +
                      ", f); if (f) { " + raise + fail + " } }");
        return;
      }
      case ExprOp::Least: case ExprOp::Greatest: {
        line(ind, "bool n" + K + " = true;");
        line(ind, "real v" + K + " = (real)0;");
        const char* cmp = n.op == ExprOp::Least ? "< 0" : "> 0";
        for (uint32_t i = 0; i < n.nargs; ++i) {
          line(ind, "{");
          node(e_.arg(k, int(i)), ind + 1);
          const std::string x = a(int(i));
          line(ind + 1, "if (!n" + x + " && (n" + K + " || g2x_cmp(v" + x + ", v" + K + ") " + cmp +
                            ")) { v" + K + " = v" + x + "; n" + K + " = false; }");
          line(ind, "}");
        }
        return;
      }
      case ExprOp::Cmp: {
        node(e_.arg(k, 0), ind);
        node(e_.arg(k, 1), ind);
        const std::string x = a(0), y = a(1);
        line(ind, "const unsigned char t" + K + " = (n" + x + " || n" + y + ") ? 2 : (g2x_cmp(v" + x +
                      ", v" + y + ") " + cmp_text(n.cmp) + " ? 1 : 0);");
        return;
      }
      case ExprOp::And: case ExprOp::Or: {
        const bool is_and = n.op == ExprOp::And;
        const char* stop = is_and ? "0" : "1";
        line(ind, std::string("unsigned char t") + K + " = " + (is_and ? "1" : "0") + ";");
        for (uint32_t i = 0; i < n.nargs; ++i) {
          line(ind, i == 0 ? std::string("{") : "if (t" + K + " != " + stop + ") {");
          node(e_.arg(k, int(i)), ind + 1);
          const std::string x = a(int(i));
          line(ind + 1, "if (t" + x + " == " + stop + ") t" + K + " = " + stop + "; else if (t" + x +
                            " == 2) t" + K + " = 2;");
          line(ind, "}");
        }
        return;
      }
      case ExprOp::Not:
        node(e_.arg(k, 0), ind);
        line(ind, "const unsigned char t" + K + " = t" + a(0) + " == 2 ? 2 : 1 - t" + a(0) + ";");
        return;
      case ExprOp::IsNull: case ExprOp::IsNotNull:
        node(e_.arg(k, 0), ind);
        line(ind, "const unsigned char t" + K + " = " + (n.op == ExprOp::IsNull ? "" : "!") + "n" + a(0) + " ? 1 : 0;");
        return;
      case ExprOp::Case: {
        const bool num = n.type == ExprType::Num;
        if (num) {
          line(ind, "bool n" + K + " = true;");
          line(ind, "real v" + K + " = (real)0;");
        } else {
          line(ind, "unsigned char t" + K + " = 2;");
        }
        int depth = 0;
        for (uint32_t i = 0; i + 1 < n.nargs; i += 2) {
          line(ind + depth, "{");
          node(e_.arg(k, int(i)), ind + depth + 1);
          line(ind + depth + 1, "if (t" + a(int(i)) + " == 1) {");
          result_of(k, e_.arg(k, int(i + 1)), num, ind + depth + 2);
          line(ind + depth + 1, "} else {");
          depth += 2;
        }
        result_of(k, e_.arg(k, int(n.nargs - 1)), num, ind + depth);
        while (depth > 0) {
          depth -= 2;
          line(ind + depth + 1, "}");
          line(ind + depth, "}");
        }
        return;
      }
    }
    throw Error(ErrorCode::Internal, "pair expression: unknown node in code generation");
  }

  std::string out;
  std::string fail = "return false;";  // what the function returns after a fault
  std::string raise = "gpu2bs_raise(f); ";  // what records a fault before `fail`
  int subst = -1;  // a node whose value is the variable `x`, NULL with `xnull` (gpu2bs_outer)
  std::vector<char> safe;  // per node: + - * square emitted without fault checks (safe_nodes)

  // True when node k's value, where it is not NULL and not NaN, is never negative nor -0 in
  // round-to-nearest arithmetic: squares, abs, exp, non-negative constants, and + * / sqrt
  // least greatest of such values (x + y, x * y, x / y of values >= +0 are >= +0; sqrt(-0) is
  // -0, so sqrt takes its operand's property).
  bool sign_clear(int k) const {
    const ExprNode& n = e_.node(k);
    switch (n.op) {
      case ExprOp::Const:
        return !n.is_null && (std::isnan(n.value) || n.value > 0 || (n.value == 0 && !std::signbit(n.value)));
      case ExprOp::Abs: case ExprOp::Exp:
        return true;
      case ExprOp::Pow:
        return is_const(e_.arg(k, 1), 2.0);
      case ExprOp::Sqrt:
        return sign_clear(e_.arg(k, 0));
      case ExprOp::Add: case ExprOp::Mul: case ExprOp::Div: case ExprOp::Least: case ExprOp::Greatest:
        for (uint32_t i = 0; i < n.nargs; ++i)
          if (!sign_clear(e_.arg(k, int(i)))) return false;
        return n.nargs > 0;
      default:
        return false;
    }
  }

 private:
  void line(int ind, const std::string& s) {
    out.append(size_t(2 * ind), ' ');
    out += s;
    out += '\n';
  }
  // Emits operand `k` of a CASE and stores it as the CASE's result `c`.
  void result_of(int c, int k, bool num, int ind) {
    node(k, ind);
    const std::string C = std::to_string(c), K = std::to_string(k);
    if (num)
      line(ind, "v" + C + " = v" + K + "; n" + C + " = n" + K + ";");
    else
      line(ind, "t" + C + " = t" + K + ";");
  }
  bool is_const(int k, double v) const {
    const ExprNode& n = e_.node(k);
    return n.op == ExprOp::Const && !n.is_null && n.value == v;
  }
  static const char* cmp_text(CmpOp op) {
    switch (op) {
      case CmpOp::Lt: return "< 0";
      case CmpOp::Le: return "<= 0";
      case CmpOp::Eq: return "== 0";
      case CmpOp::Ne: return "!= 0";
      case CmpOp::Ge: return ">= 0";
      case CmpOp::Gt: return "> 0";
    }
    return "== 0";
  }
  static const char* unary_helper(ExprOp op) {
    switch (op) {
      case ExprOp::Sqrt: return "g2x_sqrt";
      case ExprOp::Sin: return "g2x_sin";
      case ExprOp::Cos: return "g2x_cos";
      case ExprOp::Tan: return "g2x_tan";
      case ExprOp::Asin: return "g2x_asin";
      case ExprOp::Acos: return "g2x_acos";
      case ExprOp::Exp: return "g2x_exp";
      case ExprOp::Ln: return "g2x_ln";
      case ExprOp::Radians: return "g2x_radians";
      case ExprOp::Degrees: return "g2x_degrees";
      default: return "g2x_invalid";
    }
  }

  const PairExpr& e_;
  bool f32_;
};

// A float32 count whose predicate is `x <= c` or `x < c` (or `c >= x`, `c > x`) with a
// sign-clear x (Gen::sign_clear) and a constant c: *node = x, *key_max = the largest bit
// pattern of a kept x (x <= c: c's pattern, -0 as +0; x < c: the float below c's). False for
// other predicates and for c NaN or below the values x takes.
bool count_key(const PairExpr& e, const Gen& g, int* node, unsigned* key_max) {
  if (e.predicate < 0) return false;
  const ExprNode& p = e.node(e.predicate);
  if (p.op != ExprOp::Cmp || p.nargs != 2) return false;
  int x = e.arg(e.predicate, 0), c = e.arg(e.predicate, 1);
  CmpOp op = p.cmp;
  if (op == CmpOp::Ge || op == CmpOp::Gt) {
    std::swap(x, c);
    op = op == CmpOp::Ge ? CmpOp::Le : CmpOp::Lt;
  }
  if (op != CmpOp::Le && op != CmpOp::Lt) return false;
  const ExprNode& cn = e.node(c);
  if (cn.op != ExprOp::Const || cn.is_null || !g.sign_clear(x)) return false;
  const float cf = float(cn.value) + 0.0f;  // the literal's float value, -0 as +0
  if (std::isnan(cf)) return false;
  uint32_t bits = 0;
  std::memcpy(&bits, &cf, 4);
  if (op == CmpOp::Le) {
    if (cf < 0) return false;
    *key_max = bits;
  } else {
    if (!(cf > 0)) return false;
    *key_max = bits - 1;
  }
  *node = x;
  return true;
}

// True when node k's value depends on a column of a row (else it is a constant subtree).
bool uses_cols(const PairExpr& e, int k) {
  const ExprNode& n = e.node(k);
  if (n.op == ExprOp::Col) return true;
  for (uint32_t i = 0; i < n.nargs; ++i)
    if (uses_cols(e, e.arg(k, int(i)))) return true;
  return false;
}

// Magnitude bounds of a float32 node's non-zero values as binary exponents, 2^lo <= |v| <=
// 2^hi (lo > hi: the value is always 0 or NaN), for column values that are 0, NaN or within
// [2^-kPairExprSafeExponent, 2^kPairExprSafeExponent]; ok = false where the analysis does not
// follow the node.
struct Mag {
  int lo = 1000, hi = -1000;
  bool ok = false;
};

// Fills safe[k] for the nodes of k's subtree whose + - * or square can raise no fault (no
// overflow: results below 2^128; no underflow: products of at least 2^-149) under those bounds;
// returns node k's bounds.
Mag safe_nodes(const PairExpr& e, int k, std::vector<char>& safe) {
  const ExprNode& n = e.node(k);
  Mag m;
  switch (n.op) {
    case ExprOp::Col:
      m.lo = -kPairExprSafeExponent;
      m.hi = kPairExprSafeExponent;
      m.ok = true;
      return m;
    case ExprOp::Const:
      if (n.is_null || !std::isfinite(float(n.value))) return m;
      m.ok = true;
      if (float(n.value) != 0.0f) {
        m.lo = std::ilogb(float(n.value));
        m.hi = m.lo + 1;
      }
      return m;
    case ExprOp::Neg: case ExprOp::Abs: {
      m = safe_nodes(e, e.arg(k, 0), safe);
      return m;
    }
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Pow: {
      const bool square = n.op == ExprOp::Pow;
      if (square && !(e.node(e.arg(k, 1)).op == ExprOp::Const && e.node(e.arg(k, 1)).value == 2.0)) return m;
      const Mag x = safe_nodes(e, e.arg(k, 0), safe);
      const Mag y = square ? x : safe_nodes(e, e.arg(k, 1), safe);
      if (!x.ok || !y.ok) return m;
      const bool xz = x.lo > x.hi, yz = y.lo > y.hi;
      m.ok = true;
      if (n.op == ExprOp::Mul || square) {
        if (xz || yz) {
          safe[size_t(k)] = 1;
          return m;  // always 0 (or NaN)
        }
        m.lo = x.lo + y.lo - 1;
        m.hi = x.hi + y.hi + 1;
        safe[size_t(k)] = m.hi < 128 && m.lo >= -149;
      } else {
        if (xz && yz) {
          safe[size_t(k)] = 1;
          return m;
        }
        m.lo = -149;
        m.hi = std::max(xz ? -1000 : x.hi, yz ? -1000 : y.hi) + 2;
        safe[size_t(k)] = m.hi < 128;
      }
      if (!safe[size_t(k)]) m.ok = false;
      return m;
    }
    default:
      return m;
  }
}

// The inner node of a histogram value: following the value's root down through nodes that have
// exactly one column-dependent operand (unary functions and operators, + - * / power atan2
// least greatest with constant other operands), the first node that has none or several (or is
// a CASE). The value is then F(inner) with F built from those nodes and constants only. -1 when
// the value itself is that node (nothing to factor out).
int inner_node(const PairExpr& e) {
  int k = e.value;
  for (;;) {
    const ExprNode& n = e.node(k);
    if (n.type != ExprType::Num || n.op == ExprOp::Case || n.op == ExprOp::Col || n.nargs == 0) break;
    int next = -1, dep = 0;
    for (uint32_t i = 0; i < n.nargs; ++i)
      if (uses_cols(e, e.arg(k, int(i)))) {
        next = e.arg(k, int(i));
        ++dep;
      }
    if (dep != 1) break;
    k = next;
  }
  return k == e.value ? -1 : k;
}

}  // namespace

std::string generate_pair_source(const PairExpr& e, PairExprKind kind, Precision prec) {
  e.validate();
  if ((kind == PairExprKind::Sum || kind == PairExprKind::Histogram) && e.value < 0)
    throw Error(ErrorCode::Internal, "pair expression without a value");
  const bool f32 = prec == Precision::Float32;
  std::string s;
  s += "// gpu2bs pair expression (generated from the analyzed expression tree)\n";
  if (f32) {
    s += "#define G2X_ADD(x, y) __fadd_rn(x, y)\n#define G2X_SUB(x, y) __fsub_rn(x, y)\n"
         "#define G2X_MUL(x, y) __fmul_rn(x, y)\n#define G2X_DIV(x, y) __fdiv_rn(x, y)\n"
         "#define G2X_SQRT(x) __fsqrt_rn(x)\n";
  } else {
    s += "#define G2X_ADD(x, y) __dadd_rn(x, y)\n#define G2X_SUB(x, y) __dsub_rn(x, y)\n"
         "#define G2X_MUL(x, y) __dmul_rn(x, y)\n#define G2X_DIV(x, y) __ddiv_rn(x, y)\n"
         "#define G2X_SQRT(x) __dsqrt_rn(x)\n";
  }
  s += "#define G2X_RADIANS_PER_DEGREE " + literal(0.0174532925199432957692, f32) + "\n";
  s += kHelpers;
  Gen g(e, f32);
  g.out += "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n";
  g.out += "  int f = 0;\n";
  g.out += "  (void)a; (void)b; (void)value; (void)f;\n";
  if (e.predicate >= 0) {
    g.node(e.predicate, 1);
    g.out += "  if (t" + std::to_string(e.predicate) + " != 1) return false;\n";
  }
  if (kind == PairExprKind::Sum || kind == PairExprKind::Histogram) {
    g.node(e.value, 1);
    const std::string V = std::to_string(e.value);
    g.out += "  if (n" + V + ") return false;\n";
    if (kind == PairExprKind::Histogram)
      g.out += "  if (v" + V + " != v" + V + ") { gpu2bs_raise(" +
               std::to_string(int(ExprFault::HistogramNaN)) + "); return false; }\n";
    g.out += "  *value = v" + V + ";\n";
  }
  g.out += "  return true;\n}\n";
  s += g.out;
  int key_node = -1;
  unsigned key_max = 0;
  if (kind == PairExprKind::Count && f32 && count_key(e, g, &key_node, &key_max)) {
    // The count's key: the bit pattern of the compared value (never negative nor -0, so the
    // patterns of the non-NaN values are in their order and every NaN's is above key_max).
    Gen k(e, f32);
    k.fail = "return 0xffffffffu;";
    k.out += "#define G2_PAIR_KEY 1\n#define G2_KEY_MAX " + std::to_string(key_max) + "u\n";
    k.out += "__device__ unsigned gpu2bs_pair_key(const Row& a, const Row& b) {\n";
    k.out += "  int f = 0;\n";
    k.out += "  (void)a; (void)b; (void)f;\n";
    k.node(key_node, 1);
    const std::string V = std::to_string(key_node);
    k.out += "  if (n" + V + ") return 0xffffffffu;\n";
    k.out += "  return __float_as_uint(v" + V + ");\n}\n";
    s += k.out;
  }
  const int inner = kind == PairExprKind::Histogram && f32 ? inner_node(e) : -1;
  if (inner >= 0) {
    // The value as F(g) (inner_node): gpu2bs_pair_inner computes the predicate and g (1: kept
    // with g in *x, 2: g NaN, 3: g NULL, 0: not kept), gpu2bs_outer computes F with the same code
    // as gpu2bs_pair, the node of g replaced by its argument x (NULL with xnull): 0 with *value,
    // -1 NULL, else the fault. The kernel buckets g against thresholds that the device derives
    // from gpu2bs_outer after checking it over every float (docs/pair-expressions-gpu.md).
    const std::string G = std::to_string(inner);
    Gen in(e, f32);
    in.fail = "return 0;";
    in.out += "#define G2_INNER 1\n#define G2_INNER_NONNEG " + std::string(g.sign_clear(inner) ? "1" : "0") + "\n";
    in.out += "__device__ __forceinline__ int gpu2bs_pair_inner(const Row& a, const Row& b, real* x) {\n";
    in.out += "  int f = 0;\n";
    in.out += "  (void)a; (void)b; (void)f;\n";
    if (e.predicate >= 0) {
      in.node(e.predicate, 1);
      in.out += "  if (t" + std::to_string(e.predicate) + " != 1) return 0;\n";
    }
    std::vector<char> safe(e.nodes.size(), 0);
    safe_nodes(e, inner, safe);
    const bool any_safe = std::find(safe.begin(), safe.end(), 1) != safe.end();
    if (any_safe) {
      // G2_SAFE (the host found every input value 0, NaN or within 2^+-kPairExprSafeExponent):
      // g without the checks that cannot fire.
      Gen fast(e, f32);
      fast.fail = "return 0;";
      fast.safe = safe;
      fast.node(inner, 1);
      in.out += "#if G2_SAFE\n" + fast.out + "#else\n";
    }
    in.node(inner, 1);
    if (any_safe) in.out += "#endif\n";
    // g is stored before the tests: the kernel then reads x as g on every outcome (the cell
    // of a NaN or NULL g is computed and its class replaced), no select of x per pair.
    in.out += "  *x = v" + G + ";\n";
    in.out += "  if (n" + G + ") return 3;\n";
    in.out += "  if (v" + G + " != v" + G + ") return 2;\n";
    in.out += "  return 1;\n}\n";
    Gen out(e, f32);
    out.fail = "return f;";
    out.raise = "";
    out.subst = inner;
    out.out += "__device__ __forceinline__ int gpu2bs_outer(real x, bool xnull, real* value) {\n";
    out.out += "  int f = 0;\n";
    out.out += "  (void)f;\n";
    out.node(e.value, 1);
    const std::string V = std::to_string(e.value);
    out.out += "  if (n" + V + ") return -1;\n";
    out.out += "  *value = v" + V + ";\n  return 0;\n}\n";
    s += in.out;
    s += out.out;
  }
  s += "#undef G2X_ADD\n#undef G2X_SUB\n#undef G2X_MUL\n#undef G2X_DIV\n#undef G2X_SQRT\n#undef G2X_RADIANS_PER_DEGREE\n";
  return s;
}

}  // namespace gpu2bs
