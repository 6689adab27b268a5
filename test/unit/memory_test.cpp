// Memory of the CPU engine is bounded by the data, not by the settings' maxima: private SDH
// histograms only as far as the pairs warrant and within kCpuSdhPrivateBytes, workers never
// more than the work items, join result pages allocated on first use and grown with the
// result, within kCpuResultBytes whatever the page size and thread count.
#include <gtest/gtest.h>

#include <chrono>

#include "common/metamorphic.h"
#include "core/cpu_kernels.h"

using namespace gpu2bs;

namespace {

TEST(MemoryBound, SdhPrivatization) {
  // Three rows (3 pairs), 2^20 buckets, 1024 threads: one worker, one copy (8 MiB).
  SdhPrivatization pv = sdh_privatization(1 << 20, 3, 1024, 1);
  EXPECT_EQ(pv.workers, 1);
  EXPECT_EQ(pv.copies, 1);
  // Many pairs: as many workers as the budget allows.
  pv = sdh_privatization(1 << 20, uint64_t(1) << 40, 1024, 1000000);
  EXPECT_EQ(size_t(pv.workers) * (size_t(8) << 20), kCpuSdhPrivateBytes);
  // Small histograms on lots of work: every thread, 4 copies.
  pv = sdh_privatization(500, uint64_t(1) << 40, 16, 1000000);
  EXPECT_EQ(pv.workers, 16);
  EXPECT_EQ(pv.copies, 4);
  // The bound holds everywhere.
  for (int nb : {1, 7, 500, 1024, 1025, 65536, 1 << 20})
    for (uint64_t pairs : {uint64_t(0), uint64_t(3), uint64_t(1000), uint64_t(1) << 30, uint64_t(1) << 44})
      for (int threads : {1, 2, 16, 1024})
        for (size_t items : {size_t(1), size_t(10), size_t(1) << 20}) {
          pv = sdh_privatization(nb, pairs, threads, items);
          const size_t bytes = size_t(pv.workers) * size_t(pv.copies) * size_t(nb) * 8;
          EXPECT_LE(bytes, std::max(kCpuSdhPrivateBytes, size_t(nb) * 8)) << nb << " " << pairs;
          EXPECT_GE(pv.workers, 1);
          EXPECT_LE(pv.workers, std::min<int>(threads, int(std::min<size_t>(items, 1 << 30))));
          if (pairs >= uint64_t(nb)) {
            EXPECT_LE(uint64_t(pv.workers), pairs / uint64_t(nb));
          }
        }
}

TEST(MemoryBound, JoinPages) {
  // The settings' extremes: 2^24-pair pages, 1024 workers, 4 queued pages each.
  for (int workers : {1, 2, 16, 1024})
    for (size_t page : {size_t(0), size_t(64), size_t(16384), size_t(1) << 24}) {
      const size_t queue = size_t(4) * size_t(workers);
      const size_t pp = join_page_pairs(page, workers, queue);
      EXPECT_GE(pp, 64u);
      EXPECT_LE(pp, std::max<size_t>(page, 64));
      EXPECT_LE(pp * sizeof(PairRecord) * (size_t(workers) + queue),
                std::max(kCpuResultBytes, 64 * sizeof(PairRecord) * (size_t(workers) + queue)));
    }
  // The default (16384 pairs, 2 workers) is unchanged.
  EXPECT_EQ(join_page_pairs(16384, 2, 8), 16384u);
}

// The settings' extremes on tiny data run fast and give the same answers.
TEST(MemoryBound, ExtremeSettingsOnTinyData) {
  ref::Points p = ref::uniform(12, 2, 5);
  auto eng = make_cpu_engine();
  Control base;
  base.threads = 2;
  const auto want_h = eng->sdh(make_sdh(p.view(), 1 << 20, 0, false, Precision::Float32), base);
  meta::Case c;
  c.dims = 2;
  c.prec = Precision::Float32;
  c.eps = 10;  // every pair: 66
  c.nb = 4;
  c.width = 0.5;
  c.s = p;
  const meta::Outcome want = meta::run(*eng, c, p, 2);
  ASSERT_EQ(want.join.size(), 66u);
  const auto t0 = std::chrono::steady_clock::now();
  Control ctl;
  ctl.threads = 1024;
  ctl.page_pairs = size_t(1) << 24;
  EXPECT_EQ(eng->sdh(make_sdh(p.view(), 1 << 20, 0, false, Precision::Float32), ctl), want_h);
  const meta::Outcome got = meta::run(*eng, c, p, 1024);
  EXPECT_EQ(got.join, want.join);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.hist, want.hist);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("2^20-bucket SDH, 1024 threads and 2^24-pair pages on 12 points: %.1f ms\n", s * 1e3);
}

}  // namespace
