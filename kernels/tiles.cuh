// All-pairs tiles (framework paper 3.2, Register-SHM): the upper triangle of tile pairs (a <= b)
// of one point set, each block holding the points of its anchor tile a in registers (RT points
// per thread: register tiling) and streaming tiles b through shared memory (SoA, vector loads).
// Diagonal tiles use the intra-block load balancing of section 3.4.1 (every thread pairs with
// TILE/2 points, no divergence). The output stage is a policy `Op` (SDH: privatized
// shared-memory histograms; pair count: a register counter), see sdh.cu and pair_count.cu.
// Off-diagonal tiles of full tiles (all but the last row and column) take a hot loop without
// predicates whose pairs go to the Op in batches of 4 x RT (Op::pairs, when Op::kBatch).
//
// The work is sliced: one launch covers a range of tile pairs (`item0`, `count`), each block a
// contiguous run of them, so the host can poll for cancel between slices.
//
// Point sets larger than the call's device budget run in blocks of points (Call::blocks): every
// block pair (i <= j) once, the diagonal pairs as the triangle above over block i, the others as
// the rectangle of every anchor tile of block i with every tile of block j (TileArgs::tiles2,
// run by the kernels' RECT instances, so the in-memory kernels are unchanged),
// with the next block's upload overlapping the current pair's kernels (run_block_pairs). Every
// unordered pair of points is examined exactly once, as in memory, so counts are the same.
#pragma once

#include <deque>

#include "common.cuh"
#include "core/admission.h"
#include "core/arith.h"
#include "core/split.h"

namespace gpu2bs {
namespace cuda {

template <typename T>
struct TileArgs {
  const T* c[kMaxDims];  // SoA coordinates, n points
  unsigned n;
  long long tiles;       // M = ceil(n / TILE)
  long long item0;       // first tile pair of this launch (linear index in the upper triangle)
  long long count;       // tile pairs in this launch
  long long per_block;   // consecutive tile pairs per block
  // The column block of the RECT kernels (block pairs i < j of run_block_pairs); read by RECT
  // instances only, so the triangle kernels' code does not change. A kernel parameter rather
  // than a __constant__ symbol: the per-file statics of relocatable device code are not found
  // by cudaMemcpyToSymbol in every file.
  RectArgs rect;
};

// Items before row a of the upper triangle of an M x M tile matrix (row a holds M - a items).
__device__ __forceinline__ long long tile_row_start(long long a, long long M) {
  return a * M - a * (a - 1) / 2;
}

// Linear item t -> tile pair (a, b), a <= b.
__device__ inline void tile_item_to_pair(long long t, long long M, long long* a, long long* b) {
  const double A = 2.0 * double(M) + 1.0;
  const double disc = A * A - 8.0 * double(t);
  long long r = (long long)((A - sqrt(disc > 0 ? disc : 0.0)) * 0.5);
  r = r < 0 ? 0 : (r > M - 1 ? M - 1 : r);
  while (r + 1 < M && tile_row_start(r + 1, M) <= t) ++r;
  while (r > 0 && tile_row_start(r, M) > t) --r;
  *a = r;
  *b = r + (t - tile_row_start(r, M));
}

// Default batch interface of an output stage: `pairs(d2[N])` handles N pairs of one thread at
// once (an Op may override it to order its shared-memory traffic: first every load of the
// batch, then every update).
template <class Op, typename T, int N>
__device__ __forceinline__ void op_pairs(Op& op, const T (&d2)[N]) {
  if constexpr (Op::kBatch) {
    op.template pairs<N>(d2);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) op.pair(d2[i]);
  }
}

// RECT: the rectangle of block pairs (TileArgs::tiles2 > 0, run_block_pairs); the triangle
// instances (RECT = false) hold no code of it.
template <typename T, int D, int B, int RT, class Op, bool RECT = false>
__global__ void __launch_bounds__(B) tile_kernel(TileArgs<T> args, typename Op::Params prm) {
  constexpr int TILE = B * RT;
  static_assert((TILE & (TILE - 1)) == 0, "tile length must be a power of two");
  extern __shared__ __align__(16) unsigned char g2_smem[];
  T* sc = reinterpret_cast<T*>(g2_smem);  // sc[k * TILE + j]
  Op op(prm, g2_smem + sizeof(T) * D * TILE);
  const int tid = threadIdx.x;
  const long long n = args.n;
  const long long M = args.tiles;
  long long it = args.item0 + (long long)blockIdx.x * args.per_block;
  long long end = it + args.per_block;
  if (end > args.item0 + args.count) end = args.item0 + args.count;
  const long long M2 = RECT ? args.rect.tiles2 : 0;  // > 0: rectangle mode
  const long long nb2 = RECT ? (long long)args.rect.n2 : n;  // points of the column set
  long long a = 0, b = 0, cur_a = -1;
  if (it < end) {
    if constexpr (RECT) {
      a = it / M2;
      b = it - a * M2;
    } else {
      tile_item_to_pair(it, M, &a, &b);
    }
  }
  T p[RT][D];
  bool pv[RT];
  bool full = false;  // every register point of the anchor tile is a real point
  for (; it < end; ++it) {
    if (a != cur_a) {  // anchor tile into registers
      cur_a = a;
      full = (a + 1) * TILE <= n;
#pragma unroll
      for (int r = 0; r < RT; ++r) {
        const long long idx = a * TILE + r * B + tid;
        pv[r] = idx < n;
#pragma unroll
        for (int k = 0; k < D; ++k) p[r][k] = pv[r] ? args.c[k][idx] : T(0);
      }
    }
    __syncthreads();  // everyone is done with the previous tile b
    const long long j0 = b * TILE;
    for (int j = tid; j < TILE; j += B) {
      const long long idx = j0 + j;
#pragma unroll
      for (int k = 0; k < D; ++k)
        sc[k * TILE + j] =
            idx < nb2 ? (RECT ? static_cast<const T*>(args.rect.c2[k])[idx] : args.c[k][idx]) : T(0);
    }
    __syncthreads();
    const int nr = int(nb2 - j0 < TILE ? nb2 - j0 : TILE);
    const bool offdiag = M2 || a != b;
    if (offdiag && full && nr == TILE) {
      // The hot loop (all tiles but the last row/column): register blocking, each
      // shared-memory (broadcast, vector) load of 4 j points feeds 4 x RT pairs, no
      // predicates.
#pragma unroll 2
      for (int j = 0; j < TILE; j += 4) {
        T q[4][D];
#pragma unroll
        for (int k = 0; k < D; ++k) {
          T v[4];
          load4<T>(sc + k * TILE + j, v);
#pragma unroll
          for (int u = 0; u < 4; ++u) q[u][k] = v[u];
        }
        T d2[4 * RT];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int r = 0; r < RT; ++r) d2[u * RT + r] = sq_dist<T, D>(p[r], q[u]);
        op_pairs<Op, T, 4 * RT>(op, d2);
      }
    } else if (offdiag) {
      for (int j = 0; j < nr; ++j) {
        T q[D];
#pragma unroll
        for (int k = 0; k < D; ++k) q[k] = sc[k * TILE + j];
#pragma unroll
        for (int r = 0; r < RT; ++r)
          if (pv[r]) op.pair(sq_dist<T, D>(p[r], q));
      }
    } else {
      // Diagonal tile, load balanced: point ip pairs with (ip + jj) mod TILE, jj = 1..TILE/2;
      // the last step only for the lower half, so every unordered pair is counted once.
      for (int jj = 1; jj <= TILE / 2; ++jj) {
#pragma unroll
        for (int r = 0; r < RT; ++r) {
          const int ip = r * B + tid;
          const int jp = (ip + jj) & (TILE - 1);
          const bool ok = ip < nr && jp < nr && (jj < TILE / 2 || ip < TILE / 2);
          if (ok) {
            T q[D];
#pragma unroll
            for (int k = 0; k < D; ++k) q[k] = sc[k * TILE + jp];
            op.pair(sq_dist<T, D>(p[r], q));
          }
        }
      }
    }
    if constexpr (RECT) {
      if (++b == M2) {
        ++a;
        b = 0;
      }
    } else if (++b == M) {
      ++a;
      b = a;
    }
  }
  op.finish();
}

// Runs a tile kernel over all tile pairs of n points in slices of about kSliceTargetMs (sized
// from the measured rate of the previous slices), two slices in flight on two streams so the
// next slice's blocks fill the SMs the previous slice's last blocks leave idle (no tail between
// slices), polling for cancel between launches. `pairs_per_item` = TILE^2; a block's work per
// slice stays below 2^32 pairs so 32-bit private counters cannot overflow. The Op's outputs
// are global atomics, so overlapping slices are safe.
// `rect_tiles2` > 0: `kernel` is a RECT instance over that many column tiles (args.rect).
// [first, last) restricts the run to those tile pairs (last < 0: to the end), one device's share.
template <typename T, typename P>
void run_tiles_one(Call& call, void (*kernel)(TileArgs<T>, P), int threads, int tile, size_t smem,
                   TileArgs<T> args, const P& prm, double guess_pairs_per_s,
                   long long rect_tiles2 = 0, long long first = 0, long long last = -1) {
  LastRun& lr = last_run();
  const long long M = args.tiles;
  const long long all = rect_tiles2 ? M * rect_tiles2 : M * (M + 1) / 2;
  const long long total = last < 0 ? all : std::min(last, all);
  if (total <= first) return;
  // Always raise the dynamic shared memory limit: with the kernel's static shared memory the
  // 48 KB default can be exceeded even below 48 KB of dynamic memory.
  G2_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, threads, smem));
  if (bps < 1)
    throw Error(ErrorCode::Internal, "CUDA kernel does not fit on the device",
                "Shared memory per block: " + std::to_string(smem) + " bytes.");
  const long long G = (long long)bps * device_facts().sms;
  const double pairs_per_item = double(tile) * double(tile);
  const long long max_per_block = std::max(1LL, (long long)(4294967295.0 / pairs_per_item));
  const long long max_items = G * max_per_block;
  const double target_s = cuda_tuning::kSliceTargetMs * 1e-3;
  auto clamp_items = [&](double v) {
    return std::max(1LL, std::min<long long>(max_items, (long long)std::min(v, 9e18)));
  };
  long long slice = clamp_items(guess_pairs_per_s * target_s / pairs_per_item);
  // Slices alternate between the main stream and an extra stream; the extra stream starts
  // after what the main stream holds (uploads), and the main stream resumes after both.
  const cudaStream_t streams[2] = {call.stream(), call.extra_stream(0)};
  const cudaEvent_t t_start = call.event(true);
  G2_CUDA(cudaEventRecord(t_start, streams[0]));
  G2_CUDA(cudaStreamWaitEvent(streams[1], t_start, 0));
  // Three event slots for at most two slices in flight: a slice's rate is measured from the
  // previous slice's end to its own end (with overlap, its start event says nothing).
  struct Slot {
    cudaEvent_t end;
    long long items;
  };
  cudaEvent_t evs[3] = {call.event(true), call.event(true), call.event(true)};
  std::deque<Slot> inflight;
  int n_launched = 0;
  long long next = first;
  cudaEvent_t prev_end = t_start;
  float span_ms = 0;
  auto t0 = Clock::now();
  while (next < total || !inflight.empty()) {
    if (next < total && inflight.size() < 2) {
      call.poll();
      const long long cnt = std::min(slice, total - next);
      const long long per_block = (cnt + G - 1) / G;
      const long long grid = (cnt + per_block - 1) / per_block;
      args.item0 = next;
      args.count = cnt;
      args.per_block = per_block;
      const cudaStream_t st = streams[n_launched & 1];
      Slot s{evs[n_launched % 3], cnt};
      kernel<<<unsigned(grid), threads, smem, st>>>(args, prm);
      G2_CUDA_LAUNCH("tile kernel launch");
      G2_CUDA(cudaEventRecord(s.end, st));
      inflight.push_back(s);
      next += cnt;
      ++n_launched;
      ++lr.launches;
      continue;
    }
    Slot s = inflight.front();
    inflight.pop_front();
    call.wait(s.end);
    float ms = 0, span = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, prev_end, s.end));
    G2_CUDA(cudaEventElapsedTime(&span, t_start, s.end));
    span_ms = std::max(span_ms, span);
    prev_end = s.end;
    // Next slices from the measured rate (at most 4x change per step).
    if (ms > 0.05) {
      const double want = double(s.items) * (cuda_tuning::kSliceTargetMs / double(ms));
      slice = clamp_items(std::max(double(slice) / 4, std::min(double(slice) * 4, want)));
    } else {
      slice = clamp_items(double(slice) * 4);
    }
  }
  // Later work on the main stream (the result download) comes after the extra stream's slices.
  const cudaEvent_t joined = call.event();
  G2_CUDA(cudaEventRecord(joined, streams[1]));
  G2_CUDA(cudaStreamWaitEvent(streams[0], joined, 0));
  lr.kernel_ms += span_ms;
  call.ctl.stats.kernel_s += seconds_since(t0);
}

// Plans blocks for the all-pairs path over `v` (`nbuckets`: the SDH's, 0 for a pair count) when
// its points do not fit in the call's budget: false (nothing allocated) when they fit; else
// allocates the three device slots and the pinned host copy (converted to T, with the float
// bounds for the SDH fast path), and fills `plan`. Throws Error(OutOfMemory) when not even three
// blocks of the smallest size fit.
template <typename T>
bool plan_blocks(Call& call, const PointsView& v, int nbuckets, BlockPlan* plan) {
  const Precision prec = sizeof(T) == 4 ? Precision::Float32 : Precision::Float64;
  const size_t budget = call.budget_left();
  // Several devices: every share runs the same decomposition, chosen by the caller.
  if (call.ctl.shares > 1 && call.ctl.share_block == 0) return false;
  if (call.ctl.shares <= 1 && admission::tiles_bytes(v.n, v.dims, prec, nbuckets) <= budget)
    return false;
  const size_t block = call.ctl.shares > 1
                           ? call.ctl.share_block
                           : size_t(admission::block_points(budget, v.dims, prec, nbuckets));
  if (block == 0)
    throw Error(ErrorCode::OutOfMemory, "GPU memory limit exceeded",
                "Blocks of points need at least " +
                    std::to_string(admission::tiles_block_min_bytes(v.n, v.dims, prec, nbuckets)) +
                    " bytes of device memory; the limit leaves " + std::to_string(budget) + ".",
                "Raise gpu2bs.gpu_memory_limit, or use gpu2bs.device = cpu.");
  auto t0 = Clock::now();
  plan->n = v.n;
  plan->block = block;
  plan->dims = v.dims;
  for (int s = 0; s < 3; ++s) {
    for (int k = 0; k < v.dims; ++k) plan->slot[s][k] = call.alloc<T>(block, "block of points");
    plan->ready[s] = call.event();
  }
  double d2 = 0;
  for (int k = 0; k < v.dims; ++k) {
    T* h = static_cast<T*>(call.alloc_host(v.n * sizeof(T)));
    const double* in = v.coord[k];
    T lo = static_cast<T>(in[0]), hi = lo;
    for (size_t i = 0; i < v.n; ++i) {
      const T x = static_cast<T>(in[i]);
      h[i] = x;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    plan->host[k] = reinterpret_cast<const char*>(h);
    const double span = double(hi) - double(lo);
    d2 += span * span;
  }
  // As device_d2max (sdh.cu): float roundings of the differences, squares and sums.
  plan->d2max = d2 * (1.0 + 1e-6);
  call.ctl.stats.prepare_s += seconds_since(t0);
  call.ctl.stats.block_points = block;
  return true;
}

// The block pairs (i <= j) of Call::blocks in row order, each run by run_tiles_one on the
// blocks' device slots: block i's triangle for i == j, the rectangle of blocks i and j
// otherwise. Three slots hold blocks; the one block the next pair lacks is uploaded on its own
// stream from the pinned host copy while the current pair's kernels run, into a slot the
// current pair does not use (every earlier pair has finished, so none reads it).
template <typename T, typename P>
void run_block_pairs(Call& call, void (*kernel)(TileArgs<T>, P), void (*rect_kernel)(TileArgs<T>, P),
                     int threads, int tile, size_t smem, TileArgs<T> args, const P& prm,
                     double guess_pairs_per_s) {
  if (!rect_kernel)
    throw Error(ErrorCode::Internal, "no block-pair kernel for this launch configuration");
  BlockPlan& bp = *call.blocks;
  const int K = int((bp.n + bp.block - 1) / bp.block);
  const cudaStream_t copy = call.extra_stream(1);
  auto count = [&](int blk) { return std::min(bp.block, bp.n - size_t(blk) * bp.block); };
  auto find = [&](int blk) {
    for (int s = 0; s < 3; ++s)
      if (bp.slot_block[s] == blk) return s;
    return -1;
  };
  // Uploads block `blk` (when not resident) into a slot outside the bit mask `keep`; -1 when
  // every free slot is kept.
  auto ensure = [&](int blk, unsigned keep) {
    int s = find(blk);
    if (s >= 0) return s;
    for (s = 0; s < 3 && ((keep >> s) & 1u); ++s) {
    }
    if (s == 3) return -1;
    const size_t off = size_t(blk) * bp.block;
    for (int k = 0; k < bp.dims; ++k)
      G2_CUDA(cudaMemcpyAsync(bp.slot[s][k], bp.host[k] + off * sizeof(T), count(blk) * sizeof(T),
                              cudaMemcpyHostToDevice, copy));
    G2_CUDA(cudaEventRecord(bp.ready[s], copy));
    bp.slot_block[s] = blk;
    ++bp.uploads;
    return s;
  };
  auto bit = [](int s) { return s >= 0 ? 1u << s : 0u; };
  std::vector<std::pair<int, int>> steps;
  for (int i = 0; i < K; ++i)
    for (int j = i; j < K; ++j) steps.emplace_back(i, j);
  if (call.ctl.shares > 1) {  // this device's run of block pairs, balanced by point pairs
    const std::vector<size_t> b =
        split::weighted_shares(split::block_pair_weights(bp.n, bp.block), call.ctl.shares);
    steps = std::vector<std::pair<int, int>>(steps.begin() + long(b[size_t(call.ctl.share)]),
                                             steps.begin() + long(b[size_t(call.ctl.share) + 1]));
  }
  for (size_t st = 0; st < steps.size(); ++st) {
    const int i = steps[st].first, j = steps[st].second;
    // Nothing runs between pairs: any slot but the one holding j may take block i.
    const int sa = ensure(i, bit(find(j)));
    const int sb = i == j ? sa : ensure(j, bit(sa));
    // Prefetch the next pair's blocks into slots this pair does not use (in row order it lacks
    // at most one: the next column, or the next anchor on its diagonal).
    if (st + 1 < steps.size()) {
      const int ni = steps[st + 1].first, nj = steps[st + 1].second;
      const int si = ensure(ni, bit(sa) | bit(sb));
      if (si >= 0) (void)ensure(nj, bit(sa) | bit(sb) | bit(si));
    }
    G2_CUDA(cudaStreamWaitEvent(call.stream(), bp.ready[sa], 0));
    if (sb != sa) G2_CUDA(cudaStreamWaitEvent(call.stream(), bp.ready[sb], 0));
    TileArgs<T> a = args;
    for (int k = 0; k < bp.dims; ++k) a.c[k] = static_cast<const T*>(bp.slot[sa][k]);
    a.n = unsigned(count(i));
    a.tiles = (long long)((count(i) + tile - 1) / tile);
    if (i != j) {
      // The column block for the RECT kernel, passed with its launch arguments.
      RectArgs r{};
      for (int k = 0; k < bp.dims; ++k) r.c2[k] = bp.slot[sb][k];
      r.n2 = unsigned(count(j));
      r.tiles2 = (long long)((count(j) + tile - 1) / tile);
      a.rect = r;
    }
    run_tiles_one<T>(call, i == j ? kernel : rect_kernel, threads, tile, smem, a, prm,
                     guess_pairs_per_s, i == j ? 0 : (long long)((count(j) + tile - 1) / tile));
    ++bp.pairs_run;
  }
  call.ctl.stats.block_pairs += uint64_t(steps.size());
}

// All tile pairs of the call's points: in memory (args), or by block pairs when the call runs
// in blocks (Call::blocks; args' coordinates are then ignored), the pairs between two blocks by
// `rect_kernel` (the RECT instance of `kernel`; nullptr for launch configurations that never
// run in blocks: an error if they do).
template <typename T, typename P>
void run_tiles(Call& call, void (*kernel)(TileArgs<T>, P), void (*rect_kernel)(TileArgs<T>, P),
               int threads, int tile, size_t smem, TileArgs<T> args, const P& prm,
               double guess_pairs_per_s) {
  if (call.blocks) {
    run_block_pairs<T>(call, kernel, rect_kernel, threads, tile, smem, args, prm,
                       guess_pairs_per_s);
  } else if (call.ctl.shares > 1) {  // this device's run of tile pairs, balanced by point pairs
    const std::vector<uint64_t> b = split::triangle_shares(args.n, uint64_t(tile), call.ctl.shares);
    run_tiles_one<T>(call, kernel, threads, tile, smem, args, prm, guess_pairs_per_s, 0,
                     (long long)b[size_t(call.ctl.share)], (long long)b[size_t(call.ctl.share) + 1]);
  } else {
    run_tiles_one<T>(call, kernel, threads, tile, smem, args, prm, guess_pairs_per_s);
  }
}

}  // namespace cuda
}  // namespace gpu2bs
