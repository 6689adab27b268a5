// Shared fixtures of the CUDA engine tests (test_*.cpp in this folder): the engines, data
// generators, runners for each family, bit-for-bit comparison helpers and cancel probes. Every
// GPU test skips (REQUIRE_GPU) on a machine without a usable GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/grid.h"
#include "kernels/host_api.h"
#include "kernels/tuning.h"

namespace gpu2bs {
namespace gputest {

using Clock = std::chrono::steady_clock;

inline std::string g_why;

inline Engine* gpu() {
  static Engine* e = cuda_engine(&g_why);
  return e;
}

inline Engine* cpu() {
  static std::unique_ptr<Engine> e = make_cpu_engine();
  return e.get();
}

inline int threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

#define REQUIRE_GPU()                                          \
  do {                                                         \
    if (!gpu()) GTEST_SKIP() << "no usable GPU: " << g_why;    \
  } while (0)

inline const char* pname(Precision p) { return p == Precision::Float32 ? "f32" : "f64"; }

// ---- data ------------------------------------------------------------------------------------

// All points equal.
inline ref::Points same_point(size_t n, int dims, double v = 0.25) {
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n, v));
  return p;
}

// Integer lattice points in [0, side)^dims (many equal distances, exactly on edges).
inline ref::Points lattice(size_t n, int dims, uint64_t seed, int side) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, side - 1);
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = u(rng);
  return p;
}

// Points drawn from a small set of distinct points (duplicates).
inline ref::Points few_distinct(size_t n, int dims, uint64_t seed, size_t distinct) {
  auto base = ref::uniform(distinct, dims, seed);
  std::mt19937_64 rng(seed + 7);
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    size_t s = rng() % distinct;
    for (int k = 0; k < dims; ++k) p.c[size_t(k)][i] = base.c[size_t(k)][s];
  }
  return p;
}

// eps for about `nb` neighbours per point of n uniform points in the unit cube.
inline double eps_for(size_t n, int dims, double nb) {
  const double unit_ball[7] = {0, 2, M_PI, 4.18879, 4.9348, 5.26379, 5.16771};
  return std::pow(nb / (double(std::max<size_t>(n, 1)) * unit_ball[dims]), 1.0 / dims);
}

// ---- engines ---------------------------------------------------------------------------------

// Code paths the running test forces: every Control a test builds starts from them.
inline EngineOverrides& forced() {
  static EngineOverrides o;
  return o;
}

struct Ctl : Control {
  Ctl() {
    threads = gputest::threads();
    overrides = forced();
  }
};

inline std::vector<uint64_t> run_sdh(Engine* e, const ref::Points& pts, Precision prec, int nb,
                                     double width) {
  const SdhProblem p = make_sdh(pts.view(), nb, width, width > 0, prec);
  Ctl ctl;
  return e->sdh(p, ctl);
}

inline uint64_t run_count(Engine* e, const ref::Points& pts, Precision prec, double r) {
  auto p = make_pair_count(pts.view(), r, prec);
  Ctl ctl;
  return e->pair_count(p, ctl);
}

struct Collect : PairSink {
  std::vector<PairRecord> v;
  size_t calls = 0;
  void consume(const PairRecord* p, size_t n) override {
    ++calls;
    v.insert(v.end(), p, p + n);
  }
};

using Pair3 = std::tuple<uint32_t, uint32_t, double>;

// Join pairs, normalized (i < j for a self-join) and sorted.
inline std::vector<Pair3> normalized(const std::vector<PairRecord>& v, bool self) {
  std::vector<Pair3> out;
  out.reserve(v.size());
  for (auto& r : v) {
    uint32_t i = r.i, j = r.j;
    if (self && i > j) std::swap(i, j);
    out.emplace_back(i, j, r.dist);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<Pair3> run_join(Engine* e, const ref::Points& a, const ref::Points* b, double eps,
                            Precision prec, Control* ctl_in = nullptr, uint64_t max_pairs = 0) {
  PointsView bv;
  if (b) bv = b->view();
  auto p = make_simjoin(a.view(), b ? &bv : nullptr, eps, prec, max_pairs);
  Ctl local;
  Control& ctl = ctl_in ? *ctl_in : local;
  Collect sink;
  e->simjoin(p, sink, ctl);
  EXPECT_EQ(ctl.stats.pairs_emitted, sink.v.size());
  return normalized(sink.v, b == nullptr);
}

// First difference of two join results, for messages.
inline std::string first_diff(const std::vector<Pair3>& x, const std::vector<Pair3>& y) {
  char buf[256];
  size_t n = std::min(x.size(), y.size());
  for (size_t k = 0; k < n; ++k) {
    if (x[k] != y[k]) {
      snprintf(buf, sizeof buf, "at %zu: (%u,%u,%.17g) vs (%u,%u,%.17g)", k, std::get<0>(x[k]),
               std::get<1>(x[k]), std::get<2>(x[k]), std::get<0>(y[k]), std::get<1>(y[k]),
               std::get<2>(y[k]));
      return buf;
    }
  }
  snprintf(buf, sizeof buf, "sizes %zu vs %zu", x.size(), y.size());
  return buf;
}

inline std::string first_diff(const std::vector<uint64_t>& x, const std::vector<uint64_t>& y) {
  char buf[160];
  for (size_t k = 0; k < std::min(x.size(), y.size()); ++k)
    if (x[k] != y[k]) {
      snprintf(buf, sizeof buf, "bucket %zu: %llu vs %llu", k, (unsigned long long)x[k],
               (unsigned long long)y[k]);
      return buf;
    }
  snprintf(buf, sizeof buf, "sizes %zu vs %zu", x.size(), y.size());
  return buf;
}

// Join result vs the float64 reference: every disagreement is a near-boundary pair.
inline void check_join_vs_reference(const std::vector<Pair3>& got, const ref::Points& a,
                             const ref::Points* b, double eps, Precision prec) {
  auto want = ref::simjoin(a, b, eps, prec);
  std::set<std::pair<uint32_t, uint32_t>> g;
  for (auto& t : got) g.insert({std::get<0>(t), std::get<1>(t)});
  EXPECT_EQ(g.size(), got.size()) << "duplicate pairs";
  size_t missing = 0, extra = 0, unexplained = 0;
  for (auto& pr : want.pairs)
    if (!g.count(pr)) {
      ++missing;
      if (!want.near.count(pr)) ++unexplained;
    }
  for (auto& pr : g)
    if (!want.pairs.count(pr)) {
      ++extra;
      if (!want.near.count(pr)) ++unexplained;
    }
  EXPECT_EQ(unexplained, 0u) << "missing " << missing << " extra " << extra << " near "
                             << want.near.size();
}

// ---- pair count ------------------------------------------------------------------------------

inline void count_case(const ref::Points& pts, Precision prec, double r, bool check_ref,
                const std::string& what) {
  const uint64_t want = run_count(cpu(), pts, prec, r);
  for (int path : {0, 1, 2}) {
    forced().count_path = path;
    const uint64_t got = run_count(gpu(), pts, prec, r);
    const int used = cuda::last_run().count_path;
    forced().count_path = 0;
    EXPECT_EQ(got, want) << what << " path=" << path << " (used " << used << ")";
  }
  if (check_ref) {
    auto rr = ref::pair_count(pts, r, prec);
    const uint64_t d = want > rr.first ? want - rr.first : rr.first - want;
    EXPECT_LE(d, rr.second) << what << ": vs float64 reference";
  }
}

// ---- similarity join -------------------------------------------------------------------------

inline void join_case(const ref::Points& a, const ref::Points* b, double eps, Precision prec,
               bool check_ref, const std::string& what) {
  auto want = run_join(cpu(), a, b, eps, prec);
  auto got = run_join(gpu(), a, b, eps, prec);
  EXPECT_TRUE(got == want) << what << ": GPU vs CPU differ, " << first_diff(got, want)
                           << " (host grid " << cuda::last_run().host_grid << ")";
  if (check_ref) check_join_vs_reference(got, a, b, eps, prec);
}

// ---- load balancing: strategies x lanes per query point ----------------------------------------

inline const JoinBalance kBalances[] = {JoinBalance::WorkQueue, JoinBalance::Cell,
                                 JoinBalance::SortByWorkload, JoinBalance::Auto};
inline const char* bname(JoinBalance b) {
  return b == JoinBalance::WorkQueue ? "workqueue"
         : b == JoinBalance::Cell    ? "cell"
         : b == JoinBalance::Auto    ? "auto"
                                     : "sortbywl";
}
inline int log2_of(int k) {
  int e = 0;
  while ((1 << e) < k) ++e;
  return e;
}

// ---- cancel, memory, stats ---------------------------------------------------------------------

// interrupt_pending() turns true 100 ms after the first poll.
struct LateCancel : Control {
  LateCancel() { overrides = forced(); }
  Clock::time_point start{};
  bool started = false;
  Clock::time_point fired{};
  bool interrupt_pending() override {
    auto now = Clock::now();
    if (!started) {
      started = true;
      start = now;
    }
    if (now - start >= std::chrono::milliseconds(100)) {
      if (fired == Clock::time_point{}) fired = now;
      return true;
    }
    return false;
  }
};

inline void expect_cancel(const std::function<void(Control&)>& fn, const char* what) {
  LateCancel ctl;
  auto t0 = Clock::now();
  try {
    fn(ctl);
    ADD_FAILURE() << what << ": finished before the cancel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted) << what << ": " << e.what();
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_NE(ctl.fired, Clock::time_point{}) << what;
  const double after = std::chrono::duration<double>(Clock::now() - ctl.fired).count();
  printf("%s: cancelled %.1f ms after the interrupt (%.1f ms in all)\n", what, after * 1e3,
         total * 1e3);
  EXPECT_LT(after, 1.0) << what;
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u) << what << ": device memory not freed";
}

}  // namespace gputest
}  // namespace gpu2bs
