// Pair count (two-point correlation, 2-BS Type-I) on the GPU: each thread counts in a register,
// one block reduction, one 64-bit atomic per block and slice. Two paths with the same answer:
// all-pairs tiles (tiles.cuh), or the similarity-join grid and kernel in count-only mode
// (kernels/join/) when it examines fewer pairs (candidates * kGridCountCost < all pairs), as the
// CPU engine does.
#include <cmath>

#include "common.cuh"
#include "join/join.cuh"
#include "tiles.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kB = cuda_tuning::kCountThreads;
constexpr int kRT = cuda_tuning::kCountRegPoints;
constexpr int kB64 = cuda_tuning::kCountThreadsF64;
constexpr int kRT64 = cuda_tuning::kCountRegPointsF64;

template <typename T, bool kCarry = true>
struct CountOp {
  struct Params {
    unsigned long long* out;
    T r2;
  };
  static constexpr bool kBatch = kCarry;
  const Params p;
  unsigned cnt = 0;  // < 2^32: a block examines < 2^32 pairs per slice

  __device__ CountOp(const Params& prm, unsigned char*) : p(prm) {}

  __device__ __forceinline__ void pair(T d2) { cnt += d2 <= p.r2 ? 1u : 0u; }

  // The hot loop's batch (float32): d2 <= r2 as an unsigned compare of the bit patterns (d2 is
  // +0, positive, +inf or NaN, r2 >= +0; NaN patterns are above every r2, as the float compare
  // is false for them), done as the carry of r2 - d2 (sub.cc), the carries added to the counter
  // two at a time: ptxas emits IADD3 (carry out) per pair and one IADD3.X with two carry-in
  // predicates per two pairs, 1.5 instructions per pair (FSETP + SEL/IADD: 2 to 2.5).
  template <int N>
  __device__ __forceinline__ void pairs(const T (&d2)[N]) {
    if constexpr (sizeof(T) == 4) {
      static_assert(N % 2 == 0, "pairs come in twos");
      const unsigned rb = __float_as_uint(p.r2);
#pragma unroll
      for (int i = 0; i < N; i += 2)
        asm("{\n\t.reg .u32 t;\n\t"
            "sub.cc.u32 t, %1, %2;\n\t"
            "addc.cc.u32 %0, %0, 0;\n\t"
            "sub.cc.u32 t, %1, %3;\n\t"
            "addc.u32 %0, %0, 0;\n\t}"
            : "+r"(cnt)
            : "r"(rb), "r"(__float_as_uint(d2[i])), "r"(__float_as_uint(d2[i + 1])));
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) pair(d2[i]);
    }
  }

  __device__ void finish() {
    __shared__ unsigned long long warp_sum[32];
    unsigned long long v = cnt;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) warp_sum[w] = v;
    __syncthreads();
    if (w == 0) {
      const int nw = (blockDim.x + 31) >> 5;
      v = lane < nw ? warp_sum[lane] : 0ull;
      for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
      if (lane == 0 && v) atomicAdd(p.out, v);
    }
  }
};

template <typename T, int D, int B, int RT, bool kCarry = true>
void count_launch(Call& call, TileArgs<T> args, unsigned long long* out, T r2) {
  constexpr int TILE = B * RT;
  args.tiles = (long long)((args.n + TILE - 1) / TILE);
  // -0 compares like +0 in floating point but not as a bit pattern (CountOp::pairs).
  typename CountOp<T, kCarry>::Params prm{out, r2 == T(0) ? T(0) : r2};
  // Block pairs run in the production configuration only (bench variants never run in blocks).
  void (*rect)(TileArgs<T>, typename CountOp<T, kCarry>::Params) = nullptr;
  if constexpr (kCarry && B == (sizeof(T) == 4 ? kB : kB64) && RT == (sizeof(T) == 4 ? kRT : kRT64))
    rect = tile_kernel<T, D, B, RT, CountOp<T, kCarry>, true>;
  run_tiles<T>(call, tile_kernel<T, D, B, RT, CountOp<T, kCarry>>, rect, B, TILE,
               sizeof(T) * D * TILE, args, prm, cuda_tuning::kCountGuessPairsPerSec);
}

template <typename T, int D>
uint64_t count_tiles(const PairCountProblem& p, Call& call, T r2) {
  LastRun& lr = last_run();
  lr.count_path = 1;
  Control& ctl = call.ctl;
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  // Points beyond the budget: block pairs (tiles.cuh), the same count.
  BlockPlan plan;
  const bool blocks = plan_blocks<T>(call, p.pts, 0, &plan);
  if (blocks) call.blocks = &plan;
  T* c[kMaxDims] = {};
  if (!blocks)
    for (int k = 0; k < D; ++k) c[k] = call.alloc<T>(n, "points");
  unsigned long long* out = call.alloc<unsigned long long>(1, "count");
  G2_CUDA(cudaMemsetAsync(out, 0, 8, call.stream()));
  TileArgs<T> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  ctl.stats.prepare_s += seconds_since(t0);
  if (!blocks) upload_points<T>(call, p.pts, c);
  // Bench-only launch configurations (3-D float32 only), to justify the tuning table: 1..4 =
  // 512x8, 512x4, 128x8, 256x4 threads x points; 5 = 256x8 with FSETP counting (no carry
  // chain).
  int variant = 0;
  if constexpr (sizeof(T) == 4 && D == 3) variant = ctl.overrides.tile_variant;
  if constexpr (sizeof(T) == 4 && D == 3) {
    switch (variant) {
      case 1: count_launch<T, D, 512, 8>(call, args, out, r2); break;
      case 2: count_launch<T, D, 512, 4>(call, args, out, r2); break;
      case 3: count_launch<T, D, 128, 8>(call, args, out, r2); break;
      case 4: count_launch<T, D, 256, 4>(call, args, out, r2); break;
      case 5: count_launch<T, D, 256, 8, false>(call, args, out, r2); break;
      default: break;
    }
  }
  if (variant < 1 || variant > 5)
    count_launch<T, D, sizeof(T) == 4 ? kB : kB64, sizeof(T) == 4 ? kRT : kRT64>(call, args, out, r2);
  unsigned long long total = 0;
  download(call, &total, out, 8);
  ctl.stats.pairs_examined += uint64_t(n) * (n - 1) / 2;
  return total;
}

// ---- the grid path (kernels/join/) -------------------------------------------------------------

using namespace join;

// Pairs the unidirectional pattern examines (grid pair count: decides grid vs tiles).
template <int D>
__global__ void estimate_kernel(const unsigned* start, const long long* cc, unsigned ncells,
                                const signed char* offsets, int noffsets,
                                unsigned long long* total) {
  const int lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned nwarps = (gridDim.x * blockDim.x) >> 5;
  unsigned long long acc = 0;
  for (unsigned c = warp; c < ncells; c += nwarps) {
    const unsigned long long nc = start[c + 1] - start[c];
    unsigned long long around = 0;
    // offsets[0] is the cell itself (self-join list)
    for (int o = 1 + lane; o < noffsets; o += 32) {
      long long key[D];
#pragma unroll
      for (int k = 0; k < D; ++k) key[k] = cc[size_t(c) * D + k] + offsets[o * D + k];
      const long long nb = find_cell<D>(cc, ncells, key);
      if (nb >= 0) around += start[nb + 1] - start[nb];
    }
    for (int s = 16; s > 0; s >>= 1) around += __shfl_down_sync(0xffffffffu, around, s);
    if (lane == 0) acc += nc * (nc - 1) / 2 + nc * around;
  }
  if (lane == 0 && acc) atomicAdd(total, acc);
}

// Grid pair count: counts pairs with d2 <= r2 on the grid of cells of side
// grid_cell_side(r, box) when it examines fewer pairs than all-pairs tiles (candidates *
// kGridCountCost < all pairs). Returns false, having counted nothing, otherwise.
template <typename T, int D>
bool grid_count_run(const PairCountProblem& p, Call& call, T r2, uint64_t* count) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  const Geometry g = make_geometry(p.box, p.r, p.prec, D, ctl.overrides.host_grid);
  ctl.stats.prepare_s += seconds_since(t0);
  const DevGrid<T> ga = build_grid<T, D>(call, p.pts, g, p.prec);
  // Candidates of the unidirectional pattern, as the CPU engine's estimate.
  const auto offsets = offsets_for(D, true);
  uint64_t candidates = 0;
  {
    PrepareTimer prep(ctl);
    signed char* d_off = upload_offsets(call, offsets);
    unsigned long long* d_est = call.alloc<unsigned long long>(1, "estimate");
    G2_CUDA(cudaMemsetAsync(d_est, 0, 8, call.stream()));
    estimate_kernel<D><<<blocks_for(size_t(ga.ncells) * 32, 256), 256, 0, call.stream()>>>(
        ga.start, ga.ccoord, ga.ncells, d_off, int(offsets.size() / D), d_est);
    G2_CUDA_LAUNCH("estimate_kernel");
    candidates = read_value(call, d_est);
  }
  const uint64_t all_pairs = uint64_t(n) * (n - 1) / 2;
  if (ctl.overrides.count_path != 2 &&
      !(double(candidates) * cuda_tuning::kGridCountCost < double(all_pairs)))
    return false;
  lr.count_path = 2;
  JoinResult r = run_join<T, D, true, true>(call, ga, ga, r2, offsets, nullptr, 0);
  ctl.stats.pairs_examined += r.examined;
  *count = r.count;
  return true;
}

// The grid pair count dispatched on the dimension.
template <typename T>
bool grid_count_dims(const PairCountProblem& p, Call& call, T r2, uint64_t* count) {
  switch (p.pts.dims) {
    case 2: return grid_count_run<T, 2>(p, call, r2, count);
    case 3: return grid_count_run<T, 3>(p, call, r2, count);
    case 4: return grid_count_run<T, 4>(p, call, r2, count);
    case 5: return grid_count_run<T, 5>(p, call, r2, count);
    case 6: return grid_count_run<T, 6>(p, call, r2, count);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

// The grid pair count in the problem's precision.
bool grid_pair_count(const PairCountProblem& p, Call& call, uint64_t* count) {
  return p.prec == Precision::Float32 ? grid_count_dims<float>(p, call, p.r2_f, count)
                                      : grid_count_dims<double>(p, call, p.r2, count);
}

// ---- dispatch ------------------------------------------------------------------------------------

template <typename T>
uint64_t count_dims(const PairCountProblem& p, Call& call, T r2) {
  switch (p.pts.dims) {
    case 2: return count_tiles<T, 2>(p, call, r2);
    case 3: return count_tiles<T, 3>(p, call, r2);
    case 4: return count_tiles<T, 4>(p, call, r2);
    case 5: return count_tiles<T, 5>(p, call, r2);
    case 6: return count_tiles<T, 6>(p, call, r2);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

}  // namespace

uint64_t pair_count(const PairCountProblem& p, Control& ctl) {
  const size_t n = p.pts.n;
  if (n < 2) return 0;  // the point count was checked by make_pair_count
  const int forced = ctl.overrides.count_path;
  // The grid needs a finite positive radius (cells of side ~r), as on the CPU. Under a memory
  // limit it does not fit, the tiles count instead (in blocks if need be): the same count.
  // One share of several devices: the tiles only (the grid is not split).
  if (ctl.shares <= 1 && forced != 1 && std::isfinite(p.r) && p.r > 0 &&
      (n >= cuda_tuning::kGridCountMinPoints || forced == 2)) {
    try {
      Call call(ctl);
      uint64_t count = 0;
      if (grid_pair_count(p, call, &count)) return count;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::OutOfMemory || !ctl.device_memory_limit) throw;
    }
  }
  Call call(ctl);
  return p.prec == Precision::Float32 ? count_dims<float>(p, call, p.r2_f)
                                      : count_dims<double>(p, call, p.r2);
}

}  // namespace cuda
}  // namespace gpu2bs
