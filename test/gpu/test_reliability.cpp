// Reliability of the CUDA engine: initialization facts, cancel within a second with every byte
// freed, the memory limit, run statistics, small cases of every path for compute-sanitizer,
// and the metamorphic rule (far points change no pair among the others).
#include "common/metamorphic.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// ---- engine facts ----------------------------------------------------------------------------

TEST(CudaEngine, BuildAndInitialization) {
  EXPECT_TRUE(built_with_cuda());
  std::string why;
  Engine* e = cuda_engine(&why);
  if (!e) {
    EXPECT_FALSE(why.empty());
    printf("CUDA engine unavailable: %s\n", why.c_str());
    EXPECT_TRUE(cuda_info().empty());
    GTEST_SKIP() << why;
  }
  EXPECT_EQ(e, cuda_engine(nullptr)) << "the engine is cached";
  EXPECT_EQ(e->name().rfind("cuda (", 0), 0u) << e->name();
  printf("engine: %s\n", e->name().c_str());
  auto rows = cuda_info();
  std::map<std::string, std::string> m(rows.begin(), rows.end());
  for (auto& r : rows) printf("  %-24s %s\n", r.first.c_str(), r.second.c_str());
  for (const char* k : {"gpu_device", "gpu_sm_count", "gpu_compute_capability",
                        "gpu_memory_total_mb", "gpu_memory_free_mb", "gpu_memory_in_use_mb",
                        "cuda_driver_version", "cuda_runtime_version"})
    EXPECT_TRUE(m.count(k)) << k;
}

TEST(Cancel, StopsWithinOneSecondAndFreesMemory) {
  REQUIRE_GPU();
  auto big = ref::uniform(3000000, 3, 140);
  expect_cancel(
      [&](Control& ctl) {
        SdhProblem p;
        p.pts = big.view();
        p.params = make_sdh_params(500, 0, false, compute_bounds(p.pts), p.prec);
        gpu()->sdh(p, ctl);
      },
      "sdh 3M");
  expect_cancel(
      [&](Control& ctl) {
        ctl.overrides.count_path = 1;
        gpu()->pair_count(make_pair_count(big.view(), 0.5, Precision::Float64), ctl);
      },
      "pair count tiles 3M f64");
  auto mid = ref::uniform(300000, 3, 141);
  expect_cancel(
      [&](Control& ctl) {
        auto p = make_simjoin(mid.view(), nullptr, INFINITY, Precision::Float32, 0);
        struct Null : PairSink {
          void consume(const PairRecord*, size_t) override {}
        } sink;
        gpu()->simjoin(p, sink, ctl);
      },
      "simjoin 300k eps=inf");
  // The engine still answers correctly afterwards.
  auto small = ref::uniform(2000, 3, 142);
  EXPECT_EQ(run_sdh(gpu(), small, Precision::Float32, 64, 0),
            run_sdh(cpu(), small, Precision::Float32, 64, 0));
}

TEST(Memory, LimitIsEnforcedAndEverythingIsFreed) {
  REQUIRE_GPU();
  auto pts = ref::uniform(1000000, 3, 150);
  Ctl ctl;
  ctl.device_memory_limit = 1 << 20;  // 1 MiB: the points alone need 12 MB
  SdhProblem p;
  p.pts = pts.view();
  p.params = make_sdh_params(100, 0, false, compute_bounds(p.pts), p.prec);
  try {
    gpu()->sdh(p, ctl);
    ADD_FAILURE() << "memory limit not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
  // A join whose pool must fit a small limit still completes.
  auto q = ref::uniform(20000, 3, 151);
  const double eps = eps_for(20000, 3, 30);
  Ctl small;
  small.device_memory_limit = 24 << 20;
  auto got = run_join(gpu(), q, nullptr, eps, Precision::Float32, &small);
  EXPECT_TRUE(got == run_join(cpu(), q, nullptr, eps, Precision::Float32));
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(Stats, Filled) {
  REQUIRE_GPU();
  auto pts = ref::uniform(20000, 3, 160);
  {
    SdhProblem p;
    p.pts = pts.view();
    p.params = make_sdh_params(500, 0, false, compute_bounds(p.pts), p.prec);
    Ctl ctl;
    gpu()->sdh(p, ctl);
    EXPECT_EQ(ctl.stats.pairs_examined, uint64_t(20000) * 19999 / 2);
    EXPECT_GT(ctl.stats.kernel_s, 0);
    EXPECT_GT(ctl.stats.transfer_s, 0);
    EXPECT_GT(cuda::last_run().kernel_ms, 0);
  }
  {
    auto p = make_simjoin(pts.view(), nullptr, eps_for(20000, 3, 30), Precision::Float32, 0);
    Ctl ctl;
    Collect sink;
    gpu()->simjoin(p, sink, ctl);
    EXPECT_EQ(ctl.stats.pairs_emitted, sink.v.size());
    EXPECT_GE(ctl.stats.pairs_examined, sink.v.size());
    EXPECT_GT(ctl.stats.prepare_s, 0);
    EXPECT_GT(ctl.stats.kernel_s, 0);
    printf("join stats: prepare %.3f ms transfer %.3f ms kernel %.3f ms merge %.3f ms, "
           "examined %llu emitted %llu, %d launches %d drains\n",
           ctl.stats.prepare_s * 1e3, ctl.stats.transfer_s * 1e3, ctl.stats.kernel_s * 1e3,
           ctl.stats.merge_s * 1e3, (unsigned long long)ctl.stats.pairs_examined,
           (unsigned long long)ctl.stats.pairs_emitted, cuda::last_run().launches,
           cuda::last_run().drains);
  }
}

// Small cases of every kernel and path, for compute-sanitizer (memcheck, racecheck):
//   compute-sanitizer --tool memcheck build/test_gpu --gtest_filter='Sanitizer.*'
TEST(Sanitizer, SmallEveryPath) {
  REQUIRE_GPU();
  auto pts = ref::uniform(3000, 3, 170);
  auto p2 = ref::uniform(1100, 2, 171);
  auto a3 = ref::uniform(900, 3, 172, 0.3, 0.8);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    for (int copies : {0, -1, 1, 32}) {
      forced().sdh_copies = copies;
      EXPECT_EQ(run_sdh(gpu(), pts, prec, 500, 0), run_sdh(cpu(), pts, prec, 500, 0));
      EXPECT_EQ(run_sdh(gpu(), p2, prec, 7, 0.01), run_sdh(cpu(), p2, prec, 7, 0.01));
    }
    forced().sdh_copies = 0;
    count_case(pts, prec, eps_for(3000, 3, 20), false, "sanitizer count");
    const double eps = eps_for(3000, 3, 20);
    join_case(pts, nullptr, eps, prec, false, "sanitizer self join");
    join_case(a3, &pts, eps, prec, false, "sanitizer two-relation join");
    Ctl ctl;
    ctl.page_pairs = 64;
    ctl.max_pages = 3;
    auto got = run_join(gpu(), pts, nullptr, eps, prec, &ctl);
    EXPECT_TRUE(got == run_join(cpu(), pts, nullptr, eps, prec));
    // every strategy, K at both ends and between, through a tiny pool (stop/resume)
    const auto want = run_join(cpu(), a3, &pts, eps, prec);
    for (JoinBalance bal : kBalances)
      for (int k : {0, 1, 8, 32}) {
        Ctl c2;
        c2.join_balance = bal;
        c2.join_threads_per_point = k;
        c2.page_pairs = 64;
        c2.max_pages = 2;
        EXPECT_TRUE(run_join(gpu(), a3, &pts, eps, prec, &c2) == want) << bname(bal) << k;
      }
    forced().host_grid = true;
    auto hg = run_join(gpu(), p2, nullptr, 0.05, prec);
    forced().host_grid = false;
    EXPECT_TRUE(hg == run_join(cpu(), p2, nullptr, 0.05, prec));
  }
}

// The metamorphic rule on the GPU: far points added to the input (moving the bounding box, the
// grid origin and the cell size) change no join pair, pair count or explicit-width SDH bucket
// among the others, on every pair-count path and with the host-built grid; the GPU answers
// equal the CPU engine's bit for bit; refusals (squares that underflow or overflow) agree.
TEST(Metamorphic, FarPointsChangeNothing) {
  REQUIRE_GPU();
  int ran = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const meta::Case c = meta::make_case(seed);
    SCOPED_TRACE(c.describe());
    const meta::Outcome want = meta::run(*cpu(), c, c.s);
    const int path = int(seed % 3);  // cost rule, all-pairs tiles, grid
    forced().count_path = path;
    forced().host_grid = seed % 5 == 4;
    const meta::Outcome a = meta::run(*gpu(), c, c.s);
    const meta::Outcome b = meta::run(*gpu(), c, c.sf);
    forced().count_path = 0;
    forced().host_grid = false;
    ASSERT_EQ(a.refused, want.refused) << a.why << " / " << want.why;
    ASSERT_EQ(b.refused, want.refused) << b.why << " / " << want.why;
    if (want.refused) continue;
    ++ran;
    EXPECT_EQ(b.far_pairs, 0u);
    EXPECT_TRUE(a.join == want.join) << "GPU vs CPU: " << first_diff(a.join, want.join);
    EXPECT_TRUE(b.join == want.join) << "with far points: " << first_diff(b.join, want.join);
    EXPECT_TRUE(a.join2 == want.join2) << first_diff(a.join2, want.join2);
    EXPECT_TRUE(b.join2 == want.join2) << first_diff(b.join2, want.join2);
    EXPECT_EQ(a.count, want.count);
    EXPECT_EQ(b.count, want.count);
    EXPECT_EQ(a.hist, want.hist);
    EXPECT_EQ(b.hist, want.hist);
  }
  EXPECT_GT(ran, 150);
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

// The settings' extremes on tiny data: device memory follows the data and the result estimate,
// not gpu2bs.result_page_pairs or the thread count; answers equal the CPU engine's.
TEST(Memory, ExtremeSettingsOnTinyData) {
  REQUIRE_GPU();
  ref::Points tiny = ref::uniform(3, 2, 180);
  ref::Points twelve = ref::uniform(12, 2, 181);
  Ctl ctl;
  ctl.threads = 1024;
  ctl.page_pairs = size_t(1) << 24;
  cuda::reset_engine_peak_bytes();
  const auto h = gpu()->sdh(make_sdh(tiny.view(), 1 << 20, 0, false, Precision::Float32), ctl);
  const size_t sdh_peak = cuda::engine_peak_bytes();
  EXPECT_EQ(h, run_sdh(cpu(), tiny, Precision::Float32, 1 << 20, 0));
  EXPECT_LT(sdh_peak, size_t(32) << 20) << "SDH of 3 points, 2^20 buckets";
  cuda::reset_engine_peak_bytes();
  const auto got = run_join(gpu(), twelve, nullptr, 100, Precision::Float32, &ctl);
  const size_t join_peak = cuda::engine_peak_bytes();
  EXPECT_EQ(got.size(), 66u);
  EXPECT_TRUE(got == run_join(cpu(), twelve, nullptr, 100, Precision::Float32));
  EXPECT_LT(join_peak, size_t(64) << 20) << "join of 12 points, 2^24-pair pages";
  printf("device memory peaks: SDH 3 points 2^20 buckets %.1f MiB, join 12 points %.1f MiB\n",
         double(sdh_peak) / (1 << 20), double(join_peak) / (1 << 20));
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

}  // namespace
