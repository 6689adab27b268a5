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
// Float32 fast path: the bucket k = floor(fl(sqrt(d2)) * inv_w) is a non-decreasing
// function of d2, so it is fixed by thresholds T_k = the smallest float d2 whose bucket is >= k
// (computed exactly, by binary search over the float bit patterns with sdh_bucket itself, in a
// small kernel per call). Per pair the kernel takes an approximate bucket k_a = rn(s * inv_w)
// from the hardware's approximate square root s (MUFU.SQRT), which is k or k + 1 (the error of
// s * inv_w is far below 1/2 for inv_w <= 2^40 and at most 65536 buckets), and corrects it with
// one comparison: k = k_a - (d2 < T[k_a]). The result equals sdh_bucket() bit for bit; the test
// SdhFastBucket.EveryFloat checks this for all 2^32 bit patterns of d2. The thresholds live in
// shared memory next to the private copies, interleaved per bucket: [T x C | counters x C]
// (C = copies, lane l uses copy l % C), so lane l's threshold and counter are one immediate
// offset apart and the lanes of a warp hit distinct banks (C = 32); for larger histograms, where
// that leaves fewer than 16 copies, one shared T table and the counters alone per copy (more
// copies, fewer bank conflicts on the counters). When the coordinates (bounds reduced on the
// device per call) bound k_a, the table covers every k_a and the clamp of k_a is left out
// (one instruction per pair). Above 65536 buckets, or when thresholds and one copy do not fit
// (e.g. 50000 buckets: 400 KB), the exact kernel runs; for float32 it computes the correctly
// rounded square root without the call to its slow path (sdh_bucket_nocall).
#include <cmath>
#include <cstring>
#include <vector>

#include "common.cuh"
#include "sdh_bucket.cuh"
#include "tiles.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kB = cuda_tuning::kSdhThreads;
constexpr int kRT = cuda_tuning::kSdhRegPoints;
constexpr int kFB = cuda_tuning::kSdhFastThreads;
constexpr int kFRT = cuda_tuning::kSdhFastRegPoints;

template <typename T, bool GLOBAL, bool NOCALL = false>
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
    int k;
    if constexpr (NOCALL && sizeof(T) == 4)
      k = sdh_bucket_nocall(d2, p.inv_w, p.nbt, p.beyond);
    else
      k = sdh_bucket<T>(d2, p.inv_w, p.nbt, p.beyond);
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

thread_local bool g_last_fast = false;  // the last SDH call on this thread took the fast path
thread_local bool g_last_shared_t = false;  // ... with one shared threshold table

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

// Table entries (k_a = 0 .. entries - 1) for squared distances up to d2max: cap + 1 when k_a
// cannot pass cap, more (up to a quarter more, at least 64) when it can pass it by a little,
// 0 when only the clamped variant is safe (d2max unknown: non-finite coordinates, or far
// beyond the last bucket). k_a = rn(s * inv_w) <= floor(q + 1/2) with q = sqrt(d2max) * inv_w
// times (1 + 1e-5) (s's error and the roundings are below 2^-20; d2max carries the float
// roundings of sq_dist).
inline int fast_entries(int cap, float inv_w, double d2max) {
  if (!(d2max >= 0) || !(d2max < 1e36)) return 0;
  const double q = std::sqrt(d2max) * double(inv_w) * (1.0 + 1e-5);
  const double kmax = std::floor(q + 0.5) + 1;
  if (kmax <= cap) return cap + 1;
  if (kmax + 1 <= cap + 1 + std::max(64, (cap + 1) / 4)) return int(kmax) + 1;
  return 0;
}

__device__ __forceinline__ float sqrt_approx(float x) {
  float s;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(x));
  return s;
}

// Bit pattern of kMagic + k_a; with CLAMP at most kMagicBits + cap (unsigned: NaN and +inf
// clamp too). Without, the caller guarantees k_a < entries (fast_entries).
template <bool CLAMP>
__device__ __forceinline__ unsigned fast_bucket_bits(float d2, float inv_w, unsigned capbits) {
  const float f = __fmaf_rn(sqrt_approx(d2), inv_w, kMagic);
  if constexpr (CLAMP)
    return min(__float_as_uint(f), capbits);
  else
    return __float_as_uint(f);
}

// The exact bucket with "beyond" (-1, explicit width) mapped to nb: non-decreasing in d2.
__device__ __forceinline__ int exact_mapped_bucket(float d2, float inv_w, float nbt, float beyond,
                                                   int nb) {
  const int k = sdh_bucket<float>(d2, inv_w, nbt, beyond);
  return k < 0 ? nb : k;
}

// T[k], k = 0..cap: the smallest float d2 >= +0 with exact_mapped_bucket(d2) >= k (cap = nb - 1
// with the clamp, nb without; +inf always maps to cap). T[k] = -inf for k = cap + 1 .. entries-1
// (k_a past cap: the pair stays at k_a, a counter merged like cap).
__global__ void sdh_thresholds_kernel(float* T, int cap, int entries, float inv_w, float nbt,
                                      float beyond, int nb) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= entries) return;
  if (k > cap) {
    T[k] = -INFINITY;
    return;
  }
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

// Float32 coordinate bounds on the device (for fast_entries): per dimension the smallest and
// largest value as order-preserving unsigned keys, and a flag for NaN or infinity.
__device__ __forceinline__ unsigned float_key(float v) {
  const unsigned b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
inline float key_float(unsigned k) {
  const unsigned b = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

struct CoordPtrs {
  const float* c[kMaxDims];
};

__global__ void coord_bounds_kernel(CoordPtrs x, unsigned n, unsigned* out) {
  const float* c = x.c[blockIdx.y];
  unsigned lo = 0xFFFFFFFFu, hi = 0, bad = 0;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = c[i];
    if (!isfinite(v)) {
      bad = 1;
    } else {
      lo = min(lo, float_key(v));
      hi = max(hi, float_key(v));
    }
  }
  lo = __reduce_min_sync(0xFFFFFFFFu, lo);
  hi = __reduce_max_sync(0xFFFFFFFFu, hi);
  bad = __reduce_or_sync(0xFFFFFFFFu, bad);
  if ((threadIdx.x & 31) == 0) {
    atomicMin(out + 3 * blockIdx.y, lo);
    atomicMax(out + 3 * blockIdx.y + 1, hi);
    if (bad) atomicOr(out + 3 * blockIdx.y + 2, 1u);
  }
}

// Upper bound of every float32 sq_dist between the n points (NaN when unknown).
template <int D>
double device_d2max(Call& call, float* const* c, size_t n) {
  unsigned* out = call.alloc<unsigned>(3 * D, "bounds");
  std::vector<unsigned> h(3 * D);
  for (int k = 0; k < D; ++k) {
    h[3 * k] = 0xFFFFFFFFu;
    h[3 * k + 1] = 0;
    h[3 * k + 2] = 0;
  }
  G2_CUDA(cudaMemcpyAsync(out, h.data(), 12 * D, cudaMemcpyHostToDevice, call.stream()));
  CoordPtrs x{};
  for (int k = 0; k < D; ++k) x.c[k] = c[k];
  const unsigned blocks = unsigned(std::min<size_t>((n + 255) / 256, 1024));
  coord_bounds_kernel<<<dim3(blocks, D), 256, 0, call.stream()>>>(x, unsigned(n), out);
  G2_CUDA_LAUNCH("coordinate bounds kernel launch");
  download(call, h.data(), out, 12 * D);
  call.free(out);
  double d2 = 0;
  for (int k = 0; k < D; ++k) {
    if (h[3 * k + 2] || h[3 * k] > h[3 * k + 1]) return NAN;
    const double span = double(key_float(h[3 * k + 1])) - double(key_float(h[3 * k]));
    d2 += span * span;
  }
  // float roundings of the D differences, squares and sums (2D roundings of 2^-24), and of
  // the double computation
  return d2 * (1.0 + 1e-6);
}

// Output stage of the fast path: C interleaved private copies (lane l uses copy l % C).
// Thresholds per copy (SHARED = false): [T x C | counters x C] per bucket, so a lane's threshold
// and counter are one immediate offset apart and a warp's lanes hit distinct banks for C = 32
// (one address computation per pair). Shared thresholds (SHARED = true): one T table, then the
// counters [counters x C] per bucket: half the memory per copy (more copies for large
// histograms) for one more address computation per pair and bank conflicts on T.
template <int C, bool CLAMP, bool SHARED>
struct SdhFastOp {
  static_assert(C >= 1 && C <= 32 && (C & (C - 1)) == 0, "copies: a power of two <= 32");
  static constexpr bool kBatch = true;
  static constexpr unsigned kEntry = SHARED ? 4u * C : 8u * C;  // bytes per bucket (counters)
  static constexpr unsigned kCnt = SHARED ? 0u : 4u * C;        // counter - threshold offset
  struct Params {
    unsigned long long* hist;  // final counts (nb)
    const float* thr;          // T[0..entries-1] (global memory)
    float inv_w;
    unsigned capbits;          // kMagicBits + cap (CLAMP)
    int nb;
    int entries;               // table entries (k_a < entries)
    bool clamp;                // derived width: counters nb .. entries-1 go to nb - 1
  };
  const Params p;
  unsigned* words;     // counters (and thresholds per copy)
  unsigned base;       // shared address of this lane's slot of bucket 0 - kMagicBits * kEntry
  unsigned tbase = 0;  // SHARED: address of T[0] - kMagicBits * 4

  __host__ __device__ static constexpr size_t table_bytes(int entries) {
    return SHARED ? (size_t(entries) * 4 + 15) / 16 * 16 : 0;
  }

  __device__ SdhFastOp(const Params& prm, unsigned char* smem) : p(prm) {
    const unsigned s0 = unsigned(__cvta_generic_to_shared(smem));
    if constexpr (SHARED) {
      float* t = reinterpret_cast<float*>(smem);
      for (int i = threadIdx.x; i < p.entries; i += blockDim.x) t[i] = p.thr[i];
      words = reinterpret_cast<unsigned*>(smem + table_bytes(p.entries));
      const int n = p.entries * C;
      for (int i = threadIdx.x; i < n; i += blockDim.x) words[i] = 0u;
      tbase = s0 - kMagicBits * 4u;
      base = s0 + unsigned(table_bytes(p.entries)) + 4u * (threadIdx.x & (C - 1)) -
             kMagicBits * kEntry;
    } else {
      words = reinterpret_cast<unsigned*>(smem);
      const int n = p.entries * 2 * C;
      for (int i = threadIdx.x; i < n; i += blockDim.x)
        words[i] = (i & (2 * C - 1)) < C ? __float_as_uint(p.thr[i / (2 * C)]) : 0u;
      base = s0 + 4u * (threadIdx.x & (C - 1)) - kMagicBits * kEntry;
    }
    __syncthreads();
  }

  // Every threshold load of the batch first, then the corrections, then the increments (the
  // loads and the atomics may not pass each other, so interleaving them would serialize).
  template <int N>
  __device__ __forceinline__ void pairs(const float (&d2)[N]) {
    unsigned addr[N];
    float t[N];
    if constexpr (SHARED) {
      unsigned u[N];
#pragma unroll
      for (int i = 0; i < N; ++i) u[i] = fast_bucket_bits<CLAMP>(d2[i], p.inv_w, p.capbits);
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm("ld.shared.f32 %0, [%1];" : "=f"(t[i]) : "r"(tbase + u[i] * 4u));
#pragma unroll
      for (int i = 0; i < N; ++i) addr[i] = base + u[i] * kEntry;
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i)
        addr[i] = base + fast_bucket_bits<CLAMP>(d2[i], p.inv_w, p.capbits) * kEntry;
#pragma unroll
      for (int i = 0; i < N; ++i) asm("ld.shared.f32 %0, [%1];" : "=f"(t[i]) : "r"(addr[i]));
    }
#pragma unroll
    for (int i = 0; i < N; ++i) addr[i] = d2[i] < t[i] ? addr[i] - kEntry : addr[i];
#pragma unroll
    for (int i = 0; i < N; ++i)
      asm volatile("red.shared.add.u32 [%0+%1], 1;" ::"r"(addr[i]), "n"(kCnt) : "memory");
  }

  __device__ __forceinline__ void pair(float d2) {
    const float v[1] = {d2};
    pairs<1>(v);
  }

  __device__ void finish() {
    __syncthreads();
    constexpr int W = kEntry / 4;  // words per bucket
    constexpr int O = kCnt / 4;    // first counter word of a bucket
    for (int k = threadIdx.x; k < p.nb; k += blockDim.x) {
      unsigned long long s = 0;
      const int k1 = p.clamp && k == p.nb - 1 ? p.entries : k + 1;
      for (int kk = k; kk < k1; ++kk)
#pragma unroll
        for (int c = 0; c < C; ++c) s += words[kk * W + O + c];
      if (s) atomicAdd(p.hist + k, s);
    }
  }
};

template <int D, int B, int RT, int C, bool CLAMP, bool SHARED>
void sdh_fast_launch(Call& call, const TileArgs<float>& args,
                     const typename SdhFastOp<C, CLAMP, SHARED>::Params& prm, size_t smem) {
  using Op = SdhFastOp<C, CLAMP, SHARED>;
  // Block pairs run in the production configuration only (bench variants never run in blocks).
  void (*rect)(TileArgs<float>, typename Op::Params) = nullptr;
  if constexpr (B == kFB && RT == kFRT) rect = tile_kernel<float, D, B, RT, Op, true>;
  run_tiles<float>(call, tile_kernel<float, D, B, RT, Op>, rect, B, B * RT, smem, args, prm,
                   cuda_tuning::kSdhGuessPairsPerSec);
}

// Params do not depend on C: one set, passed to the instance for C copies.
template <int D, int B, int RT, bool CLAMP, bool SHARED>
void sdh_fast_copies(Call& call, const TileArgs<float>& args, int C,
                     const typename SdhFastOp<1, CLAMP, SHARED>::Params& q, size_t smem) {
#define G2_FAST(CC)                                                                        \
  sdh_fast_launch<D, B, RT, CC, CLAMP, SHARED>(                                           \
      call, args, {q.hist, q.thr, q.inv_w, q.capbits, q.nb, q.entries, q.clamp}, smem)
  switch (C) {
    case 32: G2_FAST(32); break;
    case 16: G2_FAST(16); break;
    case 8: G2_FAST(8); break;
    case 4: G2_FAST(4); break;
    case 2: G2_FAST(2); break;
    default: G2_FAST(1); break;
  }
#undef G2_FAST
}

// The float32 fast path with B threads x RT points; false (nothing done) when it does not apply
// (bucket count, width, or one copy with its thresholds does not fit in shared memory).
// The machine the privatization model sees: this device's facts and the blocks per SM that
// `kernel`'s registers allow at `threads` threads per block.
template <typename K>
PrivMachine priv_machine(K kernel, int threads) {
  const auto& f = device_facts();
  PrivMachine m;
  m.sms = f.sms;
  m.smem_per_sm = f.smem_per_sm;
  m.smem_per_block_optin = f.smem_per_block_optin;
  m.smem_reserved = f.smem_reserved;
  m.max_threads_per_sm = f.prop.maxThreadsPerMultiProcessor;
  m.max_blocks_per_sm = f.prop.maxBlocksPerMultiProcessor;
  int regs_bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&regs_bps, kernel, threads, 0));
  m.reg_blocks_per_sm = std::max(1, regs_bps);
  return m;
}

template <int D, int B, int RT>
bool sdh_fast(Call& call, const SdhProblem& p, float* const* c, unsigned long long* hist) {
  constexpr int TILE = B * RT;
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  const float inv_w = p.params.inv_width_f;
  if (!fast_applies(nb, inv_w)) return false;
  const bool clamp = !p.params.explicit_width;
  const int cap = clamp ? nb - 1 : nb;
  // Without the clamp (one instruction less per pair) when the coordinates bound k_a.
  // (Tile variant 6, bench only: the clamp kept even where it is not needed.)
  const bool force_clamp = D == 3 && call.ctl.overrides.tile_variant == 6;
  const double d2max = call.blocks ? call.blocks->d2max : device_d2max<D>(call, c, n);
  int entries = force_clamp ? 0 : fast_entries(cap, inv_w, d2max);
  const bool use_clamp = entries == 0;
  if (use_clamp) entries = cap + 1;
  const size_t tile_bytes = sizeof(float) * D * TILE;
  PrivMachine m = priv_machine(tile_kernel<float, D, B, RT, SdhFastOp<32, true, false>>, B);
  // The model's "buckets" of one copy: thresholds and counters of every entry (thresholds per
  // copy), or the counters only, with one threshold table beside the tile (shared). Thresholds
  // per copy while the model keeps kSdhFastMinReplicatedCopies or more copies, else shared
  // thresholds when they allow more copies.
  const double nthr = double(n) / RT;
  const int forced = call.ctl.overrides.sdh_copies;
  const int layout = call.ctl.overrides.sdh_layout;
  PrivChoice ch = choose_privatization(2 * entries, B, tile_bytes, nthr, m, forced);
  bool shared_t =
      layout == 2 ||
      (layout == 0 &&
       (ch.global || ch.copies < cuda_tuning::kSdhFastMinReplicatedCopies));
  const size_t tbytes = SdhFastOp<1, true, true>::table_bytes(entries);
  if (shared_t) {
    const PrivChoice sh = choose_privatization(entries, B, tile_bytes + tbytes, nthr, m, forced);
    if (sh.global) {
      if (ch.global || layout == 2) return false;
      shared_t = false;
    } else {
      ch = sh;
    }
  }
  if (ch.global) return false;
  const int C = ch.copies;
  const size_t smem = shared_t ? tile_bytes + tbytes + size_t(entries) * size_t(C) * 4
                               : tile_bytes + size_t(entries) * 2 * size_t(C) * 4;
  last_run().sdh_copies = C;
  g_last_fast = true;
  g_last_shared_t = shared_t;

  float* thr = call.alloc<float>(size_t(entries), "bucket thresholds");
  sdh_thresholds_kernel<<<unsigned((entries + 255) / 256), 256, 0, call.stream()>>>(
      thr, cap, entries, inv_w, float(nb), sdh_beyond<float>(nb, clamp), nb);
  G2_CUDA_LAUNCH("SDH threshold kernel launch");

  TileArgs<float> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  args.tiles = (long long)((n + TILE - 1) / TILE);
  const unsigned capbits = kMagicBits + unsigned(cap);
  if (use_clamp && !shared_t)
    sdh_fast_copies<D, B, RT, true, false>(call, args, C, {hist, thr, inv_w, capbits, nb, entries, clamp}, smem);
  else if (!shared_t)
    sdh_fast_copies<D, B, RT, false, false>(call, args, C, {hist, thr, inv_w, capbits, nb, entries, clamp}, smem);
  else if (use_clamp)
    sdh_fast_copies<D, B, RT, true, true>(call, args, C, {hist, thr, inv_w, capbits, nb, entries, clamp}, smem);
  else
    sdh_fast_copies<D, B, RT, false, true>(call, args, C, {hist, thr, inv_w, capbits, nb, entries, clamp}, smem);
  return true;
}

// The tile stage for B threads x RT register points per block (the exact kernel).
template <typename T, int D, int B, int RT, bool NOCALL>
void sdh_tiles_op(Call& call, const SdhProblem& p, T* const* c, unsigned long long* hist) {
  constexpr int TILE = B * RT;
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  auto ks = tile_kernel<T, D, B, RT, SdhOp<T, false, NOCALL>>;
  auto kg = tile_kernel<T, D, B, RT, SdhOp<T, true, NOCALL>>;
  // Block pairs: the RECT instances of the production configurations (sdh_run).
  constexpr bool prod = RT == kRT && B == ((sizeof(T) == 4 && D <= 4) ? cuda_tuning::kSdhExactThreadsF32 : kB);
  decltype(ks) ks_rect = nullptr;
  decltype(kg) kg_rect = nullptr;
  if constexpr (prod) {
    ks_rect = tile_kernel<T, D, B, RT, SdhOp<T, false, NOCALL>, true>;
    kg_rect = tile_kernel<T, D, B, RT, SdhOp<T, true, NOCALL>, true>;
  }
  // Output privatization: the model picks global memory or the number of shared copies.
  const size_t tile_bytes = sizeof(T) * D * TILE;
  PrivMachine m = priv_machine(ks, B);
  const PrivChoice ch =
      choose_privatization(nb, B, tile_bytes, double(n) / RT, m, call.ctl.overrides.sdh_copies);
  last_run().sdh_copies = ch.global ? 0 : ch.copies;

  TileArgs<T> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  args.tiles = (long long)((n + TILE - 1) / TILE);
  const bool clamp = !p.params.explicit_width;
  const T inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  if (ch.global) {
    typename SdhOp<T, true, NOCALL>::Params prm{hist, inv_w, T(nb), sdh_beyond<T>(nb, clamp),
                                                nb, 1, nb};
    run_tiles<T>(call, kg, kg_rect, B, TILE, ch.smem_bytes, args, prm, cuda_tuning::kSdhGuessPairsPerSec);
  } else {
    typename SdhOp<T, false, NOCALL>::Params prm{
        hist, inv_w, T(nb), sdh_beyond<T>(nb, clamp), nb, ch.copies, ch.stride};
    run_tiles<T>(call, ks, ks_rect, B, TILE, ch.smem_bytes, args, prm, cuda_tuning::kSdhGuessPairsPerSec);
  }
}

// The exact kernel; float32 with 0 <= 1/width <= 2^40 without the square root's call
// (sdh_bucket_nocall). ALLOW_NOCALL = false: the earlier exact-path kernel (bench).
template <typename T, int D, int B, int RT, bool ALLOW_NOCALL = true>
void sdh_tiles(Call& call, const SdhProblem& p, T* const* c, unsigned long long* hist) {
  if constexpr (sizeof(T) == 4 && ALLOW_NOCALL) {
    const float iw = p.params.inv_width_f;
    if (cuda_tuning::kSdhExactNoCallSqrt && iw >= 0.0f && iw <= kFastMaxInvW)
      return sdh_tiles_op<T, D, B, RT, true>(call, p, c, hist);
  }
  sdh_tiles_op<T, D, B, RT, false>(call, p, c, hist);
}

template <typename T, int D>
std::vector<uint64_t> sdh_run(const SdhProblem& p, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  const int nb = p.params.nbuckets;
  // Points beyond the budget: block pairs (tiles.cuh), the same counts.
  BlockPlan plan;
  const bool blocks = plan_blocks<T>(call, p.pts, nb, &plan);
  if (blocks) call.blocks = &plan;
  T* c[kMaxDims] = {};
  if (!blocks)
    for (int k = 0; k < D; ++k) c[k] = call.alloc<T>(n, "points");
  unsigned long long* hist = call.alloc<unsigned long long>(size_t(nb), "histogram");
  G2_CUDA(cudaMemsetAsync(hist, 0, size_t(nb) * 8, call.stream()));
  ctl.stats.prepare_s += seconds_since(t0);
  if (!blocks) upload_points<T>(call, p.pts, c);
  // Bench-only launch configurations (3-D float32 only), to justify the tuning table: 1..4 the
  // fast path with 512x2, 1024x1, 512x4, 256x4 threads x points, 5 the exact path (the kernel
  // the earlier exact-path kernel, kSdhThreads x kSdhRegPoints).
  int variant = 0;
  if constexpr (sizeof(T) == 4 && D == 3) variant = ctl.overrides.tile_variant;
  bool done = false;
  if constexpr (sizeof(T) == 4) {
    if constexpr (D == 3) {
      switch (variant) {
        case 1: done = sdh_fast<D, 512, 2>(call, p, c, hist); break;
        case 2: done = sdh_fast<D, 1024, 1>(call, p, c, hist); break;
        case 3: done = sdh_fast<D, 512, 4>(call, p, c, hist); break;
        case 4: done = sdh_fast<D, 256, 4>(call, p, c, hist); break;
        case 5: sdh_tiles<T, D, kB, kRT, false>(call, p, c, hist); done = true; break;
        case 7: sdh_tiles<T, D, 1024, 2, false>(call, p, c, hist); done = true; break;
        case 6:  // the fast path with the clamp (bench: what the bound on k_a saves)
          done = sdh_fast<D, kFB, kFRT>(call, p, c, hist);
          break;
        default: done = sdh_fast<D, kFB, kFRT>(call, p, c, hist); break;
      }
    } else {
      done = sdh_fast<D, kFB, kFRT>(call, p, c, hist);
    }
  }
  if (!done) {
    // float32 up to 4-D: 1024 threads (<= 64 registers without spills); else kSdhThreads
    if constexpr (sizeof(T) == 4 && D <= 4)
      sdh_tiles<T, D, cuda_tuning::kSdhExactThreadsF32, kRT>(call, p, c, hist);
    else
      sdh_tiles<T, D, kB, kRT>(call, p, c, hist);
  }
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

template <bool CLAMP>
__global__ void sdh_fast_check_kernel(const float* T, float inv_w, float nbt, float beyond, int nb,
                                      unsigned capbits, unsigned maxbits,
                                      unsigned long long* bad, unsigned* first) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < (1ull << 32); i += stride) {
    if (!CLAMP && unsigned(i) > maxbits) continue;
    const float d2 = __uint_as_float(unsigned(i));
    // sq_dist never returns a negative number other than NaN: dx*dx is +0, positive, +inf or
    // NaN, and so is fma(dk, dk, acc) for such acc (-0 only from -0 + -0). Negative d2 would
    // be clamped to the last bucket by MUFU.SQRT's NaN and then corrected down: not checked.
    if ((unsigned(i) & 0x80000000u) && !isnan(d2)) continue;
    int want = exact_mapped_bucket(d2, inv_w, nbt, beyond, nb);
    const int ka = int(fast_bucket_bits<CLAMP>(d2, inv_w, capbits) - kMagicBits);
    int got = d2 < T[ka] ? ka - 1 : ka;
    // past cap (no clamp): counted with cap (merged into nb - 1, or dropped)
    const int cap = int(capbits - kMagicBits);
    if (got > cap) got = cap;
    if (CLAMP) {  // and the exact kernel's bucket without the square root's call
      const int k2 = sdh_bucket_nocall(d2, inv_w, nbt, beyond);
      if ((k2 < 0 ? nb : k2) != want) got = -2;
    }
    if (got != want) {
      atomicAdd(bad, 1ull);
      atomicMin(first, unsigned(i));
    }
  }
}

}  // namespace

bool sdh_last_fast() { return g_last_fast; }
bool sdh_last_shared_thresholds() { return g_last_fast && g_last_shared_t; }

long long sdh_fast_check_all(int nb, float inv_w, bool clamp, unsigned* first_bits,
                             double d2max) {
  if (!fast_applies(nb, inv_w)) return -1;
  const int cap = clamp ? nb - 1 : nb;
  // d2max > 0: the unclamped variant for every d2 <= d2max (entries from fast_entries)
  int entries = cap + 1;
  unsigned maxbits = 0xFFFFFFFFu;
  if (d2max > 0) {
    entries = fast_entries(cap, inv_w, d2max);
    if (entries == 0) return -2;
    const float fm = float(d2max);
    maxbits = __builtin_bit_cast(unsigned, fm);
    if (double(fm) > d2max) --maxbits;
  }
  float* T = nullptr;
  unsigned long long* bad = nullptr;
  unsigned* first = nullptr;
  G2_CUDA(cudaMalloc(&T, sizeof(float) * size_t(entries)));
  G2_CUDA(cudaMalloc(&bad, 8));
  G2_CUDA(cudaMalloc(&first, 4));
  G2_CUDA(cudaMemset(bad, 0, 8));
  G2_CUDA(cudaMemset(first, 0xFF, 4));
  const float beyond = sdh_beyond<float>(nb, clamp);
  sdh_thresholds_kernel<<<unsigned((entries + 255) / 256), 256>>>(T, cap, entries, inv_w,
                                                                  float(nb), beyond, nb);
  G2_CUDA_LAUNCH("threshold kernel");
  const unsigned grid = unsigned(device_facts().sms * 16);
  if (d2max > 0)
    sdh_fast_check_kernel<false><<<grid, 256>>>(T, inv_w, float(nb), beyond, nb,
                                                kMagicBits + unsigned(cap), maxbits, bad, first);
  else
    sdh_fast_check_kernel<true><<<grid, 256>>>(T, inv_w, float(nb), beyond, nb,
                                               kMagicBits + unsigned(cap), maxbits, bad, first);
  G2_CUDA_LAUNCH("check kernel");
  unsigned long long nbad = 0;
  unsigned f = 0;
  G2_CUDA(cudaMemcpy(&nbad, bad, 8, cudaMemcpyDeviceToHost));
  G2_CUDA(cudaMemcpy(&f, first, 4, cudaMemcpyDeviceToHost));
  cudaFree(T);
  cudaFree(bad);
  cudaFree(first);
  if (first_bits) *first_bits = f;
  return (long long)nbad;
}

std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl) {
  const size_t n = p.pts.n;
  g_last_fast = false;  // nbuckets and the point count were checked by make_sdh
  if (n < 2) return std::vector<uint64_t>(size_t(p.params.nbuckets), 0);  // no pairs
  return p.prec == Precision::Float32 ? sdh_dims<float>(p, ctl) : sdh_dims<double>(p, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
