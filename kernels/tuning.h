// Launch parameters of the CUDA engine: the one tuning table. Every value names the benchmark
// output that justified it (test/bench/results/*-h100-*.txt, produced by test/bench/bench_kernels
// on an H100 80GB HBM3, sm_90, 132 SMs, 228 KB shared memory per SM).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpu2bs {
namespace cuda_tuning {

// --- tiles (SDH and all-pairs pair count) -------------------------------------------------
// Threads per block of the SDH tile kernel. bench "sdh-config" table: 256 beat 128 and 512 at
// 500 buckets (3-D float32) and kept 8 blocks/SM possible with the private copies below.
constexpr int kSdhThreads = 256;
// Points each SDH thread keeps in registers (register tiling: tile = threads * points).
// bench "sdh-config": 2 beat 1 (fewer shared loads per pair) and 4 (register pressure).
constexpr int kSdhRegPoints = 2;
// Threads per block and register points of the pair-count tile kernel. bench "count-config":
// 4 points per thread (shared-memory loads amortized over 4 pairs) gave the best pairs/s.
constexpr int kCountThreads = 256;
constexpr int kCountRegPoints = 4;

// Target length of one kernel slice, in milliseconds: short enough that a cancel is seen
// within ~2 slices (requirement: <= 50 ms), long enough that launch gaps stay < 1 %
// (bench "end-to-end": kernel_s vs wall at N = 1e6).
constexpr double kSliceTargetMs = 20.0;
// First slice before any measurement: pairs per second assumed (set below the measured rates
// of bench "kernel-only", so the first slice is short and the next ones are sized from it).
constexpr double kSdhGuessPairsPerSec = 1e11;
constexpr double kCountGuessPairsPerSec = 3e11;

// --- output privatization model (framework paper 3.3.2, re-fitted to H100) ------------------
// Collision penalty CLP of the latency model L(k, CL), in units of the conflict-free latency
// CL, fitted to bench "privatization" sweep (time vs copies at 1..50000 buckets).
constexpr double kPrivCLP = 2.0;
// Threads per SM beyond which more occupancy no longer shortens the kernel (the model's
// alpha saturates here; bench "privatization": 1024 threads/SM already hide the latency).
constexpr int kPrivAlphaSat = 1024;
// Above this many buckets the histogram lives in global memory (uint64 atomics into the final
// counts) instead of one private shared-memory copy per block. bench "privatization": global
// atomics overtake one shared copy once a block needs most of the SM's shared memory.
constexpr int kSdhGlobalAboveBuckets = 24576;

// --- similarity join and grid pair count ------------------------------------------------------
// Threads per block of the join kernel (warps are independent workers). bench "join-config".
constexpr int kJoinThreads = 256;
// Time budget of one join launch; warps stop at a resumable point after it (cancel polling).
constexpr double kJoinSliceMs = 20.0;
// Largest result pool (bytes) when Control::max_pages is 0: larger pools did not speed up the
// join (bench "join-pool"), and the pool is drained in one piece.
constexpr size_t kJoinPoolMaxBytes = size_t(1) << 30;
// Drain the pool once this fraction of its pages is used (the rest keeps warps writing).
constexpr double kJoinDrainFraction = 0.5;
// Grid pair count is used when candidates * this < all pairs: one grid candidate costs about
// this many tile pairs (bench "count-grid" vs "count-tiles" pairs/s).
constexpr double kGridCountCost = 8.0;
// Smallest N for which the pair count considers the grid (below, all-pairs tiles take < 1 ms).
constexpr size_t kGridCountMinPoints = 8192;

// --- transfers ---------------------------------------------------------------------------------
// Pinned staging buffer (two halves, double-buffered uploads and page drains).
constexpr size_t kStagingBytes = size_t(16) << 20;

}  // namespace cuda_tuning
}  // namespace gpu2bs
