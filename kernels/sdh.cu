// Spatial distance histogram (2-BS Type-II) on the GPU: all-pairs tiles (tiles.cuh) with output
// privatization (framework paper 3.3.1-3.3.2). Each block keeps `copies` private histograms of
// 32-bit counters in shared memory; lane l of every warp updates copy l % copies (warp-level
// privatization), the number of copies chosen by the latency/occupancy model
// (choose_privatization, constants in tuning.h). A block merges its copies into the uint64
// final counts with one global atomic per bucket at the end of each slice, before any 32-bit
// counter can overflow (a block examines < 2^32 pairs per slice).
//
// When one private copy plus the point tile does not fit in a block's shared memory (above
// ~56000 buckets for 3-D float32), the kernel adds every pair straight into the uint64 final
// counts in global memory (one atomic per pair; measured 5x slower than one shared copy, see
// tuning.h, so it is used only then).
//
// Float32 fast path (issue 4): the bucket k = floor(fl(sqrt(d2)) * inv_w) is a non-decreasing
// function of d2, so it is fixed by thresholds T_k = the smallest float d2 whose bucket is >= k
// (computed exactly, by binary search over the float bit patterns with sdh_bucket itself, in a
// small kernel per call). Per pair the kernel takes an approximate bucket k_a = rn(s * inv_w)
// from the hardware's approximate square root s (MUFU.SQRT), which is k or k + 1 (the error of
// s * inv_w is far below 1/2 for inv_w <= 2^40 and at most 65536 buckets), and corrects it with
// one comparison: k = k_a - (d2 < T[k_a]). The result equals sdh_bucket() bit for bit; the test
// SdhFastBucket.EveryFloat checks this for all 2^32 bit patterns of d2. The thresholds live in
// shared memory next to the private copies, interleaved per bucket: [T x C | counters x C]
// (C = copies, lane l uses copy l % C), so lane l's threshold and counter are one immediate
// offset apart and the lanes of a warp hit distinct banks (C = 32).
#include <vector>

#include "common.cuh"
#include "tiles.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kB = cuda_tuning::kSdhThreads;
constexpr int kRT = cuda_tuning::kSdhRegPoints;
constexpr int kFB = cuda_tuning::kSdhFastThreads;
constexpr int kFRT = cuda_tuning::kSdhFastRegPoints;

template <typename T, bool GLOBAL>
struct SdhOp {
  struct Params {
    unsigned long long* hist;  // final counts (nbuckets)
    T inv_w;                   // 1 / width in the precision
    T nbt;                     // nbuckets as T
    T beyond;                  // sdh_beyond(): last bucket (derived width) or -1 (explicit)
    int nb;
    int copies;
    int stride;
  };
  static constexpr bool kBatch = false;
  const Params p;
  unsigned* sh;
  unsigned base;

  __device__ SdhOp(const Params& prm, unsigned char* smem)
      : p(prm), sh(reinterpret_cast<unsigned*>(smem)) {
    if (!GLOBAL) {
      base = unsigned((threadIdx.x & 31) % p.copies) * unsigned(p.stride);
      const int words = p.copies * p.stride;
      for (int i = threadIdx.x; i < words; i += blockDim.x) sh[i] = 0;
      __syncthreads();
    }
  }

  __device__ __forceinline__ void pair(T d2) {
    const int k = sdh_bucket<T>(d2, p.inv_w, p.nbt, p.beyond);
    if (k >= 0) {
      if (GLOBAL)
        atomicAdd(p.hist + k, 1ull);
      else
        atomicAdd(sh + base + k, 1u);
    }
  }

  __device__ void finish() {
    if (GLOBAL) return;
    __syncthreads();
    for (int k = threadIdx.x; k < p.nb; k += blockDim.x) {
      unsigned long long s = 0;
      for (int c = 0; c < p.copies; ++c) s += sh[c * p.stride + k];
      if (s) atomicAdd(p.hist + k, s);
    }
  }
};

// ---- float32 fast path: thresholds and approximate square root ------------------------------

constexpr float kMagic = 12582912.0f;      // 1.5 * 2^23: rn(x + kMagic) = kMagic + rn_int(x)
constexpr unsigned kMagicBits = 0x4B400000u;  // its bit pattern
constexpr int kFastMaxBuckets = 65536;      // error analysis bound (see fast_applies)
constexpr float kFastMaxInvW = 1099511627776.0f;  // 2^40

// The fast path is exact when |s * inv_w - fl(fl(sqrt(d2)) * inv_w)| < 1/2 wherever either is
// below nbuckets + 1: MUFU.SQRT's relative error (~2^-22) plus two roundings, times at most
// 65537, stays below 0.05; with ftz, denormal d2 give s = 0 where the exact bucket is 0 as long
// as sqrt(2^-126) * inv_w < 1, i.e. inv_w <= 2^40 leaves a margin of 2^23.
inline bool fast_applies(int nb, float inv_w) {
  return nb >= 1 && nb <= kFastMaxBuckets && inv_w >= 0.0f && inv_w <= kFastMaxInvW;
}

__device__ __forceinline__ float sqrt_approx(float x) {
  float s;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(x));
  return s;
}

// Bit pattern of kMagic + k_a, clamped to kMagicBits + cap (unsigned: NaN and +inf clamp too).
__device__ __forceinline__ unsigned fast_bucket_bits(float d2, float inv_w, unsigned capbits) {
  const float f = __fmaf_rn(sqrt_approx(d2), inv_w, kMagic);
  return min(__float_as_uint(f), capbits);
}

// The exact bucket with "beyond" (-1, explicit width) mapped to nb: non-decreasing in d2.
__device__ __forceinline__ int exact_mapped_bucket(float d2, float inv_w, float nbt, float beyond,
                                                   int nb) {
  const int k = sdh_bucket<float>(d2, inv_w, nbt, beyond);
  return k < 0 ? nb : k;
}

// T[k], k = 0..cap: the smallest float d2 >= +0 with exact_mapped_bucket(d2) >= k (cap = nb - 1
// with the clamp, nb without; +inf always maps to cap).
__global__ void sdh_thresholds_kernel(float* T, int cap, float inv_w, float nbt, float beyond,
                                      int nb) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > cap) return;
  unsigned lo = 0, hi = 0x7F800000u;
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (exact_mapped_bucket(__uint_as_float(mid), inv_w, nbt, beyond, nb) >= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  T[k] = __uint_as_float(lo);
}

// Output stage of the fast path: C interleaved private copies with their thresholds.
template <int C>
struct SdhFastOp {
  static_assert(C >= 1 && C <= 32 && (C & (C - 1)) == 0, "copies: a power of two <= 32");
  static constexpr bool kBatch = true;
  static constexpr unsigned kEntry = 8u * C;  // bytes per bucket: C thresholds, C counters
  struct Params {
    unsigned long long* hist;  // final counts (nb)
    const float* thr;          // T[0..cap] (global memory)
    float inv_w;
    unsigned capbits;          // kMagicBits + cap
    int nb;
    int cap;
  };
  const Params p;
  unsigned* words;
  unsigned base;  // shared address of this lane's threshold of bucket 0, minus kMagicBits * kEntry

  __device__ SdhFastOp(const Params& prm, unsigned char* smem)
      : p(prm), words(reinterpret_cast<unsigned*>(smem)) {
    const int n = (p.cap + 1) * 2 * C;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      words[i] = (i & (2 * C - 1)) < C ? __float_as_uint(p.thr[i / (2 * C)]) : 0u;
    __syncthreads();
    base = unsigned(__cvta_generic_to_shared(smem)) + 4u * (threadIdx.x & (C - 1)) -
           kMagicBits * kEntry;
  }

  // Every threshold load of the batch first, then the corrections, then the increments (the
  // loads and the atomics may not pass each other, so interleaving them would serialize).
  template <int N>
  __device__ __forceinline__ void pairs(const float (&d2)[N]) {
    unsigned addr[N];
    float t[N];
#pragma unroll
    for (int i = 0; i < N; ++i) addr[i] = base + fast_bucket_bits(d2[i], p.inv_w, p.capbits) * kEntry;
#pragma unroll
    for (int i = 0; i < N; ++i) asm("ld.shared.f32 %0, [%1];" : "=f"(t[i]) : "r"(addr[i]));
#pragma unroll
    for (int i = 0; i < N; ++i) addr[i] = d2[i] < t[i] ? addr[i] - kEntry : addr[i];
#pragma unroll
    for (int i = 0; i < N; ++i)
      asm volatile("red.shared.add.u32 [%0+%1], 1;" ::"r"(addr[i]), "n"(4 * C) : "memory");
  }

  __device__ __forceinline__ void pair(float d2) {
    const float v[1] = {d2};
    pairs<1>(v);
  }

  __device__ void finish() {
    __syncthreads();
    for (int k = threadIdx.x; k < p.nb; k += blockDim.x) {
      unsigned long long s = 0;
#pragma unroll
      for (int c = 0; c < C; ++c) s += words[k * 2 * C + C + c];
      if (s) atomicAdd(p.hist + k, s);
    }
  }
};

template <int D, int B, int RT, int C>
void sdh_fast_launch(Call& call, const TileArgs<float>& args,
                     const typename SdhFastOp<C>::Params& prm, size_t smem) {
  run_tiles<float>(call, tile_kernel<float, D, B, RT, SdhFastOp<C>>, B, B * RT, smem, args, prm,
                   cuda_tuning::kSdhGuessPairsPerSec);
}

// The float32 fast path with B threads x RT points; false (nothing done) when it does not apply
// (bucket count, width, or one copy with its thresholds does not fit in shared memory).
template <int D, int B, int RT>
bool sdh_fast(Call& call, const SdhProblem& p, float* const* c, unsigned long long* hist) {
  constexpr int TILE = B * RT;
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  const float inv_w = p.params.inv_width_f;
  if (!fast_applies(nb, inv_w)) return false;
  const bool clamp = !p.params.explicit_width;
  const int cap = clamp ? nb - 1 : nb;
  const size_t tile_bytes = sizeof(float) * D * TILE;
  const auto& f = device_facts();
  PrivMachine m;
  m.sms = f.sms;
  m.smem_per_sm = f.smem_per_sm;
  m.smem_per_block_optin = f.smem_per_block_optin;
  m.smem_reserved = f.smem_reserved;
  m.max_threads_per_sm = f.prop.maxThreadsPerMultiProcessor;
  m.max_blocks_per_sm = f.prop.maxBlocksPerMultiProcessor;
  int regs_bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &regs_bps, tile_kernel<float, D, B, RT, SdhFastOp<32>>, B, 0));
  m.reg_blocks_per_sm = std::max(1, regs_bps);
  // Per copy: cap + 1 thresholds and cap + 1 counters (the model's "buckets" of one copy).
  const PrivChoice ch = choose_privatization(2 * (cap + 1), B, tile_bytes, double(n) / RT, m,
                                             sdh_forced_copies());
  if (ch.global) return false;
  const int C = ch.copies;
  const size_t smem = tile_bytes + size_t(cap + 1) * 2 * size_t(C) * 4;
  last_run().sdh_copies = C;

  float* thr = call.alloc<float>(size_t(cap) + 1, "bucket thresholds");
  sdh_thresholds_kernel<<<unsigned((cap + 1 + 255) / 256), 256, 0, call.stream()>>>(
      thr, cap, inv_w, float(nb), sdh_beyond<float>(nb, clamp), nb);
  G2_CUDA_LAUNCH("SDH threshold kernel launch");

  TileArgs<float> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  args.tiles = (long long)((n + TILE - 1) / TILE);
  const unsigned capbits = kMagicBits + unsigned(cap);
  switch (C) {
    case 32: sdh_fast_launch<D, B, RT, 32>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
    case 16: sdh_fast_launch<D, B, RT, 16>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
    case 8: sdh_fast_launch<D, B, RT, 8>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
    case 4: sdh_fast_launch<D, B, RT, 4>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
    case 2: sdh_fast_launch<D, B, RT, 2>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
    default: sdh_fast_launch<D, B, RT, 1>(call, args, {hist, thr, inv_w, capbits, nb, cap}, smem); break;
  }
  return true;
}

// The tile stage for B threads x RT register points per block.
template <typename T, int D, int B, int RT>
void sdh_tiles(Call& call, const SdhProblem& p, T* const* c, unsigned long long* hist) {
  constexpr int TILE = B * RT;
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  auto ks = tile_kernel<T, D, B, RT, SdhOp<T, false>>;
  auto kg = tile_kernel<T, D, B, RT, SdhOp<T, true>>;
  // Output privatization: the model picks global memory or the number of shared copies.
  const size_t tile_bytes = sizeof(T) * D * TILE;
  const auto& f = device_facts();
  PrivMachine m;
  m.sms = f.sms;
  m.smem_per_sm = f.smem_per_sm;
  m.smem_per_block_optin = f.smem_per_block_optin;
  m.smem_reserved = f.smem_reserved;
  m.max_threads_per_sm = f.prop.maxThreadsPerMultiProcessor;
  m.max_blocks_per_sm = f.prop.maxBlocksPerMultiProcessor;
  int regs_bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&regs_bps, ks, B, 0));
  m.reg_blocks_per_sm = std::max(1, regs_bps);
  const PrivChoice ch =
      choose_privatization(nb, B, tile_bytes, double(n) / RT, m, sdh_forced_copies());
  last_run().sdh_copies = ch.global ? 0 : ch.copies;

  TileArgs<T> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  args.tiles = (long long)((n + TILE - 1) / TILE);
  const bool clamp = !p.params.explicit_width;
  const T inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  if (ch.global) {
    typename SdhOp<T, true>::Params prm{hist, inv_w, T(nb), sdh_beyond<T>(nb, clamp), nb, 1, nb};
    run_tiles<T>(call, kg, B, TILE, ch.smem_bytes, args, prm, cuda_tuning::kSdhGuessPairsPerSec);
  } else {
    typename SdhOp<T, false>::Params prm{
        hist, inv_w, T(nb), sdh_beyond<T>(nb, clamp), nb, ch.copies, ch.stride};
    run_tiles<T>(call, ks, B, TILE, ch.smem_bytes, args, prm, cuda_tuning::kSdhGuessPairsPerSec);
  }
}

template <typename T, int D>
std::vector<uint64_t> sdh_run(const SdhProblem& p, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  T* c[kMaxDims] = {};
  for (int k = 0; k < D; ++k) c[k] = call.alloc<T>(n, "points");
  unsigned long long* hist = call.alloc<unsigned long long>(size_t(nb), "histogram");
  G2_CUDA(cudaMemsetAsync(hist, 0, size_t(nb) * 8, call.stream()));
  ctl.stats.prepare_s += seconds_since(t0);
  upload_points<T>(call, p.pts, c);
  // Bench-only launch configurations (3-D float32 only), to justify the tuning table: 1..4 the
  // fast path with 512x2, 1024x1, 512x4, 256x4 threads x points, 5 the exact path (the kernel
  // before issue 4, kSdhThreads x kSdhRegPoints).
  int variant = 0;
  if constexpr (sizeof(T) == 4 && D == 3) variant = tile_variant();
  bool done = false;
  if constexpr (sizeof(T) == 4) {
    if constexpr (D == 3) {
      switch (variant) {
        case 1: done = sdh_fast<D, 512, 2>(call, p, c, hist); break;
        case 2: done = sdh_fast<D, 1024, 1>(call, p, c, hist); break;
        case 3: done = sdh_fast<D, 512, 4>(call, p, c, hist); break;
        case 4: done = sdh_fast<D, 256, 4>(call, p, c, hist); break;
        case 5: done = false; break;
        default: done = sdh_fast<D, kFB, kFRT>(call, p, c, hist); break;
      }
    } else {
      done = sdh_fast<D, kFB, kFRT>(call, p, c, hist);
    }
  }
  if (!done) sdh_tiles<T, D, kB, kRT>(call, p, c, hist);
  std::vector<uint64_t> out(size_t(nb), 0);
  download(call, out.data(), hist, size_t(nb) * 8);
  ctl.stats.pairs_examined += uint64_t(n) * (n ? n - 1 : 0) / 2;
  return out;
}

template <typename T>
std::vector<uint64_t> sdh_dims(const SdhProblem& p, Control& ctl) {
  switch (p.pts.dims) {
    case 2: return sdh_run<T, 2>(p, ctl);
    case 3: return sdh_run<T, 3>(p, ctl);
    case 4: return sdh_run<T, 4>(p, ctl);
    case 5: return sdh_run<T, 5>(p, ctl);
    case 6: return sdh_run<T, 6>(p, ctl);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

}  // namespace

std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) {
  const size_t n = p.pts.n;
  if (p.params.nbuckets < 1) throw Error(ErrorCode::InvalidParameter, "nbuckets must be positive");
  if (n > 0xFFFFFFFFull)
    throw Error(ErrorCode::ProgramLimit, "too many points for the GPU engine",
                "At most 4294967295 points are supported.");
  if (n < 2) return std::vector<uint64_t>(size_t(p.params.nbuckets), 0);  // no pairs
  return p.prec == Precision::Float32 ? sdh_dims<float>(p, ctl) : sdh_dims<double>(p, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
