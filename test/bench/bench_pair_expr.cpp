// Pair expressions on the CPU engine (no PostgreSQL): pair evaluations per second of the
// expressions of docs/pair-expressions.md, for A/B timings on a loaded machine.
//   bench_pair_expr band NA NB float4|float8 REPS [threads]
//       gpu_pair_count of abs(a.x - b.x) + abs(a.y - b.y) <= 0.001 AND a.t < b.t over x, y
//       uniform in [0, 1) and t an integer in [0, 1000] (the SQL benchmark's tables).
//   bench_pair_expr angle NA NB float4|float8 REPS [threads]
//       gpu_pair_histogram of degrees(acos(greatest(-1, least(1, a.u . b.u)))) over 1000 buckets
//       of [0, 180), unit vectors uniform on the sphere.
//   bench_pair_expr sum NA NB float4|float8 REPS [threads]
//       gpu_pair_sum of (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) where a.t < b.t.
// Prints every run's wall and CPU time, the medians' pair evaluations per second (per wall second,
// and per CPU second of the process: on a machine shared with other work the CPU figure times
// the thread count estimates the rate on idle cores), and a checksum of the result (count, sum
// bits, histogram) that must not change between builds.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

#include "core/engine.h"
#include "core/pair_expr.h"

using namespace gpu2bs;

namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds used by the process so far (all threads).
double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

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

// The tree the SQL layer builds for the Manhattan band (columns x, y, t).
PairExpr band() {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 3;
  int dx = op(e, ExprOp::Abs, {op(e, ExprOp::Sub, {col(e, 0, 0), col(e, 1, 0)})});
  int dy = op(e, ExprOp::Abs, {op(e, ExprOp::Sub, {col(e, 0, 1), col(e, 1, 1)})});
  int b = cmp(e, CmpOp::Le, op(e, ExprOp::Add, {dx, dy}), cst(e, 0.001));
  int lt = cmp(e, CmpOp::Lt, col(e, 0, 2), col(e, 1, 2));
  e.predicate = e.add(N(ExprOp::And, ExprType::Bool), {b, lt});
  e.validate();
  return e;
}

// degrees(acos(greatest(-1, least(1, a.ux*b.ux + a.uy*b.uy + a.uz*b.uz)))).
PairExpr angle() {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 3;
  int d = op(e, ExprOp::Mul, {col(e, 0, 0), col(e, 1, 0)});
  d = op(e, ExprOp::Add, {d, op(e, ExprOp::Mul, {col(e, 0, 1), col(e, 1, 1)})});
  d = op(e, ExprOp::Add, {d, op(e, ExprOp::Mul, {col(e, 0, 2), col(e, 1, 2)})});
  int l = op(e, ExprOp::Least, {cst(e, 1), d});
  int g = op(e, ExprOp::Greatest, {cst(e, -1), l});
  e.value = op(e, ExprOp::Degrees, {op(e, ExprOp::Acos, {g})});
  e.validate();
  return e;
}

// (a.x - b.x)^2 + (a.y - b.y)^2 (as x * x) where a.t < b.t.
PairExpr sumexpr() {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 3;
  int dx = op(e, ExprOp::Sub, {col(e, 0, 0), col(e, 1, 0)});
  int dy = op(e, ExprOp::Sub, {col(e, 0, 1), col(e, 1, 1)});
  e.value = op(e, ExprOp::Add, {op(e, ExprOp::Mul, {dx, dx}), op(e, ExprOp::Mul, {dy, dy})});
  e.predicate = cmp(e, CmpOp::Lt, col(e, 0, 2), col(e, 1, 2));
  e.validate();
  return e;
}

// n rows of 3 columns, column-major: x, y uniform, t integer (band, sum) or unit vectors.
std::vector<double> side(int64_t n, bool unit, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> d(size_t(3 * n));
  for (int64_t i = 0; i < n; ++i) {
    if (unit) {
      double v[3] = {z(g), z(g), z(g)};
      const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
      for (int c = 0; c < 3; ++c) d[size_t(c * n + i)] = v[c] / r;
    } else {
      d[size_t(i)] = u(g);
      d[size_t(n + i)] = u(g);
      d[size_t(2 * n + i)] = std::round(u(g) * 1000);
    }
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: bench_pair_expr band|angle|sum NA NB float4|float8 REPS [threads]\n");
    return 1;
  }
  const std::string what = argv[1];
  const int64_t na = atoll(argv[2]), nb = atoll(argv[3]);
  const Precision prec = std::string(argv[4]) == "float8" ? Precision::Float64 : Precision::Float32;
  const int reps = atoi(argv[5]);
  const int threads = argc > 6 ? atoi(argv[6]) : int(std::max(1u, std::thread::hardware_concurrency()));
  const bool unit = what == "angle";
  std::vector<double> a = side(na, unit, 1), b = side(nb, unit, 2);
  PairExpr e = what == "band" ? band() : what == "angle" ? angle() : sumexpr();
  PairExprProblem p;
  p.kind = what == "band" ? PairExprKind::Count : what == "angle" ? PairExprKind::Histogram : PairExprKind::Sum;
  p.prec = prec;
  p.a = ExprSide{a.data(), nullptr, na, 3};
  p.b = ExprSide{b.data(), nullptr, nb, 3};
  p.expr = &e;
  p.lo = 0;
  p.hi = 180;
  p.nbuckets = 1000;
  std::vector<double> ts, cs;
  PairExprResult r;
  for (int k = 0; k < reps; ++k) {
    Control ctl;
    ctl.threads = threads;
    const double c0 = cpu_s();
    const auto t0 = Clock::now();
    r = cpu_pair_expr(p, nullptr, ctl);
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    cs.push_back(cpu_s() - c0);
    printf("run %d: %.3f s wall, %.3f s cpu\n", k, ts.back(), cs.back());
  }
  std::sort(ts.begin(), ts.end());
  std::sort(cs.begin(), cs.end());
  const double med = ts[ts.size() / 2], cmed = cs[cs.size() / 2];
  uint64_t h = 1469598103934665603ull;
  for (uint64_t c : r.hist) h = (h ^ c) * 1099511628211ull;
  uint64_t sb;
  std::memcpy(&sb, &r.sum, sizeof sb);
  printf("%s %s %lld x %lld threads %d: median %.3f s wall %.3e/s, %.3f s cpu %.3e/cpu-s; count %llu sum %.17g (bits %016llx) hist %016llx\n",
         what.c_str(), argv[4], (long long)na, (long long)nb, threads, med, double(na) * double(nb) / med, cmed,
         double(na) * double(nb) / cmed,
         (unsigned long long)r.count, r.sum, (unsigned long long)sb, (unsigned long long)h);
  return 0;
}
