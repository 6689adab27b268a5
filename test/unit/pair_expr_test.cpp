// Pair expressions: the vectorized CPU evaluator against the scalar reference evaluator, SQL's
// NULL/NaN/error rules, determinism of the sum, and the structure of the generated CUDA source.
#include <gtest/gtest.h>

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

TEST(PairExpr, WidthBucketAsPostgres15) {
  // PostgreSQL 15: count * (v - lo) / (hi - lo) + 1, truncated (not the quotient first).
  EXPECT_EQ(pair_expr_bucket(3.7517142857142853, 1.5, 4.1269999999999998, 14) + 1, 12);
  EXPECT_EQ(pair_expr_bucket(0.0, 0.0, 1.0, 4), 0);
  EXPECT_EQ(pair_expr_bucket(-0.1, 0.0, 1.0, 4), -1);
  EXPECT_EQ(pair_expr_bucket(1.0, 0.0, 1.0, 4), 4);
  EXPECT_EQ(pair_expr_bucket(INFINITY, 0.0, 1.0, 4), 4);
}
