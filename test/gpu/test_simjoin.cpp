// Similarity join on the CUDA engine: pair sets and distances bit for bit against the CPU
// engine, vs the float64 reference; host grid fallback, drains and resumes of the paged output
// buffer, max_pairs; every load-balancing strategy and lane count; the batched output (banks,
// estimates, streams).
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

TEST(Simjoin, RandomSelfJoin) {
  REQUIRE_GPU();
  for (size_t n : {0, 1, 2, 3, 1000, 5000})
    for (int dims : {2, 3, 4, 5, 6})
      for (Precision prec : {Precision::Float32, Precision::Float64}) {
        if (n >= 5000 && dims >= 5) continue;
        auto pts = ref::uniform(n, dims, 70 + n + dims);
        const double eps = eps_for(n, dims, 20);
        char what[96];
        snprintf(what, sizeof what, "self n=%zu d=%d %s eps=%g", n, dims, pname(prec), eps);
        join_case(pts, nullptr, eps, prec, true, what);
      }
}

TEST(Simjoin, TwoRelations) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto a = ref::uniform(2000, dims, 80 + dims);
      auto b = ref::uniform(3000, dims, 90 + dims, 0.2, 1.1);
      const double eps = eps_for(3000, dims, 20);
      join_case(a, &b, eps, prec, true, "two relations d=" + std::to_string(dims));
      auto one = ref::uniform(1, dims, 5);
      join_case(one, &b, 0.3, prec, true, "one point vs many");
      join_case(b, &one, 0.3, prec, true, "many vs one point");
    }
}

TEST(Simjoin, DuplicatesLatticeAndInfiniteEps) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    join_case(same_point(2500, 3), nullptr, 0.1, prec, true, "all equal");
    join_case(few_distinct(3000, 2, 4, 40), nullptr, 0.01, prec, true, "40 distinct points");
    join_case(lattice(3000, 3, 12, 15), nullptr, 1.0, prec, true, "lattice eps=1");
    join_case(lattice(3000, 2, 13, 60), nullptr, 2.0, prec, true, "2-D lattice eps=2");
    join_case(ref::uniform(1200, 3, 14), nullptr, INFINITY, prec, true, "eps=inf");
    join_case(ref::uniform(1500, 4, 15), nullptr, 10.0, prec, true, "eps beyond the box");
  }
}

TEST(Simjoin, Large100k) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6}) {
    auto pts = ref::uniform(100000, dims, 100 + dims);
    join_case(pts, nullptr, eps_for(100000, dims, 30), Precision::Float32, false,
              "100k self d=" + std::to_string(dims));
  }
  auto pts = ref::uniform(100000, 3, 103);
  join_case(pts, nullptr, eps_for(100000, 3, 30), Precision::Float64, false, "100k f64");
}

TEST(Simjoin, HostGridFallback) {
  REQUIRE_GPU();
  // Forced: the host-built grid gives the same result.
  forced().host_grid = true;
  auto pts = ref::uniform(4000, 3, 110);
  auto got = run_join(gpu(), pts, nullptr, eps_for(4000, 3, 20), Precision::Float32);
  const bool host = cuda::last_run().host_grid;
  forced().host_grid = false;
  EXPECT_TRUE(host);
  EXPECT_TRUE(got == run_join(cpu(), pts, nullptr, eps_for(4000, 3, 20), Precision::Float32));
  // Natural: 6-D with a far outlier needs more than 64 key bits.
  auto out = ref::uniform(3000, 6, 111);
  for (int k = 0; k < 6; ++k) out.c[size_t(k)][0] = 1e7;
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto g = run_join(gpu(), out, nullptr, 0.2, prec);
    EXPECT_TRUE(cuda::last_run().host_grid) << "key bits should exceed 64";
    auto c = run_join(cpu(), out, nullptr, 0.2, prec);
    EXPECT_TRUE(g == c) << first_diff(g, c);
  }
}

TEST(Simjoin, TinyPoolManyDrains) {
  REQUIRE_GPU();
  auto pts = ref::uniform(5000, 3, 120);
  const double eps = eps_for(5000, 3, 40);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  for (size_t pages : {1, 2, 7}) {
    Ctl ctl;
    ctl.page_pairs = 64;
    ctl.max_pages = pages;
    auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << "pages=" << pages << ": " << first_diff(got, want);
    EXPECT_EQ(lr.pool_pages, pages);
    EXPECT_EQ(lr.page_pairs, 64u);
    EXPECT_GE(lr.drains, int(want.size() / (64 * pages)));
    printf("pool %zu x 64 pairs: %zu pairs, %d launches, %d drains\n", pages, got.size(),
           lr.launches, lr.drains);
  }
  // Two relations through a tiny pool.
  auto b = ref::uniform(3000, 3, 121);
  auto want2 = run_join(cpu(), pts, &b, eps, Precision::Float64);
  Ctl ctl;
  ctl.page_pairs = 100;
  ctl.max_pages = 3;
  auto got2 = run_join(gpu(), pts, &b, eps, Precision::Float64, &ctl);
  EXPECT_TRUE(got2 == want2) << first_diff(got2, want2);
}

TEST(Simjoin, MaxPairsExceeded) {
  REQUIRE_GPU();
  auto pts = ref::uniform(5000, 3, 130);
  const double eps = eps_for(5000, 3, 20);
  const size_t total = run_join(cpu(), pts, nullptr, eps, Precision::Float32).size();
  ASSERT_GT(total, 100u);
  std::string cpu_msg, gpu_msg;
  try {
    run_join(cpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 2);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
    cpu_msg = e.what();
  }
  for (size_t pages : {0, 2}) {
    Ctl ctl;
    ctl.max_pages = pages;
    ctl.page_pairs = pages ? 64 : ctl.page_pairs;
    try {
      run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl, total / 2);
      ADD_FAILURE() << "max_pairs not enforced";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
      gpu_msg = e.what();
    }
    EXPECT_EQ(gpu_msg, cpu_msg);
  }
  // Exactly at the limit: no error.
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total);
  EXPECT_EQ(got.size(), total);
}

// The GPU join under every strategy and every k in `ks` (0 = automatic) equals the CPU join
// (`want`); candidate pairs examined are the same for all and equal the workload estimate, and
// the compare loop issued exactly the steps the estimate predicts for the K used (also across
// stop/resume). pages > 0: a pool of `pages` pages of 64 pairs (many drains and resumes).
void balance_case(const ref::Points& a, const ref::Points* b, double eps, Precision prec,
                  const std::vector<int>& ks, size_t pages, const std::string& what) {
  const auto want = run_join(cpu(), a, b, eps, prec);
  uint64_t examined = 0;
  bool first = true;
  for (JoinBalance bal : kBalances)
    for (int k : ks) {
      Ctl ctl;
      ctl.join_balance = bal;
      ctl.join_threads_per_point = k;
      if (pages) {
        ctl.page_pairs = 64;
        ctl.max_pages = pages;
      }
      const auto got = run_join(gpu(), a, b, eps, prec, &ctl);
      const cuda::LastRun lr = cuda::last_run();
      const std::string tag = what + " " + pname(prec) + " " + bname(bal) + " k=" +
                              std::to_string(k) + " (used " + std::to_string(lr.join_k) + ")";
      EXPECT_TRUE(got == want) << tag << ": GPU vs CPU differ, " << first_diff(got, want);
      // auto runs the measured GPU default (kernels/tuning.h kJoinAutoBalance).
      if (bal == JoinBalance::Auto) bal = cuda_tuning::kJoinAutoBalance;
      EXPECT_EQ(lr.join_balance, int(bal)) << tag;
      if (k) {
        EXPECT_EQ(lr.join_k, k) << tag;
      }
      EXPECT_TRUE(lr.join_k >= 1 && lr.join_k <= 32 && (lr.join_k & (lr.join_k - 1)) == 0) << tag;
      if (first) examined = ctl.stats.pairs_examined;
      first = false;
      EXPECT_EQ(ctl.stats.pairs_examined, examined) << tag;
      if (bal == JoinBalance::Cell) {  // no estimate
        EXPECT_EQ(lr.join_work, 0u) << tag;
        if (k == 0) {
          EXPECT_EQ(lr.join_k, cuda_tuning::kJoinAutoKWithoutEstimate) << tag;
        }
      } else {  // the estimate ran
        EXPECT_EQ(lr.join_work, ctl.stats.pairs_examined) << tag;
        EXPECT_EQ(lr.join_slots, 32 * lr.join_steps[log2_of(lr.join_k)]) << tag;
        EXPECT_LE(ctl.stats.pairs_examined, lr.join_slots) << tag;
        if (k == 0) {
          EXPECT_EQ(lr.join_k, cuda::join_auto_threads_per_point(lr.join_steps)) << tag;
        }
      }
      if (pages && want.size() > 4 * 64 * pages) {
        EXPECT_GT(lr.drains, 2) << tag;
      }
    }
}

const std::vector<int> kAllK = {0, 1, 2, 4, 8, 16, 32};

TEST(JoinBalance, UniformEveryStrategyAndK) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 4, 5, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto pts = ref::uniform(2500, dims, 300 + dims);
      balance_case(pts, nullptr, eps_for(2500, dims, 20), prec, kAllK, 0,
                   "uniform self d=" + std::to_string(dims));
    }
}

TEST(JoinBalance, ExponentialSkew) {
  REQUIRE_GPU();
  // lambda = 40 as the paper's Expo sets: most points within 0.1 of the origin, a sparse tail.
  for (int dims : {2, 3, 4, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto pts = ref::exponential(4000, dims, 310 + dims, 40.0);
      const double eps = eps_for(4000, dims, 20) / 20.0;  // ~20 neighbours at the mean density
      balance_case(pts, nullptr, eps, prec, kAllK, 0, "exponential self d=" + std::to_string(dims));
    }
}

TEST(JoinBalance, DuplicatesAndCrowdedCells) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    balance_case(few_distinct(3000, 2, 320, 25), nullptr, 0.01, prec, kAllK, 0, "25 distinct 2-D");
    balance_case(few_distinct(2000, 5, 321, 12), nullptr, 0.2, prec, kAllK, 0, "12 distinct 5-D");
    balance_case(same_point(1100, 3), nullptr, 0.1, prec, {0, 1, 8, 32}, 0, "all equal");
    balance_case(lattice(2000, 3, 322, 12), nullptr, 1.0, prec, {0, 2, 16}, 0, "lattice");
  }
}

TEST(JoinBalance, TwoRelations) {
  REQUIRE_GPU();
  for (int dims : {2, 3, 6})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      auto a = ref::exponential(1500, dims, 330 + dims, 40.0);
      auto b = ref::uniform(2500, dims, 340 + dims, 0.0, 0.1);
      const double eps = eps_for(2500, dims, 20) * 0.1;
      balance_case(a, &b, eps, prec, kAllK, 0, "two relations expo x uniform d=" +
                                                   std::to_string(dims));
      auto d = few_distinct(800, dims, 350 + dims, 10);
      balance_case(d, &a, 0.05, prec, {0, 1, 4, 32}, 0, "duplicates x expo d=" +
                                                          std::to_string(dims));
    }
}

TEST(JoinBalance, TinyPoolsStopAndResume) {
  REQUIRE_GPU();
  // Many pool-full stops in the middle of chunks and sub-chunks: every stop position of every K.
  auto u = ref::uniform(4000, 3, 360);
  auto e = ref::exponential(4000, 2, 361, 40.0);
  auto dup = few_distinct(2500, 4, 362, 30);
  auto u2 = ref::uniform(3000, 2, 364, 0.0, 0.1);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    balance_case(u, nullptr, eps_for(4000, 3, 40), prec, kAllK, 2, "tiny pool uniform 3-D");
    balance_case(e, nullptr, eps_for(4000, 2, 40) / 20.0, prec, {1, 4, 32}, 1,
                 "tiny pool expo 2-D");
    balance_case(dup, nullptr, 0.1, prec, {0, 2, 8, 32}, 3, "tiny pool duplicates 4-D");
    balance_case(e, &u2, eps_for(3000, 2, 40) * 0.1, prec, {1, 16, 32}, 2,
                 "tiny pool two relations");
  }
  auto six = ref::uniform(2000, 6, 363);
  balance_case(six, nullptr, eps_for(2000, 6, 30), Precision::Float32, {1, 8, 32}, 2,
               "tiny pool 6-D");
}

TEST(JoinBalance, GridPairCountEveryStrategyAndK) {
  REQUIRE_GPU();
  auto e = ref::exponential(20000, 3, 370, 40.0);
  const double r = eps_for(20000, 3, 30) / 20.0;
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const uint64_t want = run_count(cpu(), e, prec, r);
    forced().count_path = 2;
    for (JoinBalance bal : kBalances)
      for (int k : kAllK) {
        auto p = make_pair_count(e.view(), r, prec);
        Ctl ctl;
        ctl.join_balance = bal;
        ctl.join_threads_per_point = k;
        EXPECT_EQ(gpu()->pair_count(p, ctl), want) << bname(bal) << " k=" << k;
        EXPECT_EQ(cuda::last_run().count_path, 2);
      }
    forced().count_path = 0;
  }
}

TEST(JoinBalance, RejectsOtherLaneCountsAndAutoRule) {
  REQUIRE_GPU();
  auto pts = ref::uniform(500, 2, 380);
  for (int k : {3, 64, -1}) {
    Ctl ctl;
    ctl.join_threads_per_point = k;
    try {
      run_join(gpu(), pts, nullptr, 0.05, Precision::Float32, &ctl);
      ADD_FAILURE() << "k=" << k << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidParameter) << e.what();
    }
  }
  // The rule picks the cheapest predicted K; ties go to more lanes per point.
  unsigned long long flat[6] = {100, 100, 100, 100, 100, 100};
  EXPECT_EQ(cuda::join_auto_threads_per_point(flat), 32);
  for (int e = 0; e < 6; ++e) {
    unsigned long long s[6] = {1000000, 1000000, 1000000, 1000000, 1000000, 1000000};
    s[e] = 1000;
    EXPECT_EQ(cuda::join_auto_threads_per_point(s), 1 << e);
  }
}

// ---- batched join output ----------------------------------------------------------------------

// Restores the batched join's forced paths when a test ends (also after a failed assertion).
struct JoinHooks {
  JoinHooks() { reset(); }
  ~JoinHooks() { reset(); }
  // The defaults: batched, tuning.h streams, the sampled estimate as is.
  static void reset() {
    forced().join_serial_drain = false;
    forced().join_streams = 0;
    forced().join_estimate_scale = 1.0;
  }
};

// 2-D points x = k, y = 0 (k < n; eps 0.5 pairs none of them, one cell and one work item each)
// plus `cluster` equal points at (at, 5): all their pairs, in a cell whose items come right after
// the line point `at` in cell order, between the items a strided sample takes.
ref::Points line_with_cluster(size_t n, size_t at, size_t cluster) {
  ref::Points p;
  p.dims = 2;
  p.c.assign(2, std::vector<double>());
  for (size_t k = 0; k < n; ++k) {
    p.c[0].push_back(double(k));
    p.c[1].push_back(0.0);
  }
  for (size_t k = 0; k < cluster; ++k) {
    p.c[0].push_back(double(at));
    p.c[1].push_back(5.0);
  }
  return p;
}

// Counts pairs and sums a hash of each record (an order-independent checksum of the multiset).
struct ChecksumSink : PairSink {
  uint64_t count = 0, sum = 0;
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      uint64_t bits;
      std::memcpy(&bits, &p[k].dist, 8);
      sum += ((uint64_t(p[k].i) << 32) | p[k].j) * 0x9E3779B97F4A7C15ull + (bits ^ (bits >> 29));
    }
    count += n;
  }
};

TEST(Batch, EstimateSizesTheBanks) {
  REQUIRE_GPU();
  JoinHooks hooks;
  // Uniform data: the sampled estimate is close, and the result equals the CPU engine's.
  auto pts = ref::uniform(100000, 3, 200);
  const double eps = eps_for(100000, 3, 100);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32);
  auto lr = cuda::last_run();
  EXPECT_TRUE(got == want) << first_diff(got, want);
  EXPECT_EQ(lr.join_pairs, want.size());
  const double ratio = double(lr.join_estimate) / double(want.size());
  printf("uniform 100k: estimate %llu, real %zu (ratio %.3f), %zu sample items, sample %.3f ms, "
         "%d batches on %d streams, banks %zu x %zu pairs, %d launches, %d drains\n",
         lr.join_estimate, want.size(), ratio, lr.sample_items, lr.sample_ms, lr.join_batches,
         lr.join_streams, lr.bank_pages, lr.page_pairs, lr.launches, lr.drains);
  EXPECT_NEAR(ratio, 1.0, 0.15);
  EXPECT_GT(lr.sample_items, 0u);
  EXPECT_GE(lr.join_batches, 2) << "~5 M pairs are split for overlap";
  // A join of ~100 pairs: the result banks stay small (no pool sized from the memory budget).
  auto few = ref::uniform(2000, 3, 201);
  cuda::reset_engine_peak_bytes();
  auto small = run_join(gpu(), few, nullptr, eps_for(2000, 3, 0.1), Precision::Float32);
  lr = cuda::last_run();
  EXPECT_TRUE(small == run_join(cpu(), few, nullptr, eps_for(2000, 3, 0.1), Precision::Float32));
  const double bank_mb = double(lr.pool_pages * lr.page_pairs * sizeof(PairRecord)) / 1048576.0;
  printf("%zu pairs: estimate %llu, banks %.1f MB in all, peak device memory %.1f MB\n",
         small.size(), lr.join_estimate, bank_mb, double(cuda::engine_peak_bytes()) / 1048576.0);
  EXPECT_LT(bank_mb, 16.0);
  EXPECT_LT(cuda::engine_peak_bytes(), size_t(32) << 20);
  // A memory limit bounds the engine's device memory; the result stays exact.
  Ctl lim;
  lim.device_memory_limit = size_t(80) << 20;
  cuda::reset_engine_peak_bytes();
  auto bounded = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &lim);
  lr = cuda::last_run();
  EXPECT_TRUE(bounded == want) << first_diff(bounded, want);
  EXPECT_LE(cuda::engine_peak_bytes(), lim.device_memory_limit);
  printf("limit 80 MB: peak %.1f MB, %d batches, banks %zu x %zu pairs, %d drains\n",
         double(cuda::engine_peak_bytes()) / 1048576.0, lr.join_batches, lr.bank_pages,
         lr.page_pairs, lr.drains);
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(Batch, TinyBanksManyOverflows) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(5000, 3, 210);
  auto b = ref::uniform(3000, 3, 211);
  const double eps = eps_for(5000, 3, 40);
  auto want = run_join(cpu(), pts, nullptr, eps, Precision::Float32);
  auto want2 = run_join(cpu(), pts, &b, eps, Precision::Float64);
  for (int streams : {1, 2, 3})
    for (size_t pages : {3, 7, 12}) {
      forced().join_streams = streams;
      Ctl ctl;
      ctl.page_pairs = 64;
      ctl.max_pages = pages;
      auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &ctl);
      auto lr = cuda::last_run();
      EXPECT_TRUE(got == want) << streams << " streams, " << pages << " pages: "
                               << first_diff(got, want);
      EXPECT_EQ(lr.join_streams, int(std::min<size_t>(size_t(streams), pages)));
      EXPECT_EQ(lr.pool_pages, pages);
      EXPECT_GT(lr.join_batches, 10);
      EXPECT_GE(lr.drains, int(want.size() / (64 * pages)));
      Ctl ctl2;
      ctl2.page_pairs = 100;
      ctl2.max_pages = pages;
      auto got2 = run_join(gpu(), pts, &b, eps, Precision::Float64, &ctl2);
      EXPECT_TRUE(got2 == want2) << "two relations, " << streams << " streams: "
                                 << first_diff(got2, want2);
    }
  // Banks of one page each: every batch overflows its bank many times.
  forced().join_streams = 3;
  forced().join_estimate_scale = 1e-6;
  Ctl one;
  one.page_pairs = 64;
  one.max_pages = 3;
  auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, &one);
  EXPECT_TRUE(got == want) << first_diff(got, want);
  printf("3 banks of 64 pairs, estimate x 1e-6: %d batches, %d launches, %d drains\n",
         cuda::last_run().join_batches, cuda::last_run().launches, cuda::last_run().drains);
}

TEST(Batch, EstimateFarOff) {
  REQUIRE_GPU();
  JoinHooks hooks;
  // Clustered data the sample misses (or, in another item order, hits and extrapolates).
  auto pts = line_with_cluster(100000, 1000, 64);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto want = run_join(cpu(), pts, nullptr, 0.5, prec);
    ASSERT_EQ(want.size(), 64u * 63 / 2);
    auto got = run_join(gpu(), pts, nullptr, 0.5, prec);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << first_diff(got, want);
    printf("line + cluster %s: estimate %llu, real %zu, %d batches, %d drains\n", pname(prec),
           lr.join_estimate, got.size(), lr.join_batches, lr.drains);
    EXPECT_TRUE(double(lr.join_estimate) < 0.5 * double(got.size()) ||
                double(lr.join_estimate) > 2.0 * double(got.size()))
        << "the sample should miss (or overweight) the cluster: estimate " << lr.join_estimate;
  }
  // Estimates forced far too low and far too high: the same pairs.
  auto u = ref::uniform(60000, 3, 220);
  const double eps = eps_for(60000, 3, 60);
  auto want = run_join(cpu(), u, nullptr, eps, Precision::Float32);
  for (double scale : {1e-4, 0.1, 10.0, 1e3}) {
    forced().join_estimate_scale = scale;
    Ctl lim;
    lim.device_memory_limit = size_t(200) << 20;
    auto got = run_join(gpu(), u, nullptr, eps, Precision::Float32, &lim);
    auto lr = cuda::last_run();
    EXPECT_TRUE(got == want) << "scale " << scale << ": " << first_diff(got, want);
    printf("estimate x %g: estimate %llu real %zu, %d batches, %d launches, %d drains\n", scale,
           lr.join_estimate, got.size(), lr.join_batches, lr.launches, lr.drains);
  }
}

TEST(Batch, ConfigurationsGiveTheSamePairs) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto a = ref::uniform(80000, 3, 230);
  auto b = ref::uniform(50000, 3, 231, 0.1, 0.9);
  const double eps = eps_for(80000, 3, 120);
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (bool self : {true, false}) {
      const ref::Points* bp = self ? nullptr : &b;
      auto want = run_join(cpu(), a, bp, eps, prec);
      uint64_t sum0 = 0;
      for (int conf = 0; conf < 5; ++conf) {
        // 0 serial drain, 1..3 streams, 4: 3 streams under a 64 MB device memory limit
        forced().join_serial_drain = conf == 0;
        forced().join_streams = conf == 0 ? 0 : std::min(conf, 3);
        Ctl ctl;
        if (conf == 4) ctl.device_memory_limit = size_t(64) << 20;
        auto got = run_join(gpu(), a, bp, eps, prec, &ctl);
        auto lr = cuda::last_run();
        EXPECT_TRUE(got == want) << pname(prec) << (self ? " self" : " two relations")
                                 << " config " << conf << ": " << first_diff(got, want);
        // The raw records (orientation and all) too, through a checksum.
        PointsView bv;
        if (bp) bv = bp->view();
        auto p = make_simjoin(a.view(), bp ? &bv : nullptr, eps, prec, 0);
        Ctl c2;
        if (conf == 4) c2.device_memory_limit = size_t(64) << 20;
        ChecksumSink cs;
        gpu()->simjoin(p, cs, c2);
        if (conf == 0) sum0 = cs.sum;
        EXPECT_EQ(cs.sum, sum0) << "config " << conf;
        EXPECT_EQ(cs.count, want.size());
        printf("%s %s config %d: %zu pairs, estimate %llu, %d batches on %d streams, %d drains\n",
               pname(prec), self ? "self" : "two", conf, got.size(), lr.join_estimate,
               lr.join_batches, lr.join_streams, lr.drains);
      }
    }
}

TEST(Batch, MaxResultRowsStops) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(60000, 3, 240);
  const double eps = eps_for(60000, 3, 150);
  const size_t total = run_join(cpu(), pts, nullptr, eps, Precision::Float32).size();
  std::string cpu_msg;
  try {
    run_join(cpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 3);
  } catch (const Error& e) {
    cpu_msg = e.what();
  }
  ASSERT_FALSE(cpu_msg.empty());
  for (int streams : {1, 3}) {
    forced().join_streams = streams;
    try {
      run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total / 3);
      ADD_FAILURE() << "max_pairs not enforced with " << streams << " streams";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ProgramLimit);
      EXPECT_EQ(std::string(e.what()), cpu_msg);
    }
    EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
    auto got = run_join(gpu(), pts, nullptr, eps, Precision::Float32, nullptr, total);
    EXPECT_EQ(got.size(), total);
  }
}

TEST(Batch, CancelMidJoin) {
  REQUIRE_GPU();
  JoinHooks hooks;
  auto pts = ref::uniform(1000000, 3, 250);
  auto p = make_simjoin(pts.view(), nullptr, eps_for(1000000, 3, 1000), Precision::Float32, 0);
  for (int streams : {1, 3}) {
    forced().join_streams = streams;
    ChecksumSink sink;
    expect_cancel([&](Control& ctl) { gpu()->simjoin(p, sink, ctl); },
                  streams == 1 ? "batched join 1 stream, 5e8 pairs" : "batched join 3 streams");
    printf("  %llu pairs reached the sink before the cancel\n", (unsigned long long)sink.count);
    EXPECT_GT(sink.count, 0u) << "cancelled before any batch was drained";
    EXPECT_LT(sink.count, uint64_t(4e8));
  }
}

}  // namespace
