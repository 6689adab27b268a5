// Pair expressions: the vectorized CPU evaluator against the scalar reference evaluator, SQL's
// NULL/NaN/error rules, determinism of the sum, and the structure of the generated CUDA source.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/pair_expr.h"

using namespace gpu2bs;

namespace {

ExprNode N(ExprOp op, ExprType t = ExprType::Num) {
  ExprNode n;
  n.op = op;
  n.type = t;
  return n;
}
int col(PairExpr& e, int side, int c) {
  ExprNode n = N(ExprOp::Col);
  n.side = uint8_t(side);
  n.col = uint16_t(c);
  return e.add(n);
}
int cst(PairExpr& e, double v) {
  ExprNode n = N(ExprOp::Const);
  n.value = v;
  return e.add(n);
}
int op(PairExpr& e, ExprOp o, std::vector<int> a) { return e.add(N(o), a); }
int cmp(PairExpr& e, CmpOp c, int x, int y) {
  ExprNode n = N(ExprOp::Cmp, ExprType::Bool);
  n.cmp = c;
  return e.add(n, {x, y});
}
int boolop(PairExpr& e, ExprOp o, std::vector<int> a) { return e.add(N(o, ExprType::Bool), a); }

// Two sides of random columns with some NULLs and NaNs (column-major).
struct Data {
  std::vector<double> a, b;
  std::vector<uint8_t> an, bn;
  ExprSide sa, sb;
  Data(int64_t na, int64_t nb, int ncols, unsigned seed) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    a.resize(size_t(na * ncols));
    b.resize(size_t(nb * ncols));
    an.assign(a.size(), 0);
    bn.assign(b.size(), 0);
    for (size_t k = 0; k < a.size(); ++k) {
      a[k] = std::round(u(g) * 64) / 64;
      if (g() % 29 == 0) an[k] = 1;
      if (g() % 31 == 0) a[k] = NAN;
    }
    for (size_t k = 0; k < b.size(); ++k) {
      b[k] = std::round(u(g) * 64) / 64;
      if (g() % 23 == 0) bn[k] = 1;
    }
    sa = ExprSide{a.data(), an.data(), na, ncols};
    sb = ExprSide{b.data(), bn.data(), nb, ncols};
  }
};

// Count, sum and histogram by the scalar reference over every pair.
PairExprResult reference(const PairExpr& e, Precision prec, const ExprSide& a, const ExprSide& b, bool self,
                         PairExprKind kind, double lo = 0, double hi = 1, int nb = 4) {
  PairExprResult r;
  r.hist.assign(size_t(nb), 0);
  for (int64_t i = 0; i < a.n; ++i)
    for (int64_t j = self ? i + 1 : 0; j < (self ? a.n : b.n); ++j) {
      double v;
      bool vn;
      if (pair_expr_eval_one(e, prec, a, i, self ? a : b, j, &v, &vn) != Tri::True) continue;
      if (kind == PairExprKind::Count) {
        ++r.count;
      } else if (!vn) {
        if (kind == PairExprKind::Sum) {
          ++r.count;
          r.sum += v;
        } else {
          const int k = pair_expr_bucket(v, lo, hi, nb);
          if (k >= 0 && k < nb) {
            ++r.hist[size_t(k)];
            ++r.count;
          }
        }
      }
    }
  return r;
}

PairExprResult run(const PairExpr& e, Precision prec, const ExprSide& a, const ExprSide& b, bool self,
                   PairExprKind kind, int threads = 2, double lo = 0, double hi = 1, int nb = 4) {
  PairExprProblem p;
  p.kind = kind;
  p.self = self;
  p.prec = prec;
  p.a = a;
  p.b = b;
  p.expr = &e;
  p.lo = lo;
  p.hi = hi;
  p.nbuckets = nb;
  Control ctl;
  ctl.threads = threads;
  return cpu_pair_expr(p, nullptr, ctl);
}

// abs(a.c0 - b.c0) + abs(a.c1 - b.c1) <= 0.5 AND (a.c2 < b.c2 OR b.c1 IS NULL)
PairExpr manhattan() {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 3;
  int d0 = op(e, ExprOp::Abs, {op(e, ExprOp::Sub, {col(e, 0, 0), col(e, 1, 0)})});
  int d1 = op(e, ExprOp::Abs, {op(e, ExprOp::Sub, {col(e, 0, 1), col(e, 1, 1)})});
  int band = cmp(e, CmpOp::Le, op(e, ExprOp::Add, {d0, d1}), cst(e, 0.5));
  int lt = cmp(e, CmpOp::Lt, col(e, 0, 2), col(e, 1, 2));
  int isn = boolop(e, ExprOp::IsNull, {col(e, 1, 1)});
  e.predicate = boolop(e, ExprOp::And, {band, boolop(e, ExprOp::Or, {lt, isn})});
  // value: CASE WHEN a.c0 <> 0 THEN b.c0 / a.c0 ELSE greatest(a.c1, b.c1, 0.25) END
  int guard = cmp(e, CmpOp::Ne, col(e, 0, 0), cst(e, 0));
  int q = op(e, ExprOp::Div, {col(e, 1, 0), col(e, 0, 0)});
  int g = op(e, ExprOp::Greatest, {col(e, 0, 1), col(e, 1, 1), cst(e, 0.25)});
  e.value = e.add(N(ExprOp::Case), {guard, q, g});
  e.validate();
  return e;
}

}  // namespace

TEST(PairExpr, CountSumHistogramMatchReference) {
  Data d(300, 270, 3, 7);
  PairExpr e = manhattan();
  for (Precision prec : {Precision::Float64, Precision::Float32}) {
    for (bool self : {false, true}) {
      auto want = reference(e, prec, d.sa, d.sb, self, PairExprKind::Count);
      EXPECT_EQ(run(e, prec, d.sa, d.sb, self, PairExprKind::Count).count, want.count);
      auto ws = reference(e, prec, d.sa, d.sb, self, PairExprKind::Sum);
      auto gs = run(e, prec, d.sa, d.sb, self, PairExprKind::Sum);
      EXPECT_EQ(gs.count, ws.count);
      EXPECT_NEAR(gs.sum, ws.sum, 1e-9 * (1 + std::fabs(ws.sum)));
      auto wh = reference(e, prec, d.sa, d.sb, self, PairExprKind::Histogram, -2, 2, 7);
      auto gh = run(e, prec, d.sa, d.sb, self, PairExprKind::Histogram, 2, -2, 2, 7);
      EXPECT_EQ(gh.hist, wh.hist);
    }
  }
}

TEST(PairExpr, SumIsIndependentOfThreads) {
  Data d(2000, 1500, 3, 11);
  PairExpr e = manhattan();
  const double s1 = run(e, Precision::Float64, d.sa, d.sb, false, PairExprKind::Sum, 1).sum;
  const double s3 = run(e, Precision::Float64, d.sa, d.sb, false, PairExprKind::Sum, 3).sum;
  EXPECT_EQ(std::memcmp(&s1, &s3, sizeof s1), 0);
}

TEST(PairExpr, SqlNullNanAndComparisonRules) {
  std::vector<double> a = {NAN, 1.0, 0.0}, b = {NAN, 2.0, 0.0};
  std::vector<uint8_t> an = {0, 0, 1}, bn = {0, 0, 0};
  ExprSide sa{a.data(), an.data(), 3, 1}, sb{b.data(), bn.data(), 3, 1};
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 1;
  e.predicate = cmp(e, CmpOp::Eq, col(e, 0, 0), col(e, 1, 0));  // NaN = NaN is true in SQL
  EXPECT_EQ(run(e, Precision::Float64, sa, sb, false, PairExprKind::Count).count, 1u);
  PairExpr g;
  g.ncols[0] = g.ncols[1] = 1;
  g.predicate = cmp(g, CmpOp::Gt, col(g, 0, 0), col(g, 1, 0));  // NaN > 2, NaN > 0, 1 > 0
  EXPECT_EQ(run(g, Precision::Float64, sa, sb, false, PairExprKind::Count).count, 3u);
  PairExpr n;  // NOT (a.c0 < b.c0): unknown stays unknown for the NULL row
  n.ncols[0] = n.ncols[1] = 1;
  n.predicate = boolop(n, ExprOp::Not, {cmp(n, CmpOp::Lt, col(n, 0, 0), col(n, 1, 0))});
  EXPECT_EQ(run(n, Precision::Float64, sa, sb, false, PairExprKind::Count).count, 4u);
}

TEST(PairExpr, ErrorsAsPostgresRaisesThem) {
  std::vector<double> a = {1.0, 2.0}, b = {0.0, 1.0};
  ExprSide sa{a.data(), nullptr, 2, 1}, sb{b.data(), nullptr, 2, 1};
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 1;
  e.predicate = cmp(e, CmpOp::Gt, op(e, ExprOp::Div, {col(e, 0, 0), col(e, 1, 0)}), cst(e, 0));
  try {
    run(e, Precision::Float64, sa, sb, false, PairExprKind::Count);
    FAIL() << "no error";
  } catch (const ExprError& x) {
    EXPECT_EQ(x.fault(), ExprFault::DivisionByZero);
    EXPECT_STREQ(expr_fault_sqlstate(x.fault()), "22012");
  }
  // CASE WHEN b <> 0 THEN a / b ELSE 0 END > 0: the division never sees b = 0
  PairExpr c;
  c.ncols[0] = c.ncols[1] = 1;
  int guard = cmp(c, CmpOp::Ne, col(c, 1, 0), cst(c, 0));
  int cs = c.add(N(ExprOp::Case), {guard, op(c, ExprOp::Div, {col(c, 0, 0), col(c, 1, 0)}), cst(c, 0)});
  c.predicate = cmp(c, CmpOp::Gt, cs, cst(c, 0));
  EXPECT_EQ(run(c, Precision::Float64, sa, sb, false, PairExprKind::Count).count, 2u);
  // sqrt of a negative, ln of zero, overflow
  struct { ExprOp o; double shift; ExprFault f; } cases[] = {
      {ExprOp::Sqrt, -5, ExprFault::SqrtNegative}, {ExprOp::Ln, -1, ExprFault::LogNegative}, {ExprOp::Ln, 0, ExprFault::LogZero},
      {ExprOp::Exp, 1000, ExprFault::Overflow}, {ExprOp::Asin, 3, ExprFault::InputOutOfRange}};
  for (auto& k : cases) {
    PairExpr u;
    u.ncols[0] = u.ncols[1] = 1;
    u.predicate = cmp(u, CmpOp::Gt, op(u, k.o, {op(u, ExprOp::Add, {col(u, 1, 0), cst(u, k.shift)})}), cst(u, 0));
    try {
      run(u, Precision::Float64, sa, sb, false, PairExprKind::Count);
      ADD_FAILURE() << "no error for op " << int(k.o);
    } catch (const ExprError& x) {
      EXPECT_EQ(x.fault(), k.f);
    }
  }
}

TEST(PairExpr, ValidateRejectsMalformedPrograms) {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 1;
  int x = col(e, 0, 0);
  e.add(N(ExprOp::And, ExprType::Bool), {x, x});  // numbers under AND
  EXPECT_THROW(e.validate(), Error);
  PairExpr f;
  f.ncols[0] = 1;
  col(f, 1, 0);  // b has no columns
  EXPECT_THROW(f.validate(), Error);
  PairExpr g;
  g.ncols[0] = g.ncols[1] = 1;
  g.predicate = col(g, 0, 0);  // a number as predicate
  EXPECT_THROW(g.validate(), Error);
}

TEST(PairExpr, GeneratedSourceStructure) {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 2;
  int d = op(e, ExprOp::Sub, {col(e, 0, 1), col(e, 1, 1)});
  e.predicate = cmp(e, CmpOp::Le, op(e, ExprOp::Pow, {d, cst(e, 2.0)}), cst(e, 0.1));
  e.value = op(e, ExprOp::Sqrt, {op(e, ExprOp::Abs, {d})});
  e.value = op(e, ExprOp::Mul, {col(e, 0, 0), cst(e, 1.0 / 3)});
  const std::string s = generate_pair_source(e, PairExprKind::Sum, Precision::Float64);
  EXPECT_NE(s.find("__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value)"), std::string::npos);
  EXPECT_NE(s.find("0x1.999999999999ap-4"), std::string::npos) << s;  // 0.1, exact
  EXPECT_NE(s.find("0x1.5555555555555p-2"), std::string::npos) << s;  // 1/3, exact
  EXPECT_NE(s.find("g2x_square("), std::string::npos);                // ^2 as x * x
  EXPECT_NE(s.find("gpu2bs_col(b, 1)"), std::string::npos);
  EXPECT_NE(s.find("__dadd_rn"), std::string::npos);
  EXPECT_EQ(s.find("0.1"), std::string::npos);  // no decimal text of a constant
  EXPECT_EQ(s.find("a.c"), std::string::npos);  // no text form of the expression
  const std::string f = generate_pair_source(e, PairExprKind::Count, Precision::Float32);
  EXPECT_NE(f.find("0x1.99999ap-4f"), std::string::npos) << f;  // 0.1 rounded to float
  EXPECT_NE(f.find("__fmul_rn"), std::string::npos);
  EXPECT_EQ(f.find("*value ="), std::string::npos);  // a count sets no value
  const std::string h = generate_pair_source(e, PairExprKind::Histogram, Precision::Float64);
  EXPECT_NE(h.find("gpu2bs_raise(10)"), std::string::npos);  // NaN value: width_bucket's error
  // braces balance
  int depth = 0;
  for (char ch : s) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
  EXPECT_EQ(depth, 0);
}

// A float32 count of `x <= c` / `x < c` with x never negative nor -0 gets the key function
// (the bit pattern of x, counted up to G2_KEY_MAX); other predicates and precisions do not.
TEST(PairExpr, GeneratedCountKey) {
  auto key_max = [](const std::string& s) -> long long {
    const size_t p = s.find("#define G2_KEY_MAX ");
    if (p == std::string::npos) return -1;
    EXPECT_NE(s.find("__device__ unsigned gpu2bs_pair_key(const Row& a, const Row& b)"), std::string::npos);
    return std::stoll(s.substr(p + 19));
  };
  auto bits = [](float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    return (long long)u;
  };
  // Builds (a.c0 - b.c0)^2 + (a.c1 - b.c1)^2 (sqrt'd when `root`) OP c, or c OP' x when `flip`.
  auto program = [](CmpOp o, double c, bool root, bool flip, bool square = true) {
    PairExpr e;
    e.ncols[0] = e.ncols[1] = 2;
    const int d0 = op(e, ExprOp::Sub, {col(e, 0, 0), col(e, 1, 0)});
    const int d1 = op(e, ExprOp::Sub, {col(e, 0, 1), col(e, 1, 1)});
    int x = square ? op(e, ExprOp::Add, {op(e, ExprOp::Pow, {d0, cst(e, 2.0)}), op(e, ExprOp::Pow, {d1, cst(e, 2.0)})})
                   : op(e, ExprOp::Add, {d0, d1});
    if (root) x = op(e, ExprOp::Sqrt, {x});
    const int k = cst(e, c);
    e.predicate = flip ? cmp(e, o, k, x) : cmp(e, o, x, k);
    return e;
  };
  const PairExpr le = program(CmpOp::Le, 0.01, false, false);
  EXPECT_EQ(key_max(generate_pair_source(le, PairExprKind::Count, Precision::Float32)), bits(0.01f));
  EXPECT_EQ(key_max(generate_pair_source(le, PairExprKind::Count, Precision::Float64)), -1);
  EXPECT_EQ(key_max(generate_pair_source(le, PairExprKind::Join, Precision::Float32)), -1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Lt, 0.1, true, false), PairExprKind::Count,
                                         Precision::Float32)), bits(0.1f) - 1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Ge, 0.1, true, true), PairExprKind::Count,
                                         Precision::Float32)), bits(0.1f));
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Le, -0.0, false, false), PairExprKind::Count,
                                         Precision::Float32)), 0);  // -0 as +0
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Le, INFINITY, false, false), PairExprKind::Count,
                                         Precision::Float32)), bits(INFINITY));
  // Not applicable: a negative or NaN bound, x < 0, x that may be negative, x >= c.
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Le, -1.0, false, false), PairExprKind::Count,
                                         Precision::Float32)), -1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Le, NAN, false, false), PairExprKind::Count,
                                         Precision::Float32)), -1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Lt, 0.0, false, false), PairExprKind::Count,
                                         Precision::Float32)), -1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Le, 1.0, false, false, false), PairExprKind::Count,
                                         Precision::Float32)), -1);
  EXPECT_EQ(key_max(generate_pair_source(program(CmpOp::Ge, 1.0, false, false), PairExprKind::Count,
                                         Precision::Float32)), -1);
  // The key function returns the non-kept pattern after a fault, as gpu2bs_pair returns false.
  const std::string s = generate_pair_source(le, PairExprKind::Count, Precision::Float32);
  EXPECT_NE(s.find("gpu2bs_raise(f); return 0xffffffffu;"), std::string::npos) << s;
  EXPECT_NE(s.find("gpu2bs_raise(f); return false;"), std::string::npos) << s;
}

// A float32 histogram of F(g), F a chain of one-operand nodes over an inner g (here
// acos(least(1, greatest(-1, dot)))), gets gpu2bs_pair_inner (g) and gpu2bs_outer (F of its
// argument x), with a G2_SAFE variant of g without the checks that cannot fire for inputs within
// 2^+-kPairExprSafeExponent; float64, other kinds and a value that is itself the inner node do
// not.
TEST(PairExpr, GeneratedThresholdTableFunctions) {
  auto angular = [](bool with_case) {
    PairExpr e;
    e.ncols[0] = e.ncols[1] = 3;
    int d = -1;
    for (int k = 0; k < 3; ++k) {
      const int m = op(e, ExprOp::Mul, {col(e, 0, k), col(e, 1, k)});
      d = d < 0 ? m : op(e, ExprOp::Add, {d, m});
    }
    int c = op(e, ExprOp::Least, {cst(e, 1), op(e, ExprOp::Greatest, {cst(e, -1), d})});
    if (with_case) {
      ExprNode n;
      n.op = ExprOp::Case;
      c = e.add(n, {cmp(e, CmpOp::Gt, d, cst(e, 0)), c, d});
    }
    e.value = op(e, ExprOp::Acos, {c});
    return e;
  };
  const PairExpr e = angular(false);
  const std::string s = generate_pair_source(e, PairExprKind::Histogram, Precision::Float32);
  EXPECT_NE(s.find("#define G2_INNER 1\n#define G2_INNER_NONNEG 0"), std::string::npos) << s;
  EXPECT_NE(s.find("int gpu2bs_pair_inner(const Row& a, const Row& b, real* x)"), std::string::npos);
  EXPECT_NE(s.find("int gpu2bs_outer(real x, bool xnull, real* value)"), std::string::npos);
  EXPECT_NE(s.find("#if G2_SAFE"), std::string::npos);
  EXPECT_NE(s.find("v2 = G2X_MUL(v0, v1);"), std::string::npos) << s;  // unchecked under G2_SAFE
  EXPECT_NE(s.find("g2x_mul(v0, v1, f)"), std::string::npos);          // checked otherwise
  EXPECT_NE(s.find("g2x_acos("), std::string::npos);
  // g is stored in *x before the NULL and NaN tests (the kernel reads x on every outcome).
  const size_t inner_at = s.find("int gpu2bs_pair_inner(");
  ASSERT_NE(s.find("*x = v", inner_at), std::string::npos);
  EXPECT_LT(s.find("*x = v", inner_at), s.find(") return 3;", inner_at));
  EXPECT_LT(s.find(") return 3;", inner_at), s.find(") return 2;", inner_at));
  EXPECT_EQ(s.find("a.c"), std::string::npos);
  EXPECT_EQ(generate_pair_source(e, PairExprKind::Histogram, Precision::Float64).find("G2_INNER"), std::string::npos);
  EXPECT_EQ(generate_pair_source(e, PairExprKind::Sum, Precision::Float32).find("G2_INNER"), std::string::npos);
  // A CASE stops the chain: it is g itself (computed per pair), F = acos.
  const std::string cs = generate_pair_source(angular(true), PairExprKind::Histogram, Precision::Float32);
  EXPECT_NE(cs.find("G2_INNER 1"), std::string::npos);
  EXPECT_EQ(cs.find("g2x_acos(", cs.find("gpu2bs_pair_inner")), cs.find("g2x_acos(", cs.find("gpu2bs_outer(real")));
  // sqrt of a sum of squares: g is the sum, never negative nor -0 (the check's domain [+0, inf]).
  PairExpr q;
  q.ncols[0] = q.ncols[1] = 2;
  int x = -1;
  for (int k = 0; k < 2; ++k) {
    const int t = op(q, ExprOp::Pow, {op(q, ExprOp::Sub, {col(q, 0, k), col(q, 1, k)}), cst(q, 2.0)});
    x = x < 0 ? t : op(q, ExprOp::Add, {x, t});
  }
  q.value = op(q, ExprOp::Sqrt, {x});
  const std::string r = generate_pair_source(q, PairExprKind::Histogram, Precision::Float32);
  EXPECT_NE(r.find("#define G2_INNER_NONNEG 1"), std::string::npos) << r;
  // The value itself is a column: nothing to factor out.
  PairExpr c1;
  c1.ncols[0] = c1.ncols[1] = 1;
  c1.value = col(c1, 0, 0);
  EXPECT_EQ(generate_pair_source(c1, PairExprKind::Histogram, Precision::Float32).find("G2_INNER"), std::string::npos);
  int depth = 0;
  for (char ch : s) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
  EXPECT_EQ(depth, 0);
}

TEST(PairExpr, WidthBucketAsPostgres15) {
  // PostgreSQL 15: count * (v - lo) / (hi - lo) + 1, truncated (not the quotient first).
  EXPECT_EQ(pair_expr_bucket(3.7517142857142853, 1.5, 4.1269999999999998, 14) + 1, 12);
  EXPECT_EQ(pair_expr_bucket(0.0, 0.0, 1.0, 4), 0);
  EXPECT_EQ(pair_expr_bucket(-0.1, 0.0, 1.0, 4), -1);
  EXPECT_EQ(pair_expr_bucket(1.0, 0.0, 1.0, 4), 4);
  EXPECT_EQ(pair_expr_bucket(INFINITY, 0.0, 1.0, 4), 4);
}

namespace {

// Random programs for the vectorized evaluator against the scalar reference.
struct Gen {
  std::mt19937_64 g;
  PairExpr e;
  explicit Gen(unsigned seed) : g(seed) { e.ncols[0] = e.ncols[1] = 3; }
  int pick(int n) { return int(g() % uint64_t(n)); }
  int leaf() {
    const int r = pick(10);
    if (r < 7) return col(e, r % 2, pick(3));
    static const double vals[] = {0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, 3.0e38, 1e300, INFINITY, NAN};
    if (r < 9) return cst(e, vals[pick(11)]);
    ExprNode n = N(ExprOp::Const);
    n.is_null = true;
    return e.add(n);
  }
  int num(int depth) {
    if (depth == 0 || pick(6) == 0) return leaf();
    static const ExprOp bin[] = {ExprOp::Add, ExprOp::Sub, ExprOp::Mul, ExprOp::Div, ExprOp::Add, ExprOp::Sub, ExprOp::Mul};
    static const ExprOp un[] = {ExprOp::Neg, ExprOp::Abs, ExprOp::Sqrt, ExprOp::Radians, ExprOp::Degrees,
                                ExprOp::Atan, ExprOp::Sin, ExprOp::Exp, ExprOp::Ln};
    const int r = pick(20);
    if (r < 9) return op(e, bin[pick(7)], {num(depth - 1), num(depth - 1)});
    if (r < 13) return op(e, un[pick(9)], {num(depth - 1)});
    if (r < 15) {
      std::vector<int> a;
      for (int k = 1 + pick(3); k > 0; --k) a.push_back(num(depth - 1));
      return op(e, pick(2) ? ExprOp::Least : ExprOp::Greatest, a);
    }
    if (r < 16) {
      ExprNode n = N(ExprOp::Const);
      n.value = 2.0;
      const int two = e.add(n);
      return op(e, ExprOp::Pow, {num(depth - 1), two});
    }
    if (r < 17) return op(e, ExprOp::Atan2, {num(depth - 1), num(depth - 1)});
    std::vector<int> a;
    for (int k = 1 + pick(2); k > 0; --k) {
      a.push_back(pred(depth - 1));
      a.push_back(num(depth - 1));
    }
    a.push_back(num(depth - 1));
    return e.add(N(ExprOp::Case), a);
  }
  int pred(int depth) {
    const int r = depth == 0 ? 0 : pick(12);
    if (r < 5) return cmp(e, CmpOp(pick(6)), num(std::max(depth - 1, 0)), num(std::max(depth - 1, 0)));
    if (r < 8) {
      std::vector<int> a;
      for (int k = 2 + pick(2); k > 0; --k) a.push_back(pred(depth - 1));
      return boolop(e, pick(2) ? ExprOp::And : ExprOp::Or, a);
    }
    if (r < 9) return boolop(e, ExprOp::Not, {pred(depth - 1)});
    if (r < 10) return boolop(e, pick(2) ? ExprOp::IsNull : ExprOp::IsNotNull, {num(depth - 1)});
    if (r < 11) {
      ExprNode n = N(ExprOp::Truth, ExprType::Bool);
      n.truth = Tri(pick(3));
      return e.add(n);
    }
    std::vector<int> a = {pred(depth - 1), pred(depth - 1), pred(depth - 1)};
    return e.add(N(ExprOp::Case, ExprType::Bool), a);
  }
};

// Columns with NULLs, zeros, signed zeros, infinities, NaN, huge and tiny values: c0 in [-1, 1],
// c1 positive, c2 mostly special values.
struct Wild {
  std::vector<double> a, b;
  std::vector<uint8_t> an, bn;
  ExprSide sa, sb;
  Wild(int64_t na, int64_t nb, unsigned seed) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e300, -1e300, 1e-300,
                                     3.0e38, 1e-40, 1e-320, 2.0, 0.25};
    auto fill = [&](std::vector<double>& d, std::vector<uint8_t>& nl, int64_t n) {
      d.resize(size_t(3 * n));
      nl.assign(d.size(), 0);
      for (int64_t i = 0; i < n; ++i) {
        d[size_t(i)] = g() % 40 == 0 ? special[g() % 15] : u(g);
        d[size_t(n + i)] = g() % 40 == 0 ? special[g() % 15] : 0.1 + 10 * std::fabs(u(g));
        d[size_t(2 * n + i)] = g() % 3 == 0 ? special[g() % 15] : u(g) * 100;
        for (int c = 0; c < 3; ++c)
          if (g() % 37 == 0) nl[size_t(c * n + i)] = 1;
      }
    };
    fill(a, an, na);
    fill(b, bn, nb);
    sa = ExprSide{a.data(), an.data(), na, 3};
    sb = ExprSide{b.data(), bn.data(), nb, 3};
  }
};

// The reference over every pair in the CPU engine's documented order: count, the kept pairs,
// the sum (items of min(256, max(1, 2^22 / |b|)) rows of a; in an item, runs of 256 rows of b,
// then rows of a, then rows of b), the histogram, and the faults any pair raises.
struct Ref {
  uint64_t count = 0;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;     // predicate true
  std::vector<std::pair<uint32_t, uint32_t>> pairs_v;   // and the value (if any) not NULL
  double sum = 0;
  uint64_t kept_values = 0;
  std::vector<uint64_t> hist;
  std::vector<ExprFault> faults;
  bool hist_nan = false;
};

Ref reference_ordered(const PairExpr& e, Precision prec, const ExprSide& a, const ExprSide& b, bool self,
                      double lo, double hi, int nbk) {
  Ref r;
  r.hist.assign(size_t(nbk), 0);
  const int64_t na = a.n, nb = self ? a.n : b.n;
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(256, (int64_t(1) << 22) / nb));
  for (int64_t i0 = 0; i0 < na; i0 += rows) {
    const int64_t i1 = std::min(na, i0 + rows);
    double s = 0;
    for (int64_t jb = self ? i0 + 1 : 0; jb < nb; jb += 256)
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = self ? std::max(jb, i + 1) : jb; j < std::min(nb, jb + 256); ++j) {
          double v = 0;
          bool vn = true;
          Tri t;
          try {
            t = pair_expr_eval_one(e, prec, a, i, self ? a : b, j, &v, &vn);
          } catch (const ExprError& x) {
            if (std::find(r.faults.begin(), r.faults.end(), x.fault()) == r.faults.end()) r.faults.push_back(x.fault());
            continue;
          }
          if (t != Tri::True) continue;
          ++r.count;
          r.pairs.push_back({uint32_t(i), uint32_t(j)});
          if (e.value < 0 || !vn) r.pairs_v.push_back({uint32_t(i), uint32_t(j)});
          if (e.value < 0 || vn) continue;
          s += v;
          ++r.kept_values;
          if (v != v) {
            r.hist_nan = true;
            continue;
          }
          const int k = pair_expr_bucket(v, lo, hi, nbk);
          if (k >= 0 && k < nbk) ++r.hist[size_t(k)];
        }
    r.sum += s;
  }
  return r;
}

struct Collect : PairSink {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) pairs.push_back({p[k].i, p[k].j});
  }
};

// Runs one kind; returns false (and the fault in *fault) when it raised.
bool engine_run(const PairExpr& e, Precision prec, const ExprSide& a, const ExprSide& b, bool self, PairExprKind kind,
                int threads, PairExprResult* out, ExprFault* fault, Collect* sink = nullptr, double lo = -4,
                double hi = 4, int nbk = 64) {
  PairExprProblem p;
  p.kind = kind;
  p.self = self;
  p.prec = prec;
  p.a = a;
  p.b = b;
  p.expr = &e;
  p.lo = lo;
  p.hi = hi;
  p.nbuckets = nbk;
  Control ctl;
  ctl.threads = threads;
  try {
    *out = cpu_pair_expr(p, sink, ctl);
  } catch (const ExprError& x) {
    *fault = x.fault();
    return false;
  }
  return true;
}

// Every instruction-set variant this processor runs.
std::vector<int> variants() {
  std::vector<int> v = {1};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) v.push_back(2);
  if (__builtin_cpu_supports("avx512f")) v.push_back(3);
#endif
  return v;
}

}  // namespace

// Random predicates and values over data with NULLs, NaN, infinities, zeros and extreme values:
// every instruction-set variant and thread count gives the reference's count, pairs, sum bits
// and histogram, raises only faults that some pair raises and raises whenever one does.
TEST(PairExpr, RandomProgramsMatchReferenceBitForBit) {
  Wild d(70, 1300, 5);  // b spans runs of 256, 512 and 1024 lanes and a partial one
  Wild ds(700, 1, 6);  // the self case: 700 rows (runs of 256 and 512 and a partial one)
  int raised = 0, clean = 0, kept = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    Gen gen(seed);
    gen.e.predicate = gen.pred(3);
    if (seed % 3 != 0) gen.e.value = gen.num(3);
    PairExpr& e = gen.e;
    e.validate();
    for (Precision prec : {Precision::Float64, Precision::Float32}) {
      const bool self = seed % 6 == 0;
      const ExprSide& a = self ? ds.sa : d.sa;
      const ExprSide& b = self ? ds.sa : d.sb;
      Ref want = reference_ordered(e, prec, a, b, self, -4, 4, 64);
      const bool fails = !want.faults.empty();
      (fails ? raised : clean) += 1;
      kept += !want.pairs_v.empty();
      for (int isa : variants()) {
        set_cpu_pair_expr_isa(isa);
        for (int threads : {1, 3}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " prec " + std::to_string(int(prec)) + " isa " +
                       std::to_string(isa) + " threads " + std::to_string(threads) + ": " + e.describe(e.predicate));
          PairExprResult r;
          ExprFault f = ExprFault::None;
          const bool ok = engine_run(e, prec, a, b, self, PairExprKind::Count, threads, &r, &f);
          EXPECT_EQ(ok, !fails);
          if (!ok) {
            EXPECT_NE(std::find(want.faults.begin(), want.faults.end(), f), want.faults.end()) << int(f);
            continue;
          }
          // With a value, every kind keeps the pairs whose value is not NULL.
          EXPECT_EQ(r.count, uint64_t(want.pairs_v.size()));
          Collect sink;
          ASSERT_TRUE(engine_run(e, prec, a, b, self, PairExprKind::Join, threads, &r, &f, &sink));
          std::sort(sink.pairs.begin(), sink.pairs.end());
          std::vector<std::pair<uint32_t, uint32_t>> wp = want.pairs_v;
          std::sort(wp.begin(), wp.end());
          EXPECT_EQ(sink.pairs, wp);
          if (e.value < 0) continue;
          ASSERT_TRUE(engine_run(e, prec, a, b, self, PairExprKind::Sum, threads, &r, &f));
          EXPECT_EQ(r.count, want.kept_values);
          if (!(std::isnan(r.sum) && std::isnan(want.sum))) {  // a NaN's payload is not observable in SQL
            EXPECT_EQ(std::memcmp(&r.sum, &want.sum, sizeof r.sum), 0) << r.sum << " vs " << want.sum;
          }
          const bool hok = engine_run(e, prec, a, b, self, PairExprKind::Histogram, threads, &r, &f);
          EXPECT_EQ(hok, !want.hist_nan);
          if (hok) {
            EXPECT_EQ(r.hist, want.hist);
          } else {
            EXPECT_EQ(f, ExprFault::HistogramNaN);
          }
        }
      }
      set_cpu_pair_expr_isa(0);
    }
  }
  // The programs exercise both outcomes.
  EXPECT_GT(raised, 10);
  EXPECT_GT(clean, 10);
  EXPECT_GT(kept, 10);
}

// An error at one lane anywhere in a run (first, last, across 256/512/1024-lane boundaries, the
// last row of b) is raised, on every variant; guarded by AND, CASE or a NULL it is not.
TEST(PairExpr, ErrorsAtRunBoundaries) {
  const int64_t na = 3, nb = 2100;
  for (Precision prec : {Precision::Float64, Precision::Float32}) {
    for (int64_t at : {int64_t(0), int64_t(255), int64_t(256), int64_t(511), int64_t(512), int64_t(1023),
                       int64_t(1024), int64_t(1025), int64_t(2047), nb - 1}) {
      // c0: 1 except 0 at `at`; c1: 2 except huge at `at` (overflows a product); c2: NULL at `at`.
      std::vector<double> a = {1.0, -2.0, 0.5, 1e200, 1e200, 1e200, 1.0, 1.0, 1.0};
      std::vector<double> b(size_t(3 * nb), 2.0);
      std::vector<uint8_t> an(a.size(), 0), bn(b.size(), 0);
      for (int64_t j = 0; j < nb; ++j) b[size_t(j)] = 1.0;
      b[size_t(at)] = 0.0;
      b[size_t(nb + at)] = prec == Precision::Float32 ? 1e38 : 1e300;
      bn[size_t(2 * nb + at)] = 1;
      if (prec == Precision::Float32) a[3] = a[4] = a[5] = 1e30;
      ExprSide sa{a.data(), an.data(), na, 3}, sb{b.data(), bn.data(), nb, 3};
      struct Case {
        PairExpr e;
        ExprFault want;  // None: no error
      };
      std::vector<Case> cases;
      {  // a.c0 / b.c0 > 0
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        e.predicate = cmp(e, CmpOp::Gt, op(e, ExprOp::Div, {col(e, 0, 0), col(e, 1, 0)}), cst(e, 0));
        cases.push_back({e, ExprFault::DivisionByZero});
      }
      {  // b.c0 <> 0 AND a.c0 / b.c0 > 0
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        int g = cmp(e, CmpOp::Ne, col(e, 1, 0), cst(e, 0));
        int q = cmp(e, CmpOp::Gt, op(e, ExprOp::Div, {col(e, 0, 0), col(e, 1, 0)}), cst(e, 0));
        e.predicate = boolop(e, ExprOp::And, {g, q});
        cases.push_back({e, ExprFault::None});
      }
      {  // CASE WHEN b.c0 = 0 THEN 0 ELSE a.c0 / b.c0 END > 0
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        int g = cmp(e, CmpOp::Eq, col(e, 1, 0), cst(e, 0));
        int v = e.add(N(ExprOp::Case), {g, cst(e, 0), op(e, ExprOp::Div, {col(e, 0, 0), col(e, 1, 0)})});
        e.predicate = cmp(e, CmpOp::Gt, v, cst(e, 0));
        cases.push_back({e, ExprFault::None});
      }
      {  // a.c1 * b.c1 > 0: overflow at `at`
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        e.predicate = cmp(e, CmpOp::Gt, op(e, ExprOp::Mul, {col(e, 0, 1), col(e, 1, 1)}), cst(e, 0));
        cases.push_back({e, ExprFault::Overflow});
      }
      {  // a.c1 * (b.c1 + b.c2 * 0) > 0: the overflowing lane is NULL
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        int nul = op(e, ExprOp::Add, {col(e, 1, 1), op(e, ExprOp::Mul, {col(e, 1, 2), cst(e, 0)})});
        e.predicate = cmp(e, CmpOp::Gt, op(e, ExprOp::Mul, {col(e, 0, 1), nul}), cst(e, 0));
        cases.push_back({e, ExprFault::None});
      }
      {  // sqrt(b.c0 - 0.5) >= 0: negative at `at`
        PairExpr e;
        e.ncols[0] = e.ncols[1] = 3;
        e.predicate = cmp(e, CmpOp::Ge, op(e, ExprOp::Sqrt, {op(e, ExprOp::Sub, {col(e, 1, 0), cst(e, 0.5)})}), cst(e, 0));
        cases.push_back({e, ExprFault::SqrtNegative});
      }
      for (auto& c : cases) {
        for (int isa : variants()) {
          set_cpu_pair_expr_isa(isa);
          for (PairExprKind kind : {PairExprKind::Count, PairExprKind::Join}) {
            SCOPED_TRACE("at " + std::to_string(at) + " isa " + std::to_string(isa) + ": " + c.e.describe(c.e.predicate));
            PairExprResult r;
            ExprFault f = ExprFault::None;
            Collect sink;
            const bool ok = engine_run(c.e, prec, sa, sb, false, kind, 2, &r, &f, &sink);
            EXPECT_EQ(ok, c.want == ExprFault::None);
            if (!ok) {
              EXPECT_EQ(f, c.want);
            } else {
              EXPECT_EQ(r.count, reference(c.e, prec, sa, sb, false, PairExprKind::Count).count);
            }
          }
        }
        set_cpu_pair_expr_isa(0);
      }
    }
  }
}

// Every comparison of a column of b with a constant or a column of a (either side first), over
// values with NaN, infinities, signed zeros and NULLs: PostgreSQL's NaN order on every variant.
TEST(PairExpr, ComparisonsWithUniformOperandsFollowNanOrder) {
  Wild d(40, 1100, 9);
  const double consts[] = {0.0, -0.0, 1.0, NAN, INFINITY, -INFINITY};
  for (Precision prec : {Precision::Float64, Precision::Float32}) {
    for (int c = 0; c < 6; ++c) {
      for (int form = 0; form < 4; ++form) {
        for (double k : consts) {
          if (form >= 2 && k != 0.0) continue;  // forms 2, 3 compare with a column of a
          PairExpr e;
          e.ncols[0] = e.ncols[1] = 3;
          const int bc = col(e, 1, 2);  // a third special values, some NULL
          const int u = form >= 2 ? col(e, 0, 2) : cst(e, k);
          e.predicate = form % 2 == 0 ? cmp(e, CmpOp(c), bc, u) : cmp(e, CmpOp(c), u, bc);
          const uint64_t want = reference(e, prec, d.sa, d.sb, false, PairExprKind::Count).count;
          for (int isa : variants()) {
            set_cpu_pair_expr_isa(isa);
            SCOPED_TRACE(e.describe(e.predicate) + " k " + std::to_string(k) + " isa " + std::to_string(isa));
            EXPECT_EQ(run(e, prec, d.sa, d.sb, false, PairExprKind::Count).count, want);
          }
          set_cpu_pair_expr_isa(0);
        }
      }
    }
  }
}
