// Pair expressions: the tree's checks and text form, the faults' SQLSTATEs, PostgreSQL's
// width_bucket, and the scalar reference evaluator (one pair at a time, for tests).
#include "pair_expr.h"

#include <algorithm>
#include <cstdio>

#include "error.h"
#include "pair_expr_ops.h"

namespace gpu2bs {

const char* expr_fault_message(ExprFault f) {
  switch (f) {
    case ExprFault::None: return "no error";
    case ExprFault::DivisionByZero: return "division by zero";
    case ExprFault::Overflow: return "value out of range: overflow";
    case ExprFault::Underflow: return "value out of range: underflow";
    case ExprFault::LogZero: return "cannot take logarithm of zero";
    case ExprFault::LogNegative: return "cannot take logarithm of a negative number";
    case ExprFault::SqrtNegative: return "cannot take square root of a negative number";
    case ExprFault::InputOutOfRange: return "input is out of range";
    case ExprFault::PowZeroNegative: return "zero raised to a negative power is undefined";
    case ExprFault::PowNegativeFraction:
      return "a negative number raised to a non-integer power yields a complex result";
    case ExprFault::HistogramNaN: return "operand, lower bound, and upper bound cannot be NaN";
  }
  return "unknown pair expression error";
}

const char* expr_fault_sqlstate(ExprFault f) {
  switch (f) {
    case ExprFault::DivisionByZero: return "22012";
    case ExprFault::Overflow:
    case ExprFault::Underflow:
    case ExprFault::InputOutOfRange: return "22003";
    case ExprFault::LogZero:
    case ExprFault::LogNegative: return "2201E";
    case ExprFault::SqrtNegative:
    case ExprFault::PowZeroNegative:
    case ExprFault::PowNegativeFraction: return "2201F";
    case ExprFault::HistogramNaN: return "2201G";
    case ExprFault::None: break;
  }
  return "XX000";
}

namespace {

// Number and type of the operands an operation takes (-1: two or more).
struct Shape {
  int nargs;
  ExprType arg;
  ExprType result;
};

Shape shape_of(ExprOp op) {
  switch (op) {
    case ExprOp::Col:
    case ExprOp::Const: return {0, ExprType::Num, ExprType::Num};
    case ExprOp::Truth: return {0, ExprType::Bool, ExprType::Bool};
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
    case ExprOp::Pow: case ExprOp::Atan2: return {2, ExprType::Num, ExprType::Num};
    case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Sqrt: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Tan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan: case ExprOp::Exp:
    case ExprOp::Ln: case ExprOp::Radians: case ExprOp::Degrees:
      return {1, ExprType::Num, ExprType::Num};
    case ExprOp::Least: case ExprOp::Greatest: return {-1, ExprType::Num, ExprType::Num};
    case ExprOp::Cmp: return {2, ExprType::Num, ExprType::Bool};
    case ExprOp::And: case ExprOp::Or: return {-1, ExprType::Bool, ExprType::Bool};
    case ExprOp::Not: return {1, ExprType::Bool, ExprType::Bool};
    case ExprOp::IsNull: case ExprOp::IsNotNull: return {1, ExprType::Num, ExprType::Bool};
    case ExprOp::Case: return {-2, ExprType::Num, ExprType::Num};  // checked separately
  }
  return {0, ExprType::Num, ExprType::Num};
}

const char* op_name(ExprOp op) {
  switch (op) {
    case ExprOp::Add: return "+";
    case ExprOp::Sub: return "-";
    case ExprOp::Mul: return "*";
    case ExprOp::Div: return "/";
    case ExprOp::Neg: return "-";
    case ExprOp::Abs: return "abs";
    case ExprOp::Sqrt: return "sqrt";
    case ExprOp::Pow: return "power";
    case ExprOp::Least: return "least";
    case ExprOp::Greatest: return "greatest";
    case ExprOp::Sin: return "sin";
    case ExprOp::Cos: return "cos";
    case ExprOp::Tan: return "tan";
    case ExprOp::Asin: return "asin";
    case ExprOp::Acos: return "acos";
    case ExprOp::Atan: return "atan";
    case ExprOp::Atan2: return "atan2";
    case ExprOp::Exp: return "exp";
    case ExprOp::Ln: return "ln";
    case ExprOp::Radians: return "radians";
    case ExprOp::Degrees: return "degrees";
    default: return "?";
  }
}

const char* cmp_name(CmpOp op) {
  switch (op) {
    case CmpOp::Lt: return "<";
    case CmpOp::Le: return "<=";
    case CmpOp::Eq: return "=";
    case CmpOp::Ne: return "<>";
    case CmpOp::Ge: return ">=";
    case CmpOp::Gt: return ">";
  }
  return "?";
}

[[noreturn]] void malformed(const std::string& why) {
  throw Error(ErrorCode::Internal, "malformed pair expression: " + why);
}

}  // namespace

int PairExpr::add(const ExprNode& n, const std::vector<int>& operands) {
  ExprNode c = n;
  c.first = uint32_t(args.size());
  c.nargs = uint32_t(operands.size());
  for (int o : operands) args.push_back(uint32_t(o));
  nodes.push_back(c);
  return int(nodes.size()) - 1;
}

void PairExpr::validate() const {
  if (nodes.size() > 100000) malformed("too many nodes");
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ExprNode& n = nodes[k];
    if (size_t(n.first) + n.nargs > args.size()) malformed("arguments out of range");
    for (uint32_t a = 0; a < n.nargs; ++a)
      if (args[n.first + a] >= k) malformed("an argument does not precede its node");
    auto argtype = [&](uint32_t a) { return nodes[args[n.first + a]].type; };
    const Shape s = shape_of(n.op);
    if (n.op == ExprOp::Case) {
      if (n.nargs < 3 || n.nargs % 2 != 1) malformed("CASE needs pairs of condition and result and an else");
      for (uint32_t a = 0; a + 1 < n.nargs; a += 2) {
        if (argtype(a) != ExprType::Bool) malformed("CASE condition is not boolean");
        if (argtype(a + 1) != n.type) malformed("CASE result of the wrong type");
      }
      if (argtype(n.nargs - 1) != n.type) malformed("CASE else of the wrong type");
      continue;
    }
    if (n.type != s.result) malformed(std::string("wrong result type of ") + op_name(n.op));
    if (s.nargs >= 0 && n.nargs != uint32_t(s.nargs)) malformed("wrong operand count");
    if (s.nargs == -1 && n.nargs < (n.op == ExprOp::Least || n.op == ExprOp::Greatest ? 1u : 2u))
      malformed("too few operands");
    for (uint32_t a = 0; a < n.nargs; ++a)
      if (argtype(a) != s.arg) malformed("operand of the wrong type");
    if (n.op == ExprOp::Col && (n.side > 1 || n.col >= ncols[n.side])) malformed("column out of range");
    if (n.op == ExprOp::Truth && n.truth != Tri::True && n.truth != Tri::False && n.truth != Tri::Unknown)
      malformed("bad truth value");
    if (n.op == ExprOp::Cmp && uint8_t(n.cmp) > uint8_t(CmpOp::Gt)) malformed("bad comparison");
  }
  if (predicate >= int(nodes.size()) || value >= int(nodes.size())) malformed("root out of range");
  if (predicate >= 0 && nodes[size_t(predicate)].type != ExprType::Bool) malformed("predicate is not boolean");
  if (value >= 0 && nodes[size_t(value)].type != ExprType::Num) malformed("value is not a number");
  if (ncols[0] < 0 || ncols[1] < 0 || ncols[0] > 1600 || ncols[1] > 1600) malformed("column count");
}

std::string PairExpr::describe(int root) const {
  if (root < 0) return "true";
  const ExprNode& n = nodes[size_t(root)];
  auto a = [&](uint32_t k) { return describe(int(args[n.first + k])); };
  switch (n.op) {
    case ExprOp::Col: return std::string(n.side ? "b" : "a") + ".c" + std::to_string(n.col);
    case ExprOp::Const: {
      if (n.is_null) return "NULL";
      char buf[64];
      snprintf(buf, sizeof buf, "%.17g", n.value);
      return buf;
    }
    case ExprOp::Truth: return n.truth == Tri::True ? "true" : n.truth == Tri::False ? "false" : "NULL::boolean";
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
      return "(" + a(0) + " " + op_name(n.op) + " " + a(1) + ")";
    case ExprOp::Neg: return "(-" + a(0) + ")";
    case ExprOp::Cmp: return "(" + a(0) + " " + cmp_name(n.cmp) + " " + a(1) + ")";
    case ExprOp::And: case ExprOp::Or: {
      std::string s = "(";
      for (uint32_t k = 0; k < n.nargs; ++k) s += (k ? (n.op == ExprOp::And ? " AND " : " OR ") : "") + a(k);
      return s + ")";
    }
    case ExprOp::Not: return "(NOT " + a(0) + ")";
    case ExprOp::IsNull: return "(" + a(0) + " IS NULL)";
    case ExprOp::IsNotNull: return "(" + a(0) + " IS NOT NULL)";
    case ExprOp::Case: {
      std::string s = "CASE";
      for (uint32_t k = 0; k + 1 < n.nargs; k += 2) s += " WHEN " + a(k) + " THEN " + a(k + 1);
      return s + " ELSE " + a(n.nargs - 1) + " END";
    }
    default: {
      std::string s = std::string(op_name(n.op)) + "(";
      for (uint32_t k = 0; k < n.nargs; ++k) s += (k ? ", " : "") + a(k);
      return s + ")";
    }
  }
}

int PairExpr::depth(int root) const {
  if (root < 0) return 0;
  std::vector<int> d(nodes.size(), 1);
  for (size_t k = 0; k <= size_t(root); ++k)
    for (uint32_t a = 0; a < nodes[k].nargs; ++a) d[k] = std::max(d[k], d[args[nodes[k].first + a]] + 1);
  return d[size_t(root)];
}

int pair_expr_bucket(double v, double lo, double hi, int nbuckets) {
  // width_bucket_float8 of PostgreSQL 15: count * (v - lo) / (hi - lo) + 1, truncated.
  if (v < lo) return -1;
  if (v >= hi) return nbuckets;
  const double r = (double(nbuckets) * (v - lo) / (hi - lo)) + 1;
  return int(r) - 1;
}

namespace {

// The scalar reference evaluator: one pair, recursive, lazy where SQL is (AND, OR, CASE).
template <typename T>
struct Scalar {
  const PairExpr& e;
  const ExprSide* side[2];
  int64_t row[2];

  struct Num {
    T v;
    bool null;
  };

  [[noreturn]] static void fail(ExprFault f) { throw ExprError(f); }

  Num num(int k) {
    const ExprNode& n = e.node(k);
    ExprFault f = ExprFault::None;
    auto un = [&](T (*fn)(T, ExprFault&)) -> Num {
      Num x = num(e.arg(k, 0));
      if (x.null) return x;
      const T r = fn(x.v, f);
      if (f != ExprFault::None) fail(f);
      return {r, false};
    };
    auto bin = [&](T (*fn)(T, T, ExprFault&)) -> Num {
      Num x = num(e.arg(k, 0));
      Num y = num(e.arg(k, 1));
      if (x.null || y.null) return {T(0), true};
      const T r = fn(x.v, y.v, f);
      if (f != ExprFault::None) fail(f);
      return {r, false};
    };
    switch (n.op) {
      case ExprOp::Col: {
        const ExprSide& s = *side[n.side];
        const size_t at = size_t(n.col) * size_t(s.n) + size_t(row[n.side]);
        if (s.nulls && s.nulls[at]) return {T(0), true};
        return {T(s.data[at]), false};
      }
      case ExprOp::Const: return {T(n.value), n.is_null};
      case ExprOp::Add: return bin(xops::add<T>);
      case ExprOp::Sub: return bin(xops::sub<T>);
      case ExprOp::Mul: return bin(xops::mul<T>);
      case ExprOp::Div: return bin(xops::div<T>);
      case ExprOp::Pow: return bin(xops::pow_<T>);
      case ExprOp::Neg: { Num x = num(e.arg(k, 0)); return {T(-x.v), x.null}; }
      case ExprOp::Abs: { Num x = num(e.arg(k, 0)); return {std::fabs(x.v), x.null}; }
      case ExprOp::Sqrt: return un(xops::sqrt_<T>);
      case ExprOp::Sin: return un(xops::sin_<T>);
      case ExprOp::Cos: return un(xops::cos_<T>);
      case ExprOp::Tan: return un(xops::tan_<T>);
      case ExprOp::Asin: return un(xops::asin_<T>);
      case ExprOp::Acos: return un(xops::acos_<T>);
      case ExprOp::Exp: return un(xops::exp_<T>);
      case ExprOp::Ln: return un(xops::ln_<T>);
      case ExprOp::Radians: return un(xops::radians_<T>);
      case ExprOp::Degrees: return un(xops::degrees_<T>);
      case ExprOp::Atan: { Num x = num(e.arg(k, 0)); return {xops::atan_(x.v), x.null}; }
      case ExprOp::Atan2: {
        Num y = num(e.arg(k, 0)), x = num(e.arg(k, 1));
        if (x.null || y.null) return {T(0), true};
        return {xops::atan2_(y.v, x.v), false};
      }
      case ExprOp::Least:
      case ExprOp::Greatest: {
        Num best{T(0), true};
        for (uint32_t a = 0; a < n.nargs; ++a) {
          Num x = num(e.arg(k, int(a)));
          if (x.null) continue;
          if (best.null) { best = x; continue; }
          const int c = xops::cmp(x.v, best.v);
          if ((n.op == ExprOp::Least && c < 0) || (n.op == ExprOp::Greatest && c > 0)) best = x;
        }
        return best;
      }
      case ExprOp::Case: {
        for (uint32_t a = 0; a + 1 < n.nargs; a += 2)
          if (tri(e.arg(k, int(a))) == Tri::True) return num(e.arg(k, int(a + 1)));
        return num(e.arg(k, int(n.nargs - 1)));
      }
      default: break;
    }
    throw Error(ErrorCode::Internal, "pair expression: not a number node");
  }

  Tri tri(int k) {
    const ExprNode& n = e.node(k);
    switch (n.op) {
      case ExprOp::Truth: return n.truth;
      case ExprOp::Cmp: {
        Num x = num(e.arg(k, 0)), y = num(e.arg(k, 1));
        if (x.null || y.null) return Tri::Unknown;
        return xops::holds(n.cmp, xops::cmp(x.v, y.v)) ? Tri::True : Tri::False;
      }
      case ExprOp::And: {
        Tri r = Tri::True;
        for (uint32_t a = 0; a < n.nargs; ++a) {
          const Tri v = tri(e.arg(k, int(a)));
          if (v == Tri::False) return Tri::False;
          if (v == Tri::Unknown) r = Tri::Unknown;
        }
        return r;
      }
      case ExprOp::Or: {
        Tri r = Tri::False;
        for (uint32_t a = 0; a < n.nargs; ++a) {
          const Tri v = tri(e.arg(k, int(a)));
          if (v == Tri::True) return Tri::True;
          if (v == Tri::Unknown) r = Tri::Unknown;
        }
        return r;
      }
      case ExprOp::Not: {
        const Tri v = tri(e.arg(k, 0));
        return v == Tri::Unknown ? v : (v == Tri::True ? Tri::False : Tri::True);
      }
      case ExprOp::IsNull: return num(e.arg(k, 0)).null ? Tri::True : Tri::False;
      case ExprOp::IsNotNull: return num(e.arg(k, 0)).null ? Tri::False : Tri::True;
      case ExprOp::Case: {
        for (uint32_t a = 0; a + 1 < n.nargs; a += 2)
          if (tri(e.arg(k, int(a))) == Tri::True) return tri(e.arg(k, int(a + 1)));
        return tri(e.arg(k, int(n.nargs - 1)));
      }
      default: break;
    }
    throw Error(ErrorCode::Internal, "pair expression: not a boolean node");
  }
};

template <typename T>
Tri eval_one(const PairExpr& e, const ExprSide& a, int64_t i, const ExprSide& b, int64_t j,
             double* value, bool* value_null) {
  Scalar<T> s{e, {&a, &b}, {i, j}};
  const Tri t = e.predicate >= 0 ? s.tri(e.predicate) : Tri::True;
  if (t == Tri::True && e.value >= 0) {
    auto v = s.num(e.value);
    *value = double(v.v);
    *value_null = v.null;
  }
  return t;
}

}  // namespace

Tri pair_expr_eval_one(const PairExpr& e, Precision prec, const ExprSide& a, int64_t i,
                       const ExprSide& b, int64_t j, double* value, bool* value_null) {
  *value = 0;
  *value_null = true;
  return prec == Precision::Float32 ? eval_one<float>(e, a, i, b, j, value, value_null)
                                    : eval_one<double>(e, a, i, b, j, value, value_null);
}

}  // namespace gpu2bs
