// Benchmark of the in-place data-sliding primitives (kernels/sliding/sliding.cuh) beside CUB and
// the device-to-device copy, on one GPU.
//
//   bench_sliding [runs] [sizes in M elements...]     default: 5 runs, 16M and 256M
//   bench_sliding orders [runs] [sizes...]            the same with the tile-flag ordering rows
//   bench_sliding once [sizes in M elements...]       one partition (ours, CUB) and one select
//                                                     at 50 % per element size, for a profiler
//   bench_sliding sweep [runs] [sizes...]             launch shapes of the sliding kernel
//                                                     (threads x 16-byte vectors / min blocks,
//                                                     " b": tile ids from blockIdx.x, " aD":
//                                                     L2 prefetch D tiles ahead)
//                                                     at 10 and 50 % kept
//
// For 16M and 256M elements of 4, 8 and 16 bytes (uint32, uint64, PairRecord) and selectivity
// 10 / 50 / 90 % (kept fraction; for unique the fraction of run heads), the median of `runs`
// timed calls (cudaEvents, input restored from a pristine copy before each call, outside the
// timed region; every array is written once before the first timed call, so the first copy does
// not pay for untouched memory) of:
//   copy D2D        cudaMemcpyAsync of the array (device to device), same run
//   select          sliding::select_inplace (decoupled look-back, the tuned SlideOrder), in place
//   select adjacent the paper's adjacent (chained) synchronization, in place
//   cub If          cub::DeviceSelect::If, out of place (d_in -> d_out)
//   cub If inplace  cub::DeviceSelect::If, in-place overload
//   unique          sliding::unique_inplace      | cub Unique: cub::DeviceSelect::Unique
//   partition       sliding::partition_inplace   | cub Partition: cub::DevicePartition::If
//   ... TxV/B       the same with launch shape T threads x V vectors / B blocks (Candidates)
//   partition pdl / partition serial   the tuned partition with and without programmatic
//                   dependent launch between its three kernels
//   ... loadflags   (orders) the tuned pass with relaxed look-back flags and per-tile loaded flags
//                   (SlideOrder::LoadFlags)
//   ... release     the tuned pass with release tile flags and a fence after the look-back
//                   (SlideOrder::Release)
//   ... relaxed     the tuned pass with relaxed tile flags (SlideOrder::Relaxed)
// GB/s counts bytes read plus bytes written once each, as the paper does: n * size read and
// kept * size written for select / unique (both ours and CUB), n * size written for partition,
// 2 * n * size for the copy (what moves through memory at least once, whatever the method
// moves beyond that). "of copy" = GB/s / copy GB/s. Memory: device bytes the method needs for
// its data (array(s) + scratch/temp storage), in MiB.
#include <cub/device/device_partition.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "core/engine.h"
#include "kernels/sliding/sliding.cuh"

namespace gpu2bs {

// Equality of keys for CUB's Unique on PairRecord.
__host__ __device__ inline bool operator==(const PairRecord& a, const PairRecord& b) {
  return a.i == b.i;
}

namespace {

using namespace cuda::sliding;

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s failed: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

__host__ __device__ inline uint32_t hash32(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return uint32_t(x);
}

__host__ __device__ inline uint32_t key(uint32_t x) { return x; }
__host__ __device__ inline uint32_t key(unsigned long long x) { return uint32_t(x >> 32); }
__host__ __device__ inline uint32_t key(const PairRecord& r) { return r.i; }

// Element with key k at index i.
template <typename T>
__host__ __device__ inline T make_elem(uint32_t k, unsigned long long i);
template <>
__host__ __device__ inline uint32_t make_elem<uint32_t>(uint32_t k, unsigned long long) {
  return k;
}
template <>
__host__ __device__ inline unsigned long long make_elem<unsigned long long>(
    uint32_t k, unsigned long long) {
  return (unsigned long long)k << 32 | (k * 2654435761u);
}
template <>
__host__ __device__ inline PairRecord make_elem<PairRecord>(uint32_t k, unsigned long long i) {
  PairRecord r;
  r.i = k;
  r.j = uint32_t(i);
  r.dist = double(hash32(i + 7) & 0xFFFF) * (1.0 / 65536);
  return r;
}

// Keys uniform in [0, 2^32).
template <typename T>
__global__ void fill_random(T* d, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    d[i] = make_elem<T>(hash32(i), i);
}

// Run heads with probability p: head flags (0/1) into keys (scanned afterwards).
__global__ void fill_heads(uint32_t* k, unsigned long long n, uint32_t thr) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    k[i] = (i == 0 || hash32(i * 3 + 1) < thr) ? 1u : 0u;
}
template <typename T>
__global__ void fill_from_keys(T* d, const uint32_t* k, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    d[i] = make_elem<T>(k[i], i);
}

template <typename T>
struct KeepBelow {
  uint32_t t;
  __host__ __device__ bool operator()(const T& x) const { return key(x) < t; }
};
struct KeyEq {
  template <typename T>
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    return key(a) == key(b);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median ms of `runs` calls of fn (after one warm-up), each after prep (untimed).
double time_ms(int runs, cudaStream_t s, const std::function<void()>& prep,
               const std::function<void()>& fn) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = -1; r < runs; ++r) {
    prep();
    CK(cudaEventRecord(a, s));
    fn();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 0) t.push_back(ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(t);
}

void row(const char* what, size_t n, int size, int pct, double ms, double bytes, double copy_gbs,
         double mib, unsigned long long result) {
  const double gbs = bytes / (ms * 1e-3) / 1e9;
  printf("| %-16s | %5zuM | %2d B | %2d %% | %9.3f | %7.1f | %5.1f %% | %9.0f | %llu |\n", what,
         n >> 20, size, pct, ms, gbs, copy_gbs > 0 ? 100.0 * gbs / copy_gbs : 100.0, mib,
         result);
  fflush(stdout);
}

// Temp storage size of a CUB call (first phase).
template <typename F>
size_t cub_bytes(F f) {
  size_t b = 0;
  CK(f(nullptr, b));
  return b;
}

// A launch shape of the sliding kernel: threads x 16-byte vectors / min blocks per SM.
template <int TH, int VE, int MB>
struct Shape {};

// Launch shapes timed beside the tuned one in the main table, by element type (tile ids from
// blockIdx.x, the tuned L2 prefetch distance).
template <typename T>
struct Candidates {
  using type = std::tuple<>;
};
template <>
struct Candidates<uint32_t> {
  using type = std::tuple<Shape<512, 8, 2>, Shape<256, 16, 2>, Shape<256, 8, 3>, Shape<128, 16, 4>>;
};
template <>
struct Candidates<unsigned long long> {
  using type = std::tuple<Shape<256, 16, 2>, Shape<128, 24, 3>, Shape<128, 16, 4>>;
};

// Calls fn(Shape<...>{}) for every candidate shape of T.
template <typename T, typename Fn>
void each_shape(Fn fn) {
  std::apply([&](auto... sh) { (fn(sh), ...); }, typename Candidates<T>::type{});
}

// Row name of a method with a launch shape ("select 128x24/3").
template <int TH, int VE, int MB>
const char* shape_name(const char* what, Shape<TH, VE, MB>) {
  static char name[64];
  snprintf(name, sizeof name, "%s %dx%d/%d", what, TH, VE, MB);
  return name;
}

// Median ms of the tuned sliding pass in MODE with the tile-flag ordering ORDER.
template <SlideMode MODE, SlideOrder ORDER, typename T, typename F>
double time_order(int runs, cudaStream_t s, const std::function<void()>& prep, T* d, size_t n,
                  F f, unsigned long long* cnt, SlidingScratch& scr) {
  return time_ms(runs, s, prep, [&]() {
    if (n * sizeof(T) <= cuda_tuning::kSlideSmallBytes)
      slide_async<T, MODE, SlideSync::Lookback, slide_threads<T, MODE, true>(),
                  slide_vecs<T, MODE, true>(), slide_min_blocks<T, MODE, true>(), slide_ids<T>(),
                  ORDER>(d, n, f, cnt, s, scr);
    else
      slide_async<T, MODE, SlideSync::Lookback, slide_threads<T, MODE>(), slide_vecs<T, MODE>(),
                  slide_min_blocks<T, MODE>(), slide_ids<T>(), ORDER>(d, n, f, cnt, s, scr);
  });
}

// Name of a tile-flag ordering in row names.
const char* order_tag(SlideOrder o) {
  return o == SlideOrder::LoadFlags ? "loadflags"
         : o == SlideOrder::Release ? "release"
                                    : "relaxed";
}

// Row of the tuned sliding pass in MODE with the tile-flag ordering ORDER ("select release"):
// bytes moved per call, the copy rate of the run, memory in MiB; the count is checked against
// `want`.
template <SlideMode MODE, SlideOrder ORDER, typename T, typename F>
void order_row(const char* what, int pct, int runs, cudaStream_t s,
               const std::function<void()>& prep, T* d, size_t n, F f, unsigned long long* cnt,
               SlidingScratch& scr, unsigned long long want, double bytes, double copy_gbs,
               double mib) {
  const double t = time_order<MODE, ORDER>(runs, s, prep, d, n, f, cnt, scr);
  unsigned long long got = 0;
  CK(cudaMemcpy(&got, cnt, 8, cudaMemcpyDeviceToHost));
  char name[64];
  snprintf(name, sizeof name, "%s %s", what, order_tag(ORDER));
  if (got != want) printf("MISMATCH %s\n", name);
  row(name, n, int(sizeof(T)), pct, t, bytes, copy_gbs, mib, got);
}

// order_row for every tile-flag ordering (SlideOrder).
template <SlideMode MODE, typename... A>
void order_rows(A&&... a) {
  order_row<MODE, SlideOrder::LoadFlags>(a...);
  order_row<MODE, SlideOrder::Release>(a...);
  order_row<MODE, SlideOrder::Relaxed>(a...);
}

// Median ms of the sliding pass in MODE with launch shape sh (after restore each time).
template <SlideMode MODE, typename T, int TH, int VE, int MB, typename F>
double time_shape(Shape<TH, VE, MB>, int runs, cudaStream_t s, const std::function<void()>& prep,
                  T* d, size_t n, F f, unsigned long long* cnt, SlidingScratch& scr) {
  return time_ms(runs, s, prep, [&]() {
    slide_async<T, MODE, SlideSync::Lookback, TH, VE, MB, SlideIds::Block>(d, n, f, cnt, s, scr);
  });
}

// Whether the main table has the tile-flag ordering rows ("bench_sliding orders").
bool g_orders = false;

template <typename T>
void bench_type(size_t n, int runs, void* tmp, size_t tmp_cap) {
  const double S = double(sizeof(T)), MiB = 1048576.0;
  const double arr = double(n) * S;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  T *pristine = nullptr, *d = nullptr, *out = nullptr;
  unsigned long long* cnt = nullptr;
  uint32_t* keys = nullptr;
  CK(cudaMalloc(&pristine, n * sizeof(T)));
  CK(cudaMalloc(&d, n * sizeof(T)));
  CK(cudaMalloc(&out, n * sizeof(T)));
  CK(cudaMalloc(&cnt, 8));
  SlidingScratch scr;
  auto get = [&](unsigned long long* p) {
    unsigned long long h = 0;
    CK(cudaMemcpy(&h, p, 8, cudaMemcpyDeviceToHost));
    return h;
  };
  const unsigned grid = 132 * 16;
  auto restore = [&]() {
    CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  };
  auto none = []() {};
  // write every array once: the first timed copy then does not meet untouched memory
  fill_random<T><<<grid, 256, 0, s>>>(pristine, n);
  CK(cudaGetLastError());
  CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  CK(cudaMemcpyAsync(out, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  CK(cudaStreamSynchronize(s));
  for (int pct : {10, 50, 90}) {
    const uint32_t thr = uint32_t(double(pct) / 100.0 * 4294967296.0);
    // copy rate, same run
    const double t_copy = time_ms(runs, s, none, [&]() {
      CK(cudaMemcpyAsync(out, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    });
    const double copy_gbs = 2 * arr / (t_copy * 1e-3) / 1e9;
    row("copy D2D", n, int(S), pct, t_copy, 2 * arr, copy_gbs, 2 * arr / MiB, n);

    // ---- select: keys uniform, keep key < pct %
    fill_random<T><<<grid, 256, 0, s>>>(pristine, n);
    CK(cudaGetLastError());
    const KeepBelow<T> keep{thr};
    unsigned long long kept = 0;
    double t = time_ms(runs, s, restore, [&]() {
      select_inplace_async(d, n, keep, cnt, s, scr);
    });
    kept = get(cnt);
    // scratch of select / unique: the tile flags; partition: plus n elements for the rejected
    const double flags = double(2 * ((n + tile_elems<T>() - 1) / tile_elems<T>()) + 3) * 8;
    row("select", n, int(S), pct, t, arr + double(kept) * S, copy_gbs, (arr + flags) / MiB, kept);
    if (g_orders)
      order_rows<SlideMode::Select>("select", pct, runs, s, restore, d, n, keep, cnt, scr,
                                    kept, arr + double(kept) * S, copy_gbs, (arr + flags) / MiB);
    each_shape<T>([&](auto sh) {
      t = time_shape<SlideMode::Select>(sh, runs, s, restore, d, n, keep, cnt, scr);
      if (get(cnt) != kept) printf("MISMATCH %s\n", shape_name("select", sh));
      row(shape_name("select", sh), n, int(S), pct, t, arr + double(kept) * S, copy_gbs,
          (arr + flags) / MiB, kept);
    });
    t = time_ms(runs, s, restore, [&]() {
      slide_async<T, SlideMode::Select, SlideSync::Adjacent>(d, n, keep, cnt, s, scr);
    });
    if (get(cnt) != kept) printf("MISMATCH adjacent select\n");
    row("select adjacent", n, int(S), pct, t, arr + double(kept) * S, copy_gbs,
        (arr + flags) / MiB, get(cnt));
    size_t b = cub_bytes([&](void* p, size_t& bb) {
      return cub::DeviceSelect::If(p, bb, pristine, out, cnt, int64_t(n), keep, s);
    });
    if (b > tmp_cap) {
      printf("temp storage too small\n");
      exit(1);
    }
    t = time_ms(runs, s, none, [&]() {
      CK(cub::DeviceSelect::If(tmp, b, pristine, out, cnt, int64_t(n), keep, s));
    });
    if (get(cnt) != kept) printf("MISMATCH cub If\n");
    row("cub If", n, int(S), pct, t, arr + double(kept) * S, copy_gbs, (2 * arr + b) / MiB,
        get(cnt));
    b = cub_bytes([&](void* p, size_t& bb) {
      return cub::DeviceSelect::If(p, bb, d, cnt, int64_t(n), keep, s);
    });
    t = time_ms(runs, s, restore, [&]() {
      CK(cub::DeviceSelect::If(tmp, b, d, cnt, int64_t(n), keep, s));
    });
    if (get(cnt) != kept) printf("MISMATCH cub If in place\n");
    row("cub If inplace", n, int(S), pct, t, arr + double(kept) * S, copy_gbs, (arr + b) / MiB,
        get(cnt));

    // ---- partition (same input)
    t = time_ms(runs, s, restore, [&]() { partition_inplace_async(d, n, keep, cnt, s, scr); });
    if (get(cnt) != kept) printf("MISMATCH partition\n");
    row("partition", n, int(S), pct, t, 2 * arr, copy_gbs,
        (2 * arr + flags) / MiB, get(cnt));
    if (g_orders)
      order_rows<SlideMode::Partition>("partition", pct, runs, s, restore, d, n, keep, cnt,
                                       scr, kept, 2 * arr, copy_gbs, (2 * arr + flags) / MiB);
    for (int pdl : {0, 1}) {
      t = time_ms(runs, s, restore, [&]() {
        slide_tuned<T, SlideMode::Partition>(d, n, keep, cnt, s, scr, pdl);
      });
      const char* name = pdl ? "partition pdl" : "partition serial";
      if (get(cnt) != kept) printf("MISMATCH %s\n", name);
      row(name, n, int(S), pct, t, 2 * arr, copy_gbs, (2 * arr + flags) / MiB, get(cnt));
    }
    each_shape<T>([&](auto sh) {
      t = time_shape<SlideMode::Partition>(sh, runs, s, restore, d, n, keep, cnt, scr);
      if (get(cnt) != kept) printf("MISMATCH %s\n", shape_name("partition", sh));
      row(shape_name("partition", sh), n, int(S), pct, t, 2 * arr, copy_gbs,
          (2 * arr + flags) / MiB, get(cnt));
    });
    b = cub_bytes([&](void* p, size_t& bb) {
      return cub::DevicePartition::If(p, bb, pristine, out, cnt, int64_t(n), keep, s);
    });
    t = time_ms(runs, s, none, [&]() {
      CK(cub::DevicePartition::If(tmp, b, pristine, out, cnt, int64_t(n), keep, s));
    });
    if (get(cnt) != kept) printf("MISMATCH cub partition\n");
    row("cub Partition", n, int(S), pct, t, 2 * arr, copy_gbs, (2 * arr + b) / MiB, get(cnt));

    // ---- unique: run heads with probability pct %
    CK(cudaMalloc(&keys, n * 4));
    fill_heads<<<grid, 256, 0, s>>>(keys, n, thr);
    CK(cudaGetLastError());
    size_t sb = 0;
    CK(cub::DeviceScan::InclusiveSum(nullptr, sb, keys, keys, int64_t(n), s));
    if (sb > tmp_cap) {
      printf("temp storage too small\n");
      exit(1);
    }
    CK(cub::DeviceScan::InclusiveSum(tmp, sb, keys, keys, int64_t(n), s));
    fill_from_keys<T><<<grid, 256, 0, s>>>(pristine, keys, n);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(keys));
    keys = nullptr;
    t = time_ms(runs, s, restore, [&]() { unique_inplace_async(d, n, KeyEq(), cnt, s, scr); });
    const unsigned long long uk = get(cnt);
    row("unique", n, int(S), pct, t, arr + double(uk) * S, copy_gbs,
        (arr + flags) / MiB, uk);
    if (g_orders)
      order_rows<SlideMode::Unique>("unique", pct, runs, s, restore, d, n, KeyEq(), cnt, scr,
                                    uk, arr + double(uk) * S, copy_gbs, (arr + flags) / MiB);
    each_shape<T>([&](auto sh) {
      t = time_shape<SlideMode::Unique>(sh, runs, s, restore, d, n, KeyEq(), cnt, scr);
      if (get(cnt) != uk) printf("MISMATCH %s\n", shape_name("unique", sh));
      row(shape_name("unique", sh), n, int(S), pct, t, arr + double(uk) * S, copy_gbs,
          (arr + flags) / MiB, get(cnt));
    });
    b = cub_bytes([&](void* p, size_t& bb) {
      return cub::DeviceSelect::Unique(p, bb, pristine, out, cnt, int64_t(n), s);
    });
    t = time_ms(runs, s, none, [&]() {
      CK(cub::DeviceSelect::Unique(tmp, b, pristine, out, cnt, int64_t(n), s));
    });
    if (get(cnt) != uk) printf("MISMATCH cub unique\n");
    row("cub Unique", n, int(S), pct, t, arr + double(uk) * S, copy_gbs, (2 * arr + b) / MiB,
        get(cnt));
  }
  CK(cudaFree(pristine));
  CK(cudaFree(d));
  CK(cudaFree(out));
  CK(cudaFree(cnt));
  CK(cudaStreamDestroy(s));
}


// One call each of the sliding partition and CUB's DevicePartition::If at 50 % kept (and the
// sliding select beside), synchronized between calls, for a profiler's per-kernel byte counts
// (bench_sliding once [sizes]).
template <typename T>
void once_type(size_t n, void* tmp, size_t tmp_cap) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  T *pristine = nullptr, *d = nullptr, *out = nullptr;
  unsigned long long* cnt = nullptr;
  CK(cudaMalloc(&pristine, n * sizeof(T)));
  CK(cudaMalloc(&d, n * sizeof(T)));
  CK(cudaMalloc(&out, n * sizeof(T)));
  CK(cudaMalloc(&cnt, 8));
  SlidingScratch scr;
  fill_random<T><<<132 * 16, 256, 0, s>>>(pristine, n);
  CK(cudaGetLastError());
  const KeepBelow<T> keep{uint32_t(0.5 * 4294967296.0)};
  CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  partition_inplace_async(d, n, keep, cnt, s, scr);
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  select_inplace_async(d, n, keep, cnt, s, scr);
  CK(cudaStreamSynchronize(s));
  size_t b = cub_bytes([&](void* p, size_t& bb) {
    return cub::DevicePartition::If(p, bb, pristine, out, cnt, int64_t(n), keep, s);
  });
  if (b > tmp_cap) exit(1);
  CK(cub::DevicePartition::If(tmp, b, pristine, out, cnt, int64_t(n), keep, s));
  CK(cudaStreamSynchronize(s));
  printf("once %zuM %zu B done\n", n >> 20, sizeof(T));
  CK(cudaFree(pristine));
  CK(cudaFree(d));
  CK(cudaFree(out));
  CK(cudaFree(cnt));
  CK(cudaStreamDestroy(s));
}

// Row suffix of a tile-id source: "" counter, " b" blockIdx.x.
const char* ids_tag(SlideIds ids) { return ids == SlideIds::Counter ? "" : " b"; }

// One launch shape of the sliding kernel in the sweep: select, unique, partition at pct % (keys
// of the run heads at the same fraction in keys_heads).
template <typename T, int THREADS, int VECS, int MINB, SlideIds IDS>
void sweep_shape(size_t n, int runs, int pct, T* pristine, T* d, unsigned long long* cnt,
                 cudaStream_t s, SlidingScratch& scr, double copy_gbs, uint32_t* keys_heads,
                 int ahead) {
  const double S = double(sizeof(T)), arr = double(n) * S;
  const KeepBelow<T> keep{uint32_t(double(pct) / 100.0 * 4294967296.0)};
  auto restore = [&]() {
    CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  };
  auto get = [&]() {
    unsigned long long h = 0;
    CK(cudaMemcpy(&h, cnt, 8, cudaMemcpyDeviceToHost));
    return h;
  };
  char name[64];
  const unsigned grid = 132 * 16;
  fill_random<T><<<grid, 256, 0, s>>>(pristine, n);
  double t = time_ms(runs, s, restore, [&]() {
    slide_async<T, SlideMode::Select, SlideSync::Lookback, THREADS, VECS, MINB, IDS>(
        d, n, keep, cnt, s, scr, ahead);
  });
  unsigned long long k = get();
  snprintf(name, sizeof name, "select %dx%d/%d%s a%d", THREADS, VECS, MINB, ids_tag(IDS),
           ahead);
  row(name, n, int(S), pct, t, arr + double(k) * S, copy_gbs, 0, k);
  t = time_ms(runs, s, restore, [&]() {
    slide_async<T, SlideMode::Partition, SlideSync::Lookback, THREADS, VECS, MINB, IDS>(
        d, n, keep, cnt, s, scr, ahead);
  });
  k = get();
  snprintf(name, sizeof name, "partition %dx%d/%d%s a%d", THREADS, VECS, MINB, ids_tag(IDS),
           ahead);
  row(name, n, int(S), pct, t, 2 * arr, copy_gbs, 0, k);
  fill_from_keys<T><<<grid, 256, 0, s>>>(pristine, keys_heads, n);
  t = time_ms(runs, s, restore, [&]() {
    slide_async<T, SlideMode::Unique, SlideSync::Lookback, THREADS, VECS, MINB, IDS>(
        d, n, KeyEq(), cnt, s, scr, ahead);
  });
  k = get();
  snprintf(name, sizeof name, "unique %dx%d/%d%s a%d", THREADS, VECS, MINB, ids_tag(IDS),
           ahead);
  row(name, n, int(S), pct, t, arr + double(k) * S, copy_gbs, 0, k);
}

// Launch shapes of one element size (bench_sliding sweep): threads x vectors / min blocks, at
// 10 and 50 % kept.
template <typename T>
void sweep_type(size_t n, int runs, void* tmp, size_t tmp_cap) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  T *pristine = nullptr, *d = nullptr;
  unsigned long long* cnt = nullptr;
  uint32_t* keys = nullptr;
  CK(cudaMalloc(&pristine, n * sizeof(T)));
  CK(cudaMalloc(&d, n * sizeof(T)));
  CK(cudaMalloc(&cnt, 8));
  CK(cudaMalloc(&keys, n * 4));
  SlidingScratch scr;
  const unsigned grid = 132 * 16;
  for (int pct : {10, 50}) {
    fill_heads<<<grid, 256, 0, s>>>(keys, n, uint32_t(double(pct) / 100.0 * 4294967296.0));
    size_t sb = 0;
    CK(cub::DeviceScan::InclusiveSum(nullptr, sb, keys, keys, int64_t(n), s));
    if (sb > tmp_cap) exit(1);
    CK(cub::DeviceScan::InclusiveSum(tmp, sb, keys, keys, int64_t(n), s));
    const double t_copy = time_ms(runs, s, []() {}, [&]() {
      CK(cudaMemcpyAsync(d, pristine, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    });
    const double copy_gbs = 2.0 * double(n) * sizeof(T) / (t_copy * 1e-3) / 1e9;
    row("copy D2D", n, int(sizeof(T)), pct, t_copy, 2.0 * double(n) * sizeof(T), copy_gbs, 0, n);
    // the tuned shape (cuda_tuning::kSlide*), the other 64 KiB tile (512x8 / 256x16) at two
    // blocks per SM, and 48 KiB tiles at three (256x12, 384x8), tile ids from blockIdx.x
    constexpr int TH = slide_threads<T>(), VE = slide_vecs<T>(), MB = slide_min_blocks<T>();
    constexpr SlideIds B = SlideIds::Block;
    // (" aD": L2 prefetch D tiles ahead, 0 none)
    for (int a : {0, 33, 66, 99, 132, 198})
      sweep_shape<T, TH, VE, MB, slide_ids<T>()>(n, runs, pct, pristine, d, cnt, s, scr,
                                                 copy_gbs, keys, a);
    constexpr int TH2 = TH == 512 ? 256 : 512, VE2 = TH == 512 ? 16 : 8;
    for (int a : {0, 132})
      sweep_shape<T, TH2, VE2, 2, B>(n, runs, pct, pristine, d, cnt, s, scr, copy_gbs, keys, a);
    for (int a : {0, 99, 198}) {
      sweep_shape<T, 256, 12, 3, B>(n, runs, pct, pristine, d, cnt, s, scr, copy_gbs, keys, a);
      sweep_shape<T, 384, 8, 3, B>(n, runs, pct, pristine, d, cnt, s, scr, copy_gbs, keys, a);
    }
  }
  CK(cudaFree(pristine));
  CK(cudaFree(d));
  CK(cudaFree(cnt));
  CK(cudaFree(keys));
  CK(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace gpu2bs

int main(int argc, char** argv) {
  using namespace gpu2bs;
  const bool sweep = argc > 1 && std::string(argv[1]) == "sweep";
  const bool once = argc > 1 && std::string(argv[1]) == "once";
  if (once) {
    std::vector<size_t> sizes;
    for (int a = 2; a < argc; ++a) sizes.push_back(size_t(atol(argv[a])) << 20);
    if (sizes.empty()) sizes = {size_t(16) << 20, size_t(256) << 20};
    size_t cap = size_t(64) << 20;
    void* tmp = nullptr;
    CK(cudaMalloc(&tmp, cap));
    for (size_t n : sizes) {
      once_type<uint32_t>(n, tmp, cap);
      once_type<unsigned long long>(n, tmp, cap);
      once_type<PairRecord>(n, tmp, cap);
    }
    CK(cudaFree(tmp));
    return 0;
  }
  g_orders = argc > 1 && std::string(argv[1]) == "orders";
  if (sweep || g_orders) {
    --argc;
    ++argv;
  }
  const int runs = argc > 1 ? std::max(1, atoi(argv[1])) : 5;
  std::vector<size_t> sizes;
  for (int a = 2; a < argc; ++a) sizes.push_back(size_t(atol(argv[a])) << 20);
  if (sizes.empty()) sizes = {size_t(16) << 20, size_t(256) << 20};
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# bench_sliding on %s (%d SMs), median of %d runs, cudaEvents\n", prop.name,
         prop.multiProcessorCount, runs);
  printf("# GB/s = (bytes read + bytes written) / time: select/unique n*size + kept*size,\n"
         "# partition 2*n*size, copy 2*n*size. Memory: data arrays + scratch/temp (MiB).\n"
         "# Note: the sliding partition keeps the smaller of its parts in scratch (counted).\n\n");
  printf("| method | n | size | sel | ms | GB/s | of copy | memory MiB | result |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  size_t tmp_cap = size_t(64) << 20;  // CUB temp storage (a few MB at 256M)
  void* tmp = nullptr;
  CK(cudaMalloc(&tmp, tmp_cap));
  for (size_t n : sizes) {
    if (sweep) {
      sweep_type<uint32_t>(n, runs, tmp, tmp_cap);
      sweep_type<unsigned long long>(n, runs, tmp, tmp_cap);
      sweep_type<PairRecord>(n, runs, tmp, tmp_cap);
      continue;
    }
    bench_type<uint32_t>(n, runs, tmp, tmp_cap);
    bench_type<unsigned long long>(n, runs, tmp, tmp_cap);
    bench_type<PairRecord>(n, runs, tmp, tmp_cap);
  }
  CK(cudaFree(tmp));
  return 0;
}
