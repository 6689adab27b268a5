// Inputs larger than the device budget: the SDH and the pair count by block pairs (i <= j)
// against the in-memory path and the CPU engine, bit for bit (integer counts: equal), for block
// counts from 4 to 13, a last block shorter than the others, both precisions, 2-D and 3-D;
// and the error when not even three of the smallest blocks fit.
#include "core/admission.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// A budget that leaves blocks of `block` points for this problem (three resident blocks).
size_t budget_for_blocks(size_t block, int dims, Precision prec, int nb) {
  const size_t per = prec == Precision::Float32 ? 4 : 8;
  return 3 * block * per * size_t(dims) + size_t(nb) * 16 + admission::kFixedMargin;
}

TEST(Blocks, SdhEqualsInMemoryAndCpu) {
  REQUIRE_GPU();
  for (size_t n : {size_t(50000), size_t(100003)})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64})
        for (int nb : {10, 500}) {
          auto pts = ref::uniform(n, dims, 7 + n + dims, -3, 5);
          const SdhProblem p = make_sdh(pts.view(), nb, 0, false, prec);
          Ctl mem;
          mem.sdh_method = SdhMethod::Brute;
          auto g = gpu()->sdh(p, mem);
          EXPECT_EQ(mem.stats.block_points, 0u);
          Ctl blk;
          blk.sdh_method = SdhMethod::Brute;
          blk.device_memory_limit = budget_for_blocks(admission::kBlockQuantum, dims, prec, nb);
          auto b = gpu()->sdh(p, blk);
          auto c = run_sdh(cpu(), pts, prec, nb, 0);
          char what[96];
          snprintf(what, sizeof what, "n=%zu d=%d %s nb=%d", n, dims, pname(prec), nb);
          const uint64_t k = (n + admission::kBlockQuantum - 1) / admission::kBlockQuantum;
          EXPECT_EQ(blk.stats.block_points, admission::kBlockQuantum) << what;
          EXPECT_EQ(blk.stats.block_pairs, k * (k + 1) / 2) << what;
          EXPECT_TRUE(b == g) << what << ": blocks vs in memory, " << first_diff(b, g);
          EXPECT_TRUE(b == c) << what << ": blocks vs CPU, " << first_diff(b, c);
          uint64_t total = 0;
          for (auto v : b) total += v;
          EXPECT_EQ(total, uint64_t(n) * (n - 1) / 2) << what;
        }
}

TEST(Blocks, SdhExplicitWidthAndReference) {
  REQUIRE_GPU();
  const size_t n = 30000;
  auto pts = ref::uniform(n, 3, 99, 0, 1);
  const double width = 0.01;  // about half the pairs beyond the last of 100 buckets
  const SdhProblem p = make_sdh(pts.view(), 100, width, true, Precision::Float32);
  Ctl blk;
  blk.sdh_method = SdhMethod::Brute;
  blk.device_memory_limit = budget_for_blocks(admission::kBlockQuantum, 3, Precision::Float32, 100);
  auto b = gpu()->sdh(p, blk);
  EXPECT_GT(blk.stats.block_pairs, 1u);
  auto c = run_sdh(cpu(), pts, Precision::Float32, 100, width);
  EXPECT_TRUE(b == c) << first_diff(b, c);
  SdhParams sp = make_sdh_params(100, width, true, compute_bounds(pts.view()), Precision::Float32);
  auto want = ref::sdh(pts, sp, Precision::Float32);
  EXPECT_LE(ref::histogram_disagreement(b, want), 2 * want.near);
}

TEST(Blocks, PairCountEqualsInMemoryAndCpu) {
  REQUIRE_GPU();
  for (size_t n : {size_t(70001), size_t(150000)})
    for (int dims : {2, 3})
      for (Precision prec : {Precision::Float32, Precision::Float64}) {
        auto pts = ref::uniform(n, dims, 3 + n, 0, 1);
        const double r = 0.05;
        const PairCountProblem p = make_pair_count(pts.view(), r, prec);
        Ctl mem;
        mem.sdh_method = SdhMethod::Brute;
        mem.overrides.count_path = 1;
        const uint64_t g = gpu()->pair_count(p, mem);
        Ctl blk;
        blk.sdh_method = SdhMethod::Brute;
        blk.device_memory_limit = budget_for_blocks(2 * admission::kBlockQuantum, dims, prec, 0);
        const uint64_t b = gpu()->pair_count(p, blk);
        const uint64_t c = run_count(cpu(), pts, prec, r);
        char what[96];
        snprintf(what, sizeof what, "n=%zu d=%d %s", n, dims, pname(prec));
        EXPECT_EQ(blk.stats.block_points, 2 * admission::kBlockQuantum) << what;
        EXPECT_EQ(b, g) << what;
        EXPECT_EQ(b, c) << what;
      }
}

TEST(Blocks, BelowThreeBlocksIsAnError) {
  REQUIRE_GPU();
  auto pts = ref::uniform(100000, 3, 5, 0, 1);
  const SdhProblem p = make_sdh(pts.view(), 500, 0, false, Precision::Float32);
  Ctl ctl;
  ctl.sdh_method = SdhMethod::Brute;
  ctl.device_memory_limit = size_t(admission::tiles_block_min_bytes(100000, 3, Precision::Float32, 500)) - 1;
  try {
    (void)gpu()->sdh(p, ctl);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_STREQ(e.what(), "GPU memory limit exceeded");
  }
}

}  // namespace
