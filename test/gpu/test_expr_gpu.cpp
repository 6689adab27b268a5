// User-defined pair expressions on the GPU (kernels/expr/): hand-written gpu2bs_pair sources
// compiled with NVRTC and run in the tile kernels, against CPU evaluations of the same
// operations (bit for bit where the operations are IEEE-exact), the hand-written pair-count
// engine, and float64 references; errors, NULLs, cancel, memory limits and the module cache.
#include <functional>
#include <set>

#include "expr_fixtures.h"
#include "fixtures.h"
#include "core/pair_expr.h"
#include "kernels/expr/nvrtc_cache.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;
using namespace gpu2bs::exprtest;
using exprgpu::Job;
using exprgpu::Kind;
using exprgpu::Result;

namespace {

#define REQUIRE_NVRTC()                                                      \
  do {                                                                       \
    REQUIRE_GPU();                                                           \
    std::string why_;                                                        \
    if (!exprgpu::nvrtc_available(&why_)) GTEST_SKIP() << "no NVRTC: " << why_; \
  } while (0)

// A job of `kind` over a (self when b is null) with the hand-written source.
Job make_job(Kind kind, bool f32, const Cols& a, const Cols* b, std::string src) {
  Job j;
  j.kind = kind;
  j.float32 = f32;
  j.self = b == nullptr;
  j.a = a.side();
  if (b) j.b = b->side();
  j.device_source = std::move(src);
  return j;
}

// Runs the job with a fresh Control (or `ctl_in`).
Result run_job(const Job& j, PairSink* sink = nullptr, Control* ctl_in = nullptr) {
  Ctl local;
  Control& ctl = ctl_in ? *ctl_in : local;
  return exprgpu::run(j, sink, ctl);
}

// Count of pred over the pairs (i < j of a when b is null), on the CPU.
template <typename F>
uint64_t cpu_count(const Cols& a, const Cols* b, F pred) {
  uint64_t c = 0;
  if (!b) {
    for (int64_t i = 0; i < a.n; ++i)
      for (int64_t j = i + 1; j < a.n; ++j) c += pred(a, i, a, j) ? 1 : 0;
  } else {
    for (int64_t i = 0; i < a.n; ++i)
      for (int64_t j = 0; j < b->n; ++j) c += pred(a, i, *b, j) ? 1 : 0;
  }
  return c;
}

// The columns as reference points (one coordinate per column).
ref::Points to_points(const Cols& c) {
  ref::Points p;
  p.dims = c.ncols;
  p.c.assign(size_t(c.ncols), std::vector<double>(size_t(c.n)));
  for (int k = 0; k < c.ncols; ++k)
    for (int64_t i = 0; i < c.n; ++i) p.c[size_t(k)][size_t(i)] = c.at(k, i);
  return p;
}

// (a) Euclidean distance within r: the generated-source count equals the CPU count with the same
// operations and the hand-written engine's count, bit for bit, in both precisions; and lies
// within the near-r pairs of the float64 reference.
TEST(ExprGpu, EuclideanCountMatchesEngineAndReference) {
  REQUIRE_NVRTC();
  for (int64_t n : {1, 2, 3, 255, 256, 257, 1000, 3001})
    for (int dims : {2, 3})
      for (bool f32 : {true, false}) {
        const Cols a = uniform_cols(n, dims, 100 + n + dims);
        const double r = eps_for(size_t(n), dims, 20.0);
        const ref::Points pts = to_points(a);
        const PairCountProblem p = make_pair_count(pts.view(), r, f32 ? Precision::Float32 : Precision::Float64);
        const double r2 = f32 ? double(p.r2_f) : p.r2;
        Job j = make_job(Kind::Count, f32, a, nullptr, euclid_source(dims, r2));
        const Result got = run_job(j);
        ASSERT_EQ(got.error, 0);
        const uint64_t want = f32 ? cpu_count(a, nullptr, [&](const Cols& x, int64_t i, const Cols& y, int64_t k) {
          return euclid_cpu<float>(x, i, y, k, dims, p.r2_f);
        }) : cpu_count(a, nullptr, [&](const Cols& x, int64_t i, const Cols& y, int64_t k) {
          return euclid_cpu<double>(x, i, y, k, dims, p.r2);
        });
        const char* what = f32 ? "f32" : "f64";
        EXPECT_EQ(got.count, want) << "n=" << n << " dims=" << dims << " " << what;
        Ctl ctl;
        const uint64_t engine = gpu()->pair_count(p, ctl);
        EXPECT_EQ(got.count, engine) << "hand-written engine, n=" << n << " dims=" << dims << " " << what;
        const auto rf = ref::pair_count(pts, r, p.prec);
        const uint64_t d = got.count > rf.first ? got.count - rf.first : rf.first - got.count;
        EXPECT_LE(d, rf.second) << "float64 reference, n=" << n << " " << what;
        // Two relations: a x b, every ordered pair.
        const Cols b = uniform_cols(n / 2 + 1, dims, 7 + n);
        Job j2 = make_job(Kind::Count, f32, a, &b, euclid_source(dims, r2));
        const Result got2 = run_job(j2);
        const uint64_t want2 = f32 ? cpu_count(a, &b, [&](const Cols& x, int64_t i, const Cols& y, int64_t k) {
          return euclid_cpu<float>(x, i, y, k, dims, p.r2_f);
        }) : cpu_count(a, &b, [&](const Cols& x, int64_t i, const Cols& y, int64_t k) {
          return euclid_cpu<double>(x, i, y, k, dims, p.r2);
        });
        EXPECT_EQ(got2.count, want2) << "a x b, n=" << n << " dims=" << dims << " " << what;
      }
}

// Adds column c of side (0 = a, 1 = b) to a pair-expression program (the analyzed form).
int ir_col(PairExpr& e, int side, int c) {
  ExprNode n;
  n.op = ExprOp::Col;
  n.side = uint8_t(side);
  n.col = uint16_t(c);
  return e.add(n);
}
// Adds the constant v.
int ir_const(PairExpr& e, double v) {
  ExprNode n;
  n.op = ExprOp::Const;
  n.value = v;
  return e.add(n);
}
// Adds the numeric operation o of the operands a.
int ir_op(PairExpr& e, ExprOp o, std::vector<int> a) {
  ExprNode n;
  n.op = o;
  return e.add(n, a);
}
// Adds the comparison x c y.
int ir_cmp(PairExpr& e, CmpOp c, int x, int y) {
  ExprNode n;
  n.op = ExprOp::Cmp;
  n.type = ExprType::Bool;
  n.cmp = c;
  return e.add(n, {x, y});
}

// The code generator's float32 count of a distance bound (the key carry chain on full tiles,
// the generated gpu2bs_pair on edge tiles): (a.c0-b.c0)^2 + (a.c1-b.c1)^2 + (a.c2-b.c2)^2 <= c,
// sqrt(...) < c and c >= abs(a.c0-b.c0) + abs(a.c1-b.c1), self and a x b, against the CPU count
// with the same float32 operations.
TEST(ExprGpu, GeneratedCountKeyMatchesCpu) {
  REQUIRE_NVRTC();
  for (int form = 0; form < 3; ++form) {
    PairExpr e;
    e.ncols[0] = e.ncols[1] = 3;
    int x = -1;
    for (int k = 0; k < 3; ++k) {
      const int d = ir_op(e, ExprOp::Sub, {ir_col(e, 0, k), ir_col(e, 1, k)});
      const int t = form == 2 ? ir_op(e, ExprOp::Abs, {d}) : ir_op(e, ExprOp::Pow, {d, ir_const(e, 2.0)});
      x = x < 0 ? t : ir_op(e, ExprOp::Add, {x, t});
    }
    const double c = form == 0 ? 2.5e-3 : form == 1 ? 0.05 : 0.08;
    if (form == 1) x = ir_op(e, ExprOp::Sqrt, {x});
    e.predicate = form == 2 ? ir_cmp(e, CmpOp::Ge, ir_const(e, c), x)
                            : ir_cmp(e, form == 0 ? CmpOp::Le : CmpOp::Lt, x, ir_const(e, c));
    const std::string src = generate_pair_source(e, PairExprKind::Count, Precision::Float32);
    ASSERT_NE(src.find("#define G2_PAIR_KEY 1"), std::string::npos) << src;
    const float cf = float(c);
    auto pred = [&](const Cols& p, int64_t i, const Cols& q, int64_t k) {
      float s = 0;
      for (int m = 0; m < 3; ++m) {
        const float d = float(p.at(m, i)) - float(q.at(m, k));
        const float t = form == 2 ? std::fabs(d) : d * d;
        s = m == 0 ? t : s + t;
      }
      if (form == 1) return std::sqrt(s) < cf;
      return form == 2 ? cf >= s : s <= cf;
    };
    for (int64_t n : {255, 1000, 3001}) {
      const Cols a = uniform_cols(n, 3, 900 + n);
      const Cols b = uniform_cols(n / 2 + 300, 3, 901 + n);
      const Result self = run_job(make_job(Kind::Count, true, a, nullptr, src));
      ASSERT_EQ(self.error, 0);
      EXPECT_EQ(self.count, cpu_count(a, nullptr, pred)) << "form " << form << " self n=" << n;
      const Result two = run_job(make_job(Kind::Count, true, a, &b, src));
      ASSERT_EQ(two.error, 0);
      EXPECT_EQ(two.count, cpu_count(a, &b, pred)) << "form " << form << " a x b n=" << n;
    }
  }
}

// Collects join pairs and the page sizes.
struct PairSet : PairSink {
  std::vector<std::pair<uint32_t, uint32_t>> v;
  size_t pages = 0, largest = 0;
  void consume(const PairRecord* p, size_t n) override {
    ++pages;
    largest = std::max(largest, n);
    for (size_t k = 0; k < n; ++k) v.emplace_back(p[k].i, p[k].j);
  }
};

// (b) Manhattan band join in Join mode: the same pairs as a CPU nested loop, self and two
// relations, both precisions, in pages of at most page_pairs.
TEST(ExprGpu, ManhattanBandJoinMatchesNestedLoop) {
  REQUIRE_NVRTC();
  for (bool f32 : {true, false})
    for (int64_t n : {2, 257, 3000}) {
      const Cols a = uniform_cols(n, 3, 500 + n);
      const Cols b = uniform_cols(n + 77, 3, 600 + n);
      const double r = 0.05;
      for (const Cols* bp : {(const Cols*)nullptr, &b}) {
        Job j = make_job(Kind::Join, f32, a, bp, manhattan_source(r));
        PairSet sink;
        Ctl ctl;
        ctl.page_pairs = 100;
        const Result got = run_job(j, &sink, &ctl);
        ASSERT_EQ(got.error, 0);
        std::vector<std::pair<uint32_t, uint32_t>> want;
        const Cols& bb = bp ? *bp : a;
        for (int64_t i = 0; i < a.n; ++i)
          for (int64_t k = bp ? 0 : i + 1; k < bb.n; ++k) {
            const bool keep = f32 ? manhattan_cpu<float>(a, i, bb, k, float(r))
                                  : manhattan_cpu<double>(a, i, bb, k, r);
            if (keep) want.emplace_back(uint32_t(i), uint32_t(k));
          }
        std::sort(sink.v.begin(), sink.v.end());
        EXPECT_EQ(got.count, want.size());
        EXPECT_EQ(sink.v.size(), want.size()) << (bp ? "a x b" : "self") << " n=" << n;
        EXPECT_TRUE(sink.v == want) << (bp ? "a x b" : "self") << " n=" << n << (f32 ? " f32" : " f64");
        EXPECT_LE(sink.largest, size_t(100));
        EXPECT_EQ(ctl.stats.pairs_emitted, want.size());
      }
    }
}

// Join: a result larger than the direct output buffer (a small device memory limit) is
// collected by running slices again in pieces; max_pairs raises ProgramLimit.
TEST(ExprGpu, JoinBufferOverflowAndLimit) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(3000, 3, 77);
  const std::string all = "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
                          "  return gpu2bs_col(a, 2) < gpu2bs_col(b, 2);\n}\n";
  Job j = make_job(Kind::Join, true, a, nullptr, all);
  PairSet sink;
  Ctl ctl;
  ctl.device_memory_limit = size_t(4) << 20;  // buffer of ~120k pairs for ~2.2M result pairs
  const Result got = run_job(j, &sink, &ctl);
  const uint64_t want = cpu_count(a, nullptr, [](const Cols& x, int64_t i, const Cols& y, int64_t k) {
    return float(x.at(2, i)) < float(y.at(2, k));
  });
  EXPECT_EQ(got.count, want);
  std::set<std::pair<uint32_t, uint32_t>> uniq(sink.v.begin(), sink.v.end());
  EXPECT_EQ(uniq.size(), want) << "pairs lost or duplicated across resumed slices";
  EXPECT_EQ(sink.v.size(), want);
  j.max_pairs = 1000;
  PairSet s2;
  try {
    run_job(j, &s2);
    ADD_FAILURE() << "max_pairs not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
  }
}

// (c) Sum of 1 / sqrt(d2): within the bound of the documented order (per-thread Neumaier sums,
// fixed block tree, items folded in order: error <= ~2u |sum| plus second-order terms) of the
// exact sum of the same per-pair values; the same bits on a second run.
TEST(ExprGpu, EnergySumMatchesFloat64Reference) {
  REQUIRE_NVRTC();
  for (bool f32 : {true, false})
    for (int64_t n : {2, 300, 4000}) {
      const Cols a = uniform_cols(n, 3, 900 + n);
      const Cols b = uniform_cols(n / 3 + 5, 3, 901 + n);
      for (const Cols* bp : {(const Cols*)nullptr, &b}) {
        Job j = make_job(Kind::Sum, f32, a, bp, energy_source());
        const Result got = run_job(j);
        ASSERT_EQ(got.error, 0);
        const Cols& bb = bp ? *bp : a;
        long double exact = 0, comp = 0;  // Neumaier in long double: the reference's own error
        double sum_abs = 0;                // is ~2^-63 |sum|
        uint64_t kept = 0;
        for (int64_t i = 0; i < a.n; ++i)
          for (int64_t k = bp ? 0 : i + 1; k < bb.n; ++k) {
            double v = 0;
            bool keep;
            if (f32) {
              float fv = 0;
              keep = energy_cpu<float>(a, i, bb, k, &fv);
              v = fv;
            } else {
              keep = energy_cpu<double>(a, i, bb, k, &v);
            }
            if (keep) {
              const long double t = exact + v;
              comp += std::fabs(exact) >= std::fabs((long double)v) ? (exact - t) + v : (v - t) + exact;
              exact = t;
              sum_abs += std::fabs(v);
              ++kept;
            }
          }
        EXPECT_EQ(got.count, kept);
        exact += comp;
        const double tol = 4 * std::ldexp(1.0, -53) * sum_abs + 1e-300;
        EXPECT_NEAR(got.sum, double(exact), tol) << (bp ? "a x b" : "self") << " n=" << n;
        const Result again = run_job(j);
        EXPECT_EQ(std::memcmp(&again.sum, &got.sum, sizeof(double)), 0) << "not deterministic";
      }
    }
}

// The compact tile loop (G2_COMPACT: every tile through the edge-tile loop, the default of
// float64 sums compiled at the fast level) and the full-tile loop give a sum of the same bits
// and the same count: each thread visits its pairs in the same order in both. Sides of several
// tiles, with full, diagonal and partial tiles; the count also equals the CPU's.
TEST(ExprGpu, SumCompactLoopSameBits) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(1100, 3, 1301);
  const Cols b = uniform_cols(700, 3, 1302);
  for (bool f32 : {true, false})
    for (const Cols* bp : {(const Cols*)nullptr, &b}) {
      Job j = make_job(Kind::Sum, f32, a, bp, energy_source());
      Result r[2];
      for (int mode : {0, 1}) {
        exprgpu::detail::set_compact_override(mode);
        r[mode] = run_job(j);
      }
      exprgpu::detail::set_compact_override(-1);
      ASSERT_EQ(r[0].error, 0);
      ASSERT_EQ(r[1].error, 0);
      const uint64_t kept = cpu_count(a, bp, [&](const Cols& x, int64_t i, const Cols& y, int64_t k) {
        if (f32) {
          float v;
          return energy_cpu<float>(x, i, y, k, &v);
        }
        double v;
        return energy_cpu<double>(x, i, y, k, &v);
      });
      EXPECT_EQ(r[0].count, kept);
      EXPECT_EQ(r[1].count, kept);
      EXPECT_EQ(std::memcmp(&r[0].sum, &r[1].sum, sizeof(double)), 0)
          << (f32 ? "f32 " : "f64 ") << (bp ? "a x b" : "self") << ": " << r[0].sum << " vs " << r[1].sum;
    }
}

// (d) Histogram of angular separations (acos of the clamped dot product) in 100 buckets over
// [0, pi): the dot product is IEEE-exact on both sides; acos differs by a few ulp between the
// device and the host library, so only pairs whose angle lies within 8 ulp of a bucket edge
// may land in another bucket. The hand-written source defines the threshold table's pair in
// float32: its table histogram equals, bucket for bucket, the same module's per-pair acos.
TEST(ExprGpu, AngularHistogramMatchesReference) {
  REQUIRE_NVRTC();
  const int nb = 100;
  const double lo = 0, hi = M_PI;
  for (bool f32 : {true, false})
    for (int64_t n : {1000, 2500}) {
      const Cols a = unit_vectors(n, 1300 + n);
      Job j = make_job(Kind::Histogram, f32, a, nullptr, angle_source());
      j.lo = lo;
      j.hi = hi;
      j.nbuckets = nb;
      const Result got = run_job(j);
      ASSERT_EQ(got.error, 0);
      EXPECT_EQ(got.table, f32);
      if (f32) {
        exprgpu::detail::set_histogram_table(false);
        const Result direct = run_job(j);
        exprgpu::detail::set_histogram_table(true);
        ASSERT_EQ(direct.error, 0);
        EXPECT_FALSE(direct.table);
        EXPECT_EQ(got.hist, direct.hist) << "hand-written f32 table vs direct, n=" << n << ": "
                                         << first_diff(got.hist, direct.hist);
      }
      std::vector<uint64_t> want(nb, 0);
      uint64_t near = 0, counted = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = i + 1; k < n; ++k) {
          double v, ulp;
          if (f32) {
            const float d = angle_dot<float>(a, i, a, k);
            v = std::acos(d);
            ulp = std::ldexp(1.0, std::ilogb(float(v)) - 23);
          } else {
            const double d = angle_dot<double>(a, i, a, k);
            v = std::acos(d);
            ulp = std::ldexp(1.0, std::ilogb(v) - 52);
          }
          if (f32) v = double(float(v));
          const int bk = pg_bucket(v, lo, hi, nb);
          if (bk >= 0 && bk < nb) {
            ++want[size_t(bk)];
            ++counted;
          }
          if (pg_bucket(v - 8 * ulp, lo, hi, nb) != pg_bucket(v + 8 * ulp, lo, hi, nb)) ++near;
        }
      uint64_t moved = 0;
      for (int k = 0; k < nb; ++k)
        moved += got.hist[size_t(k)] > want[size_t(k)] ? got.hist[size_t(k)] - want[size_t(k)]
                                                        : want[size_t(k)] - got.hist[size_t(k)];
      EXPECT_LE(moved, 2 * near) << (f32 ? "f32" : "f64") << " n=" << n << ": " << first_diff(got.hist, want);
      const uint64_t dc = got.count > counted ? got.count - counted : counted - got.count;
      EXPECT_LE(dc, near);
      printf("angular histogram %s n=%lld: %llu bucket moves, %llu pairs near an edge\n",
             f32 ? "f32" : "f64", (long long)n, (unsigned long long)moved, (unsigned long long)near);
    }
}

// The bucket without the float64 division (the rounding bound and the table of edges) against
// PostgreSQL's width_bucket on the same value, for values at and within a few ulps of every
// bucket edge, at lo and hi, outside [lo, hi), and uniform ones: value = a.c0 - 0, i.e. a.c0
// rounded to the precision. Shared-memory copies and global atomics; the last configuration's
// rounding bound is too wide for the edge table (the float64 quotient runs per pair).
TEST(ExprGpu, HistogramEdgesExact) {
  REQUIRE_NVRTC();
  struct Range {
    double lo, hi;
    int nb;
  };
  const Range ranges[] = {{0, M_PI, 1000}, {-1.5, 1.75, 7}, {-1.5, 1.75, 4096}, {1, 2, 1},
                          {-3e-3, 1e-2, 999}, {1e6, 1e6 + 1, 1000}};
  Cols zero;
  zero.ncols = 1;
  zero.n = 1;
  zero.data = {0.0};
  for (bool f32 : {true, false})
    for (const Range& r : ranges) {
      std::vector<double> v;
      auto near = [&](double x) {
        if (f32) {
          float f = float(x), g = f;
          v.push_back(f);
          for (int s = 0; s < 3; ++s) {
            f = std::nextafter(f, INFINITY);
            g = std::nextafter(g, -INFINITY);
            v.push_back(f);
            v.push_back(g);
          }
        } else {
          double f = x, g = x;
          v.push_back(f);
          for (int s = 0; s < 3; ++s) {
            f = std::nextafter(f, INFINITY);
            g = std::nextafter(g, -INFINITY);
            v.push_back(f);
            v.push_back(g);
          }
        }
      };
      for (int k = 0; k <= r.nb; ++k) near(r.lo + (r.hi - r.lo) * k / r.nb);
      near(r.lo);
      near(r.hi);
      for (double x : std::initializer_list<double>{-INFINITY, INFINITY, 0.0, -0.0, r.lo - 1, r.hi + 1})
        v.push_back(x);
      std::mt19937_64 rng(7);
      std::uniform_real_distribution<double> u(r.lo - 0.1 * (r.hi - r.lo), r.hi + 0.1 * (r.hi - r.lo));
      for (int k = 0; k < 20000; ++k) v.push_back(u(rng));
      Cols a;
      a.ncols = 1;
      a.n = int64_t(v.size());
      a.data = v;
      std::vector<uint64_t> want(size_t(r.nb), 0);
      for (double x : v) {
        const double y = f32 ? double(float(x)) : x;
        const int bk = pg_bucket(y, r.lo, r.hi, r.nb);
        if (bk >= 0 && bk < r.nb) ++want[size_t(bk)];
      }
      for (int copies : {0, -1}) {
        forced().sdh_copies = copies;
        Job j = make_job(Kind::Histogram, f32, a, &zero, diff_source());
        j.lo = r.lo;
        j.hi = r.hi;
        j.nbuckets = r.nb;
        const Result got = run_job(j);
        forced().sdh_copies = 0;
        ASSERT_EQ(got.error, 0);
        EXPECT_EQ(got.hist, want) << (f32 ? "f32" : "f64") << " [" << r.lo << ", " << r.hi << ") nb=" << r.nb
                                  << " copies=" << copies << ": " << first_diff(got.hist, want);
      }
    }
}

// Histogram buckets exactly as PostgreSQL computes them (value a.c0 - b.c0, bit-exact): the
// privatized shared-memory path and global atomics, values outside [lo, hi) not counted, and
// a NaN value raising 2201G.
TEST(ExprGpu, HistogramBucketsExactBothOutputPaths) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(2000, 1, 31, -1.2, 1.2);
  const Cols b = uniform_cols(1500, 1, 32, -1.0, 1.0);
  for (int nb : {1, 7, 1000, 20000})
    for (int copies : {0, -1}) {
      forced().sdh_copies = copies;
      Job j = make_job(Kind::Histogram, false, a, &b, diff_source());
      j.lo = -1.5;
      j.hi = 1.75;
      j.nbuckets = nb;
      const Result got = run_job(j);
      forced().sdh_copies = 0;
      ASSERT_EQ(got.error, 0);
      std::vector<uint64_t> want(size_t(nb), 0);
      uint64_t counted = 0;
      for (int64_t i = 0; i < a.n; ++i)
        for (int64_t k = 0; k < b.n; ++k) {
          const int bk = pg_bucket(a.at(0, i) - b.at(0, k), j.lo, j.hi, nb);
          if (bk >= 0 && bk < nb) {
            ++want[size_t(bk)];
            ++counted;
          }
        }
      EXPECT_EQ(got.hist, want) << "nb=" << nb << " copies=" << copies << ": " << first_diff(got.hist, want);
      EXPECT_EQ(got.count, counted);
    }
  Cols c = a;
  c.data[1234] = NAN;
  Job j = make_job(Kind::Histogram, false, c, &b, diff_source());
  j.lo = -1;
  j.hi = 1;
  j.nbuckets = 10;
  EXPECT_EQ(run_job(j).error, exprgpu::kHistogramNaN);
}

// (e) NULLs on either side (SQL: a comparison with NULL is not kept), self and two relations.
TEST(ExprGpu, NullsOnEitherSide) {
  REQUIRE_NVRTC();
  Cols a = uniform_cols(700, 2, 41);
  Cols b = uniform_cols(513, 2, 42);
  Cols an = a, bn = b;
  an.nulls.assign(an.data.size(), 0);
  bn.nulls.assign(bn.data.size(), 0);
  for (size_t k = 0; k < an.nulls.size(); k += 7) an.nulls[k] = 1;
  for (size_t k = 3; k < bn.nulls.size(); k += 5) bn.nulls[k] = 1;
  auto pred = [](const Cols& x, int64_t i, const Cols& y, int64_t k) {
    return !x.null(0, i) && !y.null(0, k) && x.at(0, i) < y.at(0, k);
  };
  struct Case {
    const Cols* a;
    const Cols* b;
    const char* what;
  } cases[] = {{&an, &b, "a nulls"}, {&a, &bn, "b nulls"}, {&an, &bn, "both"}, {&an, nullptr, "self"}};
  for (bool f32 : {true, false})
    for (const Case& c : cases) {
      Job j = make_job(Kind::Count, f32, *c.a, c.b, null_less_source());
      const Result got = run_job(j);
      EXPECT_EQ(got.count, cpu_count(*c.a, c.b, pred)) << c.what;
    }
}

// (e) Division by zero raises code 1 (22012) from the generated code; the engine stays usable.
TEST(ExprGpu, DivisionByZeroRaises) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(5000, 1, 51);
  Job j = make_job(Kind::Sum, false, a, nullptr, inverse_diff_source());
  EXPECT_EQ(run_job(j).error, 0);
  Cols dup = a;
  dup.data[4000] = dup.data[17];  // one pair with a zero difference
  Job j2 = make_job(Kind::Sum, false, dup, nullptr, inverse_diff_source());
  EXPECT_EQ(run_job(j2).error, exprgpu::kDivisionByZero);
  Job j3 = make_job(Kind::Count, true, dup, nullptr, inverse_diff_source());
  EXPECT_EQ(run_job(j3).error, exprgpu::kDivisionByZero);
  EXPECT_EQ(run_job(j).error, 0);
}

// (e) Empty sides, one and two rows.
TEST(ExprGpu, EmptyAndTinySides) {
  REQUIRE_NVRTC();
  const Cols none = uniform_cols(0, 2, 1);
  const Cols one = uniform_cols(1, 2, 2);
  const Cols two = uniform_cols(2, 2, 3);
  const std::string all = "__device__ bool gpu2bs_pair(const Row& a, const Row& b, real* value) {\n"
                          "  return true;\n}\n";
  EXPECT_EQ(run_job(make_job(Kind::Count, true, none, nullptr, all)).count, 0u);
  EXPECT_EQ(run_job(make_job(Kind::Count, true, none, &two, all)).count, 0u);
  EXPECT_EQ(run_job(make_job(Kind::Count, true, two, &none, all)).count, 0u);
  EXPECT_EQ(run_job(make_job(Kind::Count, true, one, nullptr, all)).count, 0u);
  EXPECT_EQ(run_job(make_job(Kind::Count, true, two, nullptr, all)).count, 1u);
  EXPECT_EQ(run_job(make_job(Kind::Count, false, one, &two, all)).count, 2u);
  EXPECT_EQ(run_job(make_job(Kind::Count, false, one, &one, all)).count, 1u);
  Job h = make_job(Kind::Histogram, true, none, nullptr, diff_source());
  h.lo = 0;
  h.hi = 1;
  h.nbuckets = 5;
  EXPECT_EQ(run_job(h).hist, std::vector<uint64_t>(5, 0));
  PairSet sink;
  const Result jr = run_job(make_job(Kind::Join, false, two, nullptr, all), &sink);
  ASSERT_EQ(sink.v.size(), 1u);
  EXPECT_EQ(sink.v[0], std::make_pair(0u, 1u));
  EXPECT_EQ(jr.count, 1u);
}

// (f) The module cache: a new source compiles (time reported), the same source again is a hit
// with no compile time; gpu2bs_info rows count both.
TEST(ExprGpu, ModuleCacheHitAndCompileTime) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(1000, 3, 61);
  const std::string token = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string src = "// " + token + "\n" + manhattan_source(0.1);
  Job j = make_job(Kind::Count, true, a, nullptr, src);
  const Result r1 = run_job(j);
  EXPECT_FALSE(r1.cache_hit);
  EXPECT_GT(r1.compile_ms, 0.0);
  const Result r2 = run_job(j);
  EXPECT_TRUE(r2.cache_hit);
  EXPECT_EQ(r2.compile_ms, 0.0);
  EXPECT_EQ(r1.count, r2.count);
  printf("compile %.1f ms cold, cached hit\n", r1.compile_ms);
  std::map<std::string, std::string> info;
  for (auto& kv : exprgpu::nvrtc_info()) info[kv.first] = kv.second;
  EXPECT_NE(info["nvrtc_library"].find("NVRTC"), std::string::npos) << info["nvrtc_library"];
  EXPECT_GE(std::stoull(info["nvrtc_modules_compiled"]), 1u);
  EXPECT_GE(std::stoull(info["nvrtc_cache_hits"]), 1u);
  EXPECT_LE(exprgpu::detail::cached_modules(), exprgpu::detail::kCacheModules);
  // A source that does not compile: Internal, NVRTC's log in the detail.
  Job bad = make_job(Kind::Count, true, a, nullptr, "__device__ bool gpu2bs_pair(const Row& a) { return nope; }\n");
  try {
    run_job(bad);
    ADD_FAILURE() << "a broken source compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_NE(e.detail().find("nope"), std::string::npos) << e.detail();
  }
}

// Tile configurations (threads x rows per thread) give the same counts and join pairs.
TEST(ExprGpu, TileConfigurationsAgree) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(2100, 3, 71);
  const Cols b = uniform_cols(900, 3, 72);
  Job j = make_job(Kind::Count, true, a, nullptr, manhattan_source(0.1));
  Job j2 = make_job(Kind::Count, false, a, &b, manhattan_source(0.1));
  const uint64_t want = run_job(j).count, want2 = run_job(j2).count;
  for (auto tr : {std::make_pair(64, 1), std::make_pair(128, 4), std::make_pair(256, 2), std::make_pair(32, 8)}) {
    exprgpu::detail::set_tile_override(tr.first, tr.second);
    EXPECT_EQ(run_job(j).count, want) << tr.first << "x" << tr.second;
    EXPECT_EQ(run_job(j2).count, want2) << tr.first << "x" << tr.second;
  }
  exprgpu::detail::set_tile_override(0, 0);
}

// (g) Cancel during a long kernel: run() throws Interrupted within a second of the interrupt.
TEST(ExprGpu, CancelDuringLongKernel) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(400000, 1, 81);
  Job j = make_job(Kind::Count, true, a, nullptr, slow_source(64));
  struct Late : Ctl {
    Clock::time_point t0 = Clock::now(), fired{};
    bool interrupt_pending() override {
      if (Clock::now() - t0 < std::chrono::milliseconds(200)) return false;
      if (fired == Clock::time_point{}) fired = Clock::now();
      return true;
    }
  } ctl;
  // Compile first, so the 200 ms run inside the kernel.
  {
    Job small = j;
    Cols s = uniform_cols(10, 1, 1);
    small.a = s.side();
    run_job(small);
  }
  ctl.t0 = Clock::now();
  try {
    exprgpu::run(j, nullptr, ctl);
    ADD_FAILURE() << "the long kernel finished before the cancel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
    const double lag = std::chrono::duration<double>(Clock::now() - ctl.fired).count();
    EXPECT_LT(lag, 1.0);
    printf("cancel landed %.1f ms after the interrupt\n", lag * 1e3);
  }
  Cols s = uniform_cols(300, 1, 2);
  Job after = make_job(Kind::Count, true, s, nullptr, null_less_source());
  EXPECT_EQ(run_job(after).count, cpu_count(s, nullptr, [](const Cols& x, int64_t i, const Cols& y, int64_t k) {
    return float(x.at(0, i)) < float(y.at(0, k));
  }));
}

// (h) A device memory limit too small for the inputs: OutOfMemory; the engine works after.
TEST(ExprGpu, MemoryLimitTooSmall) {
  REQUIRE_NVRTC();
  const Cols a = uniform_cols(20000, 3, 91);
  Job j = make_job(Kind::Count, true, a, nullptr, manhattan_source(0.01));
  Ctl ctl;
  ctl.device_memory_limit = 64 << 10;
  try {
    exprgpu::run(j, nullptr, ctl);
    ADD_FAILURE() << "no OutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  }
  const Result ok = run_job(j);
  EXPECT_EQ(ok.error, 0);
  EXPECT_EQ(ok.count, cpu_count(a, nullptr, [](const Cols& x, int64_t i, const Cols& y, int64_t k) {
    return manhattan_cpu<float>(x, i, y, k, 0.01f);
  }));
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u) << "device memory left allocated";
}


// Runs the job with the threshold table allowed (`on`) or turned off.
Result run_table(const Job& j, bool on) {
  exprgpu::detail::set_histogram_table(on);
  Result r = run_job(j);
  exprgpu::detail::set_histogram_table(true);
  return r;
}

// The CPU engine's histogram of expression e (cpu_pair_expr) over a (self when b is null).
std::vector<uint64_t> cpu_hist(const PairExpr& e, Precision prec, const Cols& a, const Cols* b,
                               double lo, double hi, int nb) {
  PairExprProblem p;
  p.kind = PairExprKind::Histogram;
  p.self = b == nullptr;
  p.prec = prec;
  auto side = [](const Cols& c) {
    ExprSide s;
    s.data = c.data.data();
    s.nulls = c.nulls.empty() ? nullptr : c.nulls.data();
    s.n = c.n;
    s.ncols = c.ncols;
    return s;
  };
  p.a = side(a);
  if (b) p.b = side(*b);
  p.expr = &e;
  p.lo = lo;
  p.hi = hi;
  p.nbuckets = nb;
  Ctl ctl;
  return cpu_pair_expr(p, nullptr, ctl).hist;
}

// Sum of |x[k] - y[k]|: pairs counted in another bucket, twice.
uint64_t moves(const std::vector<uint64_t>& x, const std::vector<uint64_t>& y) {
  uint64_t m = 0;
  for (size_t k = 0; k < x.size() && k < y.size(); ++k) m += x[k] > y[k] ? x[k] - y[k] : y[k] - x[k];
  return m;
}

// (e) The threshold table: the generated angular histogram acos(least(1, greatest(-1, dot)))
// in float32 buckets the dot product against thresholds derived on the device from the
// module's own acos and bucket function. Its histogram equals, bucket for bucket, the one of
// the same module source evaluating acos and width_bucket per pair (table off); the CPU engine
// (glibc's acos) and the float64 reference differ only by pairs near an edge (within 8 ulp of
// the angle, float32; the float64 GPU run has no table and is compared the same way).
TEST(ExprGpu, AngularTableMatchesDirectCpuAndReference) {
  REQUIRE_NVRTC();
  const PairExpr e = angle_expr();
  for (int nb : {1000, 100})
    for (int64_t n : {1000, 2500}) {
      const Cols a = unit_vectors(n, 1700 + n);
      const Cols b = unit_vectors(n / 2 + 111, 1800 + n);
      for (const Cols* bp : {(const Cols*)nullptr, &b})
        for (bool f32 : {true, false}) {
          Job j = make_job(Kind::Histogram, f32, a, bp, angle_generated(f32));
          j.lo = 0;
          j.hi = M_PI;
          j.nbuckets = nb;
          const Result t = run_table(j, true);
          ASSERT_EQ(t.error, 0);
          EXPECT_EQ(t.table, f32);
          if (f32) {
            EXPECT_TRUE(t.table_dec);
            // The angular thresholds fit the folded map (one per cell): no climb; the kernel
            // with the climb gives the same counts.
            EXPECT_FALSE(t.table_climb);
            exprgpu::detail::set_table_climb(true);
            const Result tc = run_table(j, true);
            exprgpu::detail::set_table_climb(false);
            ASSERT_EQ(tc.error, 0);
            EXPECT_TRUE(tc.table_climb);
            EXPECT_EQ(t.hist, tc.hist) << "one threshold per cell vs climb: " << first_diff(t.hist, tc.hist);
            const Result d = run_table(j, false);
            ASSERT_EQ(d.error, 0);
            EXPECT_FALSE(d.table);
            EXPECT_EQ(t.hist, d.hist) << "table vs direct, n=" << n << " nb=" << nb << (bp ? " a x b" : " self")
                                      << ": " << first_diff(t.hist, d.hist);
            // Other tile configurations and private copies (bins interleaved): the same counts.
            // The default (0, 0: kExprTableThreads x kExprTableRegRows, 1024 x 2) also by
            // name, 1024 x 1, 128 x 2 and 512 x 1; n = 2500 and the a x b runs have full tiles
            // at 1024 x 1.
            for (const std::pair<int, int>& tr :
                 {std::make_pair(0, 0), std::make_pair(cuda_tuning::kExprTableThreads, cuda_tuning::kExprTableRegRows),
                  std::make_pair(1024, 1), std::make_pair(128, 2), std::make_pair(512, 1)})
              for (int copies : {1, 8, 16, 32}) {
                exprgpu::detail::set_tile_override(tr.first, tr.second);
                forced().sdh_copies = copies;
                const Result c = run_table(j, true);
                forced().sdh_copies = 0;
                exprgpu::detail::set_tile_override(0, 0);
                ASSERT_EQ(c.error, 0);
                EXPECT_TRUE(c.table);
                EXPECT_EQ(c.hist, d.hist) << "tile " << tr.first << "x" << tr.second << ", copies " << copies
                                          << ", n=" << n << " nb=" << nb << ": " << first_diff(c.hist, d.hist);
              }
          }
          // The same-precision host values (the dot product is IEEE-exact on both sides) and
          // the float64 reference angles.
          std::vector<uint64_t> want(size_t(nb), 0), ref(size_t(nb), 0);
          uint64_t near = 0, near64 = 0;
          const Cols& B = bp ? *bp : a;
          for (int64_t i = 0; i < a.n; ++i)
            for (int64_t k = bp ? 0 : i + 1; k < B.n; ++k) {
              double v, ulp;
              if (f32) {
                v = double(float(std::acos(angle_dot<float>(a, i, B, k))));
                ulp = std::ldexp(1.0, std::ilogb(float(v)) - 23);
              } else {
                v = std::acos(angle_dot<double>(a, i, B, k));
                ulp = std::ldexp(1.0, std::ilogb(v) - 52);
              }
              const int bk = pg_bucket(v, 0, M_PI, nb);
              if (bk >= 0 && bk < nb) ++want[size_t(bk)];
              if (pg_bucket(v - 8 * ulp, 0, M_PI, nb) != pg_bucket(v + 8 * ulp, 0, M_PI, nb)) ++near;
              // float64 reference: the exact-ish angle; the float32 result may differ from it by
              // the rounding of the inputs and the dot product (|dd| <= 6 u) through acos.
              const double d64 = angle_dot<double>(a, i, B, k);
              const double r = std::acos(d64);
              const int rk = pg_bucket(r, 0, M_PI, nb);
              if (rk >= 0 && rk < nb) ++ref[size_t(rk)];
              const double u = f32 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
              const double s = std::sqrt(std::max(1e-300, 1 - d64 * d64));
              const double tol = std::min(8 * u / s, std::sqrt(16 * u)) + 8 * ulp;
              if (pg_bucket(r - tol, 0, M_PI, nb) != pg_bucket(r + tol, 0, M_PI, nb)) ++near64;
            }
          const uint64_t mv = moves(t.hist, want), mr = moves(t.hist, ref);
          EXPECT_LE(mv, 2 * near) << (f32 ? "f32" : "f64") << " n=" << n << ": " << first_diff(t.hist, want);
          EXPECT_LE(mr, 2 * near64) << (f32 ? "f32" : "f64") << " n=" << n << " vs float64 reference";
          // The CPU engine on the same expression.
          const std::vector<uint64_t> c =
              cpu_hist(e, f32 ? Precision::Float32 : Precision::Float64, a, bp, 0, M_PI, nb);
          const uint64_t mc = moves(t.hist, c);
          EXPECT_LE(mc, 2 * near) << "CPU engine vs GPU " << (f32 ? "f32" : "f64") << " n=" << n;
          printf("angular table %s n=%lld nb=%d %s: table %d, moves vs host %llu, vs CPU engine %llu, vs "
                 "float64 %llu (near an edge: %llu, %llu)\n",
                 f32 ? "f32" : "f64", (long long)n, nb, bp ? "a x b" : "self", int(t.table),
                 (unsigned long long)mv, (unsigned long long)mc, (unsigned long long)mr,
                 (unsigned long long)near, (unsigned long long)near64);
        }
    }
}

// One-column value F(a.c0 * b.c0) with b = {1}: g is a.c0 rounded to float32.
PairExpr unary_of_product(const std::function<int(PairExpr&, int)>& f) {
  PairExpr e;
  e.ncols[0] = e.ncols[1] = 1;
  const int g = ir_op(e, ExprOp::Mul, {ir_col(e, 0, 0), ir_col(e, 1, 0)});
  e.value = f(e, g);
  e.validate();
  return e;
}

// (f) Values of g at, just below and just above every threshold of the table (read back from
// the device), at +-0, +-1, +-inf, NaN, beyond the clamp, subnormal and uniform: the table's
// histogram equals the direct one (acos and width_bucket per value) group by group, for the
// clamped acos (non-increasing), degrees of it, and sqrt(greatest(0, g)) over [0, 2)
// (non-decreasing; IEEE-exact, so the CPU engine's histogram is the same);
// also with a value of 1e30 (no G2_SAFE: the checked g) and with NULLs (the direct fallback).
TEST(ExprGpu, TableThresholdLatticeExact) {
  REQUIRE_NVRTC();
  struct Form {
    const char* name;
    std::function<int(PairExpr&, int)> f;
    double lo, hi;
    int nb;
    bool dec;
  };
  auto clamp = [](PairExpr& e, int g) {
    return ir_op(e, ExprOp::Least, {ir_const(e, 1), ir_op(e, ExprOp::Greatest, {ir_const(e, -1), g})});
  };
  const Form forms[] = {
      {"acos clamp", [&](PairExpr& e, int g) { return ir_op(e, ExprOp::Acos, {clamp(e, g)}); }, 0, M_PI, 1000, true},
      {"degrees acos clamp", [&](PairExpr& e, int g) { return ir_op(e, ExprOp::Degrees, {ir_op(e, ExprOp::Acos, {clamp(e, g)})}); },
       0, 180, 360, true},
      {"sqrt greatest", [&](PairExpr& e, int g) { return ir_op(e, ExprOp::Sqrt, {ir_op(e, ExprOp::Greatest, {ir_const(e, 0), g})}); },
       0, 2, 999, false},
      {"acos clamp, 7 buckets", [&](PairExpr& e, int g) { return ir_op(e, ExprOp::Acos, {clamp(e, g)}); }, 0.5, 2.5, 7, true},
      // The first threshold a subnormal (about 1e-42) whose bits lie below the entry's mask:
      // g = -0 (a product with -0) is below it although +0 compares equal to -0.
      {"sqrt greatest, tiny lo", [&](PairExpr& e, int g) { return ir_op(e, ExprOp::Sqrt, {ir_op(e, ExprOp::Greatest, {ir_const(e, 0), g})}); },
       1e-21, 2, 999, false},
  };
  Cols one;
  one.ncols = 1;
  one.n = 1;
  one.data = {1.0};
  for (const Form& fm : forms) {
    const PairExpr e = unary_of_product(fm.f);
    const std::string src = generate_pair_source(e, PairExprKind::Histogram, Precision::Float32);
    ASSERT_NE(src.find("#define G2_INNER 1"), std::string::npos) << fm.name;
    Cols probe;
    probe.ncols = 1;
    probe.n = 2;
    probe.data = {0.25, -0.5};
    Job pj = make_job(Kind::Histogram, true, probe, &one, src);
    pj.lo = fm.lo;
    pj.hi = fm.hi;
    pj.nbuckets = fm.nb;
    const Result pr = run_table(pj, true);
    ASSERT_TRUE(pr.table) << fm.name;
    EXPECT_EQ(pr.table_dec, fm.dec) << fm.name;
    ASSERT_EQ(pr.thresholds.size(), size_t(fm.nb) + 3);
    // Groups: at each threshold, 1..3 floats below, 1..3 above; then the specials.
    for (int group = 0; group < 4; ++group) {
      std::vector<double> v;
      for (size_t w = 1; w + 1 < pr.thresholds.size(); ++w) {
        float t = pr.thresholds[w];
        if (t != t || std::isinf(t)) continue;
        if (group == 0) v.push_back(t);
        for (int s = 1; s <= 3 && group > 0 && group < 3; ++s) {
          t = std::nextafter(t, group == 1 ? -INFINITY : INFINITY);
          v.push_back(t);
        }
      }
      if (group == 3) {
        for (double x : std::initializer_list<double>{0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, 1.5, -1.5, 1e-40, -1e-40, 3.0, 1e-20})
          v.push_back(x);
        // Far outside the thresholds' range on both sides (every power of two and 1.5 times it).
        for (int p = -8; p < 64; ++p)
          for (double m : {1.0, 1.5, -1.0, -1.5}) v.push_back(std::ldexp(m, p));
        if (fm.dec) v.push_back(NAN);  // acos(least(1, greatest(-1, NaN))) = acos(1)
        std::mt19937_64 rng(11);
        std::uniform_real_distribution<double> u(-1.1, 1.1);
        for (int k = 0; k < 20000; ++k) v.push_back(u(rng));
      }
      for (int variant = 0; variant < 3; ++variant) {
        Cols a;
        a.ncols = 1;
        a.n = int64_t(v.size());
        a.data = v;
        if (variant == 1) a.data.push_back(1e30), ++a.n;  // no G2_SAFE
        if (variant == 2) {
          a.nulls.assign(a.data.size(), 0);
          for (size_t k = 0; k < a.nulls.size(); k += 7) a.nulls[k] = 1;
        }
        Job j = make_job(Kind::Histogram, true, a, &one, src);
        j.lo = fm.lo;
        j.hi = fm.hi;
        j.nbuckets = fm.nb;
        for (int copies : {0, -1}) {
          forced().sdh_copies = copies;
          const Result t = run_table(j, true), d = run_table(j, false);
          ASSERT_EQ(t.error, 0) << fm.name;
          ASSERT_EQ(d.error, 0) << fm.name;
          EXPECT_TRUE(t.table) << fm.name;
          EXPECT_FALSE(d.table);
          EXPECT_EQ(t.hist, d.hist) << fm.name << " group " << group << " variant " << variant << " copies "
                                    << copies << ": " << first_diff(t.hist, d.hist);
          EXPECT_EQ(t.count, d.count);
        }
        forced().sdh_copies = 0;
      }
      // sqrt(greatest(0, g)) is IEEE-exact: the CPU engine gives the same buckets.
      if (!fm.dec) {
        Cols a;
        a.ncols = 1;
        a.n = int64_t(v.size());
        a.data = v;
        Job j = make_job(Kind::Histogram, true, a, &one, src);
        j.lo = fm.lo;
        j.hi = fm.hi;
        j.nbuckets = fm.nb;
        EXPECT_EQ(run_table(j, true).hist, cpu_hist(e, Precision::Float32, a, &one, fm.lo, fm.hi, fm.nb))
            << fm.name << ": CPU engine, group " << group;
      }
    }
  }
}

// (g) Where F is not monotone (cos), or raises for some float (acos without the clamp), the
// device check fails and the call runs without the table (and raises as PostgreSQL does for a
// pair whose acos argument is out of range).
TEST(ExprGpu, TableCheckFallsBack) {
  REQUIRE_NVRTC();
  Cols one;
  one.ncols = 1;
  one.n = 1;
  one.data = {1.0};
  const Cols a = uniform_cols(3000, 1, 77, -1, 1);
  for (int form = 0; form < 2; ++form) {
    const PairExpr e = unary_of_product([&](PairExpr& x, int g) {
      return ir_op(x, form == 0 ? ExprOp::Cos : ExprOp::Acos, {g});
    });
    const std::string src = generate_pair_source(e, PairExprKind::Histogram, Precision::Float32);
    ASSERT_NE(src.find("#define G2_INNER 1"), std::string::npos);
    Job j = make_job(Kind::Histogram, true, a, &one, src);
    j.lo = 0;
    j.hi = M_PI;
    j.nbuckets = 100;
    const Result t = run_table(j, true), d = run_table(j, false);
    ASSERT_EQ(t.error, 0);
    EXPECT_FALSE(t.table) << "form " << form;
    EXPECT_EQ(t.hist, d.hist);
    uint64_t sum = 0;
    for (uint64_t h : t.hist) sum += h;
    EXPECT_EQ(sum, 3000u);
    if (form == 1) {
      Cols out = a;
      out.data[17] = 1.5;
      Job jo = make_job(Kind::Histogram, true, out, &one, src);
      jo.lo = 0;
      jo.hi = M_PI;
      jo.nbuckets = 100;
      EXPECT_EQ(run_table(jo, true).error, int(ExprFault::InputOutOfRange));
    }
  }
}

// (h) The kernel without the climb: a NaN g whose F raises (sqrt(greatest(0, NaN)) is NaN,
// width_bucket raises) raises through the fault bins as the direct kernel and the kernel with
// the climb do; NULL g are not counted. Thresholds that no folded map separates (atan over
// [-pi/2, pi/2) in 1000 buckets: dense near 0, the map's coarse middle) take the kernel with
// the climb, with the direct kernel's counts; the CPU engine agrees where no pair is near an
// edge of the float32 atan.
TEST(ExprGpu, TableFaultBinsAndClimbFallback) {
  REQUIRE_NVRTC();
  Cols one;
  one.ncols = 1;
  one.n = 1;
  one.data = {1.0};
  {
    const PairExpr e = unary_of_product([](PairExpr& x, int g) {
      return ir_op(x, ExprOp::Sqrt, {ir_op(x, ExprOp::Greatest, {ir_const(x, 0), g})});
    });
    const std::string src = generate_pair_source(e, PairExprKind::Histogram, Precision::Float32);
    Cols a = uniform_cols(5000, 1, 91, -1, 2);
    for (int variant = 0; variant < 3; ++variant) {
      Cols v = a;
      if (variant == 1) v.data[1234] = NAN;
      if (variant == 2) {
        v.nulls.assign(v.data.size(), 0);
        for (size_t k = 0; k < v.nulls.size(); k += 5) v.nulls[k] = 1;
      }
      Job j = make_job(Kind::Histogram, true, v, &one, src);
      j.lo = 0;
      j.hi = 2;
      j.nbuckets = 999;
      const Result t = run_table(j, true), d = run_table(j, false);
      exprgpu::detail::set_table_climb(true);
      const Result c = run_table(j, true);
      exprgpu::detail::set_table_climb(false);
      EXPECT_TRUE(t.table);
      EXPECT_FALSE(t.table_climb);
      EXPECT_TRUE(c.table_climb);
      EXPECT_EQ(t.error, d.error) << "variant " << variant;
      EXPECT_EQ(c.error, d.error) << "variant " << variant;
      if (variant == 1) {
        EXPECT_EQ(t.error, int(exprgpu::kHistogramNaN));
        continue;
      }
      ASSERT_EQ(t.error, 0);
      EXPECT_EQ(t.hist, d.hist) << "variant " << variant << ": " << first_diff(t.hist, d.hist);
      EXPECT_EQ(c.hist, d.hist) << "variant " << variant;
      if (variant == 0) {
        EXPECT_EQ(t.hist, cpu_hist(e, Precision::Float32, v, &one, 0, 2, 999));
      }
    }
  }
  {
    const PairExpr e = unary_of_product([](PairExpr& x, int g) { return ir_op(x, ExprOp::Atan, {g}); });
    const std::string src = generate_pair_source(e, PairExprKind::Histogram, Precision::Float32);
    const Cols a = uniform_cols(20000, 1, 93, -400, 400);
    Job j = make_job(Kind::Histogram, true, a, &one, src);
    j.lo = -M_PI / 2;
    j.hi = M_PI / 2;
    j.nbuckets = 1000;
    const Result t = run_table(j, true), d = run_table(j, false);
    ASSERT_EQ(t.error, 0);
    ASSERT_EQ(d.error, 0);
    EXPECT_TRUE(t.table);
    EXPECT_TRUE(t.table_climb);
    EXPECT_EQ(t.hist, d.hist) << first_diff(t.hist, d.hist);
    const std::vector<uint64_t> c = cpu_hist(e, Precision::Float32, a, &one, -M_PI / 2, M_PI / 2, 1000);
    uint64_t near = 0;
    for (int64_t i = 0; i < a.n; ++i) {
      const float g = float(a.data[size_t(i)]);
      const double v = double(std::atan(g)), ulp = std::ldexp(1.0, std::ilogb(float(v)) - 23);
      if (pg_bucket(v - 8 * ulp, -M_PI / 2, M_PI / 2, 1000) != pg_bucket(v + 8 * ulp, -M_PI / 2, M_PI / 2, 1000)) ++near;
    }
    EXPECT_LE(moves(t.hist, c), 2 * near) << "CPU engine vs GPU";
  }
}

}  // namespace
