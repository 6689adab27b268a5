// GPU in-place data sliding (kernels/sliding/sliding.cuh) against CUB (DeviceSelect::If,
// DeviceSelect::Unique, DevicePartition::If, out of place) and the CPU counterparts
// (core/sliding.h) / the standard library, bit for bit: 4-, 8- and 16-byte elements (PairRecord),
// empty, 1 element, all kept, none kept, sizes around the tile, millions of elements (far more
// tiles than resident blocks), arrays not aligned to 16 bytes, both synchronizations, tile ids
// from the atomic counter and from blockIdx.x, L2 prefetch distances (a hint: results unchanged,
// tiles prefetched from the next to past the last), the device-count variants, a scratch
// reused across calls (its flags carry an epoch per launch and are zeroed only when the epochs
// wrap: EpochWrap) and one allocated through a Call. Skips without a GPU.
#include <gtest/gtest.h>

#include <cub/device/device_partition.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/engine.h"
#include "core/sliding.h"
#include "kernels/sliding/sliding.cuh"

namespace gpu2bs {

// Equality of the key only (CUB's Unique compares with ==).
__host__ __device__ inline bool operator==(const PairRecord& a, const PairRecord& b) {
  return a.i == b.i;
}

namespace {

using namespace cuda::sliding;

bool have_gpu() {
  static int ok = -1;
  if (ok < 0) {
    std::string why;
    ok = cuda_engine(&why) != nullptr ? 1 : 0;
    if (!ok) printf("no GPU: %s\n", why.c_str());
  }
  return ok == 1;
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no usable GPU"

#define CK(x) ASSERT_EQ((x), cudaSuccess)

// The key predicates and unique look at.
__host__ __device__ inline uint32_t key(uint32_t x) { return x; }
__host__ __device__ inline uint32_t key(unsigned long long x) { return uint32_t(x >> 32); }
__host__ __device__ inline uint32_t key(const PairRecord& r) { return r.i; }

// keep(x): key(x) < t.
template <typename T>
struct KeepBelow {
  uint32_t t;
  __host__ __device__ bool operator()(const T& x) const { return key(x) < t; }
};

// Equal keys.
struct KeyEq {
  template <typename T>
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    return key(a) == key(b);
  }
};

// Random elements whose keys are uniform in [0, range), or runs (unique) when `runs`: key grows
// by one with probability 1/run_len.
template <typename T>
std::vector<T> make_input(size_t n, uint32_t range, uint64_t seed, bool runs, int run_len = 3) {
  std::mt19937_64 g(seed);
  std::vector<T> v(n);
  uint32_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = uint32_t(g());
    if (runs) {
      if (r % unsigned(run_len) == 0) ++k;
    } else {
      k = uint32_t(g() % range);
    }
    if constexpr (std::is_same<T, uint32_t>::value) {
      v[i] = k;
    } else if constexpr (std::is_same<T, unsigned long long>::value) {
      v[i] = (unsigned long long)k << 32 | (k * 2654435761u);  // key equality = bitwise
    } else {
      v[i].i = k;
      v[i].j = uint32_t(i);
      v[i].dist = double(r % 1000) * 0.001;
    }
  }
  return v;
}

template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t m) : n(m) {
    if (m) EXPECT_EQ(cudaMalloc(&p, m * sizeof(T)), cudaSuccess);
  }
  ~Dev() {
    if (p) cudaFree(p);
  }
  void put(const std::vector<T>& v) {
    if (n) EXPECT_EQ(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> get(size_t m) const {
    std::vector<T> v(m);
    if (m) EXPECT_EQ(cudaMemcpy(v.data(), p, m * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

template <typename T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Runs one CUB algorithm (two-phase temp storage); returns its selected count.
template <typename F>
size_t run_cub(F f) {
  Dev<unsigned long long> cnt(1);
  size_t bytes = 0;
  EXPECT_EQ(f(nullptr, bytes, cnt.p), cudaSuccess);
  void* tmp = nullptr;
  EXPECT_EQ(cudaMalloc(&tmp, std::max<size_t>(bytes, 1)), cudaSuccess);
  EXPECT_EQ(f(tmp, bytes, cnt.p), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(tmp);
  return size_t(cnt.get(1)[0]);
}

// The tile-flag ordering ord (a SlideOrder), or the tuned one of T in MODE when ord < 0.
template <typename T, SlideMode MODE>
constexpr SlideOrder order(int ord) {
  return ord < 0 ? slide_order<T, MODE>() : SlideOrder(ord);
}

// A launch shape's threads, vectors and min blocks (th, ve, mb), or the tuned one of T in MODE
// where 0.
template <typename T, SlideMode MODE>
constexpr int th(int v) { return v ? v : slide_threads<T, MODE>(); }
template <typename T, SlideMode MODE>
constexpr int ve(int v) { return v ? v : slide_vecs<T, MODE>(); }
template <typename T, SlideMode MODE>
constexpr int mb(int v) { return v ? v : slide_min_blocks<T, MODE>(); }

// Every primitive on one input, against CUB, the CPU counterpart and std (launch shape TH x VE
// / MB: the tuned one of each mode where 0; ORD: a SlideOrder for every mode, -1 the tuned one of
// each). With the tuned shape and order, also the dispatching form (slide_tuned: the small-array
// shape up to cuda_tuning::kSlideSmallBytes), partition with and without programmatic dependent
// launch.
template <typename T, SlideSync SYNC, SlideIds IDS = slide_ids<T>(), int TH = 0, int VE = 0,
          int MB = 0, int ORD = -1>
void check_case(size_t n, uint32_t keep_below, bool runs, uint64_t seed, SlidingScratch& scr,
                int ahead = -1) {
  const auto in = make_input<T>(n, 100, seed, runs);
  const KeepBelow<T> keep{keep_below};
  const std::string tag = "n=" + std::to_string(n) + " keep<" + std::to_string(keep_below) +
                          (runs ? " runs" : "") + " size=" + std::to_string(sizeof(T)) +
                          (SYNC == SlideSync::Adjacent ? " adjacent" : " lookback") +
                          (IDS == SlideIds::Counter ? " counter ids" : " blockIdx ids") +
                          " ahead=" + std::to_string(ahead) + " shape=" + std::to_string(TH) +
                          "x" + std::to_string(VE) + "/" + std::to_string(MB) +
                          (ORD < 0 ? "" : " order=" + std::to_string(ORD));
  Dev<T> src(n), d(n), out(n);
  src.put(in);
  cudaStream_t s = nullptr;
  constexpr bool TUNED = TH == 0 && VE == 0 && MB == 0 && ORD < 0 && SYNC == SlideSync::Lookback &&
                         IDS == slide_ids<T>();
  Control ctl;
  ctl.threads = 4;

  // select vs cub::DeviceSelect::If (out of place) vs std::copy_if vs the CPU
  {
    std::vector<T> want;
    std::copy_if(in.begin(), in.end(), std::back_inserter(want), keep);
    const size_t nc = run_cub([&](void* t, size_t& b, unsigned long long* c) {
      return cub::DeviceSelect::If(t, b, src.p, out.p, c, int64_t(n), keep);
    });
    EXPECT_EQ(nc, want.size()) << tag;
    EXPECT_TRUE(same(out.get(nc), want)) << "cub select " << tag;
    d.put(in);
    constexpr SlideMode M = SlideMode::Select;
    unsigned long long* c =
        slide_async<T, M, SYNC, th<T, M>(TH), ve<T, M>(VE), mb<T, M>(MB), IDS, order<T, M>(ORD)>(
            d.p, n, keep, nullptr, s, scr, ahead);
    const size_t k = read_count(c, s, scr);
    EXPECT_EQ(k, want.size()) << tag;
    EXPECT_TRUE(same(d.get(k), want)) << "select " << tag;
    if (TUNED) {
      d.put(in);
      const size_t k2 = read_count(slide_tuned<T, M>(d.p, n, keep, nullptr, s, scr), s, scr);
      EXPECT_EQ(k2, want.size()) << tag;
      EXPECT_TRUE(same(d.get(k2), want)) << "select dispatched " << tag;
    }
    auto h = in;
    EXPECT_EQ(sliding::select_inplace(h.data(), n, keep, &ctl), want.size()) << tag;
    h.resize(want.size());
    EXPECT_TRUE(same(h, want)) << "cpu select " << tag;
  }
  // unique vs cub::DeviceSelect::Unique vs std::unique
  {
    auto want = in;
    want.resize(size_t(std::unique(want.begin(), want.end(), KeyEq()) - want.begin()));
    const size_t nc = run_cub([&](void* t, size_t& b, unsigned long long* c) {
      return cub::DeviceSelect::Unique(t, b, src.p, out.p, c, int64_t(n));
    });
    EXPECT_EQ(nc, want.size()) << tag;
    EXPECT_TRUE(same(out.get(nc), want)) << "cub unique " << tag;
    d.put(in);
    constexpr SlideMode M = SlideMode::Unique;
    const size_t k = read_count(
        slide_async<T, M, SYNC, th<T, M>(TH), ve<T, M>(VE), mb<T, M>(MB), IDS, order<T, M>(ORD)>(
            d.p, n, KeyEq(), nullptr, s, scr, ahead),
        s, scr);
    EXPECT_EQ(k, want.size()) << tag;
    EXPECT_TRUE(same(d.get(k), want)) << "unique " << tag;
    if (TUNED) {
      d.put(in);
      const size_t k2 = read_count(slide_tuned<T, M>(d.p, n, KeyEq(), nullptr, s, scr), s, scr);
      EXPECT_EQ(k2, want.size()) << tag;
      EXPECT_TRUE(same(d.get(k2), want)) << "unique dispatched " << tag;
    }
    auto h = in;
    EXPECT_EQ(sliding::unique_inplace(h.data(), n, KeyEq(), &ctl), want.size()) << tag;
    h.resize(want.size());
    EXPECT_TRUE(same(h, want)) << "cpu unique " << tag;
  }
  // partition vs cub::DevicePartition::If (second part reversed) vs std::stable_partition
  {
    auto want = in;
    const size_t wn =
        size_t(std::stable_partition(want.begin(), want.end(), keep) - want.begin());
    const size_t nc = run_cub([&](void* t, size_t& b, unsigned long long* c) {
      return cub::DevicePartition::If(t, b, src.p, out.p, c, int64_t(n), keep);
    });
    EXPECT_EQ(nc, wn) << tag;
    auto co = out.get(n);
    std::reverse(co.begin() + nc, co.end());
    EXPECT_TRUE(same(co, want)) << "cub partition " << tag;
    d.put(in);
    constexpr SlideMode M = SlideMode::Partition;
    const size_t k = read_count(
        slide_async<T, M, SYNC, th<T, M>(TH), ve<T, M>(VE), mb<T, M>(MB), IDS, order<T, M>(ORD)>(
            d.p, n, keep, nullptr, s, scr, ahead),
        s, scr);
    EXPECT_EQ(k, wn) << tag;
    EXPECT_TRUE(same(d.get(n), want)) << "partition " << tag;
    if (TUNED) {
      for (int pdl : {0, 1}) {
        d.put(in);
        const size_t k2 =
            read_count(slide_tuned<T, M>(d.p, n, keep, nullptr, s, scr, pdl), s, scr);
        EXPECT_EQ(k2, wn) << tag << " pdl=" << pdl;
        EXPECT_TRUE(same(d.get(n), want)) << "partition dispatched " << tag << " pdl=" << pdl;
      }
    }
    auto h = in;
    EXPECT_EQ(sliding::partition_inplace(h.data(), n, keep, &ctl), wn) << tag;
    EXPECT_TRUE(same(h, want)) << "cpu partition " << tag;
  }
  // compaction (remove the elements equal to the first) vs std
  if (n) {
    std::vector<T> want;
    for (const T& x : in)
      if (std::memcmp(&x, &in[0], sizeof(T)) != 0) want.push_back(x);
    d.put(in);
    const size_t k = compact_inplace(d.p, n, in[0], s, scr);
    EXPECT_EQ(k, want.size()) << tag;
    EXPECT_TRUE(same(d.get(k), want)) << "compact " << tag;
  }
}

template <typename T>
void check_sizes(uint64_t seed) {
  const size_t t = tile_elems<T>();
  SlidingScratch scr;  // reused by every call
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(31), t - 1, t, t + 1, 3 * t + 17,
                   size_t(1000003)})
    for (uint32_t keep : {0u, 10u, 50u, 90u, 100u}) {
      check_case<T, SlideSync::Lookback>(n, keep, false, seed + n + keep, scr);
      if (n == t + 1 || n == 1000003)
        check_case<T, SlideSync::Adjacent>(n, keep, false, seed + n + keep, scr);
    }
  // both sources of tile ids (atomic counter, blockIdx.x)
  for (size_t n : {size_t(1), t + 1, 3 * t + 17, size_t(1000003)})
    for (uint32_t keep : {0u, 50u, 100u}) {
      check_case<T, SlideSync::Lookback, SlideIds::Counter>(n, keep, false, seed + n + keep, scr);
      check_case<T, SlideSync::Lookback, SlideIds::Block>(n, keep, false, seed + n + keep, scr);
    }
  // L2 prefetch distances (a hint: the same results), tiles from the first to past the last
  for (size_t n : {t + 1, 3 * t + 17, size_t(1000003), size_t(9000011)})
    for (int ahead : {1, 2, 264})
      for (uint32_t keep : {10u, 50u}) {
        check_case<T, SlideSync::Lookback>(n, keep, false, seed + n + keep, scr, ahead);
        check_case<T, SlideSync::Lookback, SlideIds::Counter>(n, keep, false, seed + n + keep,
                                                              scr, ahead);
      }
  for (size_t n : {size_t(1), t + 1, size_t(1000003)}) {
    check_case<T, SlideSync::Lookback>(n, 50, true, seed + 7 * n, scr);
    check_case<T, SlideSync::Lookback>(n, 50, true, seed + 7 * n, scr, 3);
    check_case<T, SlideSync::Lookback, SlideIds::Counter>(n, 50, true, seed + 7 * n, scr);
    check_case<T, SlideSync::Lookback, SlideIds::Block>(n, 50, true, seed + 7 * n, scr);
    check_case<T, SlideSync::Adjacent>(n, 50, true, seed + 7 * n, scr);
  }
}

// A launch shape other than the tuned one (the benchmark's candidates): sizes around its tile,
// many tiles, 10 / 50 / 90 % kept and runs for unique, both tile-id sources.
template <typename T, int TH, int VE, int MB>
void check_shape(uint64_t seed) {
  const size_t t = tile_elems<T, TH, VE>();
  SlidingScratch scr;
  for (size_t n : {t - 1, t + 1, 3 * t + 17, size_t(1000003)}) {
    for (uint32_t keep : {10u, 50u, 90u})
      check_case<T, SlideSync::Lookback, SlideIds::Block, TH, VE, MB>(n, keep, false,
                                                                     seed + n + keep, scr);
    check_case<T, SlideSync::Lookback, SlideIds::Block, TH, VE, MB>(n, 50, true, seed + 7 * n,
                                                                   scr);
    check_case<T, SlideSync::Lookback, SlideIds::Counter, TH, VE, MB>(n, 50, false, seed + n,
                                                                     scr, 2);
  }
}

// The tuned shape with the tile-flag ordering R in every mode (SlideOrder: loaded flags,
// release flags with a fence after the look-back, or relaxed flags): sizes around the tile, many
// tiles, 0-100 % kept, runs for unique, both tile-id sources and synchronizations.
template <typename T, SlideOrder R>
void check_order(uint64_t seed) {
  const size_t t = tile_elems<T>();
  constexpr int TH = 0, VE = 0, MB = 0;  // the tuned shape of each mode
  SlidingScratch scr;
  for (size_t n : {size_t(1), t - 1, t + 1, 3 * t + 17, size_t(1000003), size_t(9000011)}) {
    for (uint32_t keep : {0u, 10u, 50u, 90u, 100u})
      check_case<T, SlideSync::Lookback, SlideIds::Block, TH, VE, MB, int(R)>(
          n, keep, false, seed + n + keep, scr);
    check_case<T, SlideSync::Lookback, SlideIds::Block, TH, VE, MB, int(R)>(n, 50, true,
                                                                           seed + 7 * n, scr);
    check_case<T, SlideSync::Lookback, SlideIds::Counter, TH, VE, MB, int(R)>(n, 50, false,
                                                                             seed + n, scr, 2);
    check_case<T, SlideSync::Adjacent, SlideIds::Block, TH, VE, MB, int(R)>(n, 10, false,
                                                                           seed + n, scr);
  }
}

TEST(Sliding, RelaxedFlags) {
  REQUIRE_GPU();
  check_order<uint32_t, SlideOrder::Relaxed>(51);
  check_order<unsigned long long, SlideOrder::Relaxed>(52);
  check_order<PairRecord, SlideOrder::Relaxed>(53);
}

TEST(Sliding, LoadFlags16) {
  REQUIRE_GPU();
  check_order<PairRecord, SlideOrder::LoadFlags>(71);
}

TEST(Sliding, ReleaseFlags) {
  REQUIRE_GPU();
  check_order<uint32_t, SlideOrder::Release>(61);
  check_order<unsigned long long, SlideOrder::Release>(62);
  check_order<PairRecord, SlideOrder::Release>(63);
}

TEST(Sliding, SmallArrayShapes) {
  REQUIRE_GPU();
  check_shape<uint32_t, 512, 8, 2>(44);
  check_shape<uint32_t, 256, 16, 2>(45);
  check_shape<uint32_t, 256, 8, 3>(46);
  check_shape<unsigned long long, 256, 16, 2>(47);
}

TEST(Sliding, LaunchShapes) {
  REQUIRE_GPU();
  check_shape<uint32_t, 128, 16, 4>(41);
  check_shape<unsigned long long, 128, 16, 4>(42);
  check_shape<unsigned long long, 128, 24, 3>(43);
}

TEST(Sliding, Uint32) {
  REQUIRE_GPU();
  check_sizes<uint32_t>(11);
}
TEST(Sliding, Uint64) {
  REQUIRE_GPU();
  check_sizes<unsigned long long>(12);
}
TEST(Sliding, PairRecord) {
  REQUIRE_GPU();
  check_sizes<PairRecord>(13);
}

// Arrays that do not start on a 16-byte boundary (the kernels load and store whole 16-byte
// chunks and handle the partial ones at both ends element by element): d = allocation + off
// elements, off = 1 .. 16 / sizeof(T) - 1, sizes shorter than a chunk, around the tile and
// many tiles; the elements outside [d, d + n) must stay untouched.
template <typename T>
void check_offsets(uint64_t seed, int ahead) {
  // one pass of MODE with the tuned shape and L2 prefetch distance `ahead`; returns its count
  auto pass = [ahead](auto mode, T* d, size_t n, auto f, cudaStream_t s, SlidingScratch& scr) {
    return read_count(slide_async<T, decltype(mode)::value>(d, n, f, nullptr, s, scr, ahead), s,
                      scr);
  };
  using Sel = std::integral_constant<SlideMode, SlideMode::Select>;
  using Uni = std::integral_constant<SlideMode, SlideMode::Unique>;
  using Par = std::integral_constant<SlideMode, SlideMode::Partition>;
  constexpr size_t V = 16 / sizeof(T);
  const size_t t = tile_elems<T>();
  SlidingScratch scr;
  cudaStream_t s = nullptr;
  for (size_t off = 1; off < V; ++off)
    for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(5), t - 1, t + 1, 3 * t + 17,
                     size_t(1000003)})
      for (uint32_t keep_below : {0u, 20u, 50u, 90u, 100u}) {
        const std::string tag = "off=" + std::to_string(off) + " ahead=" + std::to_string(ahead) +
                                " n=" + std::to_string(n) +
                                " keep<" + std::to_string(keep_below) +
                                " size=" + std::to_string(sizeof(T));
        const auto in = make_input<T>(n, 100, seed + n + keep_below + off, false);
        const auto runs = make_input<T>(n, 100, seed + n + off, true);
        const KeepBelow<T> keep{keep_below};
        // guard elements around the array: V before the allocation's data, V after
        const size_t total = off + n + V;
        std::vector<T> guard = make_input<T>(total, 1000, seed ^ 0x5a5a, false);
        Dev<T> buf(total);
        T* d = buf.p + off;
        auto load = [&](const std::vector<T>& v) {
          buf.put(guard);
          EXPECT_EQ(cudaMemcpy(d, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
        };
        auto check_guard = [&](const char* what) {
          const auto all = buf.get(total);
          EXPECT_EQ(std::memcmp(all.data(), guard.data(), off * sizeof(T)), 0) << what << tag;
          EXPECT_EQ(std::memcmp(all.data() + off + n, guard.data() + off + n, V * sizeof(T)), 0)
              << what << tag;
          return std::vector<T>(all.begin() + off, all.begin() + off + n);
        };
        {  // select
          std::vector<T> want;
          std::copy_if(in.begin(), in.end(), std::back_inserter(want), keep);
          load(in);
          const size_t k = pass(Sel(), d, n, keep, s, scr);
          EXPECT_EQ(k, want.size()) << tag;
          auto got = check_guard("select ");
          got.resize(std::min(k, n));
          EXPECT_TRUE(same(got, want)) << "select " << tag;
        }
        {  // unique (runs)
          auto want = runs;
          want.resize(size_t(std::unique(want.begin(), want.end(), KeyEq()) - want.begin()));
          load(runs);
          const size_t k = pass(Uni(), d, n, KeyEq(), s, scr);
          EXPECT_EQ(k, want.size()) << tag;
          auto got = check_guard("unique ");
          got.resize(std::min(k, n));
          EXPECT_TRUE(same(got, want)) << "unique " << tag;
        }
        {  // partition
          auto want = in;
          const size_t wn =
              size_t(std::stable_partition(want.begin(), want.end(), keep) - want.begin());
          load(in);
          const size_t k = pass(Par(), d, n, keep, s, scr);
          EXPECT_EQ(k, wn) << tag;
          EXPECT_TRUE(same(check_guard("partition "), want)) << "partition " << tag;
        }
      }
}

TEST(Sliding, MisalignedUint32) {
  REQUIRE_GPU();
  check_offsets<uint32_t>(21, -1);
  check_offsets<uint32_t>(23, 1);
}
TEST(Sliding, MisalignedUint64) {
  REQUIRE_GPU();
  check_offsets<unsigned long long>(22, -1);
  check_offsets<unsigned long long>(24, 1);
}

// Many tiles (tens of thousands of blocks, far more than are resident), 16-byte records, long
// runs for unique: the public API, the device-count variants, and a scratch from a Call.
TEST(Sliding, ManyTilesAndDeviceCounts) {
  REQUIRE_GPU();
  const size_t n = 40000000;  // 40M records (640 MB): ~39k tiles
  const auto in = make_input<PairRecord>(n, 1000, 99, false);
  const KeepBelow<PairRecord> keep{500};
  std::vector<PairRecord> want;
  std::copy_if(in.begin(), in.end(), std::back_inserter(want), keep);
  Control ctl;
  {
    cuda::Call call(ctl);
    SlidingScratch scr(&call);
    PairRecord* d = call.alloc<PairRecord>(n, "test array");
    unsigned long long* c = call.alloc<unsigned long long>(1, "test count");
    CK(cudaMemcpy(d, in.data(), n * sizeof(PairRecord), cudaMemcpyHostToDevice));
    select_inplace_async(d, n, keep, c, call.stream(), scr);
    call.sync();
    unsigned long long k = 0;
    CK(cudaMemcpy(&k, c, 8, cudaMemcpyDeviceToHost));
    ASSERT_EQ(k, want.size());
    std::vector<PairRecord> got(k);
    CK(cudaMemcpy(got.data(), d, k * sizeof(PairRecord), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same(got, want));
    // the array again, removing what was kept: nothing of the kept part remains
    CK(cudaMemcpy(d, in.data(), n * sizeof(PairRecord), cudaMemcpyHostToDevice));
    EXPECT_EQ(remove_if_inplace(d, n, keep, call.stream(), scr), n - want.size());
    EXPECT_GT(scr.device_bytes(), 0u);
  }
  EXPECT_EQ(cuda::engine_bytes_in_use(), 0u);
  // unique over 40M uint32 with long runs: vs std::unique
  const auto u = make_input<uint32_t>(n, 0, 5, true, 50);
  auto wu = u;
  wu.resize(size_t(std::unique(wu.begin(), wu.end()) - wu.begin()));
  Dev<uint32_t> du(n);
  du.put(u);
  SlidingScratch scr;
  const size_t k = unique_inplace(du.p, n, BitwiseEqual(), nullptr, scr);
  EXPECT_EQ(k, wu.size());
  EXPECT_TRUE(same(du.get(k), wu));
}

// One scratch across the wrap of its launch epochs (2^24 - 1; the flags are zeroed then), with
// calls of fewer tiles than earlier ones leaving stale flags behind that only the epochs tell
// apart: selects (tile ids from blockIdx.x and from the counter) and uniques of alternating sizes
// before, at and after the wrap, against std.
TEST(Sliding, EpochWrap) {
  REQUIRE_GPU();
  const size_t big = 5 * tile_elems<uint32_t>() + 3, small = tile_elems<uint32_t>() + 1;
  const auto in = make_input<uint32_t>(big, 100, 31, false);
  const auto runs = make_input<uint32_t>(big, 100, 32, true);
  const KeepBelow<uint32_t> keep{40};
  Dev<uint32_t> d(big);
  SlidingScratch scr;
  cudaStream_t s = nullptr;
  auto check = [&](size_t n, const std::string& when) {
    std::vector<uint32_t> src(in.begin(), in.begin() + n), want;
    std::copy_if(src.begin(), src.end(), std::back_inserter(want), keep);
    d.put(in);
    size_t k = select_inplace(d.p, n, keep, s, scr);
    EXPECT_EQ(k, want.size()) << when << " n=" << n;
    EXPECT_TRUE(same(d.get(k), want)) << when << " n=" << n;
    d.put(in);  // the same select with tile ids from the counter (not reset between launches)
    k = read_count(slide_async<uint32_t, SlideMode::Select, SlideSync::Lookback,
                               slide_threads<uint32_t>(), slide_vecs<uint32_t>(),
                               slide_min_blocks<uint32_t>(), SlideIds::Counter>(
                       d.p, n, keep, nullptr, s, scr),
                   s, scr);
    EXPECT_EQ(k, want.size()) << when << " counter ids n=" << n;
    EXPECT_TRUE(same(d.get(k), want)) << when << " counter ids n=" << n;
    std::vector<uint32_t> u(runs.begin(), runs.begin() + n);
    u.resize(size_t(std::unique(u.begin(), u.end()) - u.begin()));
    d.put(runs);
    k = unique_inplace(d.p, n, BitwiseEqual(), s, scr);
    EXPECT_EQ(k, u.size()) << when << " unique n=" << n;
    EXPECT_TRUE(same(d.get(k), u)) << when << " unique n=" << n;
  };
  check(big, "first");
  check(small, "first");
  scr.skip_epochs(SlidingScratch::kEpochLimit - 10);  // a few launches before the wrap
  for (int i = 0; i < 12; ++i) check(i % 3 ? small : big, "around the wrap " + std::to_string(i));
}

}  // namespace
}  // namespace gpu2bs
