// Weighted SDH and pair count (2-BS Type-II / Type-I with pair weights): all-pairs tiles of
// kWTile points, one thread per point of the anchor tile, the other tile staged in shared
// memory with its weights. Each pair's bucket comes from the same arithmetic as every other
// kernel (arith.h); its product w_i * w_j is rounded to float64, then to the call's fixed-point
// grid (weight_fixed), and added to a 128-bit integer sum: a 64-bit atomic add on the low limb
// whose returned old value gives the carry into the high limb. Integer adds are associative, so
// the sums equal the CPU engine's bit for bit whatever the order of the atomics.
//   SDH: per-block privatized histograms in shared memory when they fit, flushed into the
//        global arrays once per launch; else the global arrays directly. Two layouts of the
//        shared sums (WeightedDeviceArgs::split32): 32-bit words only (the default: shared
//        memory adds 32-bit integers natively, 64-bit ones by a compare-and-swap loop) or two
//        64-bit limbs per bucket.
//   Pair count: per-thread count and 128-bit sum in registers, reduced per block in shared
//        memory, then one global add per block.
// Blocks walk tile pairs (a <= b) with a grid stride; launches are bounded so a block's 32-bit
// shared counts cannot overflow and the caller can poll for cancel between them.
#include "weights.h"

#include <algorithm>
#include <cmath>

#include "core/arith.h"
#include "weight_atomics.cuh"

namespace gpu2bs {
namespace cuda {
namespace {

constexpr int kWTile = 256;  // points per tile = threads per block
// Largest shared histogram (count + two limbs per bucket) per block.
constexpr size_t kWSharedHistBytes = size_t(48) << 10;
// Tile pairs per block per launch: at most 64 x 65536 pairs, far below 2^32 per bucket.
constexpr long long kWItemsPerBlock = 64;

// Kernel arguments in the working precision T.
template <typename T>
struct WArgs {
  const T* c[kMaxDims];
  const double* w;
  long long n;
  long long tiles;
  int nb;
  T inv_w, nbt, beyond, r2;
  bool weighted;
  bool split32;
  WeightScale s;
  unsigned long long* pairs;
  unsigned long long* lo;
  unsigned long long* hi;
};

// Tile pair `item` as (a, b), a <= b, in row order (the CPU engine's order: src/core/weights.cpp).
__device__ void w_tile_pair(long long item, long long tiles, long long* a, long long* b) {
  auto start = [&](long long r) { return r * tiles - r * (r - 1) / 2; };
  const double t2 = 2.0 * double(tiles) + 1.0;
  const double disc = fmax(0.0, t2 * t2 - 8.0 * double(item));
  long long r = (long long)fmax(0.0, floor((t2 - sqrt(disc)) / 2.0));
  r = r < tiles - 1 ? r : tiles - 1;
  while (r > 0 && start(r) > item) --r;
  while (r + 1 < tiles && start(r + 1) <= item) ++r;
  *a = r;
  *b = r + (item - start(r));
}

// MODE 0: SDH, width from the bounding box (clamp); 1: SDH, explicit width (pairs past the end
// dropped); 2: pair count. SHARED: the SDH histograms privatized in shared memory.
template <typename T, int D, int MODE, bool SHARED>
__global__ void __launch_bounds__(kWTile) weighted_kernel(WArgs<T> g, long long item0, long long item1) {
  extern __shared__ __align__(16) unsigned char smem[];
  double* tw = reinterpret_cast<double*>(smem);
  T* tc = reinterpret_cast<T*>(smem + kWTile * sizeof(double));
  unsigned long long* sh_lo = reinterpret_cast<unsigned long long*>(smem + kWTile * sizeof(double) +
                                                                    size_t(D) * kWTile * sizeof(T));
  const int slots = MODE == 2 ? 1 : g.nb;
  unsigned long long* sh_hi = sh_lo + slots;
  unsigned* sh_cnt = reinterpret_cast<unsigned*>(sh_hi + slots);
  const int tid = threadIdx.x;
  if (SHARED || MODE == 2) {
    for (int k = tid; k < slots; k += kWTile) {
      sh_lo[k] = 0;
      sh_hi[k] = 0;
      sh_cnt[k] = 0;
    }
  }
  unsigned long long my_cnt = 0;  // pair count: this thread's pairs and sum
  WeightSum my_sum;
  for (long long it = item0 + blockIdx.x; it < item1; it += gridDim.x) {
    long long a, b;
    w_tile_pair(it, g.tiles, &a, &b);
    const long long i = a * kWTile + tid;
    const long long j0 = b * kWTile;
    __syncthreads();  // the previous tile is no longer read
    if (j0 + tid < g.n) {
#pragma unroll
      for (int k = 0; k < D; ++k) tc[k * kWTile + tid] = g.c[k][j0 + tid];
      tw[tid] = g.w[j0 + tid];
    }
    __syncthreads();
    if (i >= g.n) continue;
    T p[D];
#pragma unroll
    for (int k = 0; k < D; ++k) p[k] = g.c[k][i];
    const double wi = g.w[i];
    const int jn = int(g.n - j0 < kWTile ? g.n - j0 : kWTile);
    for (int t = a == b ? tid + 1 : 0; t < jn; ++t) {
      T q[D];
#pragma unroll
      for (int k = 0; k < D; ++k) q[k] = tc[k * kWTile + t];
      const T d2 = sq_dist<T, D>(p, q);
      if constexpr (MODE == 2) {
        if (d2 <= g.r2) {
          ++my_cnt;
          if (g.weighted) my_sum.add(weight_fixed(wi, tw[t], g.s));
        }
      } else {
        const int bk = sdh_bucket<T>(d2, g.inv_w, g.nbt, g.beyond);
        if (MODE == 0 || bk >= 0) {
          if constexpr (SHARED) {
            atomicAdd(&sh_cnt[bk], 1u);
            if (g.weighted) {
              const long long qv = weight_fixed(wi, tw[t], g.s);
              if (g.split32)
                add_split32(reinterpret_cast<unsigned*>(sh_lo) + bk, reinterpret_cast<unsigned*>(sh_lo) + slots + bk,
                            reinterpret_cast<unsigned*>(sh_lo) + 2 * slots + bk, qv);
              else
                add128(&sh_lo[bk], &sh_hi[bk], qv);
            }
          } else {
            atomicAdd(&g.pairs[bk], 1ull);
            if (g.weighted) add128(&g.lo[bk], &g.hi[bk], weight_fixed(wi, tw[t], g.s));
          }
        }
      }
    }
  }
  if constexpr (MODE == 2) {
    if (my_cnt) {
      atomicAdd(&sh_cnt[0], unsigned(my_cnt));  // at most kWItemsPerBlock x kWTile pairs
      add128(&sh_lo[0], &sh_hi[0], my_sum.lo, my_sum.hi);
    }
  }
  if (SHARED || MODE == 2) {
    __syncthreads();
    for (int k = tid; k < slots; k += kWTile) {
      if (sh_cnt[k]) atomicAdd(&g.pairs[k], (unsigned long long)sh_cnt[k]);
      if (MODE != 2 && g.split32) {
        const unsigned* w32 = reinterpret_cast<const unsigned*>(sh_lo);
        const WeightSum v = split32_sum(w32[k], w32[slots + k], w32[2 * slots + k], sh_cnt[k]);
        if (v.lo || v.hi) add128(&g.lo[k], &g.hi[k], v.lo, v.hi);
      } else if (sh_lo[k] || sh_hi[k]) {
        add128(&g.lo[k], &g.hi[k], sh_lo[k], sh_hi[k]);
      }
    }
  }
}

using Check = void (*)(cudaError_t, const char*, const char*, int);
#define G2_W_CHECK(expr) check((expr), #expr, __FILE__, __LINE__)

// Launches the kernel variant over every tile pair in bounded launches.
template <typename T, int D, int MODE, bool SHARED>
double run_variant(const WeightedDeviceArgs& a, cudaStream_t stream, int sms,
                   const std::function<void()>& poll, Check check) {
  WArgs<T> g{};
  for (int k = 0; k < D; ++k) g.c[k] = static_cast<const T*>(a.coord[k]);
  g.w = a.w;
  g.n = (long long)a.n;
  g.tiles = (g.n + kWTile - 1) / kWTile;
  g.nb = a.nbuckets;
  const bool f32 = sizeof(T) == 4;
  g.inv_w = f32 ? T(a.inv_w_f) : T(a.inv_w);
  g.nbt = T(a.nbuckets);
  g.beyond = sdh_beyond<T>(a.nbuckets, a.clamp);
  g.r2 = f32 ? T(a.r2_f) : T(a.r2);
  g.weighted = a.weighted;
  g.split32 = a.split32;
  g.s = a.scale;
  g.pairs = a.pairs;
  g.lo = a.lo;
  g.hi = a.hi;
  const int slots = MODE == 2 ? 1 : a.nbuckets;
  const size_t smem = kWTile * sizeof(double) + size_t(D) * kWTile * sizeof(T) +
                      ((SHARED || MODE == 2) ? size_t(slots) * 20 : 0);
  auto kernel = weighted_kernel<T, D, MODE, SHARED>;
  G2_W_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int per_sm = 0;
  G2_W_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWTile, smem));
  const long long grid = (long long)std::max(1, per_sm) * std::max(1, sms);
  const long long items = g.tiles * (g.tiles + 1) / 2;
  cudaEvent_t ev0, ev1;
  G2_W_CHECK(cudaEventCreate(&ev0));
  G2_W_CHECK(cudaEventCreate(&ev1));
  // The events are destroyed also when `poll` throws (cancel).
  struct Events {
    cudaEvent_t a, b;
    ~Events() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } evs{ev0, ev1};
  double ms_total = 0;
  for (long long next = 0; next < items;) {
    const long long end = std::min(items, next + grid * kWItemsPerBlock);
    const unsigned blocks = unsigned(std::min(grid, end - next));
    G2_W_CHECK(cudaEventRecord(ev0, stream));
    kernel<<<blocks, kWTile, smem, stream>>>(g, next, end);
    G2_W_CHECK(cudaGetLastError());
    G2_W_CHECK(cudaEventRecord(ev1, stream));
    G2_W_CHECK(cudaEventSynchronize(ev1));
    float ms = 0;
    G2_W_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
    ms_total += ms;
    next = end;
    if (poll) poll();
  }
  return ms_total;
}

// The variant of the statistic and histogram size.
template <typename T, int D>
double run_dims(const WeightedDeviceArgs& a, cudaStream_t stream, int sms,
                const std::function<void()>& poll, Check check) {
  if (a.nbuckets == 0) return run_variant<T, D, 2, false>(a, stream, sms, poll, check);
  const bool shared = size_t(a.nbuckets) * 20 <= kWSharedHistBytes;
  if (a.clamp)
    return shared ? run_variant<T, D, 0, true>(a, stream, sms, poll, check)
                  : run_variant<T, D, 0, false>(a, stream, sms, poll, check);
  return shared ? run_variant<T, D, 1, true>(a, stream, sms, poll, check)
                : run_variant<T, D, 1, false>(a, stream, sms, poll, check);
}

// The variant of the precision.
template <typename T>
double run_t(const WeightedDeviceArgs& a, cudaStream_t stream, int sms,
             const std::function<void()>& poll, Check check) {
  switch (a.dims) {
    case 2: return run_dims<T, 2>(a, stream, sms, poll, check);
    case 3: return run_dims<T, 3>(a, stream, sms, poll, check);
    case 4: return run_dims<T, 4>(a, stream, sms, poll, check);
    case 5: return run_dims<T, 5>(a, stream, sms, poll, check);
    default: return run_dims<T, 6>(a, stream, sms, poll, check);
  }
}

}  // namespace

double weighted_run(const WeightedDeviceArgs& a, cudaStream_t stream, int sms,
                    const std::function<void()>& poll, Check check) {
  if (a.n < 2) return 0;
  return a.f32 ? run_t<float>(a, stream, sms, poll, check) : run_t<double>(a, stream, sms, poll, check);
}

}  // namespace cuda
}  // namespace gpu2bs
