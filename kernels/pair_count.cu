// Pair count (two-point correlation, 2-BS Type-I) on the GPU: each thread counts in a register,
// one block reduction, one 64-bit atomic per block and slice. Two paths with the same answer:
// all-pairs tiles (tiles.cuh), or the similarity-join grid in count-only mode (simjoin.cu) when
// it examines fewer pairs (candidates * kGridCountCost < all pairs), as the CPU engine does.
#include <cmath>

#include "common.cuh"
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
  run_tiles<T>(call, tile_kernel<T, D, B, RT, CountOp<T, kCarry>>, B, TILE, sizeof(T) * D * TILE,
               args, prm, cuda_tuning::kCountGuessPairsPerSec);
}

template <typename T, int D>
uint64_t count_tiles(const PairCountProblem& p, Call& call, T r2) {
  LastRun& lr = last_run();
  lr.count_path = 1;
  Control& ctl = call.ctl;
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  T* c[kMaxDims] = {};
  for (int k = 0; k < D; ++k) c[k] = call.alloc<T>(n, "points");
  unsigned long long* out = call.alloc<unsigned long long>(1, "count");
  G2_CUDA(cudaMemsetAsync(out, 0, 8, call.stream()));
  TileArgs<T> args{};
  for (int k = 0; k < D; ++k) args.c[k] = c[k];
  args.n = unsigned(n);
  ctl.stats.prepare_s += seconds_since(t0);
  upload_points<T>(call, p.pts, c);
  // Bench-only launch configurations (3-D float32 only), to justify the tuning table: 1..4 =
  // 512x8, 512x4, 128x8, 256x4 threads x points; 5 = 256x8 with FSETP counting (no carry
  // chain).
  int variant = 0;
  if constexpr (sizeof(T) == 4 && D == 3) variant = tile_variant();
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
  Call call(ctl);
  const int forced = count_forced_path();
  // The grid needs a finite positive radius (cells of side ~r), as on the CPU.
  if (forced != 1 && std::isfinite(p.r) && p.r > 0 &&
      (n >= cuda_tuning::kGridCountMinPoints || forced == 2)) {
    uint64_t count = 0;
    if (grid_pair_count(p, call, &count)) return count;
  }
  return p.prec == Precision::Float32 ? count_dims<float>(p, call, p.r2_f)
                                      : count_dims<double>(p, call, p.r2);
}

}  // namespace cuda
}  // namespace gpu2bs
