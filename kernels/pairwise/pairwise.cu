// All-pairs vectors on the GPU (Sarje and Aluru, "All-pairs computations on many-core graphics
// processors", Parallel Computing 39 (2013), section 3): the output matrix D is cut into tiles
// of r x c = 64 x 64 pairs, one thread block each, every thread computing a 4 x 4 subtile in
// registers; the vectors are streamed through shared memory in slices of d' = 16 dimensions
// (section 3.2), so any d from 1 to 65535 runs with the same kernel and the accumulators stay in
// registers across slices. kNN with k <= 32 (every metric but lp) runs a register-blocked
// variant instead: 128 x 128 tiles, 8 x 8 pairs per thread, d' = 8 double-buffered
// (knn_wide_kernel), and a self kNN computes only the upper triangle of those tiles, merging
// each into the lists of its rows and of its columns (knn_sym_kernel). Each pair's key is accumulated in dimension order with the arithmetic
// of core/pairwise_arith.h, so the keys are the CPU engine's bits.
//
// kNN: a block owns 64 rows of a and walks a range of column tiles (the paper's subtiles, reused
// along the row), keeping each row's best k (key, column) in a sorted list in shared memory; a
// warp merges a tile's candidates into its rows' lists (ballot, then one insertion per survivor
// of the running k-th key). Column ranges are split over blockIdx.y when a has few rows, and the
// host merges the split lists. No distance matrix is written.
//
// Threshold: every passing pair is appended to a direct output buffer in device memory (one
// atomic per warp); a launch covers a chunk of rows, and a chunk whose output overflows the
// buffer is run again with a larger buffer or fewer rows.
//
// Certified tensor-core candidates (kNN, l2 / sqeuclidean / cosine / dot, k <= 128, both
// precisions): cuBLAS, loaded with dlopen at first use, computes the scores of a chunk of rows
// in FP16 with the norms folded into the operands (one scale for all vectors, FP16 output that
// is the score itself), else S = A_chunk B^T in TF32 (or, as a variant, in FP16 over rows scaled
// by powers of two, with FP16 output); a warp per row keeps
// the best kc = max(2k, k + 16) approximate scores; those candidates are re-ranked with the exact
// arithmetic; a row is accepted only when an a-priori bound on the GEMM's error proves no other
// column can enter its exact top k, else it is recomputed by the exact kernel. The result is the
// exact kernel's. Exact precision gives way to the exact kernel when too many rows fail. The
// host certifies a chunk's candidates while the next chunk's kernels run.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "../common.cuh"
#include "../tuning.h"
#include "core/pairwise.h"
#include "core/parallel.h"
#include "pairwise_api.h"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kBM = 64;       // tile rows (r)
constexpr int kBN = 64;       // tile columns (c)
constexpr int kBK = 16;       // slice width d'
constexpr int kPad = 4;       // shared-memory row padding (keeps float4 alignment)
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 pairs each
constexpr int kCapSmall = 32;   // kNN list capacity for k <= 32
constexpr int kCapLarge = 256;  // for k <= 256
constexpr int kFastCap = 256;   // fast path candidates per row

struct ThrRecord {
  uint32_t i;
  uint32_t j;
  float key;
};

struct TileSmem {
  float a[kBK][kBM + kPad];
  float b[kBK][kBN + kPad];
};

// Accumulates the keys' accumulators of rows [row0, row0 + 64) of A (na rows) against columns
// [col0, col0 + 64) of B (nb rows), all d dimensions, slice by slice. Rows and columns past
// the ends read zeros (their results are discarded). acc[r][c] is pair (ty*4 + r, tx*4 + c).
template <PairMetric M>
__device__ __forceinline__ void tile_acc(const float* __restrict__ A, size_t na,
                                         const float* __restrict__ B, size_t nb, int d, double p,
                                         size_t row0, size_t col0, TileSmem& sm,
                                         float acc[4][4]) {
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0f;
  for (int k0 = 0; k0 < d; k0 += kBK) {
    const int kl = min(kBK, d - k0);
    __syncthreads();  // the previous slice is consumed
    for (int e = tid; e < kBM * kBK; e += kThreads) {
      const int r = e / kBK, kk = e % kBK;
      const size_t gi = row0 + size_t(r), gj = col0 + size_t(r);
      sm.a[kk][r] = (gi < na && kk < kl) ? A[gi * size_t(d) + size_t(k0 + kk)] : 0.0f;
      sm.b[kk][r] = (gj < nb && kk < kl) ? B[gj * size_t(d) + size_t(k0 + kk)] : 0.0f;
    }
    __syncthreads();
    auto step = [&](int kk) {
      const float4 av = *reinterpret_cast<const float4*>(&sm.a[kk][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&sm.b[kk][tx * 4]);
      const float a4[4] = {av.x, av.y, av.z, av.w};
      const float b4[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[r][c] = pw_step<M>(acc[r][c], a4[r], b4[c], p);
    };
    if (kl == kBK) {
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) step(kk);
    } else {
      for (int kk = 0; kk < kl; ++kk) step(kk);  // the last slice: only real dimensions
    }
  }
}

// Inserts candidate (ck, cj) into the sorted list L (len entries, capacity kk <= CAP) held in
// shared memory, by one warp; returns the new length. The caller checked that it belongs.
template <int CAP>
__device__ __forceinline__ int warp_insert(KnnEntry* L, int len, int kk, float ck, uint32_t cj) {
  const int lane = threadIdx.x & 31;
  int pos = 0;
#pragma unroll
  for (int t = 0; t < CAP / 32; ++t) {
    const int e = lane + 32 * t;
    const bool lt = e < len && pw_less(L[e].key, L[e].j, ck, cj);
    pos += __popc(__ballot_sync(0xffffffffu, lt));
  }
  const int nl = min(len + 1, kk);
  KnnEntry tmp[CAP / 32];
#pragma unroll
  for (int t = 0; t < CAP / 32; ++t) {
    const int e = lane + 32 * t;
    if (e >= pos && e < nl - 1) tmp[t] = L[e];
  }
  __syncwarp();
#pragma unroll
  for (int t = 0; t < CAP / 32; ++t) {
    const int e = lane + 32 * t;
    if (e >= pos && e < nl - 1) L[e + 1] = tmp[t];
  }
  __syncwarp();
  if (lane == 0) L[pos] = KnnEntry{ck, cj};
  __syncwarp();
  return nl;
}

// Offers the warp's 32 candidates (key, j, ok) to list L in lane (= column) order.
template <int CAP>
__device__ __forceinline__ int warp_offer(KnnEntry* L, int len, int kk, float key, uint32_t j,
                                          bool ok) {
  const bool cand = ok && (len < kk || pw_less(key, j, L[kk - 1].key, L[kk - 1].j));
  unsigned mask = __ballot_sync(0xffffffffu, cand);
  while (mask) {
    const int src = __ffs(mask) - 1;
    mask &= mask - 1;
    const float ck = __shfl_sync(0xffffffffu, key, src);
    const uint32_t cj = __shfl_sync(0xffffffffu, j, src);
    if (len == kk && !pw_less(ck, cj, L[kk - 1].key, L[kk - 1].j)) continue;  // warp-uniform
    len = warp_insert<CAP>(L, len, kk, ck, cj);
  }
  return len;
}

// Shared memory of the kNN kernel with list capacity CAP.
template <int CAP>
constexpr size_t knn_smem_bytes() {
  return sizeof(TileSmem) + sizeof(float) * kBM * (kBN + 1) + sizeof(KnnEntry) * kBM * CAP +
         sizeof(int) * kBM;
}

// Offers the keys of one staged tile (ks: BM rows of BN + 1 floats, candidates col0 + c below
// c_end) to the shared lists of the block's rows [row0, row0 + BM) of the chunk (na rows): each
// of the 8 warps takes BM / 8 rows, a row's pair with itself skipped when `self`.
template <int CAP, int BM, int BN>
__device__ __forceinline__ void offer_tile(const float* ks, KnnEntry* lists, int* lens, size_t row0,
                                           size_t na, const uint32_t* __restrict__ row_id,
                                           size_t row_base, size_t col0, size_t c_end, bool self,
                                           int kk, int warp, int lane) {
  for (int rr = 0; rr < BM / 8; ++rr) {
    const int r = warp * (BM / 8) + rr;
    const size_t lr = row0 + size_t(r);
    if (lr >= na) break;  // warp-uniform
    const size_t gi = row_id ? size_t(row_id[lr]) : row_base + lr;
    KnnEntry* L = lists + r * CAP;
    int len = lens[r];
#pragma unroll
    for (int h = 0; h < BN / 32; ++h) {
      const int c = lane + 32 * h;
      const size_t j = col0 + size_t(c);
      const bool ok = j < c_end && !(self && j == gi);
      len = warp_offer<CAP>(L, len, kk, ks[r * (BN + 1) + c], uint32_t(j), ok);
    }
    if (lane == 0) lens[r] = len;
    __syncwarp();
  }
}

// Stores the shared lists of the block's rows [row0, row0 + BM) (chunk of na rows) to
// out[(r * splits + split) * CAP ...] with their lengths in out_len[r * splits + split].
template <int CAP, int BM>
__device__ __forceinline__ void store_lists(const KnnEntry* lists, const int* lens, size_t row0,
                                            size_t na, int splits, int split,
                                            KnnEntry* __restrict__ out,
                                            uint32_t* __restrict__ out_len, int warp, int lane) {
  for (int rr = 0; rr < BM / 8; ++rr) {
    const int r = warp * (BM / 8) + rr;
    const size_t lr = row0 + size_t(r);
    if (lr >= na) break;
    const size_t slot = lr * size_t(splits) + size_t(split);
    const int len = lens[r];
    for (int e = lane; e < len; e += 32) out[slot * CAP + size_t(e)] = lists[r * CAP + e];
    if (lane == 0) out_len[slot] = uint32_t(len);
  }
}

// kNN over a chunk of `na` rows of A (global row index row_base + r, or row_id[r]) against
// columns [split * cols_per_split, ...) of B. Writes each row's sorted list to
// out[(r * splits + split) * CAP ...] and its length to out_len[r * splits + split].
template <PairMetric M, int CAP>
__global__ void __launch_bounds__(kThreads)
    knn_kernel(const float* __restrict__ A, size_t na, const uint32_t* __restrict__ row_id,
               size_t row_base, const float* __restrict__ B, size_t nb, int d, double p, int kk,
               bool self, size_t cols_per_split, int splits, KnnEntry* __restrict__ out,
               uint32_t* __restrict__ out_len) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TileSmem& sm = *reinterpret_cast<TileSmem*>(smem_raw);
  float* ks = reinterpret_cast<float*>(smem_raw + sizeof(TileSmem));  // [kBM][kBN + 1]
  KnnEntry* lists = reinterpret_cast<KnnEntry*>(ks + kBM * (kBN + 1));  // [kBM][CAP]
  int* lens = reinterpret_cast<int*>(lists + kBM * CAP);
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16, lane = tid & 31, warp = tid / 32;
  const size_t row0 = size_t(blockIdx.x) * kBM;
  const int split = int(blockIdx.y);
  const size_t c_begin = size_t(split) * cols_per_split;
  const size_t c_end = min(nb, c_begin + cols_per_split);
  if (tid < kBM) lens[tid] = 0;
  for (size_t col0 = c_begin; col0 < c_end; col0 += kBN) {
    float acc[4][4];
    tile_acc<M>(A, na, B, c_end, d, p, row0, col0, sm, acc);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) ks[(ty * 4 + r) * (kBN + 1) + tx * 4 + c] = pw_key<M>(acc[r][c]);
    __syncthreads();
    offer_tile<CAP, kBM, kBN>(ks, lists, lens, row0, na, row_id, row_base, col0, c_end, self, kk, warp, lane);
    // The next tile_acc starts with __syncthreads: ks is rewritten only after every warp is done.
  }
  __syncthreads();
  store_lists<CAP, kBM>(lists, lens, row0, na, splits, split, out, out_len, warp, lane);
}

// ---- kNN, register-blocked (SGEMM-class) kernel -----------------------------------------------
//
// The same decomposition with larger tiles: r x c = 128 x 128 pairs per block of 256 threads,
// each thread holding an 8 x 8 subtile of accumulators (rows ty*4 + {0..3} and 64 + ty*4 +
// {0..3}, columns likewise with tx), slices of d' = 8 dimensions double-buffered in shared
// memory (the next slice is loaded into registers while the current one is consumed, one
// barrier per slice; d' = 8 keeps the prefetch at one float4 per matrix and thread). Every
// accumulator still runs the exact chain in dimension order, so the
// keys are the CPU engine's bits. After the last slice the tile's keys are staged in the shared
// memory of the slice buffers and merged into the rows' lists as in knn_kernel.
constexpr int kWM = cuda_tuning::kPairwiseWideRows;     // tile rows (r)
constexpr int kWN = cuda_tuning::kPairwiseWideCols;     // tile columns (c)
constexpr int kWK = 8;                           // slice width d'
constexpr int kWThreads = 256;                   // 16 x 16 threads, 8 x 8 pairs each
static_assert(kWM == 128 && kWN == 128, "the thread layout assumes 128 x 128 tiles");

struct WideBuf {
  float a[2][kWK][kWM + kPad];
  float b[2][kWK][kWN + kPad];
};
constexpr size_t kWStage = sizeof(float) * size_t(kWM) * (kWN + 1);
constexpr size_t kWUnion = sizeof(WideBuf) > kWStage ? sizeof(WideBuf) : kWStage;

// Shared memory of the wide kNN kernel (list capacity kCapSmall).
constexpr size_t knn_wide_smem_bytes() {
  return kWUnion + sizeof(KnnEntry) * kWM * kCapSmall + sizeof(int) * kWM;
}

// Loads this thread's part of slice k0 of rows [base, base + 128) of X (n rows, d dimensions)
// into a float4 register: row tid / 2, dimensions k0 + (tid % 2) * 4 + 0..3 (a warp reads 16
// rows' 32-byte sectors); rows past n and dimensions past d read zeros. VEC: d % 4 == 0 and X
// 16-byte aligned.
template <bool VEC>
__device__ __forceinline__ float4 wide_load(const float* __restrict__ X, size_t n, int d,
                                            size_t base, int k0) {
  const int tid = threadIdx.x, kg = k0 + (tid & 1) * 4;
  const size_t g = base + size_t(tid >> 1);
  if (VEC)
    return (g < n && kg < d) ? __ldg(reinterpret_cast<const float4*>(X + g * size_t(d) + size_t(kg)))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
  const float* x = X + g * size_t(d);
  const bool in = g < n;
  float4 v;
  v.x = (in && kg + 0 < d) ? __ldg(x + kg + 0) : 0.0f;
  v.y = (in && kg + 1 < d) ? __ldg(x + kg + 1) : 0.0f;
  v.z = (in && kg + 2 < d) ? __ldg(x + kg + 2) : 0.0f;
  v.w = (in && kg + 3 < d) ? __ldg(x + kg + 3) : 0.0f;
  return v;
}

// Stores the register of wide_load into a slice buffer, dimension-major ([k][row]); the 32
// lanes of a warp hit 32 different banks.
__device__ __forceinline__ void wide_store(float (*buf)[kWM + kPad], float4 v) {
  const int tid = threadIdx.x, kg = (tid & 1) * 4, r = tid >> 1;
  buf[kg + 0][r] = v.x;
  buf[kg + 1][r] = v.y;
  buf[kg + 2][r] = v.z;
  buf[kg + 3][r] = v.w;
}

// One 128 x 128 tile of the wide kernels: the keys of rows [row0, row0 + 128) of A (na rows)
// against columns [col0, col0 + 128) of B (nb rows), all d dimensions, staged in ks[row][col]
// (row stride kWN + 1, aliasing the slice buffers). Starts and ends with a block-wide barrier
// pending: the caller synchronizes before reading ks.
template <PairMetric M, bool VEC>
__device__ __forceinline__ void wide_tile(const float* __restrict__ A, size_t na,
                                          const float* __restrict__ B, size_t nb, int d, double p,
                                          size_t row0, size_t col0, unsigned char* smem_raw) {
  WideBuf& sb = *reinterpret_cast<WideBuf*>(smem_raw);
  float* ks = reinterpret_cast<float*>(smem_raw);
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const size_t c_end = nb;
  float acc[8][8];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[r][c] = 0.0f;
  float4 ra = wide_load<VEC>(A, na, d, row0, 0);
  float4 rb = wide_load<VEC>(B, c_end, d, col0, 0);
  __syncthreads();  // the previous tile's keys (aliasing the buffers) are consumed
  wide_store(sb.a[0], ra);
  wide_store(sb.b[0], rb);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < d; k0 += kWK) {
    const bool more = k0 + kWK < d;
    if (more) {
      ra = wide_load<VEC>(A, na, d, row0, k0 + kWK);
      rb = wide_load<VEC>(B, c_end, d, col0, k0 + kWK);
    }
    const float(*sa)[kWM + kPad] = sb.a[buf];
    const float(*sbb)[kWN + kPad] = sb.b[buf];
    auto step = [&](int k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&sa[k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&sa[k][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&sbb[k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&sbb[k][64 + tx * 4]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[r][c] = pw_step<M>(acc[r][c], av[r], bv[c], p);
    };
    const int kl = min(kWK, d - k0);
    if (kl == kWK) {
#pragma unroll
      for (int k = 0; k < kWK; ++k) step(k);
    } else {
      for (int k = 0; k < kl; ++k) step(k);  // the last slice: only real dimensions
    }
    if (more) {
      wide_store(sb.a[buf ^ 1], ra);
      wide_store(sb.b[buf ^ 1], rb);
      __syncthreads();
      buf ^= 1;
    }
  }
  __syncthreads();  // every thread is done with the slice buffers
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int lr = (r < 4 ? ty * 4 + r : 64 + ty * 4 + r - 4);
      const int lc = (c < 4 ? tx * 4 + c : 64 + tx * 4 + c - 4);
      ks[lr * (kWN + 1) + lc] = pw_key<M>(acc[r][c]);
    }
}

// kNN over a chunk of `na` rows of A against columns [split * cols_per_split, ...) of B, with
// 128 x 128 tiles; the same outputs as knn_kernel with capacity kCapSmall.
template <PairMetric M, bool VEC>
__global__ void __launch_bounds__(kWThreads, 2)
    knn_wide_kernel(const float* __restrict__ A, size_t na, const uint32_t* __restrict__ row_id,
                    size_t row_base, const float* __restrict__ B, size_t nb, int d, double p,
                    int kk, bool self, size_t cols_per_split, int splits,
                    KnnEntry* __restrict__ out, uint32_t* __restrict__ out_len) {
  constexpr int CAP = kCapSmall;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const float* ks = reinterpret_cast<const float*>(smem_raw);  // [kWM][kWN + 1], per tile
  KnnEntry* lists = reinterpret_cast<KnnEntry*>(smem_raw + kWUnion);  // [kWM][CAP]
  int* lens = reinterpret_cast<int*>(lists + kWM * CAP);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid / 32;
  const size_t row0 = size_t(blockIdx.x) * kWM;
  const int split = int(blockIdx.y);
  const size_t c_begin = size_t(split) * cols_per_split;
  const size_t c_end = min(nb, c_begin + cols_per_split);
  if (tid < kWM) lens[tid] = 0;
  for (size_t col0 = c_begin; col0 < c_end; col0 += kWN) {
    wide_tile<M, VEC>(A, na, B, c_end, d, p, row0, col0, smem_raw);
    __syncthreads();
    offer_tile<CAP, kWM, kWN>(ks, lists, lens, row0, na, row_id, row_base, col0, c_end, self, kk, warp, lane);
  }
  __syncthreads();
  store_lists<CAP, kWM>(lists, lens, row0, na, splits, split, out, out_len, warp, lane);
}

// Merges the keys of the staged tile (ks) into the global lists of 128 rows [s0, s0 + 128) of
// X (n rows) under the stripe's lock: the lists are loaded into shared memory, offered the
// tile's candidates as in knn_wide_kernel, and stored back. transposed: the rows are the tile's
// columns (keys ks[r][c] for row s0 + c, candidate index o0 + r), else the tile's rows.
// diag: the tile is on the diagonal (a row's pair with itself is skipped).
template <int CAP>
__device__ __forceinline__ void sym_merge(const float* ks, size_t n, size_t s0, size_t o0,
                                          bool transposed, bool diag, int kk,
                                          KnnEntry* __restrict__ glists,
                                          uint32_t* __restrict__ glen, int* lock,
                                          KnnEntry* lists) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid / 32;
  if (tid == 0) {
    while (atomicCAS(lock, 0, 1) != 0) __nanosleep(64);
    __threadfence();
  }
  __syncthreads();
  for (int rr = 0; rr < kWM / 8; ++rr) {
    const int r = warp * (kWM / 8) + rr;
    const size_t g = s0 + size_t(r);
    if (g >= n) break;  // warp-uniform
    KnnEntry* L = lists + r * CAP;
    int len = int(__ldcg(glen + g));
    for (int e = lane; e < len; e += 32) {
      const KnnEntry* src = glists + g * CAP + size_t(e);
      L[e] = KnnEntry{__ldcg(&src->key), __ldcg(&src->j)};
    }
    __syncwarp();
#pragma unroll
    for (int h = 0; h < kWN / 32; ++h) {
      const int c = lane + 32 * h;
      const size_t j = o0 + size_t(c);
      const bool ok = j < n && !(diag && j == g);
      const float key = transposed ? ks[c * (kWN + 1) + r] : ks[r * (kWN + 1) + c];
      len = warp_offer<CAP>(L, len, kk, key, uint32_t(j), ok);
    }
    for (int e = lane; e < len; e += 32) {
      KnnEntry* dst = glists + g * CAP + size_t(e);
      __stcg(&dst->key, L[e].key);
      __stcg(&dst->j, L[e].j);
    }
    if (lane == 0) __stcg(glen + g, uint32_t(len));
    __syncwarp();
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) atomicExch(lock, 0);
}

// Self kNN over the upper triangle of 128 x 128 tiles only: key(i, j) and key(j, i) are the
// same bits (the chain is symmetric in u and v for every metric here), so tile (I, J), J >= I,
// is computed once and merged into the lists of its rows (stripe I) and, off the diagonal, of
// its columns (stripe J). The lists live in global memory (glists[n][CAP], glen[n]); a stripe's
// lists are merged under its lock, one stripe at a time per block (no lock is held while
// waiting for another). Blocks walk the triangle by diagonals from delta0: block b is tile
// (I, I + delta), so blocks running together rarely share a stripe.
template <PairMetric M, bool VEC>
__global__ void __launch_bounds__(kWThreads, 2)
    knn_sym_kernel(const float* __restrict__ X, size_t n, int d, double p, int kk, int tiles,
                   int delta0, KnnEntry* __restrict__ glists, uint32_t* __restrict__ glen,
                   int* __restrict__ locks) {
  constexpr int CAP = kCapSmall;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const float* ks = reinterpret_cast<const float*>(smem_raw);
  KnnEntry* lists = reinterpret_cast<KnnEntry*>(smem_raw + kWUnion);  // [kWM][CAP]
  long long b = blockIdx.x;
  int delta = delta0;
  while (b >= tiles - delta) {
    b -= tiles - delta;
    ++delta;
  }
  const int I = int(b), J = I + delta;
  const size_t row0 = size_t(I) * kWM, col0 = size_t(J) * kWN;
  wide_tile<M, VEC>(X, n, X, n, d, p, row0, col0, smem_raw);
  __syncthreads();
  sym_merge<CAP>(ks, n, row0, col0, false, delta == 0, kk, glists, glen, locks + I, lists);
  if (delta > 0) sym_merge<CAP>(ks, n, col0, row0, true, false, kk, glists, glen, locks + J, lists);
}

// Threshold: pairs (row_base + r, j) with key <= key_max (self: j > i) of the tile
// (blockIdx.y, blockIdx.x), appended to out[0, cap) through the counter *count.
template <PairMetric M>
__global__ void __launch_bounds__(kThreads)
    threshold_kernel(const float* __restrict__ A, size_t na, size_t row_base,
                     const float* __restrict__ B, size_t nb, int d, double p, float key_max,
                     bool self, ThrRecord* __restrict__ out, unsigned long long* count,
                     unsigned long long cap) {
  __shared__ TileSmem sm;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16, lane = tid & 31;
  const size_t row0 = size_t(blockIdx.y) * kBM, col0 = size_t(blockIdx.x) * kBN;
  // A self-join needs j > i: a tile entirely on or below the diagonal has nothing.
  if (self && col0 + kBN - 1 <= row_base + row0) return;
  float acc[4][4];
  tile_acc<M>(A, na, B, nb, d, p, row0, col0, sm, acc);
  unsigned pass = 0;
  int n = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const size_t lr = row0 + size_t(ty * 4 + r), j = col0 + size_t(tx * 4 + c);
      const bool ok = lr < na && j < nb && pw_key<M>(acc[r][c]) <= key_max &&
                      (!self || j > row_base + lr);
      if (ok) {
        pass |= 1u << (r * 4 + c);
        ++n;
      }
    }
  // Warp prefix sum of the counts, one atomic per warp.
  int incl = n;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  unsigned long long base = 0;
  if (lane == 31 && incl > 0) base = atomicAdd(count, (unsigned long long)incl);
  base = __shfl_sync(0xffffffffu, base, 31);
  if (!n) return;
  unsigned long long at = base + (unsigned long long)(incl - n);
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (pass & (1u << (r * 4 + c))) {
        if (at < cap)
          out[at] = ThrRecord{uint32_t(row_base + row0 + size_t(ty * 4 + r)),
                              uint32_t(col0 + size_t(tx * 4 + c)), pw_key<M>(acc[r][c])};
        ++at;
      }
}

// Squared norms with the exact chain (fma in dimension order), one thread per row.
__global__ void norms_kernel(const float* __restrict__ X, size_t n, int d, float* __restrict__ out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* x = X + i * size_t(d);
  float acc = 0.0f;
  for (int k = 0; k < d; ++k) acc = op_fma(x[k], x[k], acc);
  out[i] = acc;
}

// Fast path selection: one warp per row of the GEMM chunk S (rows x nb, row-major with leading
// dimension ld), keeping the kc best approximate scores (l2, sqeuclidean: |b|^2 - 2 s; dot,
// cosine: -s). HALF: S holds FP16 products of the scaled rows, s = s' 2^(e_i + e_j), with
// rscale = 2^e_i (2^(e_i + 1) for the l2 form) and cscale[j] = 2^e_j, powers of two, so the
// scaling adds no rounding. Each lane loads kSelUnroll floats (HALF: half2 pairs, with the
// columns' norms and scales) before offering them (loads in flight instead of one per ballot).
// With `prefilter`, a step whose scores all exceed the kept kc-th score in every lane makes no
// offer (one ballot instead of one per value; the kept bound only decreases, so the offers
// would reject them all). Writes the candidates' columns, their number, and the worst kept score.
constexpr int kSelUnroll = 8;
template <bool HALF>
__global__ void __launch_bounds__(kThreads)
    select_kernel(const void* __restrict__ Sv, size_t rows, size_t row_base, size_t nb, size_t ld,
                  const float* __restrict__ bnorm2, const int* __restrict__ rexp,
                  const float* __restrict__ cscale, bool l2form, bool self, int kc, bool prefilter,
                  uint32_t* __restrict__ cand, uint32_t* __restrict__ ncand,
                  float* __restrict__ worst) {
  __shared__ KnnEntry lists[kThreads / 32][kFastCap];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const size_t r = size_t(blockIdx.x) * (kThreads / 32) + size_t(warp);
  if (r >= rows) return;  // warp-uniform; no block-wide barrier follows
  KnnEntry* L = lists[warp];
  const size_t gi = row_base + r;
  int len = 0;
  if (!HALF) {
    const float* s = static_cast<const float*>(Sv) + r * ld;
    for (size_t j0 = 0; j0 < nb; j0 += 32 * kSelUnroll) {
      float raw[kSelUnroll], bn[kSelUnroll];
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
        const size_t j = j0 + size_t(lane + 32 * u);
        raw[u] = j < nb ? __ldcs(s + j) : 0.0f;  // read once: streaming
        bn[u] = (l2form && j < nb) ? __ldg(bnorm2 + j) : 0.0f;
      }
      float sc[kSelUnroll];
      bool any = false;
      const float thr = prefilter && len == kc ? L[kc - 1].key : INFINITY;
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
        const size_t j = j0 + size_t(lane + 32 * u);
        const bool ok = j < nb && !(self && j == gi);
        sc[u] = l2form ? op_fma(-2.0f, raw[u], bn[u]) : -raw[u];
        if (!ok || sc[u] != sc[u]) sc[u] = INFINITY;
        any = any || (ok && sc[u] <= thr);
      }
      if (prefilter && !__any_sync(0xffffffffu, any)) continue;
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
        const size_t j = j0 + size_t(lane + 32 * u);
        const bool ok = j < nb && !(self && j == gi);
        len = warp_offer<kFastCap>(L, len, kc, sc[u], uint32_t(j), ok);
      }
    }
  } else {
    // ld is even, so every row starts on a half2 boundary.
    const __half2* s = reinterpret_cast<const __half2*>(static_cast<const __half*>(Sv) + r * ld);
    const int e = rexp[gi] + (l2form ? 1 : 0);
    const float rs = ldexpf(1.0f, e);
    for (size_t j0 = 0; j0 < nb; j0 += 64 * kSelUnroll) {
      __half2 raw[kSelUnroll];
      float2 bn[kSelUnroll], cs[kSelUnroll];
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
        const size_t j = j0 + 2 * size_t(lane + 32 * u);
        raw[u] = j < nb ? __ldcs(s + (j >> 1)) : __half2();
        bn[u] = j + 1 < nb ? __ldg(reinterpret_cast<const float2*>(bnorm2 + j))
                : j < nb   ? make_float2(__ldg(bnorm2 + j), 0.0f)
                           : make_float2(0.0f, 0.0f);
        cs[u] = j + 1 < nb ? __ldg(reinterpret_cast<const float2*>(cscale + j))
                : j < nb   ? make_float2(__ldg(cscale + j), 0.0f)
                           : make_float2(0.0f, 0.0f);
      }
      float sc[kSelUnroll][2];
      bool any = false;
      const float thr = prefilter && len == kc ? L[kc - 1].key : INFINITY;
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const size_t j = j0 + 2 * size_t(lane + 32 * u) + size_t(h);
          const bool ok = j < nb && !(self && j == gi);
          const float sv = h ? __high2float(raw[u]) : __low2float(raw[u]);
          const float prod = sv * (h ? cs[u].y : cs[u].x);  // exact: a power of two
          float v = l2form ? op_fma(-rs, prod, h ? bn[u].y : bn[u].x) : -(rs * prod);
          if (!ok || v != v) v = INFINITY;
          sc[u][h] = v;
          any = any || (ok && v <= thr);
        }
      }
      if (prefilter && !__any_sync(0xffffffffu, any)) continue;
#pragma unroll
      for (int u = 0; u < kSelUnroll; ++u) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const size_t j = j0 + 2 * size_t(lane + 32 * u) + size_t(h);
          const bool ok = j < nb && !(self && j == gi);
          len = warp_offer<kFastCap>(L, len, kc, sc[u][h], uint32_t(j), ok);
        }
      }
    }
  }
  for (int e = lane; e < len; e += 32) cand[r * size_t(kc) + size_t(e)] = L[e].j;
  if (lane == 0) {
    ncand[r] = uint32_t(len);
    worst[r] = len > 0 ? L[len - 1].key : INFINITY;
  }
}

// FP16 copy of the rows of X (n x d) for the tensor-core GEMM, one warp per row: the row is
// scaled by 2^-e, e the smallest integer with max_k |x_k| sqrt(d) < 2^e (clamped to [-60, 100]),
// so its norm is below 1 and no product or sum of the GEMM leaves the FP16 range; the scaling
// is exact (a power of two, in float64) and each element is rounded to nearest once. Writes
// the FP16 rows, e and 2^e (as float).
__global__ void to_half_kernel(const float* __restrict__ X, size_t n, int d,
                               __half* __restrict__ out, int* __restrict__ rexp,
                               float* __restrict__ rscale) {
  const int lane = threadIdx.x & 31;
  const size_t i = size_t(blockIdx.x) * (blockDim.x / 32) + size_t(threadIdx.x / 32);
  if (i >= n) return;  // warp-uniform
  const float* x = X + i * size_t(d);
  float m = 0.0f;
  for (int k = lane; k < d; k += 32) m = fmaxf(m, fabsf(x[k]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  int e = 0;
  if (m > 0.0f) {
    (void)frexp(double(m) * sqrt(double(d)) * (1.0 + 0x1p-30), &e);  // value < 2^e
    e = max(-60, min(100, e));
  }
  const double sc = ldexp(1.0, -e);
  __half* o = out + i * size_t(d);
  for (int k = lane; k < d; k += 32) o[k] = __float2half_rn(float(double(x[k]) * sc));
  if (lane == 0) {
    rexp[i] = e;
    rscale[i] = ldexpf(1.0f, e);
  }
}

// Folded FP16 operands of the tensor-core GEMM, one warp per row of X (n x d): the row scaled by
// 2^-E (one exponent for both sides, every norm below 2^E), times -c on the b side (c = 2 for
// the l2 form, 1 for dot and cosine), rounded to nearest once from float64 (exact scaling), then
// K - d more entries (K a multiple of 8): on the a side 1, 1 (l2 form; else 0) and zeros, on
// the b side the squared norm n 2^-2E as hi = FP16(n 2^-2E) and lo = FP16(n 2^-2E - hi) (l2
// form; else 0) and zeros, so [a', 1, 1] . [-2 b', hi, lo] = hi + lo - 2 a'.b' is the score
// that ranks the columns of a row by squared distance.
__global__ void fold_half_kernel(const float* __restrict__ X, size_t n, int d, int K, int E,
                                 const float* __restrict__ norms, bool bside, bool l2form,
                                 __half* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const size_t i = size_t(blockIdx.x) * (blockDim.x / 32) + size_t(threadIdx.x / 32);
  if (i >= n) return;  // warp-uniform
  const float* x = X + i * size_t(d);
  __half* o = out + i * size_t(K);
  const double sc = ldexp(bside ? (l2form ? -2.0 : -1.0) : 1.0, -E);
  for (int k = lane; k < d; k += 32) o[k] = __double2half(double(x[k]) * sc);
  for (int k = d + lane; k < K; k += 32) {
    __half v = __float2half(0.0f);
    if (l2form && k < d + 2) {
      if (!bside) {
        v = __float2half(1.0f);
      } else {
        const double nn = ldexp(double(norms[i]), -2 * E);
        const __half hi = __double2half(nn);
        v = k == d ? hi : __double2half(nn - double(__half2float(hi)));
      }
    }
    o[k] = v;
  }
}

// Score h (0..7) of the 8 FP16 scores held in a 16-byte vector, as float.
__device__ __forceinline__ float fold_get(const uint4& v, int h) {
  const uint32_t w = h < 2 ? v.x : h < 4 ? v.y : h < 6 ? v.z : v.w;
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> (16 * (h & 1)))));
}

// Score h (0..7, known only at run time) of the 8 FP16 scores of a 16-byte vector, as float.
__device__ __forceinline__ float fold_get_any(const uint4& v, int h) {
  const uint32_t lo = (h & 2) ? v.y : v.x, hi = (h & 2) ? v.w : v.z;
  const uint32_t w = (h & 4) ? hi : lo;
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> (16 * (h & 1)))));
}

// Sets score h (0..7) of a 16-byte vector of FP16 scores to +infinity.
__device__ __forceinline__ void fold_mask(uint4& v, int h) {
  uint32_t& w = h < 2 ? v.x : h < 4 ? v.y : h < 6 ? v.z : v.w;
  const int sh = 16 * (h & 1);
  w = (w & ~(0xffffu << sh)) | (0x7c00u << sh);
}

// Smallest of the 8 FP16 scores of a 16-byte vector, as a half2 pair to be reduced further.
__device__ __forceinline__ __half2 fold_min(const uint4& v) {
  __half2 a, b, c, e;
  memcpy(&a, &v.x, 4);
  memcpy(&b, &v.y, 4);
  memcpy(&c, &v.z, 4);
  memcpy(&e, &v.w, 4);
  return __hmin2(__hmin2(a, b), __hmin2(c, e));
}

// Fast path selection on the folded GEMM output: one warp per row of S (FP16 scores, rows x nb,
// leading dimension ld a multiple of 8), keeping the kc best scores by (score, column). Each
// lane loads kFoldUnroll 16-byte vectors (8 consecutive columns each) per step of 256
// kFoldUnroll columns and takes their minimum; with `prefilter`, a step in which no lane's
// minimum is at or below the kept kc-th score makes no offer (the kept bound only decreases);
// else the values at or below that score are offered in rounds, one per lane and round (the
// list keeps the kc smallest offered by (score, column), in any order of offers). Columns past
// nb and the row's own column
// (self) are +infinity and never offered. Writes the candidates' columns, their number, and the
// worst kept score (in the GEMM's scaled units). CAP: list capacity (>= kc; 32 keeps an
// insertion to one ballot per list word).
constexpr int kFoldUnroll = 4;
template <int CAP>
__global__ void __launch_bounds__(kThreads)
    select_fold_kernel(const __half* __restrict__ S, size_t rows, size_t row_base, size_t nb,
                       size_t ld, bool self, int kc, bool prefilter, uint32_t* __restrict__ cand,
                       uint32_t* __restrict__ ncand, float* __restrict__ worst) {
  __shared__ KnnEntry lists[kThreads / 32][CAP];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const size_t r = size_t(blockIdx.x) * (kThreads / 32) + size_t(warp);
  if (r >= rows) return;  // warp-uniform; no block-wide barrier follows
  KnnEntry* L = lists[warp];
  const size_t gi = row_base + r;
  int len = 0;
  const uint4* s = reinterpret_cast<const uint4*>(S + r * ld);
  const size_t nv = ld / 8;  // 16-byte vectors of the row
  constexpr size_t kStep = 256 * size_t(kFoldUnroll);
  const uint4 inf4 = make_uint4(0x7c007c00u, 0x7c007c00u, 0x7c007c00u, 0x7c007c00u);
  for (size_t j0 = 0; j0 < nb; j0 += kStep) {
    const bool full = j0 + kStep <= nb;
    uint4 raw[kFoldUnroll];
#pragma unroll
    for (int u = 0; u < kFoldUnroll; ++u) {
      const size_t v = j0 / 8 + size_t(32 * u + lane);
      raw[u] = full || v < nv ? __ldcs(s + v) : inf4;  // read once: streaming
    }
    if (!full || (self && gi >= j0 && gi < j0 + kStep)) {
#pragma unroll
      for (int u = 0; u < kFoldUnroll; ++u)
#pragma unroll
        for (int h = 0; h < 8; ++h) {
          const size_t j = j0 + 8 * size_t(32 * u + lane) + size_t(h);
          if (j >= nb || (self && j == gi)) fold_mask(raw[u], h);
        }
    }
    const float thr = len == kc ? L[kc - 1].key : INFINITY;
    if (prefilter) {
      __half2 m = fold_min(raw[0]);
#pragma unroll
      for (int u = 1; u < kFoldUnroll; ++u) m = __hmin2(m, fold_min(raw[u]));
      const float mf = fminf(__low2float(m), __high2float(m));
      if (!__any_sync(0xffffffffu, mf <= thr)) continue;
    }
    // The lane's finite scores at or below the step's bound (no other can enter), bit 8 u + h.
    uint32_t pend = 0;
#pragma unroll
    for (int u = 0; u < kFoldUnroll; ++u)
#pragma unroll
      for (int h = 0; h < 8; ++h) {
        const float v = fold_get(raw[u], h);
        if (v <= thr && v < INFINITY) pend |= 1u << (8 * u + h);
      }
    // Offered in rounds, one pending score per lane and round, lowest bit first.
    while (__any_sync(0xffffffffu, pend != 0)) {
      const bool has = pend != 0;
      const int b = has ? __ffs(pend) - 1 : 0;
      pend &= pend - 1;
      const int ub = b >> 3, h = b & 7;
      uint4 w = raw[0];
#pragma unroll
      for (int u = 1; u < kFoldUnroll; ++u)
        if (ub == u) w = raw[u];
      const size_t j = j0 + 8 * size_t(32 * ub + lane) + size_t(h);
      len = warp_offer<CAP>(L, len, kc, has ? fold_get_any(w, h) : INFINITY, uint32_t(j), has);
    }
  }
  for (int e = lane; e < len; e += 32) cand[r * size_t(kc) + size_t(e)] = L[e].j;
  if (lane == 0) {
    ncand[r] = uint32_t(len);
    worst[r] = len > 0 ? L[len - 1].key : INFINITY;
  }
}

// Exact keys of the candidates (one thread per candidate), with the exact chain.
template <PairMetric M>
__global__ void rerank_kernel(const float* __restrict__ A, size_t rows, size_t row_base,
                              const float* __restrict__ B, int d, double p, int kc,
                              const uint32_t* __restrict__ cand, const uint32_t* __restrict__ ncand,
                              float* __restrict__ keys) {
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t r = t / size_t(kc);
  const int e = int(t % size_t(kc));
  if (r >= rows || uint32_t(e) >= ncand[r]) return;
  const float* u = A + (row_base + r) * size_t(d);
  const float* v = B + size_t(cand[t]) * size_t(d);
  float acc = 0.0f;
  if ((d & 3) == 0) {
    // Rows start on 16-byte boundaries: four dimensions per load, still in dimension order.
    const float4* u4 = reinterpret_cast<const float4*>(u);
    const float4* v4 = reinterpret_cast<const float4*>(v);
    for (int k = 0; k < d / 4; ++k) {
      const float4 x = __ldg(u4 + k), y = __ldg(v4 + k);
      acc = pw_step<M>(acc, x.x, y.x, p);
      acc = pw_step<M>(acc, x.y, y.y, p);
      acc = pw_step<M>(acc, x.z, y.z, p);
      acc = pw_step<M>(acc, x.w, y.w, p);
    }
  } else {
    for (int k = 0; k < d; ++k) acc = pw_step<M>(acc, u[k], v[k], p);
  }
  keys[t] = pw_key<M>(acc);
}

// ---- cuBLAS through dlopen ---------------------------------------------------------------------

struct Blas {
  bool tried = false;
  bool ok = false;
  std::string status;
  void* lib = nullptr;
  cublasHandle_t handle = nullptr;
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const float*, const float*, int, const float*, int, const float*, float*,
                          int) = nullptr;
  cublasStatus_t (*get_version)(cublasHandle_t, int*) = nullptr;
  // cublasGemmEx (FP16 inputs and output, FP32 accumulation); null when the library lacks it.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
};

std::mutex g_blas_mu;
Blas g_blas;

// Loads cuBLAS (libcublas.so.13, else libcublas.so) and creates a handle in TF32 tensor-op mode,
// once per process; a failure is remembered with its reason and the exact path answers.
Blas* blas() {
  std::lock_guard<std::mutex> lk(g_blas_mu);
  Blas& b = g_blas;
  if (b.tried) return b.ok ? &b : nullptr;
  b.tried = true;
  const char* names[] = {"libcublas.so.13", "libcublas.so"};
  const char* used = nullptr;
  for (const char* n : names) {
    b.lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (b.lib) {
      used = n;
      break;
    }
  }
  if (!b.lib) {
    const char* e = dlerror();
    b.status = std::string("unavailable: ") + (e ? e : "dlopen failed");
    return nullptr;
  }
  b.create = reinterpret_cast<decltype(b.create)>(dlsym(b.lib, "cublasCreate_v2"));
  b.set_stream = reinterpret_cast<decltype(b.set_stream)>(dlsym(b.lib, "cublasSetStream_v2"));
  b.set_math_mode = reinterpret_cast<decltype(b.set_math_mode)>(dlsym(b.lib, "cublasSetMathMode"));
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(b.lib, "cublasSgemm_v2"));
  b.get_version = reinterpret_cast<decltype(b.get_version)>(dlsym(b.lib, "cublasGetVersion_v2"));
  b.gemm_ex = reinterpret_cast<decltype(b.gemm_ex)>(dlsym(b.lib, "cublasGemmEx"));
  if (!b.create || !b.set_stream || !b.set_math_mode || !b.sgemm) {
    b.status = std::string("unavailable: ") + used + " lacks cublasSgemm_v2 or cublasSetMathMode";
    return nullptr;
  }
  // TF32 tensor ops, and split-K partial sums added in FP32, never in the FP16 output type: the
  // certificates (fold_lower, the FP16 bound) budget one FP16 rounding of the finished sum only.
  if (b.create(&b.handle) != CUBLAS_STATUS_SUCCESS ||
      b.set_math_mode(b.handle, cublasMath_t(CUBLAS_TF32_TENSOR_OP_MATH |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) !=
          CUBLAS_STATUS_SUCCESS) {
    b.status = std::string("unavailable: cublasCreate or cublasSetMathMode failed with ") + used;
    b.handle = nullptr;
    return nullptr;
  }
  int v = 0;
  if (b.get_version) (void)b.get_version(b.handle, &v);
  b.status = std::string("available: ") + used + (v ? " (version " + std::to_string(v) + ")" : "") +
             (b.gemm_ex ? ", FP16 and TF32 tensor-op GEMM" : ", TF32 tensor-op GEMM");
  b.ok = true;
  return &b;
}

// ---- host side --------------------------------------------------------------------------------

// Times a stretch of queued kernels with events.
struct KernelTimer {
  Call& call;
  cudaEvent_t a, b;
  explicit KernelTimer(Call& c) : call(c), a(c.event(true)), b(c.event(true)) {
    G2_CUDA(cudaEventRecord(a, call.stream()));
  }
  double stop_ms() {
    G2_CUDA(cudaEventRecord(b, call.stream()));
    call.wait(b);
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, a, b));
    return double(ms);
  }
};

template <PairMetric M, int CAP>
void launch_knn_t(Call& call, dim3 grid, size_t smem, const float* A, size_t na,
                  const uint32_t* row_id, size_t row_base, const float* B, size_t nb, int d,
                  double p, int kk, bool self, size_t cps, int splits, KnnEntry* out,
                  uint32_t* out_len) {
  static bool attr_set = false;  // per instantiation, per process
  if (!attr_set) {
    G2_CUDA(cudaFuncSetAttribute(knn_kernel<M, CAP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(smem)));
    attr_set = true;
  }
  knn_kernel<M, CAP><<<grid, kThreads, smem, call.stream()>>>(A, na, row_id, row_base, B, nb, d,
                                                              p, kk, self, cps, splits, out,
                                                              out_len);
  G2_CUDA_LAUNCH("knn_kernel");
}

template <int CAP>
void launch_knn(PairMetric m, Call& call, dim3 grid, const float* A, size_t na,
                const uint32_t* row_id, size_t row_base, const float* B, size_t nb, int d,
                double p, int kk, bool self, size_t cps, int splits, KnnEntry* out,
                uint32_t* out_len) {
  const size_t smem = knn_smem_bytes<CAP>();
  switch (m) {
#define G2_KNN(MM)                                                                            \
  case MM:                                                                                    \
    launch_knn_t<MM, CAP>(call, grid, smem, A, na, row_id, row_base, B, nb, d, p, kk, self, cps, \
                          splits, out, out_len);                                              \
    break;
    G2_KNN(PairMetric::L1)
    G2_KNN(PairMetric::L2)
    G2_KNN(PairMetric::SqEuclidean)
    G2_KNN(PairMetric::Cosine)
    G2_KNN(PairMetric::Dot)
    G2_KNN(PairMetric::Lp)
#undef G2_KNN
  }
}

template <PairMetric M, bool VEC>
void launch_wide_t(Call& call, dim3 grid, const float* A, size_t na, const uint32_t* row_id,
                   size_t row_base, const float* B, size_t nb, int d, double p, int kk, bool self,
                   size_t cps, int splits, KnnEntry* out, uint32_t* out_len) {
  static bool attr_set = false;  // per instantiation, per process
  const size_t smem = knn_wide_smem_bytes();
  if (!attr_set) {
    G2_CUDA(cudaFuncSetAttribute(knn_wide_kernel<M, VEC>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    attr_set = true;
  }
  knn_wide_kernel<M, VEC><<<grid, kWThreads, smem, call.stream()>>>(
      A, na, row_id, row_base, B, nb, d, p, kk, self, cps, splits, out, out_len);
  G2_CUDA_LAUNCH("knn_wide_kernel");
}

// The wide kernel for metric m; vector loads when d is a multiple of 4 (the rows are then
// 16-byte aligned: cudaMalloc'd bases, whole rows).
void launch_wide(PairMetric m, Call& call, dim3 grid, const float* A, size_t na,
                 const uint32_t* row_id, size_t row_base, const float* B, size_t nb, int d,
                 double p, int kk, bool self, size_t cps, int splits, KnnEntry* out,
                 uint32_t* out_len) {
  const bool vec = d % 4 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(B) % 16 == 0;
  switch (m) {
#define G2_WIDE(MM)                                                                           \
  case MM:                                                                                    \
    if (vec)                                                                                  \
      launch_wide_t<MM, true>(call, grid, A, na, row_id, row_base, B, nb, d, p, kk, self, cps, \
                              splits, out, out_len);                                          \
    else                                                                                      \
      launch_wide_t<MM, false>(call, grid, A, na, row_id, row_base, B, nb, d, p, kk, self, cps,\
                               splits, out, out_len);                                         \
    break;
    G2_WIDE(PairMetric::L1)
    G2_WIDE(PairMetric::L2)
    G2_WIDE(PairMetric::SqEuclidean)
    G2_WIDE(PairMetric::Cosine)
    G2_WIDE(PairMetric::Dot)
#undef G2_WIDE
    default: throw Error(ErrorCode::Internal, "wide kNN kernel for lp");
  }
}

template <PairMetric M, bool VEC>
void launch_sym_t(Call& call, unsigned blocks, const float* X, size_t n, int d, double p, int kk,
                  int tiles, int delta0, KnnEntry* glists, uint32_t* glen, int* locks) {
  static bool attr_set = false;  // per instantiation, per process
  const size_t smem = knn_wide_smem_bytes();
  if (!attr_set) {
    G2_CUDA(cudaFuncSetAttribute(knn_sym_kernel<M, VEC>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    attr_set = true;
  }
  knn_sym_kernel<M, VEC><<<blocks, kWThreads, smem, call.stream()>>>(X, n, d, p, kk, tiles, delta0,
                                                                    glists, glen, locks);
  G2_CUDA_LAUNCH("knn_sym_kernel");
}

// Self kNN of all rows of dX through the upper triangle of tiles (knn_sym_kernel), launch by
// launch (about sym_blocks_per_launch tiles each, so a cancel is seen between them). Writes each
// row's best row_k (sorted) into lists[i * row_k ...], count[i].
void exact_knn_sym(Call& call, const PairwiseProblem& p, const float* dX, KnnEntry* lists,
                   uint32_t* count) {
  const size_t n = p.a->n, row_k = pairwise_row_k(p);
  const int kk = int(row_k), d = p.d;
  const int tiles = int((n + size_t(kWM) - 1) / size_t(kWM));
  KnnEntry* d_lists = call.alloc<KnnEntry>(n * size_t(kCapSmall), "pairwise kNN lists");
  uint32_t* d_len = call.alloc<uint32_t>(n, "pairwise kNN lengths");
  int* d_locks = call.alloc<int>(size_t(tiles), "pairwise stripe locks");
  G2_CUDA(cudaMemsetAsync(d_len, 0, n * sizeof(uint32_t), call.stream()));
  G2_CUDA(cudaMemsetAsync(d_locks, 0, size_t(tiles) * sizeof(int), call.stream()));
  const bool vec = d % 4 == 0 && reinterpret_cast<uintptr_t>(dX) % 16 == 0;
  const long long per_launch = std::max<long long>(1, pairwise_tuning().sym_blocks_per_launch);
  int delta = 0;
  while (delta < tiles) {
    call.poll();
    long long blocks = 0;
    int d1 = delta;
    while (d1 < tiles && (blocks == 0 || blocks + (tiles - d1) <= per_launch)) {
      blocks += tiles - d1;
      ++d1;
    }
    KernelTimer tm(call);
    switch (p.metric.kind) {
#define G2_SYM(MM)                                                                            \
  case MM:                                                                                    \
    if (vec)                                                                                  \
      launch_sym_t<MM, true>(call, unsigned(blocks), dX, n, d, p.metric.p, kk, tiles, delta,  \
                             d_lists, d_len, d_locks);                                        \
    else                                                                                      \
      launch_sym_t<MM, false>(call, unsigned(blocks), dX, n, d, p.metric.p, kk, tiles, delta, \
                              d_lists, d_len, d_locks);                                       \
    break;
      G2_SYM(PairMetric::L1)
      G2_SYM(PairMetric::L2)
      G2_SYM(PairMetric::SqEuclidean)
      G2_SYM(PairMetric::Cosine)
      G2_SYM(PairMetric::Dot)
#undef G2_SYM
      default: throw Error(ErrorCode::Internal, "symmetric kNN kernel for lp");
    }
    const double ms = tm.stop_ms();
    call.ctl.stats.kernel_s += ms / 1e3;
    last_run().kernel_ms += ms;
    last_run().launches++;
    pairwise_last_run().exact_ms += ms;
    delta = d1;
  }
  std::vector<uint32_t> h_len(n);
  std::vector<KnnEntry> h_lists(n * size_t(kCapSmall));
  download(call, h_len.data(), d_len, n * sizeof(uint32_t));
  download(call, h_lists.data(), d_lists, h_lists.size() * sizeof(KnnEntry));
  auto t0 = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    const size_t m = std::min<size_t>(h_len[i], row_k);
    std::copy(h_lists.begin() + long(i * kCapSmall), h_lists.begin() + long(i * kCapSmall + m),
              lists + i * row_k);
    count[i] = uint32_t(m);
  }
  call.ctl.stats.merge_s += seconds_since(t0);
  call.ctl.stats.pairs_examined += uint64_t(n) * uint64_t(n);
  call.free(d_lists);
  call.free(d_len);
  call.free(d_locks);
}

// Exact kNN of `rows` rows of dA (global index row_base + r, or row_ids[r] when given) against
// all of dB. Writes each row's best row_k (sorted) into lists[r * row_k ...], count[r].
// k <= 32 and every metric but lp: the 128 x 128 register-blocked kernel; else 64 x 64 tiles.
void exact_knn(Call& call, const PairwiseProblem& p, const float* dA, size_t rows,
               const std::vector<uint32_t>* row_ids, size_t row_base, const float* dB,
               KnnEntry* lists, uint32_t* count) {
  const size_t nb = p.b->n, row_k = pairwise_row_k(p);
  const int kk = int(row_k);
  const int cap = kk <= kCapSmall ? kCapSmall : kCapLarge;
  const PairwiseTuning& tu = pairwise_tuning();
  const bool wide = cap == kCapSmall && p.metric.kind != PairMetric::Lp && tu.wide;
  if (wide && tu.symmetric && p.self && !row_ids && row_base == 0 && rows == p.a->n &&
      dA == dB) {
    exact_knn_sym(call, p, dA, lists, count);
    return;
  }
  const int bm = wide ? kWM : kBM, bn = wide ? kWN : kBN;
  const int sms = device_facts().sms > 0 ? device_facts().sms : 1;
  const size_t col_tiles = (nb + size_t(bn) - 1) / size_t(bn);
  // Blocks wanted per launch: blocks_per_sm per SM, from row tiles and column splits (each split
  // keeps its own lists; the host merges them).
  const size_t want = size_t(std::max(1, tu.blocks_per_sm)) * size_t(sms);
  const size_t chunk = std::min<size_t>(rows, std::max<size_t>(tu.chunk_rows, size_t(bm)));
  uint32_t* d_ids = nullptr;
  if (row_ids) {
    d_ids = call.alloc<uint32_t>(rows, "pairwise row ids");
    upload_bytes(call, d_ids, row_ids->data(), rows * sizeof(uint32_t));
  }
  const size_t max_tiles = (chunk + size_t(bm) - 1) / size_t(bm);
  const int max_splits =
      int(std::min<size_t>(col_tiles, std::max<size_t>(1, (want + max_tiles - 1) / max_tiles)));
  KnnEntry* d_out = call.alloc<KnnEntry>(chunk * size_t(max_splits) * size_t(cap), "pairwise kNN lists");
  uint32_t* d_len = call.alloc<uint32_t>(chunk * size_t(max_splits), "pairwise kNN lengths");
  std::vector<KnnEntry> h_out;
  std::vector<uint32_t> h_len;
  std::vector<KnnEntry> merged;
  for (size_t r0 = 0; r0 < rows; r0 += chunk) {
    call.poll();
    const size_t nr = std::min(chunk, rows - r0);
    const size_t tiles = (nr + size_t(bm) - 1) / size_t(bm);
    // Splits for the wanted blocks, within the list buffer (sized for the first chunk).
    const int splits = int(std::min<size_t>(
        std::min<size_t>(col_tiles, std::max<size_t>(1, (want + tiles - 1) / tiles)),
        chunk * size_t(max_splits) / nr));
    const size_t cps = (col_tiles + size_t(splits) - 1) / size_t(splits) * size_t(bn);
    const dim3 grid{unsigned(tiles), unsigned(splits), 1u};
    KernelTimer tm(call);
    const float* A = dA + r0 * size_t(p.d);
    const uint32_t* ids = d_ids ? d_ids + r0 : nullptr;
    if (wide)
      launch_wide(p.metric.kind, call, grid, A, nr, ids, row_base + r0, dB, nb, p.d, p.metric.p,
                  kk, p.self, cps, splits, d_out, d_len);
    else if (cap == kCapSmall)
      launch_knn<kCapSmall>(p.metric.kind, call, grid, A, nr, ids, row_base + r0, dB, nb, p.d,
                            p.metric.p, kk, p.self, cps, splits, d_out, d_len);
    else
      launch_knn<kCapLarge>(p.metric.kind, call, grid, A, nr, ids, row_base + r0, dB, nb, p.d,
                            p.metric.p, kk, p.self, cps, splits, d_out, d_len);
    const double ms = tm.stop_ms();
    call.ctl.stats.kernel_s += ms / 1e3;
    last_run().kernel_ms += ms;
    last_run().launches++;
    pairwise_last_run().exact_ms += ms;
    h_out.resize(nr * size_t(splits) * size_t(cap));
    h_len.resize(nr * size_t(splits));
    download(call, h_len.data(), d_len, h_len.size() * sizeof(uint32_t));
    download(call, h_out.data(), d_out, h_out.size() * sizeof(KnnEntry));
    auto t0 = Clock::now();
    for (size_t r = 0; r < nr; ++r) {
      merged.clear();
      for (int s = 0; s < splits; ++s) {
        const size_t slot = r * size_t(splits) + size_t(s);
        const KnnEntry* l = h_out.data() + slot * size_t(cap);
        merged.insert(merged.end(), l, l + h_len[slot]);
      }
      if (splits > 1) knn_merge(merged, row_k);
      const size_t n = std::min(merged.size(), row_k);
      std::copy(merged.begin(), merged.begin() + long(n), lists + (r0 + r) * row_k);
      count[r0 + r] = uint32_t(n);
    }
    call.ctl.stats.merge_s += seconds_since(t0);
  }
  call.ctl.stats.pairs_examined += uint64_t(rows) * uint64_t(nb);
}

// Lower bound, on the folded FP16 path, of the exact key of every column outside a row's
// candidates, from the kept worst score w (the GEMM's units, scaled by 2^-2E). The scaled
// operands a' = a 2^-E, b' = b 2^-E have norms below na 2^-E and bmax 2^-E (upper bounds of the
// true norms) and n' = n 2^-2E <= bmax2 2^-2E (n the float chain's squared norm); c = 2 (l2
// form) or 1. A column's rounded terms sum to T with |T - (n' - c a'.b')| <= input + split:
// inputs rounded to nearest, 2^-11 relative or 2^-25 absolute each, so 1.01 c 2^-10 |a'| |b'| +
// 1.01 2^-25 sqrt(d) (|a'| + c |b'|) + d 2^-49; the norm's split |hi + lo - n'| <= 2^-22 n' +
// 1.01 2^-25 (hi carries n' to 2^-11, lo the rest to 2^-11 of it). The FP32 accumulation in
// any order adds at most 2 gam times the sum of the terms' magnitudes (below 1.01 c (|a'| +
// 2^-25 sqrt(d)) (|b'| + 2^-25 sqrt(d)) + 1.01 n' + 2^-23); the FP16 output one unit in the last
// place: 2^-10 |out| + 2^-24. A column with output >= w (not kept) thus has n' - c a'.b' >= w -
// 2^-10 |w| - 2^-24 - the rest (out - 2^-10 |out| increases with out). Scaled back by 2^2E,
// the l2 form adds the row's norm and the float chains' roundings as the TF32 bound does;
// (d + 4) 2^-149 covers subnormal results of the exact chain.
double fold_lower(double w, double an, double na, double bmax, double bmax2, double gam, int d,
                  int E, bool l2form) {
  const double c = l2form ? 2.0 : 1.0;
  const double ap = std::ldexp(na, -E), bp = std::ldexp(bmax, -E);
  const double nbp = l2form ? std::ldexp(bmax2, -2 * E) : 0.0;
  const double sq = std::sqrt(double(d)) * std::ldexp(1.0, -25);
  const double terms =
      1.01 * c * (ap + sq) * (bp + sq) + (l2form ? 1.01 * nbp + std::ldexp(1.0, -23) : 0.0);
  const double input = 1.01 * c * std::ldexp(1.0, -10) * ap * bp + 1.01 * sq * (ap + c * bp) +
                       double(d) * std::ldexp(1.0, -49);
  const double split = l2form ? std::ldexp(nbp, -22) + 1.01 * std::ldexp(1.0, -25) : 0.0;
  const double low = w - std::ldexp(std::fabs(w), -10) - std::ldexp(1.0, -24) - 2 * gam * terms -
                     input - split;
  const double s = std::ldexp(low, 2 * E);  // the score's lower bound in the vectors' units
  const double sub = std::ldexp(double(d + 4), -149);
  if (l2form) return (s + an - gam * bmax2 - gam * an) * (1 - gam) - gam * (an + bmax2) - sub;
  return s - gam * na * bmax - sub;
}

// Hands the kNN lists to the sink in row order, in pages of `page` records as emit_knn does,
// a growing prefix of the rows at a time (the fast path sends each chunk's certified rows while
// the next chunk's kernels run); the records (column, value) are computed on the engine's
// worker threads block by block, and a last partial page waits for the next rows or finish().
class KnnEmitter {
 public:
  // The lists (stride entries per row, count[i] valid) stay the caller's and must hold every
  // row before it is emitted.
  KnnEmitter(const PairwiseProblem& p, const KnnEntry* lists, const uint32_t* count,
             size_t stride, PairSink& sink, size_t page, Control& ctl)
      : p_(p), lists_(lists), count_(count), stride_(stride), sink_(sink),
        page_(std::max<size_t>(page, 1)), ctl_(ctl),
        block_(page_ * std::max<size_t>(1, (size_t(1) << 18) / page_)) {}

  // Hands rows [done(), rows) to the sink in whole pages; the rest of a page waits.
  void emit(size_t rows) {
    rows = std::min(rows, p_.a->n);
    if (rows <= next_) return;
    const size_t first = next_;
    off_.assign(rows - first + 1, 0);
    for (size_t i = first; i < rows; ++i) off_[i - first + 1] = off_[i - first] + count_[i];
    const size_t total = off_.back();
    next_ = rows;
    if (total == 0) return;
    // Blocks of about 4 MB of records after the waiting ones, reused block after block; the
    // buffer is not zeroed (the workers touch its pages first).
    // (at most the call's whole output: a few rows need no full block)
    if (!buf_) {
      const size_t most = p_.a->n * stride_;
      buf_.reset(new PairRecord[std::min(block_, most) + std::min(page_, most)]);
    }
    constexpr size_t kItem = 16384;  // records per work item
    for (size_t r0 = 0; r0 < total; r0 += block_) {
      const size_t r1 = std::min(total, r0 + block_);
      PairRecord* dst = buf_.get() + wait_;
      parallel_for(ctl_, (r1 - r0 + kItem - 1) / kItem, [&](size_t item, int) {
        const size_t a = r0 + item * kItem, b = std::min(r1, a + kItem);
        size_t t = size_t(std::upper_bound(off_.begin(), off_.end(), a) - off_.begin()) - 1;
        for (size_t x = a; x < b; ++x) {
          while (off_[t + 1] <= x) ++t;
          const size_t i = first + t;
          const KnnEntry& e = lists_[i * stride_ + (x - off_[t])];
          dst[x - r0] = PairRecord{uint32_t(i), e.j, pairwise_value(p_.metric, e.key)};
        }
      });
      const size_t avail = wait_ + (r1 - r0), whole = avail / page_ * page_;
      for (size_t at = 0; at < whole; at += page_) {
        sink_.consume(buf_.get() + at, page_);
        ctl_.stats.pairs_emitted += page_;
      }
      wait_ = avail - whole;
      if (wait_ && whole) std::memmove(buf_.get(), buf_.get() + whole, wait_ * sizeof(PairRecord));
    }
  }

  // Hands the waiting records (a last partial page) to the sink.
  void finish() {
    if (!wait_) return;
    sink_.consume(buf_.get(), wait_);
    ctl_.stats.pairs_emitted += wait_;
    wait_ = 0;
  }

 private:
  const PairwiseProblem& p_;
  const KnnEntry* lists_;
  const uint32_t* count_;
  size_t stride_;
  PairSink& sink_;
  size_t page_;
  Control& ctl_;
  size_t block_;                        // records built per parallel round
  size_t next_ = 0;                     // rows emitted so far
  size_t wait_ = 0;                     // records at the front of buf_ not yet handed over
  std::vector<size_t> off_;             // record offsets of the rows being emitted
  std::unique_ptr<PairRecord[]> buf_;   // block_ + page_ records, or the whole output if fewer
};

// The certified tensor-core path: GEMM (folded FP16 operands, FP32 accumulation, FP16 scores,
// where cublasGemmEx is present, the tuning asks for it and the norms allow one scale; else FP16
// of the rows scaled by powers of two with FP16 output where the tuning asks for it; else TF32
// with FP32 output), candidates, exact re-rank, certification; uncertified rows are
// recomputed exactly; chunk c + 1 is queued before chunk c is certified (tuning fast_overlap),
// its candidates coming down into the other half of the staging buffer. The first and the last
// chunk are short (tuning fast_edge_rows). With an emitter (tuning fast_stream_emit), the rows
// certified so far, up to the first uncertified one, go to the sink after each chunk's
// certificate. Returns false (lists to be computed by the caller, which emits the rows not
// emitted yet) when cuBLAS is
// unavailable, when a chunk of 64 rows of the GEMM output does not fit a quarter of the memory
// budget, or when the rows whose certificate failed exceed max_redo of the rows processed so far
// (max_redo >= 1: never).
bool fast_knn(Call& call, const PairwiseProblem& p, const float* dA, const float* dB,
              KnnEntry* lists, uint32_t* count, double max_redo, KnnEmitter* emitter) {
  Blas* bl = blas();
  if (!bl) return false;
  const auto t_prep = Clock::now();
  const size_t na = p.a->n, nb = p.b->n, row_k = pairwise_row_k(p);
  const int d = p.d;
  bool fold = bl->gemm_ex && pairwise_tuning().fold_gemm;
  bool half = !fold && bl->gemm_ex && pairwise_tuning().fp16_gemm;
  size_t es = fold || half ? sizeof(__half) : sizeof(float);  // bytes per GEMM output element
  size_t ld = fold || half ? (nb + 7) / 8 * 8 : nb;            // leading dimension of the output
  // The TF32 output is the largest a fallback below can choose.
  if (call.budget_left() / 4 < size_t(64) * nb * sizeof(float)) return false;
  const int kc = int(std::min<size_t>(std::min<size_t>(kFastCap, p.self ? nb - 1 : nb),
                                      std::max<size_t>(2 * row_k, row_k + 16)));
  const bool l2form = p.metric.kind == PairMetric::L2 || p.metric.kind == PairMetric::SqEuclidean;
  // Norms (exact chain) for the scores and the error bound.
  float* d_an = call.alloc<float>(na, "pairwise norms a");
  float* d_bn = p.self ? d_an : call.alloc<float>(nb, "pairwise norms b");
  norms_kernel<<<unsigned((na + 255) / 256), 256, 0, call.stream()>>>(dA, na, d, d_an);
  G2_CUDA_LAUNCH("norms_kernel");
  if (!p.self) {
    norms_kernel<<<unsigned((nb + 255) / 256), 256, 0, call.stream()>>>(dB, nb, d, d_bn);
    G2_CUDA_LAUNCH("norms_kernel");
  }
  std::vector<float> an(na), bn(p.self ? 0 : nb);
  download(call, an.data(), d_an, na * sizeof(float));
  if (!p.self) download(call, bn.data(), d_bn, nb * sizeof(float));
  const std::vector<float>& bnr = p.self ? an : bn;
  double bmax2 = 0;
  for (float v : bnr) bmax2 = std::max(bmax2, double(v));
  const double gam = 1.01 * double(d + 4) * std::ldexp(1.0, -24);  // float32 chain, relative
  const double bmax = std::sqrt(bmax2 * (1 + gam));
  double amax2 = bmax2;
  for (float v : an) amax2 = std::max(amax2, double(v));
  // Folded FP16 where every squared norm is finite with |x| sqrt(d) < 2^99, the largest is at
  // least 2^-100, and at most a 64th of the rows of each side lie below 2^-10 of the largest norm
  // (one scale for all vectors: such rows keep few bits in FP16 and would fail the
  // certificate), and the folded operands leave a quarter of the budget for a 64-row chunk of
  // the output; else the GEMM of the tuning's next choice.
  const int fk = (d + 2 + 7) / 8 * 8;  // folded row length K
  int fold_e = 0;  // the common exponent E: every vector's norm is below 2^E
  if (fold) {
    const double mx2 = amax2;
    fold = std::sqrt(mx2) * std::sqrt(double(d)) < std::ldexp(1.0, 99) &&
           mx2 >= std::ldexp(1.0, -100);
    auto small_rows = [&](const std::vector<float>& v) {
      size_t c = 0;
      for (float x : v) c += double(x) < mx2 * std::ldexp(1.0, -20) ? 1 : 0;
      return c;
    };
    if (fold) fold = small_rows(an) * 64 <= na && (p.self || small_rows(bn) * 64 <= nb);
    const size_t folded_bytes = (na + nb) * size_t(fk) * sizeof(__half);
    if (fold)
      fold = call.budget_left() > folded_bytes &&
             (call.budget_left() - folded_bytes) / 4 >= size_t(64) * ld * es;
    if (fold) {
      (void)std::frexp(std::sqrt(mx2 * (1 + gam)) * (1 + std::ldexp(1.0, -30)), &fold_e);
    } else {
      half = bl->gemm_ex && pairwise_tuning().fp16_gemm;
      es = half ? sizeof(__half) : sizeof(float);
      ld = half ? (nb + 7) / 8 * 8 : nb;
    }
  }
  pairwise_last_run().fold = fold;
  pairwise_last_run().fp16 = half;
  // FP16 only where every row's scaling exponent stays below its clamp (max |x_k| sqrt(d) <
  // 2^100, implied by |x| sqrt(d) < 2^99 with some margin for the norm's rounding; an overflowed
  // squared norm is infinite and fails it): a larger row would overflow FP16, so TF32 runs.
  if (half && !(std::sqrt(amax2) * std::sqrt(double(d)) < std::ldexp(1.0, 99))) {
    half = false;
    es = sizeof(float);
    ld = nb;
    pairwise_last_run().fp16 = false;
  }
  // Folded FP16: both sides' extended rows (K entries each).
  __half *dAf = nullptr, *dBf = nullptr;
  if (fold) {
    dAf = call.alloc<__half>(na * size_t(fk), "pairwise folded FP16 vectors a");
    dBf = call.alloc<__half>(nb * size_t(fk), "pairwise folded FP16 vectors b");
    fold_half_kernel<<<unsigned((na + 7) / 8), 256, 0, call.stream()>>>(
        dA, na, d, fk, fold_e, d_an, false, l2form, dAf);
    G2_CUDA_LAUNCH("fold_half_kernel");
    fold_half_kernel<<<unsigned((nb + 7) / 8), 256, 0, call.stream()>>>(
        dB, nb, d, fk, fold_e, d_bn, true, l2form, dBf);
    G2_CUDA_LAUNCH("fold_half_kernel");
  }
  // FP16: the scaled rows, their exponents (host: for the error bound) and scales.
  __half *dAh = nullptr, *dBh = nullptr;
  int *d_ea = nullptr, *d_eb = nullptr;
  float *d_sa = nullptr, *d_sb = nullptr;
  std::vector<int> ea;
  int eb_max = 0;
  if (half) {
    dAh = call.alloc<__half>(na * size_t(d), "pairwise FP16 vectors a");
    d_ea = call.alloc<int>(na, "pairwise row exponents a");
    d_sa = call.alloc<float>(na, "pairwise row scales a");
    to_half_kernel<<<unsigned((na + 7) / 8), 256, 0, call.stream()>>>(dA, na, d, dAh, d_ea, d_sa);
    G2_CUDA_LAUNCH("to_half_kernel");
    dBh = dAh, d_eb = d_ea, d_sb = d_sa;
    if (!p.self) {
      dBh = call.alloc<__half>(nb * size_t(d), "pairwise FP16 vectors b");
      d_eb = call.alloc<int>(nb, "pairwise row exponents b");
      d_sb = call.alloc<float>(nb, "pairwise row scales b");
      to_half_kernel<<<unsigned((nb + 7) / 8), 256, 0, call.stream()>>>(dB, nb, d, dBh, d_eb, d_sb);
      G2_CUDA_LAUNCH("to_half_kernel");
    }
    ea.resize(na);
    download(call, ea.data(), d_ea, na * sizeof(int));
    std::vector<int> ebv;
    if (!p.self) {
      ebv.resize(nb);
      download(call, ebv.data(), d_eb, nb * sizeof(int));
    }
    eb_max = -1000;
    for (int e : p.self ? ea : ebv) eb_max = std::max(eb_max, e);
  }
  // Chunk of rows whose GEMM output fits a quarter of the budget (at most fast_chunk_bytes).
  const size_t budget = std::min<size_t>(call.budget_left() / 4, pairwise_tuning().fast_chunk_bytes);
  size_t chunk = std::max<size_t>(64, budget / (ld * es) / 64 * 64);
  // A chunk's candidates come down into one half of the call's pinned staging buffer (the
  // process's cached one when it is free): at most kStagingBytes / 2 of counts, worst scores,
  // columns and keys.
  const size_t host_row =
      sizeof(uint32_t) + sizeof(float) + size_t(kc) * (sizeof(uint32_t) + sizeof(float));
  chunk = std::min(chunk, std::max<size_t>(64, cuda_tuning::kStagingBytes / 2 / host_row / 64 * 64));
  chunk = std::min(chunk, na);
  void* d_s = call.alloc_bytes(chunk * ld * es, "pairwise GEMM chunk");
  uint32_t* d_cand = call.alloc<uint32_t>(chunk * size_t(kc), "pairwise candidates");
  uint32_t* d_ncand = call.alloc<uint32_t>(chunk, "pairwise candidate counts");
  float* d_worst = call.alloc<float>(chunk, "pairwise worst scores");
  float* d_keys = call.alloc<float>(chunk * size_t(kc), "pairwise candidate keys");
  // Gives the device memory of the path back (the SIMT kernel then runs in the same call).
  auto release = [&]() {
    for (void* q : {static_cast<void*>(d_s), static_cast<void*>(d_cand),
                    static_cast<void*>(d_ncand), static_cast<void*>(d_worst),
                    static_cast<void*>(d_keys), static_cast<void*>(d_an)})
      call.free(q);
    if (!p.self) call.free(d_bn);
    if (fold) {
      call.free(dAf);
      call.free(dBf);
    }
    if (half) {
      for (void* q : {static_cast<void*>(dAh), static_cast<void*>(d_ea), static_cast<void*>(d_sa)})
        call.free(q);
      if (!p.self)
        for (void* q : {static_cast<void*>(dBh), static_cast<void*>(d_eb), static_cast<void*>(d_sb)})
          call.free(q);
    }
  };
  G2_CUDA(cudaMemsetAsync(d_keys, 0, chunk * size_t(kc) * sizeof(float), call.stream()));
  if (bl->set_stream(bl->handle, call.stream()) != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorCode::DeviceError, "cublasSetStream failed");
  // Two host slots (the halves of the staging buffer): while the host merges and certifies
  // chunk c from one, chunk c + 1's GEMM, selection and re-rank run and its candidates come
  // down into the other (pairwise_tuning().fast_overlap; else one chunk at a time).
  struct Slot {
    uint32_t* ncand;
    float* worst;
    uint32_t* cand;
    float* keys;
    cudaEvent_t start, gemm, sel, rr, done;
    size_t r0, nr;
  };
  Slot slots[2];
  for (int h = 0; h < 2; ++h) {
    char* base = call.staging(h, chunk * host_row);
    Slot& sl = slots[h];
    sl.ncand = reinterpret_cast<uint32_t*>(base);
    sl.worst = reinterpret_cast<float*>(base + chunk * sizeof(uint32_t));
    sl.cand = reinterpret_cast<uint32_t*>(base + chunk * (sizeof(uint32_t) + sizeof(float)));
    sl.keys = reinterpret_cast<float*>(base + chunk * (sizeof(uint32_t) + sizeof(float)) +
                                       chunk * size_t(kc) * sizeof(uint32_t));
    sl.start = call.event(true);
    sl.gemm = call.event(true);
    sl.sel = call.event(true);
    sl.rr = call.event(true);
    sl.done = call.event(false);
    sl.r0 = sl.nr = 0;
  }
  const float one = 1.0f, zero = 0.0f;
  const bool overlap = pairwise_tuning().fast_overlap;
  // Rows of the chunks: full chunks, but (with overlap, where a chunk holds at least 4 edges)
  // a first and a last chunk of `edge` rows: the host's certificate starts after a short GEMM
  // and little of it follows the last kernels.
  std::vector<size_t> starts{0};
  {
    const size_t edge =
        overlap ? std::min(pairwise_tuning().fast_edge_rows, chunk / 4) / 64 * 64 : 0;
    size_t at = 0;
    if (edge && na > 4 * edge) starts.push_back(at = edge);
    while (at < na) {
      const size_t left = na - at;
      const size_t nr = left > chunk + edge ? chunk : edge && left > 2 * edge ? left - edge : left;
      starts.push_back(at += nr);
    }
  }
  // Queues chunk c: GEMM, selection, re-rank, and the copies of its candidates to its slot.
  auto queue = [&](size_t c) {
    call.poll();
    Slot& sl = slots[c % 2];
    const size_t r0 = starts[c], nr = starts[c + 1] - r0;
    sl.r0 = r0;
    sl.nr = nr;
    G2_CUDA(cudaEventRecord(sl.start, call.stream()));
    // Column-major view: C (nb x nr, leading dimension ld) = B^T (op T of the d x nb matrix) *
    // A_chunk (d x nr).
    const cublasStatus_t st =
        fold ? bl->gemm_ex(bl->handle, CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nr), fk, &one, dBf,
                           CUDA_R_16F, fk, dAf + r0 * size_t(fk), CUDA_R_16F, fk, &zero, d_s,
                           CUDA_R_16F, int(ld), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
        : half ? bl->gemm_ex(bl->handle, CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nr), d, &one, dBh,
                           CUDA_R_16F, d, dAh + r0 * size_t(d), CUDA_R_16F, d, &zero, d_s,
                           CUDA_R_16F, int(ld), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
             : bl->sgemm(bl->handle, CUBLAS_OP_T, CUBLAS_OP_N, int(nb), int(nr), d, &one, dB, d,
                         dA + r0 * size_t(d), d, &zero, static_cast<float*>(d_s), int(ld));
    if (st != CUBLAS_STATUS_SUCCESS)
      throw Error(ErrorCode::DeviceError, std::string(fold || half ? "cublasGemmEx" : "cublasSgemm") +
                                              " failed with status " + std::to_string(int(st)));
    G2_CUDA(cudaEventRecord(sl.gemm, call.stream()));
    if (fold && kc <= kCapSmall)
      select_fold_kernel<kCapSmall><<<unsigned((nr + 7) / 8), kThreads, 0, call.stream()>>>(
          static_cast<const __half*>(d_s), nr, r0, nb, ld, p.self, kc,
          pairwise_tuning().select_prefilter, d_cand, d_ncand, d_worst);
    else if (fold)
      select_fold_kernel<kFastCap><<<unsigned((nr + 7) / 8), kThreads, 0, call.stream()>>>(
          static_cast<const __half*>(d_s), nr, r0, nb, ld, p.self, kc,
          pairwise_tuning().select_prefilter, d_cand, d_ncand, d_worst);
    else if (half)
      select_kernel<true><<<unsigned((nr + 7) / 8), kThreads, 0, call.stream()>>>(
          d_s, nr, r0, nb, ld, d_bn, d_ea, d_sb, l2form, p.self, kc,
          pairwise_tuning().select_prefilter, d_cand, d_ncand, d_worst);
    else
      select_kernel<false><<<unsigned((nr + 7) / 8), kThreads, 0, call.stream()>>>(
          d_s, nr, r0, nb, ld, d_bn, nullptr, nullptr, l2form, p.self, kc,
          pairwise_tuning().select_prefilter, d_cand, d_ncand, d_worst);
    G2_CUDA_LAUNCH("select_kernel");
    G2_CUDA(cudaEventRecord(sl.sel, call.stream()));
    const size_t threads = nr * size_t(kc);
    switch (p.metric.kind) {
#define G2_RR(MM)                                                                          \
  case MM:                                                                                 \
    rerank_kernel<MM><<<unsigned((threads + 255) / 256), 256, 0, call.stream()>>>(           \
        dA, nr, r0, dB, d, p.metric.p, kc, d_cand, d_ncand, d_keys);                       \
    break;
      G2_RR(PairMetric::L2)
      G2_RR(PairMetric::SqEuclidean)
      G2_RR(PairMetric::Cosine)
      G2_RR(PairMetric::Dot)
      default: throw Error(ErrorCode::Internal, "fast path for a metric without a GEMM form");
#undef G2_RR
    }
    G2_CUDA_LAUNCH("rerank_kernel");
    G2_CUDA(cudaEventRecord(sl.rr, call.stream()));
    // The next chunk's kernels overwrite these device arrays only after the copies (one stream).
    G2_CUDA(cudaMemcpyAsync(sl.ncand, d_ncand, nr * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            call.stream()));
    G2_CUDA(cudaMemcpyAsync(sl.worst, d_worst, nr * sizeof(float), cudaMemcpyDeviceToHost,
                            call.stream()));
    G2_CUDA(cudaMemcpyAsync(sl.cand, d_cand, nr * size_t(kc) * sizeof(uint32_t),
                            cudaMemcpyDeviceToHost, call.stream()));
    G2_CUDA(cudaMemcpyAsync(sl.keys, d_keys, nr * size_t(kc) * sizeof(float),
                            cudaMemcpyDeviceToHost, call.stream()));
    G2_CUDA(cudaEventRecord(sl.done, call.stream()));
  };
  std::vector<uint32_t> redo;
  std::vector<uint8_t> redo_flag;
  const size_t nchunks = starts.size() - 1;
  const bool stream = emitter && pairwise_tuning().fast_stream_emit;
  size_t queued = 0;
  pairwise_last_run().prep_ms = seconds_since(t_prep) * 1e3;
  queue(queued++);
  for (size_t c = 0; c < nchunks; ++c) {
    if (overlap && queued < nchunks) queue(queued++);
    Slot& sl = slots[c % 2];
    const auto t_wait = Clock::now();
    call.wait(sl.done);
    pairwise_last_run().wait_ms += seconds_since(t_wait) * 1e3;
    const size_t r0 = sl.r0, nr = sl.nr;
    {
      float g = 0, sel = 0, all = 0;
      G2_CUDA(cudaEventElapsedTime(&g, sl.start, sl.gemm));
      G2_CUDA(cudaEventElapsedTime(&sel, sl.gemm, sl.sel));
      G2_CUDA(cudaEventElapsedTime(&all, sl.start, sl.rr));
      call.ctl.stats.kernel_s += double(all) / 1e3;
      last_run().kernel_ms += double(all);
      last_run().launches++;
      PairwiseLastRun& lr = pairwise_last_run();
      lr.gemm_ms += double(g);
      lr.select_ms += double(sel);
      lr.rerank_ms += double(all) - double(g) - double(sel);
    }
    const uint32_t* h_ncand = sl.ncand;
    const float* h_worst = sl.worst;
    const uint32_t* h_cand = sl.cand;
    const float* h_keys = sl.keys;
    auto t0 = Clock::now();
    const size_t others = p.self ? nb - 1 : nb;
    // Merge and certify the rows on the engine's worker threads, kCertifyRows rows per item.
    constexpr size_t kCertifyRows = 512;
    redo_flag.assign(nr, 0);
    parallel_for(call.ctl, (nr + kCertifyRows - 1) / kCertifyRows, [&](size_t item, int) {
      std::vector<KnnEntry> row;
      const size_t r_end = std::min(nr, (item + 1) * kCertifyRows);
      for (size_t r = item * kCertifyRows; r < r_end; ++r) {
        const size_t i = r0 + r;
        const uint32_t nc = h_ncand[r];
        row.clear();
        for (uint32_t e = 0; e < nc; ++e)
          row.push_back(KnnEntry{h_keys[r * size_t(kc) + e], h_cand[r * size_t(kc) + e]});
        knn_merge(row, row_k);
        bool certified = nc >= others;  // every column was a candidate
        if (!certified && row.size() == row_k) {
          // Any column outside the candidates has approximate score >= worst; its exact key is
          // at least worst - E, so the exact top k is certain when the k-th exact key is below
          // that bound. E bounds the GEMM's error |s^ - s| (edot) plus the score's and our own
          // chain's roundings (gam). TF32: inputs relative 2^-10 each, 2^-9 per product; FP32
          // accumulation in any order with truncating adders: 2 gam. FP16 (rows scaled by 2^-e,
          // norms below 1): inputs rounded to nearest, relative 2^-11 each (2^-10 per product)
          // or absolute 2^-25 below the normal range; accumulation 2 gam; the FP16 output one
          // unit in the last place, 2^-10 relative or 2^-24 absolute. In the scaled units that
          // is (2^-9 + 2 gam) |a'| |b'| (the factor 1.01 covers the second-order terms) plus
          // 2^-24 (1.01 sqrt(d) + 1.01), scaled back by 2^(e_i + e_j) <= 2^(e_i + max e_j);
          // 2^-140 covers subnormal float results of the score. Folded FP16: fold_lower.
          const double na_ = std::sqrt(double(an[i]) * (1 + gam));
          const double kth = double(row.back().key);
          const double w = double(h_worst[r]);
          double lower;
          if (fold) {
            lower = fold_lower(w, double(an[i]), na_, bmax, bmax2, gam, d, fold_e, l2form);
          } else {
            double edot = (1.01 * std::ldexp(1.0, -9) + 2 * gam) * na_ * bmax;
            if (half)
              edot += std::ldexp(1.01 * (std::sqrt(double(d)) + 1.0), ea[i] + eb_max - 24) +
                      std::ldexp(1.0, -140);
            if (l2form) {
              const double e = 2 * edot + gam * bmax2 + gam * double(an[i]);
              lower = (w + double(an[i]) - e) * (1 - gam) - gam * (double(an[i]) + bmax2);
            } else {
              lower = w - edot - gam * na_ * bmax;
            }
          }
          certified = std::isfinite(w) && std::isfinite(lower) && kth < lower;
        }
        if (certified) {
          std::copy(row.begin(), row.end(), lists + i * row_k);
          count[i] = uint32_t(row.size());
        } else {
          redo_flag[r] = 1;
        }
      }
    });
    for (size_t r = 0; r < nr; ++r)
      if (redo_flag[r]) redo.push_back(uint32_t(r0 + r));
    call.ctl.stats.merge_s += seconds_since(t0);
    pairwise_last_run().certify_ms += seconds_since(t0) * 1e3;
    if (stream) {
      // The rows before the first uncertified one are final: to the sink while the next
      // chunk's kernels run.
      const auto te = Clock::now();
      emitter->emit(redo.empty() ? r0 + nr : size_t(redo.front()));
      call.ctl.stats.merge_s += seconds_since(te);
      pairwise_last_run().emit_ms += seconds_since(te) * 1e3;
      if (c + 1 == nchunks) pairwise_last_run().emit_tail_ms += seconds_since(te) * 1e3;
    }
    if (max_redo < 1 && double(redo.size()) > max_redo * double(r0 + nr)) {
      // Cost guard: recomputing this share of the rows costs more than the SIMT kernel.
      pairwise_last_run().recomputed = redo.size();
      pairwise_last_run().abandoned = true;
      // The next chunk may still be queued: its copies into the other staging half must land
      // before the caller's exact kernel reuses the staging buffer.
      call.sync();
      release();
      return false;
    }
    if (!overlap && queued < nchunks) queue(queued++);
  }
  call.ctl.stats.pairs_examined += uint64_t(na) * uint64_t(nb);
  pairwise_last_run().recomputed = redo.size();
  if (!redo.empty()) {
    // Recompute the uncertified rows exactly: gather them into a compact array.
    call.free(d_s);
    std::vector<float> rows_h(redo.size() * size_t(d));
    for (size_t t = 0; t < redo.size(); ++t)
      std::memcpy(rows_h.data() + t * size_t(d), p.a->row(redo[t]), size_t(d) * sizeof(float));
    float* d_rows = call.alloc<float>(rows_h.size(), "pairwise recomputed rows");
    upload_bytes(call, d_rows, rows_h.data(), rows_h.size() * sizeof(float));
    std::vector<KnnEntry> l2(redo.size() * row_k);
    std::vector<uint32_t> c2(redo.size());
    exact_knn(call, p, d_rows, redo.size(), &redo, 0, dB, l2.data(), c2.data());
    for (size_t t = 0; t < redo.size(); ++t) {
      std::copy(l2.begin() + long(t * row_k), l2.begin() + long(t * row_k + c2[t]),
                lists + size_t(redo[t]) * row_k);
      count[redo[t]] = c2[t];
    }
  }
  return true;
}

template <PairMetric M>
void launch_threshold_t(Call& call, dim3 grid, const float* A, size_t na, size_t row_base,
                        const float* B, size_t nb, int d, double p, float key_max, bool self,
                        ThrRecord* out, unsigned long long* count, unsigned long long cap) {
  threshold_kernel<M><<<grid, kThreads, 0, call.stream()>>>(A, na, row_base, B, nb, d, p, key_max,
                                                           self, out, count, cap);
  G2_CUDA_LAUNCH("threshold_kernel");
}

// Threshold pairs, chunk by chunk of rows, through a direct output buffer.
void threshold_pairs(Call& call, const PairwiseProblem& p, const float* dA, const float* dB,
                     PairSink& sink) {
  const size_t na = p.a->n, nb = p.b->n;
  const int d = p.d;
  // Rows per launch: about 2e12 pair-dimensions (a fraction of a second), in whole tiles.
  size_t chunk = size_t(2e12 / (double(nb) * double(d)));
  chunk = std::max<size_t>(kBM, std::min<size_t>(chunk, 65536) / kBM * kBM);
  unsigned long long cap =
      std::max<unsigned long long>(1 << 16, std::min<unsigned long long>(
                                                call.budget_left() / 4 / sizeof(ThrRecord), 1ull << 24));
  ThrRecord* d_out = call.alloc<ThrRecord>(cap, "pairwise output buffer");
  unsigned long long* d_count = call.alloc<unsigned long long>(1, "pairwise output counter");
  std::vector<ThrRecord> h;
  std::vector<PairRecord> page;
  const size_t page_pairs = std::max<size_t>(call.ctl.page_pairs, 64);
  uint64_t emitted = 0;
  size_t r0 = 0;
  while (r0 < na) {
    call.poll();
    const size_t nr = std::min(chunk, na - r0);
    G2_CUDA(cudaMemsetAsync(d_count, 0, sizeof(unsigned long long), call.stream()));
    const dim3 grid{unsigned((nb + kBN - 1) / kBN), unsigned((nr + kBM - 1) / kBM), 1u};
    KernelTimer tm(call);
    const float* A = dA + r0 * size_t(d);
    switch (p.metric.kind) {
#define G2_TH(MM)                                                                            \
  case MM:                                                                                   \
    launch_threshold_t<MM>(call, grid, A, nr, r0, dB, nb, d, p.metric.p, p.key_max, p.self, d_out, \
                           d_count, cap);                                                    \
    break;
      G2_TH(PairMetric::L1)
      G2_TH(PairMetric::L2)
      G2_TH(PairMetric::SqEuclidean)
      G2_TH(PairMetric::Cosine)
      G2_TH(PairMetric::Dot)
      G2_TH(PairMetric::Lp)
#undef G2_TH
    }
    const double ms = tm.stop_ms();
    call.ctl.stats.kernel_s += ms / 1e3;
    last_run().kernel_ms += ms;
    last_run().launches++;
    unsigned long long n = 0;
    download(call, &n, d_count, sizeof n);
    if (n > cap) {
      // Overflow: a larger buffer when the budget allows, else fewer rows per launch.
      last_run().drains++;
      const size_t want = size_t(n) * sizeof(ThrRecord);
      if (want <= call.budget_left() + cap * sizeof(ThrRecord)) {  // the old buffer is freed first
        call.free(d_out);
        cap = n;
        d_out = call.alloc<ThrRecord>(cap, "pairwise output buffer");
      } else if (nr > size_t(kBM)) {
        chunk = std::max<size_t>(kBM, nr / 2 / kBM * kBM);
      } else {
        throw Error(ErrorCode::OutOfMemory, "gpu_pairwise output does not fit in GPU memory",
                    std::to_string(n) + " pairs of 64 rows exceed the device memory limit.",
                    "Raise gpu2bs.gpu_memory_limit, lower the threshold, or use gpu2bs.device = cpu.");
      }
      continue;  // the same rows again
    }
    emitted += n;
    if (p.max_pairs && emitted > p.max_pairs)
      throw Error(ErrorCode::ProgramLimit, "gpu_pairwise result too large",
                  "The result exceeds gpu2bs.max_result_rows (" + std::to_string(p.max_pairs) + ").",
                  "Lower the threshold, or raise gpu2bs.max_result_rows.");
    h.resize(size_t(n));
    download(call, h.data(), d_out, size_t(n) * sizeof(ThrRecord));
    auto t0 = Clock::now();
    for (size_t s = 0; s < h.size(); s += page_pairs) {
      const size_t e = std::min(h.size(), s + page_pairs);
      page.clear();
      for (size_t t = s; t < e; ++t)
        page.push_back(PairRecord{h[t].i, h[t].j, pairwise_value(p.metric, h[t].key)});
      sink.consume(page.data(), page.size());
    }
    call.ctl.stats.merge_s += seconds_since(t0);
    r0 += nr;
  }
  call.ctl.stats.pairs_examined += uint64_t(na) * uint64_t(nb);
  call.ctl.stats.pairs_emitted += emitted;
}

// Copies `bytes` of vectors to the device: upload_bytes with the pairwise tuning's worker
// count and threshold.
void upload_vectors(Call& call, void* dev, const void* host, size_t bytes) {
  upload_bytes(call, dev, host, bytes, pairwise_tuning().upload_workers, pairwise_tuning().upload_parallel_bytes);
}

}  // namespace

PairwiseTuning& pairwise_tuning() {
  static PairwiseTuning t;
  return t;
}

PairwiseLastRun& pairwise_last_run() {
  static thread_local PairwiseLastRun r;
  return r;
}

void pairwise(const PairwiseProblem& p, PairSink& sink, Control& ctl) {
  pairwise_last_run() = PairwiseLastRun();
  const size_t na = p.a->n, nb = p.b->n;
  const bool knn = p.k > 0;
  const size_t row_k = knn ? pairwise_row_k(p) : 0;
  if (na == 0 || nb == 0 || (knn && row_k == 0) || (!knn && p.none_pass)) return;
  if (knn && row_k > size_t(kCapLarge)) {
    // Lists longer than the device kernel keeps in shared memory: the CPU engine answers.
    pairwise_last_run().cpu = true;
    cpu_pairwise(p, sink, ctl);
    return;
  }
  Call call(ctl);
  const size_t d = size_t(p.d);
  const auto t_up = Clock::now();
  float* dA = call.alloc<float>(na * d, "pairwise vectors a");
  float* dB = p.self ? dA : call.alloc<float>(nb * d, "pairwise vectors b");
  pairwise_last_run().upload_alloc_ms = seconds_since(t_up) * 1e3;
  upload_vectors(call, dA, p.a->data, na * d * sizeof(float));
  if (!p.self) upload_vectors(call, dB, p.b->data, nb * d * sizeof(float));
  pairwise_last_run().upload_ms = seconds_since(t_up) * 1e3;
  if (!knn) {
    threshold_pairs(call, p, dA, dB, sink);
    return;
  }
  std::vector<KnnEntry> lists(na * row_k);
  std::vector<uint32_t> count(na, 0);
  KnnEmitter emitter(p, lists.data(), count.data(), row_k, sink,
                     std::max<size_t>(ctl.page_pairs, 64), ctl);
  bool done = false;
  const bool exact = p.precision != PairwisePrecision::Fast;
  pairwise_last_run().exact = exact;
  pairwise_last_run().rows = na;
  // Both precisions take the certified TF32 path where it applies: its lists are the exact
  // kernel's bit for bit (every row proven or recomputed). Exact gives way to the SIMT kernel
  // when too many rows fail the certificate (kernels/tuning.h).
  if (p.metric.gemm_form() && row_k <= kFastCap / 2 &&
      (!exact || pairwise_tuning().certified_exact)) {
    const double max_redo = !exact ? 1.0
                            : p.self ? pairwise_tuning().certified_max_redo_self
                                     : pairwise_tuning().certified_max_redo_two;
    done = fast_knn(call, p, dA, dB, lists.data(), count.data(), max_redo, &emitter);
    pairwise_last_run().fast = done;
    if (!done) std::fill(count.begin(), count.end(), 0u);
  }
  // Rows the certified path handed to the sink already are the exact kernel's bit for bit: the
  // emitter hands over a fallback's exact lists only from the first row not emitted yet.
  if (!done) exact_knn(call, p, dA, na, nullptr, 0, dB, lists.data(), count.data());
  auto t0 = Clock::now();
  emitter.emit(na);
  emitter.finish();
  ctl.stats.merge_s += seconds_since(t0);
  pairwise_last_run().emit_ms += seconds_since(t0) * 1e3;
  pairwise_last_run().emit_tail_ms += seconds_since(t0) * 1e3;
}

std::string pairwise_last_path() {
  const PairwiseLastRun& r = pairwise_last_run();
  if (r.rows == 0) return r.cpu ? "cpu engine (k above 256)" : "none";
  const std::string prec = r.exact ? "exact: " : "fast: ";
  if (r.fast)
    return prec +
           (r.fold   ? "certified folded FP16 candidates, "
            : r.fp16 ? "certified FP16 candidates, "
                     : "certified TF32 candidates, ") +
           std::to_string(r.recomputed) + " of " +
           std::to_string(r.rows) + " rows recomputed by the exact kernel";
  if (r.abandoned)
    return prec + "SIMT exact kernel (certified path abandoned after " +
           std::to_string(r.recomputed) + " rows failed the certificate)";
  return prec + "SIMT exact kernel";
}

std::string pairwise_blas_status() {
  blas();
  std::lock_guard<std::mutex> lk(g_blas_mu);
  return g_blas.status;
}

}  // namespace cuda
}  // namespace gpu2bs
