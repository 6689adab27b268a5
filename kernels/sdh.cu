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
#include <vector>

#include "common.cuh"
#include "tiles.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kB = cuda_tuning::kSdhThreads;
constexpr int kRT = cuda_tuning::kSdhRegPoints;

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
  // Bench-only launch configurations (3-D float32 only), to justify the tuning table.
  int variant = 0;
  if constexpr (sizeof(T) == 4 && D == 3) variant = tile_variant();
  if constexpr (sizeof(T) == 4 && D == 3) {
    switch (variant) {
      case 1: sdh_tiles<T, D, 512, 1>(call, p, c, hist); break;
      case 2: sdh_tiles<T, D, 1024, 1>(call, p, c, hist); break;
      case 3: sdh_tiles<T, D, 256, 2>(call, p, c, hist); break;
      case 4: sdh_tiles<T, D, 512, 4>(call, p, c, hist); break;
      default: break;
    }
  }
  if (variant < 1 || variant > 4) sdh_tiles<T, D, kB, kRT>(call, p, c, hist);
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
