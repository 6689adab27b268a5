// compute_bounds against a plain sequential scan, bit for bit: extremes, signed zeros and
// duplicates, sizes around the segment count, one and two point sets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/problem.h"

using namespace gpu2bs;

namespace {

// The sequential bounds of `sets` (first of equal extremes kept), as compute_bounds defines them.
Bounds sequential_bounds(const std::vector<const PointsView*>& sets) {
  Bounds box;
  box.dims = sets[0]->dims;
  for (int k = 0; k < box.dims; ++k) {
    box.lo[k] = std::numeric_limits<double>::infinity();
    box.hi[k] = -std::numeric_limits<double>::infinity();
  }
  for (const PointsView* p : sets)
    for (int k = 0; k < p->dims; ++k)
      for (size_t i = 0; i < p->n; ++i) {
        const double v = p->coord[k][i];
        box.lo[k] = v < box.lo[k] ? v : box.lo[k];
        box.hi[k] = v > box.hi[k] ? v : box.hi[k];
      }
  for (int k = 0; k < box.dims; ++k)
    if (box.lo[k] > box.hi[k]) box.lo[k] = box.hi[k] = 0;
  return box;
}

// Whether two doubles have the same bits.
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Random coordinates drawn from a few values including -0.0 and +0.0, so extremes repeat.
std::vector<double> few_values(size_t n, std::mt19937_64& rng) {
  const double vals[] = {-0.0, 0.0, -1.5, 2.5, -1.5, 2.5, 0.25};
  std::vector<double> v(n);
  for (auto& x : v) x = vals[rng() % 7];
  return v;
}

}  // namespace

TEST(Bounds, SegmentedScanIsTheSequentialScanBitForBit) {
  std::mt19937_64 rng(7);
  for (size_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int dims = 2 + trial % 3;
      std::vector<std::vector<double>> a(dims), b(dims);
      PointsView va, vb;
      va.dims = vb.dims = dims;
      va.n = n;
      vb.n = (n * 3) % 37;
      for (int k = 0; k < dims; ++k) {
        if (trial % 2) {
          a[k] = few_values(n, rng);
          b[k] = few_values(vb.n, rng);
        } else {
          std::uniform_real_distribution<double> u(-1, 1);
          a[k].resize(n);
          b[k].resize(vb.n);
          for (auto& x : a[k]) x = (rng() % 5 == 0) ? (rng() % 2 ? 0.0 : -0.0) : u(rng);
          for (auto& x : b[k]) x = u(rng);
        }
        va.coord[k] = a[k].data();
        vb.coord[k] = b[k].data();
      }
      const Bounds got1 = compute_bounds(va);
      const Bounds want1 = sequential_bounds({&va});
      const Bounds got2 = compute_bounds(va, &vb);
      const Bounds want2 = sequential_bounds({&va, &vb});
      for (int k = 0; k < dims; ++k) {
        EXPECT_TRUE(same_bits(got1.lo[k], want1.lo[k])) << "n=" << n << " k=" << k;
        EXPECT_TRUE(same_bits(got1.hi[k], want1.hi[k])) << "n=" << n << " k=" << k;
        EXPECT_TRUE(same_bits(got2.lo[k], want2.lo[k])) << "n=" << n << " k=" << k;
        EXPECT_TRUE(same_bits(got2.hi[k], want2.hi[k])) << "n=" << n << " k=" << k;
      }
    }
  }
}

// Chunks of 2^20 coordinates scanned on several threads: the same box as the sequential scan
// bit for bit, for sizes around the chunk boundaries and with zeros of both signs beside the
// extremes.
TEST(Bounds, ThreadedChunksAreTheSequentialScanBitForBit) {
  std::mt19937_64 rng(11);
  const size_t chunk = size_t(1) << 20;
  for (size_t n : {chunk - 1, chunk, chunk + 1, 2 * chunk + 3, 5 * chunk / 2}) {
    for (int trial = 0; trial < 2; ++trial) {
      const int dims = 2 + trial;
      std::vector<std::vector<double>> a(dims), b(dims);
      PointsView va, vb;
      va.dims = vb.dims = dims;
      va.n = n;
      vb.n = chunk + 7;
      for (int k = 0; k < dims; ++k) {
        a[k] = few_values(n, rng);
        b[k] = few_values(vb.n, rng);
        if (trial) {  // the extremes once each, in the last chunk, beside zeros of both signs
          std::uniform_real_distribution<double> u(-1, 1);
          for (auto& x : a[k]) x = rng() % 3 == 0 ? (rng() % 2 ? 0.0 : -0.0) : u(rng);
          a[k][n - 2] = -7.0;
          a[k][n - 1] = 9.0;
        }
        va.coord[k] = a[k].data();
        vb.coord[k] = b[k].data();
      }
      const Bounds want1 = sequential_bounds({&va});
      const Bounds want2 = sequential_bounds({&va, &vb});
      for (int threads : {1, 2, 3, 8}) {
        Control ctl;
        ctl.threads = threads;
        const Bounds got1 = compute_bounds(va, nullptr, &ctl);
        const Bounds got2 = compute_bounds(va, &vb, &ctl);
        for (int k = 0; k < dims; ++k) {
          EXPECT_TRUE(same_bits(got1.lo[k], want1.lo[k])) << "n=" << n << " t=" << threads;
          EXPECT_TRUE(same_bits(got1.hi[k], want1.hi[k])) << "n=" << n << " t=" << threads;
          EXPECT_TRUE(same_bits(got2.lo[k], want2.lo[k])) << "n=" << n << " t=" << threads;
          EXPECT_TRUE(same_bits(got2.hi[k], want2.hi[k])) << "n=" << n << " t=" << threads;
        }
      }
    }
  }
}

// Equal extremes in different chunks: the box takes the first one in scan order, so zeros of
// both signs as the minimum (all values >= 0) or the maximum (all values <= 0) keep the sign of
// the first zero, whichever chunk holds it and however many threads merge the chunks.
TEST(Bounds, ThreadedChunksKeepTheFirstOfEqualExtremes) {
  const size_t chunk = size_t(1) << 20;
  const size_t n = 3 * chunk + 5;
  for (int first_negative = 0; first_negative < 2; ++first_negative) {
    for (int side = 0; side < 2; ++side) {  // 0: zeros are the minimum, 1: the maximum
      std::vector<double> x(n, side ? -1.0 : 1.0);
      const double z1 = first_negative ? -0.0 : 0.0, z2 = first_negative ? 0.0 : -0.0;
      x[chunk / 2] = z1;              // the first zero, in chunk 0
      x[chunk + 3] = z2;              // the other sign, in chunk 1
      x[2 * chunk + 9] = z2;          // and in chunk 2
      PointsView v;
      v.dims = 1;
      v.n = n;
      v.coord[0] = x.data();
      const Bounds want = sequential_bounds({&v});
      ASSERT_TRUE(same_bits(side ? want.hi[0] : want.lo[0], z1));
      for (int threads : {1, 2, 3, 8}) {
        Control ctl;
        ctl.threads = threads;
        const Bounds got = compute_bounds(v, nullptr, &ctl);
        EXPECT_TRUE(same_bits(got.lo[0], want.lo[0])) << "t=" << threads << " side=" << side;
        EXPECT_TRUE(same_bits(got.hi[0], want.hi[0])) << "t=" << threads << " side=" << side;
      }
    }
  }
}
