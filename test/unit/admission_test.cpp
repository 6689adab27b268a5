// Device-memory admission accounting (src/core/admission.h): grants, waits in arrival order,
// block grants, refusals, releases, and the invariants of a random schedule of many backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/admission.h"

using namespace gpu2bs;
using namespace gpu2bs::admission;

namespace {

// A table of `n` slots in its own storage.
struct Holder {
  std::vector<unsigned char> mem;
  Table* t;
  Holder(uint32_t n, uint64_t total) : mem(table_bytes(n)), t(reinterpret_cast<Table*>(mem.data())) {
    init(t, n, total);
  }
};

// Sum of the granted bytes of every slot.
uint64_t granted_sum(const Table* t) {
  uint64_t s = 0;
  for (uint32_t k = 0; k < t->nslots; ++k)
    if (t->slots[k].state == kGranted) s += t->slots[k].granted;
  return s;
}

}  // namespace

TEST(Admission, GrantsWhatFits) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 600, 600, 0);
  Outcome o = decide(h.t, 0);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 600u);
  EXPECT_EQ(h.t->reserved, 600u);
  enqueue(h.t, 1, 11, 400, 400, 0);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Grant);
  EXPECT_EQ(h.t->reserved, 1000u);
  EXPECT_EQ(h.t->peak, 1000u);
}

TEST(Admission, WaitsUntilReleased) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 700, 700, 0);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 500, 500, 1);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Wait);
  EXPECT_EQ(h.t->slots[1].state, uint32_t(kWaiting));
  EXPECT_EQ(release(h.t, 0), 700u);
  EXPECT_EQ(h.t->reserved, 0u);
  Outcome o = decide(h.t, 1);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 500u);
}

TEST(Admission, FirstComeFirstServed) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 800, 800, 0);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 900, 900, 1);  // older waiter, does not fit
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Wait);
  enqueue(h.t, 2, 12, 100, 100, 2);  // would fit, but an older request waits
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);
  release(h.t, 0);
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);  // still behind slot 1
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Grant);
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Grant);
  EXPECT_EQ(h.t->reserved, 1000u);
}

TEST(Admission, BlockGrantTakesWhatIsFree) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 700, 700, 0);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 2000, 200, 1);  // more than the budget in memory, 200 in blocks
  Outcome o = decide(h.t, 1);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 300u);
  EXPECT_EQ(h.t->block_grants, 1u);
  EXPECT_EQ(h.t->reserved, 1000u);
  enqueue(h.t, 2, 12, 500, 400, 2);  // needs 400 at least: waits
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);
  release(h.t, 1);
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);  // 300 free, 400 needed
  release(h.t, 0);
  o = decide(h.t, 2);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 500u);
}

TEST(Admission, RefusesWhatCanNeverFit) {
  Holder h(2, 1000);
  enqueue(h.t, 0, 10, 5000, 1001, 0);
  EXPECT_EQ(decide(h.t, 0).decision, Decision::Refuse);
  EXPECT_EQ(h.t->slots[0].state, uint32_t(kFree));
  EXPECT_EQ(h.t->reserved, 0u);
  // a refused request does not hold up later ones
  enqueue(h.t, 1, 11, 100, 100, 1);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Grant);
}

TEST(Admission, ReleaseOfWaiterAndFreeSlot) {
  Holder h(3, 100);
  enqueue(h.t, 0, 10, 100, 100, 0);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 50, 50, 1);
  ASSERT_EQ(decide(h.t, 1).decision, Decision::Wait);
  EXPECT_EQ(release(h.t, 1), 0u);  // a cancelled waiter gives back nothing
  EXPECT_EQ(release(h.t, 2), 0u);  // a free slot
  EXPECT_EQ(h.t->reserved, 100u);
  enqueue(h.t, 2, 12, 10, 10, 2);  // the cancelled waiter no longer blocks the queue
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);  // budget full
  release(h.t, 0);
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Grant);
}

TEST(Admission, ShrinkingBudgetKeepsGrants) {
  Holder h(2, 1000);
  enqueue(h.t, 0, 10, 800, 800, 0);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  set_total(h.t, 500);
  enqueue(h.t, 1, 11, 100, 100, 1);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Wait);  // reserved 800 > total 500: nothing free
  release(h.t, 0);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Grant);
}

// Many backends asking, waiting and releasing in random order: the reserved bytes always equal
// the sum of the grants and never exceed the budget, every grant is between min and want, and
// every request is eventually granted.
TEST(Admission, RandomScheduleInvariants) {
  const uint32_t n = 32;
  const uint64_t total = 10000;
  Holder h(n, total);
  std::mt19937_64 rng(12345);
  std::vector<int> done(n, 0);
  uint64_t grants = 0;
  for (int step = 0; step < 200000; ++step) {
    const uint32_t s = uint32_t(rng() % n);
    Slot& e = h.t->slots[s];
    if (e.state == kFree) {
      const uint64_t want = 1 + rng() % 12000;
      const uint64_t min = (rng() % 2) ? want : 1 + rng() % std::min<uint64_t>(want, 3000);
      enqueue(h.t, s, int32_t(100 + s), want, min, step);
      const Outcome o = decide(h.t, s);
      if (o.decision == Decision::Refuse) {
        ASSERT_GT(std::min(min, want), total);
        continue;
      }
    } else if (e.state == kWaiting) {
      const Outcome o = decide(h.t, s);
      if (o.decision == Decision::Grant) {
        ASSERT_GE(o.bytes, e.min);
        ASSERT_LE(o.bytes, e.want);
        ++grants;
      }
    } else {
      release(h.t, s);
      ++done[s];
    }
    ASSERT_EQ(h.t->reserved, granted_sum(h.t));
    ASSERT_LE(h.t->reserved, total);
  }
  // drain: release every grant, then every waiter is granted in turn
  for (int round = 0; round < int(n) * 2; ++round)
    for (uint32_t s = 0; s < n; ++s) {
      if (h.t->slots[s].state == kGranted) release(h.t, s);
      else if (h.t->slots[s].state == kWaiting) (void)decide(h.t, s);
    }
  for (uint32_t s = 0; s < n; ++s) EXPECT_EQ(h.t->slots[s].state, uint32_t(kFree));
  EXPECT_EQ(h.t->reserved, 0u);
  EXPECT_GT(grants, 1000u);
  EXPECT_LE(h.t->peak, total);
}

// Bytes granted on device d: the sum over the granted slots whose mask holds d.
uint64_t device_sum(const Table* t, uint32_t d) {
  uint64_t s = 0;
  for (uint32_t k = 0; k < t->nslots; ++k)
    if (t->slots[k].state == kGranted && (t->slots[k].devices >> d & 1)) s += t->slots[k].granted;
  return s;
}

TEST(Admission, DeviceMask) {
  const int two[] = {0, 1};
  const int one[] = {3};
  const int far[] = {1, 65};  // 65 shares device 1's account
  EXPECT_EQ(device_mask(two, 2), 3u);
  EXPECT_EQ(device_mask(one, 1), 8u);
  EXPECT_EQ(device_mask(far, 2), 2u);
  EXPECT_EQ(device_mask(nullptr, 0), 0u);
}

// Each device has the whole budget; a query on two devices reserves on both.
TEST(Admission, DevicesAccountSeparately) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 800, 800, 0, 1);  // device 0
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 800, 800, 1, 2);  // device 1: its own budget
  ASSERT_EQ(decide(h.t, 1).decision, Decision::Grant);
  EXPECT_EQ(h.t->dev_reserved[0], 800u);
  EXPECT_EQ(h.t->dev_reserved[1], 800u);
  EXPECT_EQ(h.t->reserved, 800u);  // the fullest device
  enqueue(h.t, 2, 12, 300, 300, 2, 3);  // devices 0 and 1: 200 free on each
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);
  release(h.t, 0);
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Wait);  // device 1 still has 200 free only
  release(h.t, 1);
  const Outcome o = decide(h.t, 2);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 300u);
  EXPECT_EQ(h.t->dev_reserved[0], 300u);
  EXPECT_EQ(h.t->dev_reserved[1], 300u);
  EXPECT_EQ(h.t->dev_reserved[2], 0u);
  EXPECT_EQ(h.t->dev_peak[0], 800u);
  EXPECT_EQ(release(h.t, 2), 300u);
  EXPECT_EQ(h.t->dev_reserved[0], 0u);
  EXPECT_EQ(h.t->dev_reserved[1], 0u);
  EXPECT_EQ(h.t->reserved, 0u);
  EXPECT_EQ(h.t->peak, 800u);
}

// An older waiter holds up only the requests that share one of its devices.
TEST(Admission, FirstComeFirstServedPerDevice) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 900, 900, 0, 1);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 500, 500, 1, 1);  // device 0: waits
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Wait);
  enqueue(h.t, 2, 12, 100, 100, 2, 2);  // device 1: not behind slot 1
  EXPECT_EQ(decide(h.t, 2).decision, Decision::Grant);
  enqueue(h.t, 3, 13, 50, 50, 3, 3);  // devices 0 and 1: behind slot 1 (device 0)
  EXPECT_EQ(decide(h.t, 3).decision, Decision::Wait);
  release(h.t, 0);
  EXPECT_EQ(decide(h.t, 3).decision, Decision::Wait);
  EXPECT_EQ(decide(h.t, 1).decision, Decision::Grant);
  EXPECT_EQ(decide(h.t, 3).decision, Decision::Grant);
  EXPECT_EQ(h.t->dev_reserved[0], 550u);
  EXPECT_EQ(h.t->dev_reserved[1], 150u);
}

// A block grant on several devices takes what the fullest of them has free.
TEST(Admission, BlockGrantOnSeveralDevices) {
  Holder h(4, 1000);
  enqueue(h.t, 0, 10, 300, 300, 0, 1);
  ASSERT_EQ(decide(h.t, 0).decision, Decision::Grant);
  enqueue(h.t, 1, 11, 600, 600, 1, 2);
  ASSERT_EQ(decide(h.t, 1).decision, Decision::Grant);
  enqueue(h.t, 2, 12, 2000, 100, 2, 3);
  const Outcome o = decide(h.t, 2);
  EXPECT_EQ(o.decision, Decision::Grant);
  EXPECT_EQ(o.bytes, 400u);  // device 1 has 400 free, device 0 700
  EXPECT_EQ(h.t->dev_reserved[0], 700u);
  EXPECT_EQ(h.t->dev_reserved[1], 1000u);
  EXPECT_EQ(h.t->block_grants, 1u);
}

// Random requests over four devices: every device's reserved bytes equal the sum of the grants
// on it and never exceed the budget; `reserved` is the fullest device's; everything drains.
TEST(Admission, RandomScheduleInvariantsPerDevice) {
  const uint32_t n = 24;
  const uint64_t total = 5000;
  Holder h(n, total);
  std::mt19937_64 rng(777);
  uint64_t grants = 0;
  for (int step = 0; step < 100000; ++step) {
    const uint32_t s = uint32_t(rng() % n);
    Slot& e = h.t->slots[s];
    if (e.state == kFree) {
      const uint64_t want = 1 + rng() % 6000;
      const uint64_t min = (rng() % 2) ? want : 1 + rng() % std::min<uint64_t>(want, 2000);
      const uint64_t devs = 1 + rng() % 15;  // a non-empty subset of devices 0..3
      enqueue(h.t, s, int32_t(100 + s), want, min, step, devs);
      (void)decide(h.t, s);
    } else if (e.state == kWaiting) {
      if (decide(h.t, s).decision == Decision::Grant) ++grants;
    } else {
      release(h.t, s);
    }
    uint64_t fullest = 0;
    for (uint32_t d = 0; d < 4; ++d) {
      ASSERT_EQ(h.t->dev_reserved[d], device_sum(h.t, d)) << "device " << d;
      ASSERT_LE(h.t->dev_reserved[d], total);
      fullest = std::max(fullest, h.t->dev_reserved[d]);
    }
    ASSERT_EQ(h.t->reserved, fullest);
  }
  for (int round = 0; round < int(n) * 2; ++round)
    for (uint32_t s = 0; s < n; ++s) {
      if (h.t->slots[s].state == kGranted) release(h.t, s);
      else if (h.t->slots[s].state == kWaiting) (void)decide(h.t, s);
    }
  for (uint32_t s = 0; s < n; ++s) EXPECT_EQ(h.t->slots[s].state, uint32_t(kFree));
  for (uint32_t d = 0; d < 4; ++d) EXPECT_EQ(h.t->dev_reserved[d], 0u);
  EXPECT_GT(grants, 500u);
  EXPECT_LE(h.t->peak, total);
}

TEST(Admission, BlockSizes) {
  // 4,194,304 3-D float32 points, 500 buckets: 48 MiB of points
  const uint64_t n = 4194304;
  const uint64_t need = tiles_bytes(n, 3, Precision::Float32, 500);
  EXPECT_EQ(need, n * 12 + 500 * 16 + kFixedMargin);
  const uint64_t bp = block_points(need / 8, 3, Precision::Float32, 500);
  EXPECT_GT(bp, 0u);
  EXPECT_EQ(bp % kBlockQuantum, 0u);
  // three resident blocks and the side buffers fit in the budget
  EXPECT_LE(3 * bp * 12 + 500 * 16 + kFixedMargin, need / 8);
  EXPECT_EQ(block_points(tiles_block_min_bytes(n, 3, Precision::Float32, 500), 3,
                         Precision::Float32, 500),
            kBlockQuantum);
  EXPECT_EQ(block_points(tiles_block_min_bytes(n, 3, Precision::Float32, 500) - 1, 3,
                         Precision::Float32, 500),
            0u);
  // float64: twice the bytes per coordinate
  EXPECT_EQ(tiles_bytes(1000, 2, Precision::Float64, 0), 2 * 8192 + kFixedMargin);
  // a small problem needs no more for blocks than in memory
  EXPECT_EQ(tiles_block_min_bytes(100, 3, Precision::Float32, 10),
            tiles_bytes(100, 3, Precision::Float32, 10));
}
