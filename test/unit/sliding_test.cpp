// CPU in-place data sliding (core/sliding.h) against the standard library: select (copy_if),
// remove_if, compaction, unique, stable_partition, on random inputs of 4-, 8- and 16-byte
// elements, empty, one element, all kept, none kept, sizes around the chunk size, 1 and 4 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/engine.h"
#include "core/sliding.h"

namespace gpu2bs {
namespace {

// Bitwise comparison of two arrays' first n elements.
template <typename T>
bool same(const std::vector<T>& a, const std::vector<T>& b, size_t n) {
  return a.size() >= n && b.size() >= n &&
         (n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(T)) == 0);
}

// Random elements with values in [0, range) (runs of equal values when range is small).
template <typename T>
std::vector<T> random_vec(size_t n, uint32_t range, uint64_t seed);

template <>
std::vector<uint32_t> random_vec<uint32_t>(size_t n, uint32_t range, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = uint32_t(g() % range);
  return v;
}
template <>
std::vector<double> random_vec<double>(size_t n, uint32_t range, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = double(g() % range) * 0.5;
  return v;
}
template <>
std::vector<PairRecord> random_vec<PairRecord>(size_t n, uint32_t range, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<PairRecord> v(n);
  for (size_t k = 0; k < n; ++k) {
    v[k].i = uint32_t(g() % range);
    v[k].j = uint32_t(k);  // distinct records, so stability is visible
    v[k].dist = double(g() % 1000) / 1000.0;
  }
  return v;
}

// The key the predicates look at.
uint32_t key(uint32_t x) { return x; }
uint32_t key(double x) { return uint32_t(x * 2); }
uint32_t key(const PairRecord& r) { return r.i; }

// Equality of keys (unique on PairRecord keeps the first record of each run of equal i).
struct KeyEq {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return key(a) == key(b);
  }
};

template <typename T>
void check_all(size_t n, uint32_t range, uint32_t keep_below, int threads, uint64_t seed) {
  Control ctl;
  ctl.threads = threads;
  const auto in = random_vec<T>(n, range, seed);
  auto keep = [&](const T& x) { return key(x) < keep_below; };
  const std::string tag = "n=" + std::to_string(n) + " range=" + std::to_string(range) +
                          " keep<" + std::to_string(keep_below) + " threads=" +
                          std::to_string(threads) + " size=" + std::to_string(sizeof(T));
  {  // select = copy_if
    std::vector<T> want;
    std::copy_if(in.begin(), in.end(), std::back_inserter(want), keep);
    auto d = in;
    const size_t k = sliding::select_inplace(d.data(), n, keep, &ctl);
    EXPECT_EQ(k, want.size()) << tag;
    EXPECT_TRUE(same(d, want, want.size())) << "select " << tag;
  }
  {  // remove_if
    auto want = in;
    const size_t wn = size_t(std::remove_if(want.begin(), want.end(), keep) - want.begin());
    auto d = in;
    const size_t k = sliding::remove_if_inplace(d.data(), n, keep, &ctl);
    EXPECT_EQ(k, wn) << tag;
    EXPECT_TRUE(same(d, want, wn)) << "remove_if " << tag;
  }
  {  // compaction: remove the elements equal to the first one
    if (n) {
      const T v = in[0];
      std::vector<T> want;
      for (const T& x : in)
        if (std::memcmp(&x, &v, sizeof(T)) != 0) want.push_back(x);
      auto d = in;
      const size_t k = sliding::compact_inplace(d.data(), n, v, &ctl);
      EXPECT_EQ(k, want.size()) << tag;
      EXPECT_TRUE(same(d, want, want.size())) << "compact " << tag;
    }
  }
  {  // unique
    auto want = in;
    const size_t wn = size_t(std::unique(want.begin(), want.end(), KeyEq()) - want.begin());
    auto d = in;
    const size_t k = sliding::unique_inplace(d.data(), n, KeyEq(), &ctl);
    EXPECT_EQ(k, wn) << tag;
    EXPECT_TRUE(same(d, want, wn)) << "unique " << tag;
  }
  {  // stable_partition
    auto want = in;
    const size_t wn =
        size_t(std::stable_partition(want.begin(), want.end(), keep) - want.begin());
    auto d = in;
    const size_t k = sliding::partition_inplace(d.data(), n, keep, &ctl);
    EXPECT_EQ(k, wn) << tag;
    EXPECT_TRUE(same(d, want, n)) << "partition " << tag;
  }
}

template <typename T>
void check_sizes(uint64_t seed) {
  const size_t K = sliding::kChunk;
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(1000)})
    for (int threads : {1, 4}) {
      check_all<T>(n, 100, 50, threads, seed + n);   // half kept
      check_all<T>(n, 100, 10, threads, seed + n);   // 10 % kept
      check_all<T>(n, 100, 100, threads, seed + n);  // all kept
      check_all<T>(n, 100, 0, threads, seed + n);    // none kept
      check_all<T>(n, 3, 1, threads, seed + n);      // long runs (unique)
    }
  // Several chunks, the last one partial (4 threads).
  for (size_t n : {K + 1, 3 * K + 17}) {
    check_all<T>(n, 100, 50, 4, seed + n);
    check_all<T>(n, 100, 100, 4, seed + n);
    check_all<T>(n, 100, 0, 4, seed + n);
    check_all<T>(n, 3, 1, 4, seed + n);
  }
}

TEST(Sliding, Uint32MatchesStd) { check_sizes<uint32_t>(1); }
TEST(Sliding, DoubleMatchesStd) { check_sizes<double>(2); }
TEST(Sliding, PairRecordMatchesStd) { check_sizes<PairRecord>(3); }

}  // namespace
}  // namespace gpu2bs
