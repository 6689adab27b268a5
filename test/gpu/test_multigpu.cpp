// Several devices in one call, emulated on one GPU unless G2_TEST_DEVICES lists real ordinals
// (e.g. "0,1" on a machine with two GPUs): EngineOverrides::devices lists device 0 two to four
// times (or the listed ordinals in turn), so the split paths (tile-pair shares of the SDH and
// the pair count, slabs of the similarity join with their eps halo, each share on its own
// thread and streams) run and must
// equal the one-device result bit for bit, the CPU engine, and the float64 reference. Also the
// join in slabs on one device under a small budget (its pairs in slab order), and errors and
// cancel with shares.
#include <cstdlib>
#include <string>

#include "core/admission.h"
#include "core/split.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// The device ordinals the shares take in turn: G2_TEST_DEVICES ("0,1") or device 0 alone.
std::vector<int> test_devices() {
  std::vector<int> d;
  const char* env = std::getenv("G2_TEST_DEVICES");
  const std::string list = env ? env : "";
  for (size_t pos = 0; pos < list.size();) {
    const size_t c = list.find(',', pos);
    d.push_back(std::atoi(list.substr(pos, c == std::string::npos ? std::string::npos : c - pos).c_str()));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  if (d.empty()) d.push_back(0);
  return d;
}

// A Control whose calls run as `shares` devices, the ordinals of test_devices() in turn.
struct SharedCtl : Ctl {
  explicit SharedCtl(int shares) {
    const std::vector<int> d = test_devices();
    for (int s = 0; s < shares; ++s) overrides.devices.push_back(d[size_t(s) % d.size()]);
  }
};

// A budget per share that leaves blocks of `block` points (three resident blocks).
size_t budget_for_blocks(size_t block, int dims, Precision prec, int nb) {
  const size_t per = prec == Precision::Float32 ? 4 : 8;
  return 3 * block * per * size_t(dims) + size_t(nb) * 16 + admission::kFixedMargin;
}

// One join through `ctl`, normalized.
std::vector<Pair3> join_with(Control& ctl, const ref::Points& a, const ref::Points* b, double eps,
                             Precision prec, uint64_t max_pairs = 0) {
  return run_join(gpu(), a, b, eps, prec, &ctl, max_pairs);
}

}  // namespace

TEST(MultiGpu, SdhSharesEqualOneDeviceAndCpu) {
  REQUIRE_GPU();
  for (int shares : {2, 3, 4})
    for (size_t n : {size_t(2), size_t(3), size_t(5000), size_t(100003)})
      for (int dims : {2, 3})
        for (Precision prec : {Precision::Float32, Precision::Float64})
          for (int nb : {10, 500}) {
            auto pts = ref::uniform(n, dims, 3 + n + dims, -2, 6);
            const SdhProblem p = make_sdh(pts.view(), nb, 0, false, prec);
            Ctl one;
            one.sdh_method = SdhMethod::Brute;
            const auto g1 = gpu()->sdh(p, one);
            SharedCtl many(shares);
            many.sdh_method = SdhMethod::Brute;
            const auto gm = gpu()->sdh(p, many);
            char what[96];
            snprintf(what, sizeof what, "shares=%d n=%zu d=%d %s nb=%d", shares, n, dims, pname(prec), nb);
            EXPECT_EQ(many.stats.shares, uint64_t(shares)) << what;
            EXPECT_EQ(many.stats.pairs_examined, uint64_t(n) * (n - 1) / 2) << what;
            EXPECT_TRUE(gm == g1) << what << ": shares vs one device, " << first_diff(gm, g1);
            if (n <= 5000) {  // the larger sets: one device against the CPU in test_sdh
              const auto c = run_sdh(cpu(), pts, prec, nb, 0);
              EXPECT_TRUE(gm == c) << what << ": shares vs CPU, " << first_diff(gm, c);
            }
          }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(MultiGpu, SdhExplicitWidthAgainstReference) {
  REQUIRE_GPU();
  auto pts = ref::clustered(20000, 3, 17);
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const SdhProblem p = make_sdh(pts.view(), 64, 0.01, true, prec);
    SharedCtl many(3);
    const auto gm = gpu()->sdh(p, many);
    Ctl one;
    const auto g1 = gpu()->sdh(p, one);
    EXPECT_TRUE(gm == g1) << pname(prec) << ": " << first_diff(gm, g1);
    const ref::SdhRef want = ref::sdh(pts, p.params, prec);
    EXPECT_LE(ref::histogram_disagreement(gm, want), want.near) << pname(prec);
  }
}

TEST(MultiGpu, SdhSharesInBlocks) {
  REQUIRE_GPU();
  for (int shares : {2, 3})
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      const size_t n = 70001;
      auto pts = ref::uniform(n, 3, 41 + shares, -3, 5);
      const SdhProblem p = make_sdh(pts.view(), 200, 0, false, prec);
      Ctl one;
      one.sdh_method = SdhMethod::Brute;
      const auto g1 = gpu()->sdh(p, one);
      SharedCtl many(shares);
      many.sdh_method = SdhMethod::Brute;
      // The limit is divided among the shares of one device.
      many.device_memory_limit = size_t(shares) * budget_for_blocks(admission::kBlockQuantum, 3, prec, 200);
      const auto gm = gpu()->sdh(p, many);
      const uint64_t k = (n + admission::kBlockQuantum - 1) / admission::kBlockQuantum;
      EXPECT_EQ(many.stats.block_points, admission::kBlockQuantum);
      EXPECT_EQ(many.stats.block_pairs, k * (k + 1) / 2) << "every block pair in one share";
      EXPECT_TRUE(gm == g1) << shares << " " << pname(prec) << ": " << first_diff(gm, g1);
    }
}

TEST(MultiGpu, PairCountSharesEqualOneDeviceAndCpu) {
  REQUIRE_GPU();
  for (int shares : {2, 4})
    for (size_t n : {size_t(2), size_t(4000), size_t(60001)})
      for (Precision prec : {Precision::Float32, Precision::Float64})
        for (double r : {0.0, 0.05, 0.3, 2.0}) {
          auto pts = ref::uniform(n, 3, 5 + n, 0, 1);
          const PairCountProblem p = make_pair_count(pts.view(), r, prec);
          Ctl one;
          one.overrides.count_path = 1;
          const uint64_t c1 = gpu()->pair_count(p, one);
          SharedCtl many(shares);
          many.overrides.count_path = 1;
          const uint64_t cm = gpu()->pair_count(p, many);
          EXPECT_EQ(many.stats.shares, uint64_t(shares));
          EXPECT_EQ(cm, c1) << shares << " n=" << n << " " << pname(prec) << " r=" << r;
          if (n <= 4000) {
            EXPECT_EQ(cm, run_count(cpu(), pts, prec, r)) << shares << " n=" << n << " " << pname(prec) << " r=" << r;
          }
          if (prec == Precision::Float64 && n <= 4000) {
            const auto want = ref::pair_count(pts, r, prec);
            EXPECT_GE(cm, want.first);
            EXPECT_LE(cm, want.first + want.second);
          }
        }
}

TEST(MultiGpu, JoinSlabsEqualOneDeviceAndCpu) {
  REQUIRE_GPU();
  for (int shares : {2, 3, 4})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64}) {
        auto a = ref::uniform(20000, dims, 60 + dims);
        auto b = ref::clustered(15000, dims, 70 + dims);
        const double eps = dims == 2 ? 0.006 : 0.03;
        for (bool self : {true, false}) {
          const ref::Points* bp = self ? nullptr : &b;
          Ctl one;
          const auto j1 = join_with(one, a, bp, eps, prec);
          SharedCtl many(shares);
          const auto jm = join_with(many, a, bp, eps, prec);
          Ctl cctl;
          const auto jc = run_join(cpu(), a, bp, eps, prec, &cctl);
          char what[96];
          snprintf(what, sizeof what, "shares=%d d=%d %s %s", shares, dims, pname(prec), self ? "self" : "a x b");
          EXPECT_EQ(many.stats.shares, uint64_t(shares)) << what;
          EXPECT_GE(many.stats.slabs, uint64_t(shares)) << what;
          EXPECT_GT(jm.size(), 1000u) << what;
          EXPECT_TRUE(jm == j1) << what << ": slabs vs one device, " << first_diff(jm, j1);
          EXPECT_TRUE(jm == jc) << what << ": slabs vs CPU, " << first_diff(jm, jc);
          if (dims == 2 && shares == 2) check_join_vs_reference(jm, a, bp, eps, prec);
        }
      }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

// Points exactly eps apart across the slab cuts, every point in one slab (one x value), few
// distinct x values (empty slabs), one and two points.
TEST(MultiGpu, JoinSlabEdgeCases) {
  REQUIRE_GPU();
  ref::Points line;  // x = 0, eps, 2 eps, ...: neighbours exactly eps apart
  line.dims = 2;
  line.c.assign(2, {});
  const double eps = 0.125;
  for (int i = 0; i < 4000; ++i) {
    line.c[0].push_back(eps * (i % 400));
    line.c[1].push_back(eps * (i / 400));
  }
  ref::Points column = ref::uniform(3000, 2, 8);
  for (auto& x : column.c[0]) x = 0.5;
  ref::Points few = ref::uniform(5000, 3, 9);
  for (auto& x : few.c[0]) x = std::floor(x * 3) / 3;
  ref::Points single = ref::uniform(1, 2, 10), pair = same_point(2, 2);
  struct Case {
    const ref::Points* a;
    const ref::Points* b;
    double eps;
    const char* name;
  };
  const Case cases[] = {{&line, nullptr, eps, "line self"},      {&line, &column, eps, "line x column"},
                        {&column, nullptr, 0.002, "column self"}, {&column, &line, 0.4, "column x line"},
                        {&few, nullptr, 0.05, "few x self"},      {&single, nullptr, 0.1, "one point"},
                        {&pair, nullptr, 0.001, "two equal points"}, {&single, &line, 1.0, "one x line"}};
  for (const Case& c : cases)
    for (Precision prec : {Precision::Float32, Precision::Float64})
      for (int shares : {2, 4}) {
        Ctl one;
        const auto j1 = join_with(one, *c.a, c.b, c.eps, prec);
        SharedCtl many(shares);
        const auto jm = join_with(many, *c.a, c.b, c.eps, prec);
        Ctl cctl;
        const auto jc = run_join(cpu(), *c.a, c.b, c.eps, prec, &cctl);
        EXPECT_TRUE(jm == j1) << c.name << " " << pname(prec) << " " << shares << ": " << first_diff(jm, j1);
        EXPECT_TRUE(jm == jc) << c.name << " " << pname(prec) << " " << shares << ": " << first_diff(jm, jc);
      }
}

// A budget below the join's points and grid: slabs one after another on one device.
TEST(MultiGpu, JoinInSlabsUnderSmallBudget) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (bool self : {true, false}) {
      auto a = ref::uniform(400000, 2, 80);
      auto b = ref::uniform(300000, 2, 81);
      const ref::Points* bp = self ? nullptr : &b;
      const double eps = 0.002;
      Ctl one;
      const auto j1 = join_with(one, a, bp, eps, prec);
      EXPECT_EQ(one.stats.slabs, 0u);
      Ctl small;
      const uint64_t core = split::join_core_bytes(a.n(), self ? 0 : b.n(), self, 2, prec);
      small.device_memory_limit = size_t(core / 2);  // 3/8 of the points and grid, 1/8 for the banks
      cuda::reset_engine_peak_bytes();
      const auto js = join_with(small, a, bp, eps, prec);
      EXPECT_GE(small.stats.slabs, 4u) << pname(prec) << (self ? " self" : " a x b");
      // Buffers kept from sub-join to sub-join count against the budget: never above it.
      EXPECT_LE(cuda::engine_peak_bytes(), small.device_memory_limit) << pname(prec);
      EXPECT_GT(cuda::last_run().kept_hits, 0u) << pname(prec) << ": no buffer was reused";
      EXPECT_TRUE(js == j1) << pname(prec) << (self ? " self" : " a x b") << ": " << first_diff(js, j1);
      SharedCtl many(2);  // and over two emulated devices under the same limit per share
      many.device_memory_limit = 2 * small.device_memory_limit;
      cuda::reset_engine_peak_bytes();
      const auto jm = join_with(many, a, bp, eps, prec);
      EXPECT_LE(cuda::engine_peak_bytes(), many.device_memory_limit) << pname(prec);
      EXPECT_TRUE(jm == j1) << pname(prec) << (self ? " self" : " a x b") << ": " << first_diff(jm, j1);
    }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

// The join in slabs on one device: a worker thread runs the sub-joins while the calling thread
// hands their pages to the sink. The pairs arrive slab by slab (the slab that owns a pair never
// decreases along the output), equal the in-memory GPU join and the CPU engine (both checked
// against the float64 reference by the Simjoin tests), and the call keeps max_pairs; a cancel
// stops the worker and frees its device memory.
TEST(MultiGpu, JoinSlabsOnOneDeviceArriveInSlabOrder) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (bool self : {true, false}) {
      auto a = ref::uniform(200000, 2, 84);
      auto b = ref::uniform(150000, 2, 85);
      const ref::Points* bp = self ? nullptr : &b;
      const double eps = 0.003;
      char what[64];
      snprintf(what, sizeof what, "%s %s", pname(prec), self ? "self" : "a x b");
      PointsView bv;
      if (bp) bv = b.view();
      const SimjoinProblem p = make_simjoin(a.view(), bp ? &bv : nullptr, eps, prec, 0);
      const uint64_t core = split::join_core_bytes(a.n(), self ? 0 : b.n(), self, 2, prec);
      const size_t limit = size_t(core / 2);
      Ctl small;
      small.device_memory_limit = limit;
      Collect sink;
      gpu()->simjoin(p, sink, small);
      ASSERT_GE(small.stats.slabs, 4u) << what;
      EXPECT_EQ(small.stats.shares, 0u) << what;
      EXPECT_EQ(small.stats.pairs_emitted, sink.v.size()) << what;
      const split::SlabPlan plan = split::plan_slabs_for_budget(p, limit);
      ASSERT_EQ(uint64_t(plan.slabs.size()), small.stats.slabs) << what;
      const double* xa = p.a.coord[plan.axis];
      auto slab_of = [&](uint32_t i) {
        return size_t(std::upper_bound(plan.cuts.begin(), plan.cuts.end(), xa[i]) - plan.cuts.begin());
      };
      size_t last = 0, back = 0;
      for (const PairRecord& r : sink.v) {
        const size_t s = self ? std::min(slab_of(r.i), slab_of(r.j)) : slab_of(r.i);
        if (s < last) ++back;
        last = std::max(last, s);
      }
      EXPECT_EQ(back, 0u) << what << ": pairs of a slab after pairs of a later slab";
      EXPECT_EQ(last, plan.slabs.size() - 1) << what << ": no pair of the last slab";
      const auto js = normalized(sink.v, self);
      ASSERT_GT(js.size(), 10000u) << what;
      Ctl one;
      const auto j1 = join_with(one, a, bp, eps, prec);
      EXPECT_EQ(one.stats.slabs, 0u) << what;
      EXPECT_TRUE(js == j1) << what << ": slabs vs in memory, " << first_diff(js, j1);
      Ctl cctl;
      const auto jc = run_join(cpu(), a, bp, eps, prec, &cctl);
      EXPECT_TRUE(js == jc) << what << ": slabs vs CPU, " << first_diff(js, jc);
      Ctl over;
      over.device_memory_limit = limit;
      try {
        (void)join_with(over, a, bp, eps, prec, js.size() - 1);
        ADD_FAILURE() << what << ": no error past max_pairs";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::ProgramLimit) << what << ": " << e.what();
      }
      Ctl exact;
      exact.device_memory_limit = limit;
      EXPECT_EQ(join_with(exact, a, bp, eps, prec, js.size()).size(), js.size()) << what;
    }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
  auto big = ref::uniform(3000000, 2, 86);
  const uint64_t big_core = split::join_core_bytes(big.n(), 0, true, 2, Precision::Float32);
  expect_cancel([&](Control& c) {
    c.device_memory_limit = size_t(big_core / 4);
    (void)run_join(gpu(), big, nullptr, 0.003, Precision::Float32, &c);
  }, "join in slabs on one device");
}

TEST(MultiGpu, JoinSharesKeepMaxPairs) {
  REQUIRE_GPU();
  auto a = ref::uniform(20000, 2, 90);
  Ctl one;
  const auto all = join_with(one, a, nullptr, 0.01, Precision::Float32);
  ASSERT_GT(all.size(), 100u);
  SharedCtl many(3);
  try {
    (void)join_with(many, a, nullptr, 0.01, Precision::Float32, all.size() - 1);
    ADD_FAILURE() << "no error past max_pairs";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ProgramLimit) << e.what();
  }
  SharedCtl exact(3);
  EXPECT_EQ(join_with(exact, a, nullptr, 0.01, Precision::Float32, all.size()).size(), all.size());
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
}

TEST(MultiGpu, UnknownDeviceIsAnError) {
  REQUIRE_GPU();
  auto pts = ref::uniform(1000, 3, 1);
  const SdhProblem p = make_sdh(pts.view(), 10, 0, false, Precision::Float32);
  Ctl ctl;
  ctl.devices = {0, 4096};
  try {
    (void)gpu()->sdh(p, ctl);
    ADD_FAILURE() << "no error for device 4096";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidParameter);
    EXPECT_NE(std::string(e.what()).find("4096"), std::string::npos) << e.what();
  }
}

TEST(MultiGpu, CancelStopsEveryShare) {
  REQUIRE_GPU();
  auto pts = ref::uniform(3000000, 3, 2);
  const SdhProblem p = make_sdh(pts.view(), 500, 0, false, Precision::Float64);
  const std::vector<int> saved = forced().devices;
  forced().devices = {0, 0, 0};
  expect_cancel([&](Control& c) {
    c.sdh_method = SdhMethod::Brute;
    (void)gpu()->sdh(p, c);
  }, "sdh over 3 shares");
  auto a = ref::uniform(4000000, 2, 3);
  expect_cancel([&](Control& c) { (void)run_join(gpu(), a, nullptr, 0.01, Precision::Float32, &c); },
                "join over 3 shares");
  forced().devices = saved;
}
