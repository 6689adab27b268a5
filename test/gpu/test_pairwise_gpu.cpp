// gpu_pairwise on the CUDA engine: bit for bit against the CPU engine (same pairs, same lists,
// same float64 values), for every metric, d = 1, 3, 768, 4096, self and two-relation, kNN with
// both list capacities, column splits, ties and duplicates, k beyond the other side and beyond
// the device capacity, threshold output with buffer overflow; the certified TF32 path (exact and
// fast precision) returns the SIMT kernel's lists, with rows recomputed and with the cost guard,
// and so does its FP16 variant (scaled rows), with the vectors uploaded by several threads, in
// chunks with the host certification overlapped or not;
// values close to a float64 reference. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/pairwise.h"
#include "kernels/pairwise/pairwise_api.h"

using namespace gpu2bs;

namespace {

std::string g_why_pw;

Engine* gpu_pw() {
  static Engine* e = cuda_engine(&g_why_pw);
  return e;
}

Engine* cpu_pw() {
  static std::unique_ptr<Engine> e = make_cpu_engine();
  return e.get();
}

#define REQUIRE_GPU_PW()                                               \
  do {                                                                 \
    if (!gpu_pw()) GTEST_SKIP() << "no usable GPU: " << g_why_pw;      \
  } while (0)

class PwCtl : public Control {
 public:
  PwCtl() { threads = int(std::max(1u, std::thread::hardware_concurrency())); }
};

struct PwSink : PairSink {
  std::vector<PairRecord> rec;
  void consume(const PairRecord* p, size_t n) override { rec.insert(rec.end(), p, p + n); }
};

std::vector<double> normal(size_t n, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  std::vector<double> v(n * size_t(d));
  for (auto& e : v) e = g(rng);
  return v;
}

std::vector<double> lattice(size_t n, int d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> g(-2, 2);
  std::vector<double> v(n * size_t(d));
  for (auto& e : v) e = g(rng);
  return v;
}

struct Case {
  PairwiseMetric m;
  VectorSet a, b;
  bool self = true;
};

void setup(Case& c, const std::string& metric, const std::vector<double>& a, size_t na,
           const std::vector<double>* b, size_t nb, int d) {
  c.m = parse_pairwise_metric(metric);
  prepare_vectors(c.m, a.data(), na, d, &c.a);
  c.self = b == nullptr;
  if (b) prepare_vectors(c.m, b->data(), nb, d, &c.b);
}

std::vector<PairRecord> run(Engine* e, const Case& c, int k, double thr,
                            PairwisePrecision prec = PairwisePrecision::Exact) {
  PairwiseProblem p = make_pairwise(c.m, c.a, c.self ? nullptr : &c.b, k, k > 0, thr, k <= 0,
                                    prec, 0);
  PwCtl ctl;
  PwSink s;
  e->pairwise(p, s, ctl);
  return s.rec;
}

void sort_pairs(std::vector<PairRecord>& v) {
  std::sort(v.begin(), v.end(), [](const PairRecord& x, const PairRecord& y) {
    return x.i != y.i ? x.i < y.i : x.j < y.j;
  });
}

// Same records bit for bit (in order for kNN lists; as sets for threshold output).
void expect_identical(std::vector<PairRecord> x, std::vector<PairRecord> y, bool as_set) {
  if (as_set) {
    sort_pairs(x);
    sort_pairs(y);
  }
  ASSERT_EQ(x.size(), y.size());
  size_t bad = 0;
  for (size_t t = 0; t < x.size(); ++t)
    if (x[t].i != y[t].i || x[t].j != y[t].j || std::memcmp(&x[t].dist, &y[t].dist, 8) != 0) {
      if (bad++ < 5)
        ADD_FAILURE() << "record " << t << ": (" << x[t].i << ", " << x[t].j << ", " << x[t].dist
                      << ") vs (" << y[t].i << ", " << y[t].j << ", " << y[t].dist << ")";
    }
  EXPECT_EQ(bad, 0u);
}

const char* kAll[] = {"l1", "l2", "sqeuclidean", "cosine", "dot", "lp:3"};

}  // namespace

TEST(PairwiseGpu, KnnBitIdenticalToCpu) {
  REQUIRE_GPU_PW();
  for (int d : {1, 3, 768, 4096}) {
    const size_t n = d >= 768 ? 150 : 700;
    auto a = normal(n, d, 1 + d), b = normal(n / 2 + 37, d, 2 + d);
    for (const char* metric : kAll) {
      for (bool self : {true, false}) {
        for (int k : {1, 7, 40}) {
          SCOPED_TRACE(std::string(metric) + " d=" + std::to_string(d) + (self ? " self" : " two") +
                       " k=" + std::to_string(k));
          Case c;
          setup(c, metric, a, n, self ? nullptr : &b, n / 2 + 37, d);
          expect_identical(run(cpu_pw(), c, k, 0), run(gpu_pw(), c, k, 0), false);
        }
      }
    }
  }
}

TEST(PairwiseGpu, ColumnSplitsTiesAndBigK) {
  REQUIRE_GPU_PW();
  // Few rows, many columns: the column range is split over blocks and merged on the host.
  auto a = normal(5, 16, 3), b = lattice(20000, 16, 4);
  for (const char* metric : {"l2", "dot", "l1"}) {
    Case c;
    setup(c, metric, a, 5, &b, 20000, 16);
    expect_identical(run(cpu_pw(), c, 10, 0), run(gpu_pw(), c, 10, 0), false);
    expect_identical(run(cpu_pw(), c, 200, 0), run(gpu_pw(), c, 200, 0), false);
  }
  // All vectors equal: every key ties, lists by index.
  std::vector<double> same(300 * 8, 0.5);
  Case c;
  setup(c, "l2", same, 300, nullptr, 0, 8);
  expect_identical(run(cpu_pw(), c, 5, 0), run(gpu_pw(), c, 5, 0), false);
  // k beyond the other side, and beyond the device list capacity (CPU answers).
  auto q = normal(70, 3, 5);
  Case c2;
  setup(c2, "l1", q, 70, nullptr, 0, 3);
  expect_identical(run(cpu_pw(), c2, 1000, 0), run(gpu_pw(), c2, 1000, 0), false);
  auto big = normal(400, 3, 6);
  Case c3;
  setup(c3, "l2", big, 400, nullptr, 0, 3);
  expect_identical(run(cpu_pw(), c3, 300, 0), run(gpu_pw(), c3, 300, 0), false);
  EXPECT_TRUE(cuda::pairwise_last_run().cpu);
}

TEST(PairwiseGpu, ThresholdBitIdenticalToCpu) {
  REQUIRE_GPU_PW();
  for (int d : {1, 3, 768}) {
    const size_t n = d == 768 ? 200 : 900;
    auto a = lattice(n, d, 7 + d), b = lattice(n / 3, d, 8 + d);
    for (const char* metric : kAll) {
      for (bool self : {true, false}) {
        const std::string m = metric;
        const double thr = m == "dot" ? 0.0 : m == "cosine" ? 0.5 : d == 1 ? 1.0 : 2.0 * d / 3;
        SCOPED_TRACE(m + " d=" + std::to_string(d) + (self ? " self" : " two"));
        Case c;
        setup(c, metric, a, n, self ? nullptr : &b, n / 3, d);
        expect_identical(run(cpu_pw(), c, 0, thr), run(gpu_pw(), c, 0, thr), true);
      }
    }
  }
}

TEST(PairwiseGpu, ThresholdOverflowReruns) {
  REQUIRE_GPU_PW();
  // 1200 * 1199 / 2 = 719,400 pairs: more than the initial direct output buffer holds when the
  // memory limit is small, so chunks run again.
  auto a = normal(1200, 4, 9);
  Case c;
  setup(c, "l2", a, 1200, nullptr, 0, 4);
  PairwiseProblem p = make_pairwise(c.m, c.a, nullptr, 0, false, INFINITY, true,
                                    PairwisePrecision::Exact, 0);
  PwCtl ctl;
  ctl.device_memory_limit = size_t(8) << 20;
  PwSink g, s;
  gpu_pw()->pairwise(p, g, ctl);
  PwCtl ctl2;
  cpu_pw()->pairwise(p, s, ctl2);
  EXPECT_EQ(g.rec.size(), 719400u);
  expect_identical(s.rec, g.rec, true);
}

TEST(PairwiseGpu, FastEqualsExact) {
  REQUIRE_GPU_PW();
  printf("cublas: %s\n", cuda::pairwise_blas_status().c_str());
  for (int d : {3, 128, 768}) {
    const size_t n = d == 768 ? 2000 : 3000;
    auto a = normal(n, d, 11 + d), b = normal(n / 2, d, 12 + d);
    for (const char* metric : {"l2", "sqeuclidean", "cosine", "dot"}) {
      for (bool self : {true, false}) {
        SCOPED_TRACE(std::string(metric) + " d=" + std::to_string(d) + (self ? " self" : " two"));
        Case c;
        setup(c, metric, a, n, self ? nullptr : &b, n / 2, d);
        auto exact = run(gpu_pw(), c, 10, 0);
        auto fast = run(gpu_pw(), c, 10, 0, PairwisePrecision::Fast);
        printf("  %-12s d=%-4d %s: fast path %s, %zu of %zu rows recomputed exactly\n", metric, d,
               self ? "self" : "two ", cuda::pairwise_last_run().fast ? "on" : "off",
               cuda::pairwise_last_run().recomputed, n);
        expect_identical(exact, fast, false);
      }
    }
  }
}

TEST(PairwiseGpu, ValuesNearFloat64) {
  REQUIRE_GPU_PW();
  const int d = 768;
  auto a = normal(100, d, 21);
  for (const char* metric : kAll) {
    Case c;
    setup(c, metric, a, 100, nullptr, 0, d);
    const auto& m = c.m;
    for (auto& r : run(gpu_pw(), c, 3, 0)) {
      const double* u = &a[size_t(r.i) * d];
      const double* v = &a[size_t(r.j) * d];
      double s = 0, nu = 0, nv = 0;
      for (int k = 0; k < d; ++k) {
        const double t = u[k] - v[k];
        switch (m.kind) {
          case PairMetric::L1: s += std::fabs(t); break;
          case PairMetric::Lp: s += std::pow(std::fabs(t), m.p); break;
          case PairMetric::Dot:
          case PairMetric::Cosine: s += u[k] * v[k]; nu += u[k] * u[k]; nv += v[k] * v[k]; break;
          default: s += t * t;
        }
      }
      double want = s;
      if (m.kind == PairMetric::L2) want = std::sqrt(s);
      if (m.kind == PairMetric::Lp) want = std::pow(s, 1 / m.p);
      if (m.kind == PairMetric::Cosine) want = 1 - s / std::sqrt(nu * nv);
      EXPECT_NEAR(r.dist, want, 1e-4 * (1 + std::fabs(want))) << metric << " " << r.i << " " << r.j;
    }
  }
}

TEST(PairwiseGpu, Cancel) {
  REQUIRE_GPU_PW();
  auto a = normal(30000, 256, 31);
  Case c;
  setup(c, "l1", a, 30000, nullptr, 0, 256);
  PairwiseProblem p = make_pairwise(c.m, c.a, nullptr, 5, true, 0, false, PairwisePrecision::Exact, 0);
  struct Cancel : PwCtl {
    bool interrupt_pending() override { return true; }
  } ctl;
  PwSink s;
  try {
    gpu_pw()->pairwise(p, s, ctl);
    ADD_FAILURE() << "not interrupted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
  }
}

// Restores the pairwise launch parameters when a test changes them.
struct TuningGuard {
  cuda::PairwiseTuning saved = cuda::pairwise_tuning();
  ~TuningGuard() { cuda::pairwise_tuning() = saved; }
};

TEST(PairwiseGpu, WideKernelMatchesTiledKernelAndCpu) {
  REQUIRE_GPU_PW();
  TuningGuard guard;
  // d not a multiple of 4 (scalar loads) or of the slice width, several launches (chunk_rows),
  // few or many column splits (blocks_per_sm), self joins over the upper triangle of tiles or
  // the whole matrix, against the CPU engine and the 64 x 64 kernel.
  for (int d : {5, 13, 40, 771}) {
    const size_t na = d > 100 ? 600 : 1100, nb = d > 100 ? 700 : 2500;
    auto a = normal(na, d, 41 + d), b = lattice(nb, d, 42 + d);
    for (const char* metric : {"l1", "l2", "sqeuclidean", "cosine", "dot"}) {
      for (bool self : {true, false}) {
        SCOPED_TRACE(std::string(metric) + " d=" + std::to_string(d) + (self ? " self" : " two"));
        Case c;
        setup(c, metric, a, na, self ? nullptr : &b, nb, d);
        const auto cpu = run(cpu_pw(), c, 12, 0);
        cuda::pairwise_tuning().wide = false;
        expect_identical(cpu, run(gpu_pw(), c, 12, 0), false);
        cuda::pairwise_tuning().wide = true;
        expect_identical(cpu, run(gpu_pw(), c, 12, 0), false);  // self: upper triangle only
        cuda::pairwise_tuning().symmetric = false;
        for (int bps : {1, 16}) {
          cuda::pairwise_tuning().blocks_per_sm = bps;
          cuda::pairwise_tuning().chunk_rows = 256;
          expect_identical(cpu, run(gpu_pw(), c, 12, 0), false);
        }
        cuda::pairwise_tuning() = guard.saved;
        cuda::pairwise_tuning().sym_blocks_per_launch = 7;  // many launches of the triangle
        expect_identical(cpu, run(gpu_pw(), c, 12, 0), false);
        cuda::pairwise_tuning() = guard.saved;
      }
    }
  }
}

TEST(PairwiseGpu, KnnListsNearFloat64) {
  REQUIRE_GPU_PW();
  // Every listed neighbour's float64 distance is within the float32 chain's error bound of the
  // float64 k-th distance (lists equal a float64 reference except near-ties), both precisions.
  const int d = 768, k = 10;
  const size_t n = 1000;
  auto a = normal(n, d, 51);
  for (const char* metric : {"l2", "l1", "dot"}) {
    const int kind = metric[1] == '2' ? 0 : metric[1] == '1' ? 1 : 2;
    std::vector<double> key(n * n), kth(n), tol(n);
    for (size_t i = 0; i < n; ++i) {
      double bound = 0;
      for (size_t j = 0; j < n; ++j) {
        double s = 0, sa = 0;
        for (int t = 0; t < d; ++t) {
          const double u = a[i * d + t], v = a[j * d + t];
          const double x = kind == 0 ? (u - v) * (u - v) : kind == 1 ? std::fabs(u - v) : -u * v;
          s += x;
          sa += std::fabs(x);
        }
        key[i * n + j] = j == i ? INFINITY : s;
        bound = std::max(bound, sa);
      }
      std::vector<double> srt(key.begin() + long(i * n), key.begin() + long(i * n + n));
      std::nth_element(srt.begin(), srt.begin() + (k - 1), srt.end());
      kth[i] = srt[k - 1];
      tol[i] = 2.0 * (d + 4) * std::ldexp(1.0, -24) * bound;
    }
    Case c;
    setup(c, metric, a, n, nullptr, 0, d);
    for (PairwisePrecision prec : {PairwisePrecision::Exact, PairwisePrecision::Fast}) {
      SCOPED_TRACE(std::string(metric) + (prec == PairwisePrecision::Fast ? " fast" : " exact"));
      auto rec = run(gpu_pw(), c, k, 0, prec);
      ASSERT_EQ(rec.size(), n * size_t(k));
      size_t bad = 0;
      for (size_t t = 0; t < rec.size(); ++t) {
        const PairRecord& r = rec[t];
        EXPECT_EQ(r.i, t / size_t(k));
        if (key[r.i * n + r.j] > kth[r.i] + tol[r.i] && bad++ < 5)
          ADD_FAILURE() << "row " << r.i << " neighbour " << r.j << " float64 key "
                        << key[r.i * n + r.j] << " beyond the k-th " << kth[r.i] << " + " << tol[r.i];
      }
      EXPECT_EQ(bad, 0u);
    }
  }
}

TEST(PairwiseGpu, ExactCertifiedPathEqualsCpu) {
  REQUIRE_GPU_PW();
  TuningGuard guard;
  const bool blas_ok = cuda::pairwise_blas_status().rfind("available", 0) == 0;
  printf("cublas: %s\n", cuda::pairwise_blas_status().c_str());
  // Exact precision through the certified tensor-core candidates (the default GEMM) against the
  // CPU engine and the SIMT kernel, bit for bit: random vectors, every row equal (every key
  // ties), lattice points (many equal keys), and vectors far from the origin and close to each
  // other, where the certificate fails for almost every row (recomputed by the exact kernel, or
  // the SIMT kernel after the cost guard).
  for (int d : {1, 3, 768, 4096}) {
    const size_t n = d >= 4096 ? 150 : d >= 768 ? 300 : 700, nb = n / 2 + 37;
    for (const char* data : {"random", "equal", "lattice", "offset"}) {
      const std::string kind = data;
      auto make = [&](size_t m, uint64_t seed) {
        std::vector<double> v = kind == "lattice" ? lattice(m, d, seed) : normal(m, d, seed);
        if (kind == "equal")
          for (size_t i = 1; i < m; ++i)
            std::copy(v.begin(), v.begin() + d, v.begin() + long(i * size_t(d)));
        if (kind == "offset")
          for (auto& e : v) e = 100.0 + 0.01 * e;
        return v;
      };
      auto a = make(n, 61 + d), b = make(nb, 62 + d);
      for (const char* metric : {"l2", "sqeuclidean", "cosine", "dot"}) {
        for (bool self : {true, false}) {
          for (int k : {1, 10, 40}) {
            SCOPED_TRACE(std::string(metric) + " " + kind + " d=" + std::to_string(d) +
                         (self ? " self" : " two") + " k=" + std::to_string(k));
            Case c;
            setup(c, metric, a, n, self ? nullptr : &b, nb, d);
            const auto cpu = run(cpu_pw(), c, k, 0);
            cuda::pairwise_tuning() = guard.saved;
            expect_identical(cpu, run(gpu_pw(), c, k, 0), false);  // defaults (cost guard on)
            const std::string path = cuda::pairwise_last_path();
            const size_t guarded_redo = cuda::pairwise_last_run().recomputed;
            const bool abandoned = cuda::pairwise_last_run().abandoned;
            // Never give way: every failed row is recomputed by the exact kernel.
            cuda::pairwise_tuning().certified_max_redo_self = 1.0;
            cuda::pairwise_tuning().certified_max_redo_two = 1.0;
            expect_identical(cpu, run(gpu_pw(), c, k, 0), false);
            const size_t redo = cuda::pairwise_last_run().recomputed;
            if (blas_ok) {
              EXPECT_TRUE(cuda::pairwise_last_run().fast);
              if (kind == "offset") {
                EXPECT_GT(redo, n / 2);
                EXPECT_TRUE(abandoned) << path;
                EXPECT_GT(guarded_redo, 0u);
              }
            }
            // Give way at once: the SIMT kernel answers after the first chunk.
            cuda::pairwise_tuning().certified_max_redo_self = 0.0;
            cuda::pairwise_tuning().certified_max_redo_two = 0.0;
            expect_identical(cpu, run(gpu_pw(), c, k, 0), false);
            if (blas_ok && kind == "offset") {
              EXPECT_TRUE(cuda::pairwise_last_run().abandoned);
            }
            // The SIMT kernel alone.
            cuda::pairwise_tuning().certified_exact = false;
            expect_identical(cpu, run(gpu_pw(), c, k, 0), false);
            EXPECT_FALSE(cuda::pairwise_last_run().fast);
            if (k == 10 && (!self || d == 768))
              printf("  %-11s %-10s d=%-4d %s k=%d: %zu of %zu rows recomputed; default: %s\n",
                     metric, data, d, self ? "self" : "two ", k, redo, n, path.c_str());
          }
        }
      }
    }
  }
  cuda::pairwise_tuning() = guard.saved;
}

TEST(PairwiseGpu, Fp16CandidatesEqualCpu) {
  REQUIRE_GPU_PW();
  TuningGuard guard;
  const std::string blas = cuda::pairwise_blas_status();
  const bool blas_ok = blas.rfind("available", 0) == 0;
  const bool fp16_ok = blas_ok && blas.find("FP16") != std::string::npos;
  printf("cublas: %s\n", blas.c_str());
  // The certified candidates from the folded FP16 GEMM (one scale for all vectors, the norms as
  // extra columns), from the FP16 GEMM (rows scaled by powers of two) and from the TF32 GEMM
  // against the CPU engine, bit for bit, both precisions: random vectors; far from the origin
  // and close to each other ("offset": the certificate fails, rows are recomputed); rows scaled
  // by 2^-40 to 2^40 ("scaled": the per-row exponents); elements near 1e19 (squared norms
  // overflow float4: no row can be certified) and near 1e-25 (every difference squared
  // underflows: all keys tie). The FP16 pass also copies the vectors through the parallel upload
  // (threshold 0, several slices at d = 768); every pass runs the selection with and without
  // its per-step prefilter (same candidates and worst scores, hence the same rows certified).
  // The folded GEMM gives way to the next one where squared norms overflow ("huge") or
  // underflow ("tiny") or most rows lie far below the largest norm ("scaled"); cosine's
  // normalized vectors fold except the "tiny" ones.
  for (int pass = 0; pass < 3; ++pass) {
    const bool fold = pass == 0, fp16 = pass == 1;
    const char* pass_name = fold ? "fold" : fp16 ? "fp16" : "tf32";
    cuda::pairwise_tuning() = guard.saved;
    cuda::pairwise_tuning().fold_gemm = fold;
    cuda::pairwise_tuning().fp16_gemm = fp16;
    if (fp16) cuda::pairwise_tuning().upload_parallel_bytes = 0;
    for (int d : {1, 3, 768, 4096}) {
      const size_t n = d >= 4096 ? 150 : d >= 768 ? 2000 : 700, nb = n / 2 + 37;
      for (const char* data : {"random", "offset", "scaled", "huge", "tiny"}) {
        const std::string kind = data;
        auto make = [&](size_t m, uint64_t seed) {
          std::vector<double> v = normal(m, d, seed);
          std::mt19937_64 rng(seed + 1);
          std::uniform_int_distribution<int> ex(-40, 40);
          for (size_t i = 0; i < m; ++i) {
            const double f = kind == "scaled" ? std::ldexp(1.0, ex(rng))
                             : kind == "huge" ? 1e19
                             : kind == "tiny" ? 1e-25
                                              : 1.0;
            for (int t = 0; t < d; ++t) {
              double& e = v[i * size_t(d) + size_t(t)];
              e = kind == "offset" ? 100.0 + 0.01 * e : e * f;
            }
          }
          return v;
        };
        auto a = make(n, 81 + d), b = make(nb, 82 + d);
        for (const char* metric : {"l2", "sqeuclidean", "cosine", "dot"}) {
          for (bool self : {true, false}) {
            SCOPED_TRACE(std::string(pass_name) + " " + metric + " " + kind +
                         " d=" + std::to_string(d) + (self ? " self" : " two"));
            Case c;
            setup(c, metric, a, n, self ? nullptr : &b, nb, d);
            const auto cpu = run(cpu_pw(), c, 10, 0);
            expect_identical(cpu, run(gpu_pw(), c, 10, 0), false);  // exact
            expect_identical(cpu, run(gpu_pw(), c, 10, 0, PairwisePrecision::Fast), false);
            const cuda::PairwiseLastRun r = cuda::pairwise_last_run();
            if (blas_ok) {
              EXPECT_TRUE(r.fast);
              // FP16 runs where no row's scaling exponent reaches its clamp: not on the "huge"
              // rows of l2, sqeuclidean and dot (squared norms overflow), which take TF32.
              const bool clamped = kind == "huge" && std::string(metric) != "cosine";
              EXPECT_EQ(r.fp16, fp16 && fp16_ok && !clamped);
              // Cosine's unit vectors fold, save the "tiny" ones (their norms underflow: zero).
              const bool unfolded =
                  kind == "tiny" ||
                  ((kind == "huge" || kind == "scaled") && std::string(metric) != "cosine");
              EXPECT_EQ(r.fold, fold && fp16_ok && !unfolded);
              if (kind == "offset") EXPECT_GT(r.recomputed, n / 2);
              if (kind == "huge" && std::string(metric) != "cosine")
                EXPECT_EQ(r.recomputed, n);
            }
            {
              // The selection with the prefilter toggled (a step no lane can place makes no
              // offer, or every value is offered): the same candidates and worst scores.
              const bool pre = cuda::pairwise_tuning().select_prefilter;
              cuda::pairwise_tuning().select_prefilter = !pre;
              expect_identical(cpu, run(gpu_pw(), c, 10, 0, PairwisePrecision::Fast), false);
              EXPECT_EQ(cuda::pairwise_last_run().recomputed, r.recomputed);
              EXPECT_EQ(cuda::pairwise_last_run().fp16, r.fp16);
              EXPECT_EQ(cuda::pairwise_last_run().fold, r.fold);
              cuda::pairwise_tuning().select_prefilter = pre;
            }
            if (self && (d == 768 || kind == "scaled"))
              printf("  %s %-11s %-7s d=%-4d: fast: %zu of %zu rows recomputed\n",
                     pass_name, metric, data, d, r.recomputed, n);
          }
        }
      }
    }
  }
}

TEST(PairwiseGpu, FastChunksOverlapEqualCpu) {
  REQUIRE_GPU_PW();
  TuningGuard guard;
  const std::string blas = cuda::pairwise_blas_status();
  const bool blas_ok = blas.rfind("available", 0) == 0;
  // The certified path in chunks of 64 rows (the GEMM chunk limited to 64 rows' output), the
  // host certifying chunk c beside chunk c + 1's kernels (each chunk's certified rows streamed
  // to the sink) or one chunk at a time (the lists handed over at the end), and in chunks of
  // 1.2 MB of output with a first and a last chunk of 64 rows, folded FP16, FP16 and TF32:
  // the CPU engine's lists and the same rows recomputed each way; random vectors and "offset"
  // ones (rows recomputed; in exact precision the cost guard gives way to the SIMT kernel while
  // the next chunk is queued, after some certified rows went to the sink). Then an output of more than 2^20 records (the records computed
  // in several blocks on the worker threads).
  const int d = 768;
  const size_t n = 1000, nb = 537;
  for (const char* data : {"random", "offset"}) {
    const bool offset = std::string(data) == "offset";
    auto make = [&](size_t m, uint64_t seed) {
      std::vector<double> v = normal(m, d, seed);
      if (offset)
        for (auto& e : v) e = 100.0 + 0.01 * e;
      return v;
    };
    auto a = make(n, 91), b = make(nb, 92);
    for (const char* metric : {"l2", "dot"}) {
      for (bool self : {true, false}) {
        for (int pass = 0; pass < 3; ++pass) {
          const bool fold = pass == 0, fp16 = pass == 1;
          SCOPED_TRACE(std::string(fold ? "fold " : fp16 ? "fp16 " : "tf32 ") + metric + " " + data +
                       (self ? " self" : " two"));
          Case c;
          setup(c, metric, a, n, self ? nullptr : &b, nb, d);
          const auto cpu = run(cpu_pw(), c, 10, 0);
          size_t redo[3] = {0, 0, 0};
          for (int way = 0; way < 3; ++way) {
            const bool overlap = way != 1;
            cuda::pairwise_tuning() = guard.saved;
            cuda::pairwise_tuning().fold_gemm = fold;
            cuda::pairwise_tuning().fp16_gemm = fp16;
            // 64 rows per chunk, or 1.2 MB of output (256 to 1000 rows) with 64-row edges.
            cuda::pairwise_tuning().fast_chunk_bytes = way == 2 ? size_t(1200000) : size_t(1);
            cuda::pairwise_tuning().fast_edge_rows = way == 2 ? 64 : 0;
            cuda::pairwise_tuning().fast_overlap = overlap;
            cuda::pairwise_tuning().fast_stream_emit = overlap;
            expect_identical(cpu, run(gpu_pw(), c, 10, 0, PairwisePrecision::Fast), false);
            redo[way] = cuda::pairwise_last_run().recomputed;
            if (blas_ok) EXPECT_TRUE(cuda::pairwise_last_run().fast);
            expect_identical(cpu, run(gpu_pw(), c, 10, 0), false);  // exact, cost guard on
            if (blas_ok && offset) EXPECT_TRUE(cuda::pairwise_last_run().abandoned);
          }
          EXPECT_EQ(redo[0], redo[1]);
          EXPECT_EQ(redo[0], redo[2]);
          if (blas_ok && offset) EXPECT_GT(redo[1], n / 2);
        }
      }
    }
  }
  cuda::pairwise_tuning() = guard.saved;
  const size_t m = 20000;
  const int dd = 3, k = 64;
  Case c;
  setup(c, "l2", normal(m, dd, 93), m, nullptr, 0, dd);
  const auto cpu = run(cpu_pw(), c, k, 0);
  ASSERT_EQ(cpu.size(), m * size_t(k));
  expect_identical(cpu, run(gpu_pw(), c, k, 0), false);
  expect_identical(cpu, run(gpu_pw(), c, k, 0, PairwisePrecision::Fast), false);
  if (blas_ok) EXPECT_TRUE(cuda::pairwise_last_run().fast);
}

TEST(PairwiseGpu, FoldGivesWayUnderMemoryLimit) {
  REQUIRE_GPU_PW();
  TuningGuard guard;
  const bool blas_ok = cuda::pairwise_blas_status().rfind("available", 0) == 0;
  // Self kNN l2, n = 1000, d = 768: the vectors take 3 MB of device memory, the folded operands
  // 3.1 MB more, a 64-row chunk of TF32 output 256 kB. Under a 5 MiB limit (about 2.1 MB left
  // after the vectors) the folded GEMM gives way to TF32 in chunks of 128 rows; under 32 MiB it
  // runs. Both precisions: the CPU engine's lists in order, bit for bit.
  const size_t n = 1000;
  const int d = 768;
  Case c;
  setup(c, "l2", normal(n, d, 94), n, nullptr, 0, d);
  const auto cpu = run(cpu_pw(), c, 10, 0);
  for (size_t limit_mib : {size_t(5), size_t(32)}) {
    for (PairwisePrecision prec : {PairwisePrecision::Fast, PairwisePrecision::Exact}) {
      SCOPED_TRACE("limit " + std::to_string(limit_mib) + " MiB" +
                   (prec == PairwisePrecision::Fast ? ", fast" : ", exact"));
      PairwiseProblem p = make_pairwise(c.m, c.a, nullptr, 10, true, 0, false, prec, 0);
      PwCtl ctl;
      ctl.device_memory_limit = limit_mib << 20;
      PwSink s;
      gpu_pw()->pairwise(p, s, ctl);
      expect_identical(cpu, s.rec, false);
      if (blas_ok) {
        EXPECT_TRUE(cuda::pairwise_last_run().fast);
        EXPECT_EQ(cuda::pairwise_last_run().fold, limit_mib == 32);
      }
    }
  }
}
