// Launch parameters of the CUDA engine: the one tuning table. Every value keeps the benchmark
// figure that justified it and names the command that produces it (test/gpu/build/bench_kernels
// MODE, or test/gpu/build/test_gpu), on an H100 80GB HBM3, sm_90, 132 SMs, 228 KB shared memory
// per SM. The result files behind the figures and the values tried: test/bench/NOTES-tuning.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/engine.h"

namespace gpu2bs {
namespace cuda_tuning {

// --- tiles (SDH and all-pairs pair count) -------------------------------------------------
// "bench_kernels tiles": N = 1048576 uniform 3-D float32, kernel-only pairs/s, median of 5,
// SM clock 1980 MHz.
//
// SDH exact kernel (float64, and float32 where the fast path does not apply): threads per
// block x points per thread held in registers (register tiling; tile = threads * points).
// bench_kernels configs (SDH 500 buckets, 3-D float32, N = 1e6), two runs: 512x2 8.58e11
// pairs/s, 256x1 8.22e11, 128x2 8.00e11, 256x4 7.63e11, 256x2 7.12e11; 512x2 8.60e11, 512x1
// 8.65e11, 1024x1 9.09e11, 512x4 5.82e11. 1024 threads caps registers at 64, which spills in
// float64 at 4-6-D and in float32 at 5-6-D (70-72 registers at 512): 512 there.
constexpr int kSdhThreads = 512;
constexpr int kSdhRegPoints = 2;
// Exact kernel, float32 up to 4-D (<= 64 registers, no spills): 1024 threads. bench_kernels
// tiles, 50000 buckets (1 copy, one block per SM): 1024x2 1.044e12 vs 512x2 7.09e11;
// 500 buckets: 1.044e12 vs 1.000e12.
constexpr int kSdhExactThreadsF32 = 1024;
// Exact kernel, float32 with 1/width <= 2^40: the square root as the compiler's in-range
// __fsqrt_rn sequence without its called slow path (sdh_bucket_nocall; 26.9 instead of 32.3
// instructions per pair in the 3-D loop). bench_kernels tiles, 50000 buckets: 1.099e12 vs 1.046e12
// (1024x2 with the call); checked against sdh_bucket for all 2^32 d2 (SdhFastBucket.EveryFloat).
constexpr bool kSdhExactNoCallSqrt = true;
// SDH float32 fast path (thresholds + MUFU.SQRT, up to 65536 buckets): bench_kernels tiles, 500
// buckets: 1024x2 2.16e12 (C = 32 copies, one block per SM), 1024x1 2.08e12, 512x4 2.06e12,
// 512x2 1.73e12 (16 copies), 256x4 1.72e12 (16 copies).
constexpr int kSdhFastThreads = 1024;
constexpr int kSdhFastRegPoints = 2;
// Fewest private copies for which the fast path keeps a threshold table per copy (at most
// 2-way bank conflicts); below, one shared table and more copies. bench_kernels tiles ("sdh f32
// layout"): 1000 buckets per-copy (16 copies) 1.72e12 vs shared 1.46e12; 2000: 1.02e12 vs
// 1.33e12; 5000: 8.7e11 vs 1.14e12; 10000: 8.1e11 vs 1.09e12; 20000 (one copy either way):
// 7.9e11 vs 1.05e12. The model's choice is the faster one at each.
constexpr int kSdhFastMinReplicatedCopies = 16;
// Pair count tile kernel (float32: carry-chain counting, 7.66 instructions per pair at RT = 8):
// bench_kernels tiles (slices overlapping on two streams) 128x8 4.08e12, 512x8 3.94e12, 256x4
// 3.95e12, 512x4 3.86e12; on one stream 256x8 3.87e12, 1024x4 3.51e12, 1024x8 2.92e12
// (64-register cap).
// Float64 uses 512x4 (RT = 8 spills 316-444 bytes at 5-6-D): bench_kernels tiles 2.23e12.
constexpr int kCountThreads = 128;
constexpr int kCountRegPoints = 8;
constexpr int kCountThreadsF64 = 512;
constexpr int kCountRegPointsF64 = 4;

// Target length of one kernel slice, in milliseconds: a cancel is seen within about one slice
// (test_gpu Cancel: 28-34 ms after the interrupt). Two slices are in flight on two streams, so
// a slice's tail overlaps the next slice (tiles.cuh run_tiles);
// with one stream each slice boundary leaves the SMs of early-finishing blocks idle (~1 % of
// the pair count kernel at N = 2^20: 3.96e12 pairs/s on one stream, bench_kernels tiles).
constexpr double kSliceTargetMs = 20.0;
// First slice before any measurement: pairs per second assumed, at or below the slowest
// measured rate of each kernel family (bench_kernels tiles: SDH float32 1.1e12 - 2.2e12,
// float64 exact 4.7e11 at bench_kernels full; pair count float32 4.0e12, float64 2.2e12), so
// the first slice is at most ~20 ms (float64 SDH) and the following ones are sized from
// measured rates.
constexpr double kSdhGuessPairsPerSec = 5e11;
constexpr double kCountGuessPairsPerSec = 2e12;

// --- output privatization model (framework paper 3.3.2, re-fitted to H100) ------------------
// Fit from bench_kernels privatization (SDH 3-D float32, N = 1e5,
// kernel-only pairs/s for 1..32 private copies and global memory, 1..50000 buckets):
//  * collisions cost nothing measurable: at full occupancy every number of copies runs at
//    678-679e9 pairs/s, even 1 copy with 1 bucket (all 256 threads of a block on one counter);
//    the H100 shared-memory atomic unit merges same-address updates of a warp. The collision
//    penalty CLP of the latency model L(k, CL) fits as <= 1e-4 (in units of CL: with one copy
//    and one bucket, L(32) = 1 + 31 CLP stayed within the 0.3 % run-to-run noise); the upper
//    bound is used, so equal occupancy still prefers more copies, as in the paper;
//  * time follows occupancy: 4 blocks of 256 threads per SM (the register limit) 678e9/s,
//    3 blocks 602e9, 2 blocks 470e9, 1 block 257e9. No saturation below 1024 threads/SM, so
//    alpha does not saturate (2048 = the SM's thread limit);
//  * global-memory atomics: 47-54e9 pairs/s at 1000-50000 buckets, 5x slower than one shared
//    copy at 1 block/SM; global memory is used only when one copy does not fit in shared memory.
// The model thus picks the most copies that keep the occupancy the registers allow.
constexpr double kPrivCLP = 1e-4;
constexpr int kPrivAlphaSat = 2048;

// --- similarity join and grid pair count ------------------------------------------------------
// Threads per block of the join kernel (each warp is an independent worker on the item queue;
// not swept: bench_kernels full shows the join kernel at 0.6-0.8 ms of a 21-26 ms call at
// N = 1e6, the rest being grid construction, transfers and draining).
constexpr int kJoinThreads = 256;
// Minimum resident blocks per SM asked of the compiler for the join kernel (caps registers at
// 65536 / (256 * 4) = 64, no spills at 3-D float32): 32 warps/SM to hide the latency of the
// neighbour-cell lookups and candidate loads; one block fewer (85 registers) when a point has
// more than 16 bytes of coordinates (float32 5-6-D, float64 3-6-D), where 64 would spill.
constexpr int kJoinMinBlocks = 4;
// Time budget of one join launch; warps stop at a resumable point after it (cancel polling:
// test_gpu Cancel, simjoin cancel 1.5 ms after the interrupt).
constexpr double kJoinSliceMs = 20.0;
// Lanes per query point (k, similarity-join paper section III-A) when
// gpu2bs.join_threads_per_point = 0. bench_kernels joinlb (2e6 points, Unif and
// Expo lambda = 40, 2-6-D, ~10 and ~100 neighbours, every strategy x k, float32): K = 32 is the
// fastest or within 4 % on all 21 sets; K = 16 wins by 2-4 % only on the sparse 2-D sets, where
// it issues 18-22 % fewer compare-loop steps; K = 1 is 1.2-2x slower (rows per item are 1.4-22,
// so most of its 32 row slots idle). With the workload estimate (workqueue, sortbywl), the rule
// takes the K minimizing predicted steps x kJoinStepCost[log2 K] (join_auto_threads_per_point):
// a step of K = 2..16 costs more than one of K = 1 or 32 (candidate and row shuffles both;
// measured t16 / t32 at equal predicted steps 1.02-1.13); 1.04 fits best (geometric-mean time
// over the best K: 1.0004, vs 1.0034 for always 32 and 1.014 for equal costs).
constexpr double kJoinStepCost[6] = {1.0, 1.04, 1.04, 1.04, 1.04, 1.0};
// K for k = 0 when the estimate does not run (cell strategy): the estimate is a full pass of
// neighbour-cell lookups, 0.2-39 ms at 2e6 points (as much as 70 % of the kernel on sparse 6-D
// sets), for at most 4 % from K.
constexpr int kJoinAutoKWithoutEstimate = 32;
// Strategy of gpu2bs.join_balance = auto on the GPU. bench_kernels joinlb, engine
// call end to end, k = 0, geometric mean over the 21 sets: cell 1.000, workqueue 1.082, sortbywl
// 1.111; workqueue's kernel is faster (0.90x, up to 1.84x on Expo5D at 73 neighbours) but its
// workload estimate and sort cost 0.6-40 ms; it wins end to end on 2 sets by 3-6 % (Expo3D 95
// and Expo5D 73 neighbours: 55.5 vs 57.4 ms, 84.2 vs 89.6 ms), cell wins up to 1.48x (Expo6D at
// 7 neighbours: 103.9 vs 153.6 ms). Crowded cells are not an issue for cell here: GPU items are
// at most 32 rows.
constexpr JoinBalance kJoinAutoBalance = JoinBalance::Cell;
// Largest result pool (bytes) when Control::max_pages is 0. bench_kernels paths,
// join N = 1e6 (14.7 M pairs, 235 MB): a 16-page pool 184 ms (318 drains), 256
// pages 58 ms (20 drains), the default (1 GB) 26.5 ms in one drain.
constexpr size_t kJoinPoolMaxBytes = size_t(1) << 30;
// Device page (pairs) when Control::max_pages is 0. Each of the ~4000 resident warps owns a
// page; with 16384-pair pages (the PG default page_pairs) the 1 GB pool holds only ~1 page per
// warp and fills up half empty (bench_kernels quick: 2 drains for 235 MB of pairs;
// with 2048, one drain: bench_kernels full).
constexpr size_t kJoinPagePairs = 2048;
// Drain the pool once this fraction of its pages is used (the rest keeps warps writing).
constexpr double kJoinDrainFraction = 0.5;
// --- batched similarity join output -------------------------------------------------------------
// bench_kernels batch (engine-level self-joins of 2e6
// uniform 3-D float32 points, ~1e8 and ~1e9 result pairs, counting/checksum sink, serial drain
// vs batched with 1-3 streams). Both are bound by the sink on the calling thread (it takes
// 85-90 % of the call; kernels 1-5 %), so the streams change little.
// Streams (result banks) of the batched join: a batch runs in one bank while the banks of
// earlier batches are copied through the pinned staging buffer and handed to the sink.
// Run 3, 945.6 M pairs: 2 streams 2260 ms, 3 streams 2376, 1 stream 2383, serial 2444; 97.5 M
// pairs: 3 streams 225 ms, 2 streams 280, 1 stream 254, serial 226 (the sink alone varies
// 1722-2294 ms at 945.6 M pairs from run to run). 2: the kernel of one bank runs while the
// other drains, with fewer batches than 3 (71 vs 106 at 945.6 M pairs).
constexpr int kJoinStreams = 2;
// Work items of the count-mode pass that estimates the result size: every s-th item with
// s = ceil(items / kJoinSampleItems) (a 1/s share of the join's candidate tests, in count mode).
// bench_kernels batch: 2e6 points, ~1e9 pairs, s = 17: sample 7.9 ms of GPU time (kernel
// 45-120 ms), estimate 946.1 M for 945.6 M pairs; 97.5 M pairs: 96.9 M; test_gpu
// Batch.EstimateSizesTheBanks: 100k points, 1667 sample items, 1.0 ms, ratio 0.993.
constexpr size_t kJoinSampleItems = 2048;
// The sample is counted in up to this many consecutive segments (one launch each), so the batch
// plan follows the density along the item order; a segment has at least kJoinSampleSegMin items.
constexpr int kJoinSampleSegments = 32;
constexpr size_t kJoinSampleSegMin = 64;
// Banks are sized for estimate * margin pairs (a uniform sample's error is a few per cent; an
// underestimate only costs bank-full stops and resumes, never pairs).
constexpr double kJoinEstimateMargin = 1.25;
// A batch's estimated output fills this share of its bank (the rest absorbs the estimate's
// error and the partly filled last page of every warp of every launch).
constexpr double kJoinBatchFill = 0.5;
// Results of at least this many estimated pairs are split into kJoinStreams batches even when
// they would fit one bank, so that copies and the sink overlap the kernel.
constexpr double kJoinSplitPairs = 4.0e6;
// Pages per resident warp of a bank (page size shrinks towards 64 pairs for small banks): the
// 1 GB pool of 2048-pair pages holds 7.7 pages per warp and needs one drain for 14.7 M pairs
// (bench_kernels full), 1 page per warp fills up half empty (bench_kernels quick).
// At least kJoinMinPagesPerWarp pages per warp whatever the estimate.
constexpr size_t kJoinPagesPerWarp = 8;
constexpr size_t kJoinMinPagesPerWarp = 2;
// Grid pair count is used when candidates * this < all pairs. bench_kernels paths:
// all-pairs tiles 1.75e12 pairs/s; the grid 2.8e11 candidates/s at ~30 neighbours
// (6x a tile pair, but 5000x fewer pairs) and 1.15e12/s at ~3000 neighbours (1.5x), plus
// ~20 ms of grid construction at N = 1e6: 3 sits between.
constexpr double kGridCountCost = 3.0;
// Smallest N for which the pair count considers the grid (below, all-pairs tiles take < 1 ms:
// bench_kernels paths, tiles at N = 1e5 3.1 ms).
constexpr size_t kGridCountMinPoints = 8192;

// --- resolution of cell pairs (resolve.cu) ------------------------------------------------------
// Points per leaf cell of the density map for uniform data (its depth): deep, so that dense
// clusters can be split further; the walk stops splitting uniform data earlier, at
// kResolveMinPairs point pairs per cell pair (2-D, 3-D): the work kernel takes one cell pair
// per warp, tests every point of b against a's box and, when both cells hold at least 64
// points, every remaining point of a against the box of b's remaining points, and computes only
// the pairs left by the tests, so larger cells cost little more per pair and many small entries
// cost their per-entry work. 2-D: 65536 stops
// uniform data at cells of about 150 .. 600 points (H100, 1e7 points, 100 buckets: 8.1 s at
// 65536 and at 262144, 16.1 s at 16384); 3-D keeps 16384 (65536 measured no faster). The
// values come from the H100 sweep of bench_resolve with BENCH_RESOLVE_MIN_PAIRS
// (test/gpu/resolve2_device.sh).
constexpr double kResolveLeafPoints = 4.0;
// Unresolved pairs with at most kResolveMinPairs point pairs, or at most kResolveDirectPairs
// whose distance range spans two bucket edges or more, go to the work list instead of being
// split (2-D: 16 child pairs, 3-D: 64 child pairs per split). The work kernel's fast path
// counts ranges of up to three buckets; wider ones take its general path (a square root and a
// shared-memory atomic per pair), so such pairs are split down to kResolveMinPairs as well.
constexpr unsigned long long kResolveMinPairs[2] = {65536, 16384};
constexpr unsigned long long kResolveDirectPairs[2] = {0, 0};
// Walk buffers: cell pairs per level queue, work-list entries between work kernel launches
// (16 bytes of point ranges and 24 .. 56 bytes of WorkInfo each; a launch computes well under
// a second of pairs, so cancel is seen promptly).
constexpr size_t kResolveQueuePairs = size_t(1) << 22;
constexpr size_t kResolveWorkEntries = size_t(1) << 22;
// Cost model of the SDH (auto, resolve_sdh_wins): the work kernel's pair fraction is about
// coef * s * nbuckets / sqrt(d) for the cell side s (unit extent) of the level where the walk
// stops on uniform data (kResolveMinPairs); resolution is chosen when it is below
// kResolveWinFraction (2-D, 3-D) and N is at least kResolveMinPoints. The coefficients are the
// point-by-cell range (about half a cell pair's, 2.5 s in 2-D and 3 s in 3-D). The break-even
// comes from the H100 rows of test/gpu/resolve_device.sh, resolve2_device.sh,
// resolve3_device.sh and resolve4_device.sh (bench_resolve). 2-D, with the stop size of 65536
// pairs: the speedup over brute force follows about 0.6 .. 0.95 / (predicted fraction) (100
// buckets: 0.088: 7.39x at 1e8 points, 0.35: 2.67x at 1e7, 0.70: 1.25x at 2,097,152; 10
// buckets: 0.14: 5.70x at 1e6), so resolution is chosen below 0.8. 3-D: 0.25 .. 0.43 /
// fraction (0.27: 0.93 .. 1.04x at 1e6 and 1.58x at 2,097,152 points, 1.35: 0.21x); below 1e6
// points nothing was measured.
constexpr double kResolveUnresolvedCoef[2] = {1.27, 1.5};
constexpr double kResolveWinFraction[2] = {0.8, 0.3};
constexpr size_t kResolveMinPoints = size_t(1) << 19;
// Cost model of the pair count at radius r (resolve_count_wins): the unresolved shell of cell
// pairs (coef * shell * 2 s) against the grid path's neighbourhood; the coefficients are the
// CPU engine's measured ones (resolve_cpu.cpp), kResolveStopPoints the stop cell in points.
constexpr double kResolveCountCoef[2] = {1.6, 2.2};
constexpr double kResolveCountWinFraction = 0.3;
constexpr double kResolveStopPoints = 32.0;

// --- pair expressions (kernels/expr/: NVRTC-compiled tile kernels) -------------------------
// Threads per block and register rows per thread of the generated tile kernels (tile =
// threads x rows rows of each side). The rows of side a sit in registers for every referenced
// column, and the hot loop inlines the generated function 4 x rows times, so the rows stay
// few: code size and NVRTC compile time grow with them. bench_expr sweep (H100, one run each,
// kernel pairs/s): 200k x 200k Manhattan count float32 128x1 3.08e12, 128x2 2.38e12, 128x4
// 2.20e12, 256x4 2.04e12, 512x2 2.48e12; float64 128x2 2.51e12, 128x4 1.45e12, 512x2 2.57e12;
// 1e6-point self Euclidean count float32 128x2 2.99e12, 128x4 3.20e12, 256x4 3.22e12, 128x8
// 3.22e12; float64 128x2 2.08e12, 128x4 2.15e12. 128x2 is near the best of each and compiles
// in 280-370 ms cold (NVRTC with ptxas, fresh program).
// NVRTC's --Ofast-compile level for the generated kernels of calls of at most
// kExprFastCompileMaxPairs pairs (larger calls: full optimization). bench_expr programs
// (H100, first compile of each program, ms, without -> with "min"): Manhattan count float32 338
// -> 262, float64 307-340 -> 192-196; Manhattan join float32 434 -> 317, float64 337-355 ->
// 188-242; Euclidean count float32 313 -> 187, float64 281-354 -> 138-155; angular histogram
// float32 496 -> 281, float64 523-699 -> 314-347; energy sum float32 447 -> 285, float64 459-469
// -> 224-280. Kernel time of "min" (bench_expr, H100, none -> min, ms): 1e6-point Euclidean
// count float32 140.8 -> 151.0, float64 240.4 -> 255.4; angular histogram 118,218 points
// float32 15.9 -> 17.1, float64 42.3 -> 45.6; Manhattan count 200k x 200k float32 16.8 -> 13.1,
// float64 15.9 -> 18.4; Manhattan join float32 27.6 -> 30.2, float64 30.0 -> 35.9. "min" saves
// 100-350 ms of compile and costs up to 20 % of kernel time: it pays while the kernel takes
// less than about half a second; 1e11 pairs run 30-250 ms at the rates above.
constexpr const char* kExprFastCompile = "min";
constexpr double kExprFastCompileMaxPairs = 1e11;
constexpr int kExprThreads = 128;
constexpr int kExprRegRows = 2;
constexpr int kExprRegRowsF64 = 2;
// First slice before any measurement: pairs per second assumed, below the rate of cheap
// expressions so an expensive one's first slice stays short; later slices are sized from the
// measured rate.
constexpr double kExprGuessPairsPerSec = 1e11;
// Sum: most items (tile pairs) per slice, each with its (sum, comp) partial (16 bytes) copied
// back and folded on the host in item order.
constexpr long long kExprSumMaxItems = 1LL << 18;
// Histogram: most buckets for the bucket computation through the edge table (kernel_text.h,
// g2_visit: one fused multiply-add and three additions per pair in place of the float64
// division; the edges, nbuckets + 1 values of real in global memory, are read only for pairs
// within the rounding bound of an edge). Above it the float64 quotient runs per pair. The
// rounding bound's 2^-30 term for the float64 quotient and the rounding constant (integers
// below 2^22) hold up to 2^20 buckets. bench_expr hist (H100, 118,218 points, 1000 buckets,
// without --Ofast-compile): float32 21.8 ms -> 15.9 ms (3.21e11 -> 4.40e11 pairs/s), float64
// 46.5 -> 42.3 ms.
constexpr int kExprHistEdgesMaxBuckets = 1 << 20;
// Float32 histograms of a value F(g) whose F passes the device's monotonicity check (expr_gpu.cu,
// "threshold table"): buckets up to this many (the cell entries hold the byte offset 4 m of a
// class m in 0 .. nbuckets + 1 in 16 bits, or 4 m0 of the folded map in the low 16 bits of
// the threshold's bits), and the linear
// cells of the kernel with the climb over the range of g's thresholds (32-bit entries in shared
// memory, each cell 128 sub-positions: kernel_text.h, G2_SUB; cells x 128 <= 2^22).
// bench_expr hist (H100, 117,955 stars, 1000 buckets, 128 x 2): 9.2 ms kernel through the folded
// map, 13.5 ms with the climb, 38.0 ms evaluating acos per pair.
constexpr int kExprTableMaxBuckets = 16380;
constexpr int kExprTableCells = 4096;
// Most cells of the threshold table's folded map (kernel_text.h, g2_cell: 32-bit entries in
// shared memory); the host picks the coarsest shift whose cells hold at most one threshold each.
// The angular histogram of 1000 buckets over [0, pi) takes 12,288 (shift 15), of 100 buckets
// 1,536.
constexpr int kExprTableMapCells = 16384;
// The threshold-table histogram's tile configuration (threads per block, rows per thread) and
// private copies per block (0: the privatization model's choice). bench_expr histsweep (H100,
// stars, kernel ms, the kernel without the climb, median of 3): 1024 x 2 with the model's copies
// (32) 7.23, with 16 7.26, with 8 7.50; 1024 x 1 7.55-7.63 with 16-32, 8.05 with 8; 512 x 2
// 7.78 (8 copies: two blocks per SM), 9.2-9.4 with 16-32; 512 x 1 7.96-8.06 up to 8; 256 x 2
// 8.21 (4); 1024 x 4 (64 registers, spills), 512 x 4 and 256 x 4 (91 registers) 10.7-11.2;
// 128 x 2 11.8 (4), 30 with 16-32 (occupancy). The inner step's SASS instructions per pair:
// 27.5 at 2 rows, 29.0 at 1 row, 32.4-33.75 at 4 rows; 48 registers at 1024 x 2.
constexpr int kExprTableThreads = 1024;
constexpr int kExprTableRegRows = 2;
constexpr int kExprTableCopies = 0;
// Join: capacity of the direct output buffer in pairs (16 bytes each), at most, and at most
// this fraction of the call's device memory budget left after the inputs.
constexpr size_t kExprJoinCapPairs = size_t(1) << 22;
constexpr double kExprJoinBudgetShare = 0.5;

// --- in-place data sliding (kernels/sliding/sliding.cuh) -------------------------------------
// "bench_sliding sweep 5": 16M and 256M elements, 10 and 50 % kept, median of 5, GB/s = bytes
// read + written per second (D2D copy in the same run 2600-3020 GB/s at 256M). Figures are
// select / unique / partition at 256M, 10 % then 50 %, unless said otherwise.
// Threads per block and 16-byte vectors per thread, for elements of 4, 8 and 16 bytes (tile =
// threads x vectors x 16 bytes in shared memory, the same in registers: 64 KiB tiles, two blocks
// per SM). Fewer, larger tiles win: each tile pays a tile id, two barriers and a look-back.
// 4 B: 512x8 2140 2314 / 1959 2189 / 2037 1554, 256x16 2054 2333 / 1852 2116 / 2097 1586, 256x8
// (32 KiB, min blocks 4) 1898 2108 / 1816 2065 / 2017 1549, 512x12 (96 KiB) 1996 2056 / 1480 1622
// / 1909 1480; at 16M 512x8 select 1386 1679, unique 1302 1551 vs 256x16 1298 1636, 1146 1412.
// 8 B: 256x16 2248 2389 / 2088 2275 / 2401 1688, 512x8 2246 2329 / 2088 2240 / 2287 1640, 256x8
// (min blocks 4) 1950 2137 / 1875 2088 / 2175 1579, 256x24 (96 KiB) 2035 2149 / 1326 1398 / 2011
// 1488. 16 B: 256x16 2233 2324 / 2258 2360 / 2288 1716, 512x8 2190 2283 / 2190 2302 / 2277 1702,
// 256x8 (min blocks 4) 1975 2117 / 1935 2103 / 2140 1637, 256x24 2491 2600 / 1510 1530 / 2188
// 1669 (select faster, unique spills). With the warp-contiguous chunk layout ("bench_sliding 5",
// Candidates rows), 256M 10 % then 50 %: 8 B 128x24 at 3 blocks (48 KiB, 144 KiB in flight per
// SM, 163 registers) 2305 2477 / 2176 2370 / 2472 1709 and 128x16 at 4 blocks 2029 2234 / 1950
// 2190 / 2337 1648 vs 256x16/2 2334 2476 / 2178 2380 / 2531 1738; 4 B 128x16/4 1925 2215 / 1804
// 2137 / 2193 1639 vs 512x8/2 2193 2363 / 2104 2315 / 2091 1583 (partition alone faster).
// By element size (4, 8, 16 bytes) and mode (select, unique, partition). 4 B partition takes
// 256x8 at 3 blocks per SM (32 KiB tiles, 80 registers): at 512x8/2 its kernel spills 40 bytes
// (64 registers, -Xptxas -v, sm_90). "bench_sliding 5", two runs, partition GB/s at 10 / 50 /
// 90 %: 256M 256x8/3 2358 1726 2325 (run 2: 2361 1729 2328), 512x8/2 2230 1662 2192, 256x16/2
// (128 registers, no spills) 2246 1678 2216, 128x16/4 2262 1678 2237; 16M 256x8/3 1846 1474
// 1700, 512x8/2 1722 1379 1587, 256x16/2 1679 1356 1543.
constexpr int kSlideThreads[3][3] = {{512, 512, 256}, {256, 256, 256}, {256, 256, 256}};
constexpr int kSlideVecs[3][3] = {{8, 8, 8}, {16, 16, 16}, {16, 16, 16}};
// Resident blocks per SM asked of the compiler (__launch_bounds__), which caps the registers
// (2 blocks: 64 at 512 threads, 128 at 256). 256x16 at 3 blocks (80 registers, spills in
// -Xptxas -v) loses, bench_sliding sweep with that shape, 256M 50 %: 4 B 1964 / 1371 / 1361 vs
// 2348 / 2121 / 1583 at 2 blocks; 8 B 2126 / 1281 / 1259 vs 2377 / 2274 / 1685.
constexpr int kSlideMinBlocks[3][3] = {{2, 2, 3}, {2, 2, 2}, {2, 2, 2}};
// Arrays of at most kSlideSmallBytes take the small-array shape below (threads x vectors / min
// blocks by element size and mode), where few tiles per resident block make launch and tail
// weigh more. Only 8 B unique differs: 128x16 at 4 blocks; 16M, GB/s at 10 / 50 / 90 % (two
// runs) 1918/1925 2256/2213 2470/2461 against 256x16/2 1896/1931 2218/2177 2434/2370. The other
// candidates at 16M (4 B 512x8/2, 256x16/2, 256x8/3, 128x16/4; 8 B 256x16/2, 128x24/3,
// 128x16/4) do not gain over the shapes above in all three selectivities (8 B select 128x24/3:
// 2578 at 90 %, 1993 at 10 % against 2478 and 2047), so they keep them.
constexpr size_t kSlideSmallBytes = size_t(256) << 20;
constexpr int kSlideSmallThreads[3][3] = {{512, 512, 256}, {256, 128, 256}, {256, 256, 256}};
constexpr int kSlideSmallVecs[3][3] = {{8, 8, 8}, {16, 16, 16}, {16, 16, 16}};
constexpr int kSlideSmallMinBlocks[3][3] = {{2, 2, 3}, {2, 4, 2}, {2, 2, 2}};
// Partition's three kernels (direction, sliding pass, append) chained by programmatic dependent
// launch (sm_90 and later): each is launched while the one before runs and waits for it on the
// device (griddepcontrol.wait), so the launch latency between them overlaps the work.
// "bench_sliding 5", partition pdl / serial GB/s, 16M: 4 B 1846/1813 1489/1431 1697/1660 (10 /
// 50 / 90 %), 8 B 2296/2258 1706/1665 2139/2088; 256M within 1 %.
constexpr bool kSlidePdl = true;
// Source of the tile ids (sliding::SlideIds): 0 the atomic counter before the loads (forward
// progress whatever the block scheduling), 1 blockIdx.x (in-order dispatch, as CUB's look-back).
// "bench_sliding sweep 5", select / unique at 10 % then 50 %, blockIdx.x vs counter: 16M 4 B
// 1545 1843 / 1397 1762 vs 1425 1705 / 1344 1602, 8 B 1838 2115 / 1740 2009 vs 1791 2072 / 1674
// 1961, 16 B 2030 2215 / 2002 2184 vs 1994 2147 / 1982 2177; 256M within 1.5 % (4 B 2151 2322 /
// 1989 2198 vs 2149 2314 / 1989 2190, 8 B 2273 2394 / 2105 2272 vs 2255 2372 / 2093 2275). The
// counter's round trip before the loads counts where each SM sees few tiles. Loading tile
// blockIdx.x while the counter answers (reloading on a miss) lost to both (16M 4 B 1361 1686 /
// 1219 1488, 256M 8 B 2024 2228 / 1858 2024).
constexpr int kSlideTileIds[3] = {1, 1, 1};
// Ordering of the tiles' loads before other blocks' stores (sliding::SlideOrder), by element
// size (4, 8, 16 bytes) and mode (select, unique, partition): 0 LoadFlags (relaxed look-back
// flags, a release-published loaded flag per tile), 1 Release (release look-back flags, a fence
// after the look-back); both are correct under the PTX memory model. "bench_sliding 5" (two
// runs, 16M and 256M at 10 / 50 / 90 %), Release / LoadFlags GB/s: 4 B select 0.84-0.95, unique
// 0.86-0.95, partition 0.94-0.98; 8 B 0.85-0.95 / 0.85-0.94 / 0.95-0.98; 16 B select 1.01-1.15,
// unique 0.85-0.94, partition 1.05-1.10.
constexpr int kSlideOrder[3][3] = {{0, 0, 0}, {0, 0, 0}, {1, 0, 1}};
// L2 prefetch distance of the sliding kernel in tiles (sliding::slide_prefetch): a block starts a
// bulk prefetch (cp.async.bulk.prefetch.L2) of the tile this many places after its own, so that
// tile's loads hit L2 when its block starts; 0: none. H100, "bench_sliding sweep 5", select /
// unique / partition GB/s by distance 0 / 33 / 66 / 99 / 198 tiles: 4 B 256M 10 % 2144 1993
// 2056 / 2184 2029 2114 / 2188 2060 2131 / 2198 2076 2117 / 2186 2068 1746, 16M 10 % 1489 1422
// 1568 / 1515 1404 1624 / 1509 1400 1623 / 1495 1381 1588 / 1438 1320 1481; 8 B 256M 10 % 2244
// 2081 2413 / 2301 2127 2521 / 2301 2134 2534 / 2303 2130 2501 / 2302 2124 1968, 50 % 2381 2248
// 1685 / 2449 2333 1747 / 2468 2354 1742 / 2468 2330 1725 / 2340 2228 1457; 16 B 256M 10 % 2274
// 2254 2299 / 2399 2309 2379 / 2391 2319 2324 / 2389 2316 2250 / 2301 2318 1857. Far distances
// lose (the prefetched tiles leave L2 before their blocks start). "bench_sliding 5", 66 vs 0 in
// all 54 cases of the table: 0.98-1.06x (median 1.02 select, 1.03 unique, 1.02 partition).
constexpr int kSlidePrefetch[3] = {66, 66, 66};
// Most blocks of partition's append kernel (256 threads, grid-stride over 16-byte chunks).
constexpr int kSlideAppendBlocks = 4096;

// --- DBSCAN (kernels/join/dbscan.cu) -------------------------------------------------------
// Threads per block of the neighbour passes (one thread per point, points in cell order) and
// points per launch (the host polls for a cancel between launches; 2^18 points fill the 132
// SMs with 1,024 blocks of 256). Set, not swept: the three passes take 4.9 ms of kernel time for
// 1e6 points (blobs + 10 % noise, eps 0.003, minpoints 10; bench_dbscan on the H100,
// test/gpu/dbscan_device.sh), under a quarter of the call's 22-33 ms.
constexpr int kDbscanThreads = 256;
constexpr size_t kDbscanLaunchPoints = size_t(1) << 18;
// First launch of each pass and the launch time it adapts to (ranges double below a quarter of
// it, halve above it): dense data, where each point has most of the set as neighbours, keeps
// its launches near this length and the cancel poll between them; at the bench's 1e6 points the
// ranges reach kDbscanLaunchPoints after two launches.
constexpr size_t kDbscanFirstLaunchPoints = size_t(1) << 16;
constexpr float kDbscanLaunchMs = 100.0f;

// --- transfers ---------------------------------------------------------------------------------
// Pinned staging buffer (two halves, double-buffered uploads and page drains), kept for the
// life of the process after first use (each cudaHostAlloc of it costs several ms: bench_kernels
// quick, simjoin N=1e4 spent 8 ms in transfer_s for 2 MB of pairs).
constexpr size_t kStagingBytes = size_t(16) << 20;
// Uploads of kParallelUploadBytes or more: up to kUploadWorkers of the engine's threads copy
// slices into their own parts of the staging halves and queue each slice's transfer (one
// thread's memcpy out of pageable memory is slower than the PCIe link). H100 host, 307 MB of
// vectors (n = 100,000, d = 768): 39.1 ms with one thread, 12.1 ms with 4, 7.8 ms with 8.
constexpr size_t kParallelUploadBytes = size_t(32) << 20;
constexpr int kUploadWorkers = 8;
// Points (upload_points) from kParallelUploadBytes of float64 input on: up to this many of the
// engine's threads convert slices to the working precision and queue their copies. H100 host
// (16 cores), 3-D pair count of 1e8 points at r = 0.01 (bench_resolve, median of 3): the
// preparation (conversion, copies, then the map or the grid) 0.079 / 0.069 s (resolution /
// grid path) with 8 workers, 0.062 / 0.052 s with 16, 0.36 / 0.31 s on one thread.
constexpr int kPointUploadWorkers = 16;

// --- all-pairs vectors (gpu_pairwise) -----------------------------------------------------------
// "bench_pairwise sweep FILE 100000 768 10 3" (test/gpu/bench_pairwise.sh step 1b): self kNN l2,
// n = 100,000 random normal, d = 768, k = 10, median of 3, kernel time (events) and end to end,
// on the H100.
//
// Tile of the register-blocked exact kNN kernels (knn_wide_kernel, knn_sym_kernel; k <= 32,
// every metric but lp): 128 x 128 pairs per block of 256 threads, 8 x 8 accumulators per thread
// (128 registers, 2 blocks per SM), slices of 8 dimensions double-buffered in shared memory.
// Whole matrix: 652.1 ms kernels vs 856.9 ms for the 64 x 64 tiles of 4 x 4 per thread
// (knn_kernel, which stays for k > 32 and lp). The l2 chain costs 2 FP32 instructions per pair
// and dimension: 1.54e13 instructions for the whole matrix, 460 ms at 132 SMs x 128 lanes x
// 1.98 GHz, so 652.1 ms is 71 % of that limit.
constexpr int kPairwiseWideRows = 128;
constexpr int kPairwiseWideCols = 128;
constexpr bool kPairwiseWide = true;
// Self kNN with the wide kernel computes the upper triangle of tiles only (knn_sym_kernel), in
// launches of about kPairwiseSymBlocksPerLaunch tiles (cancel checks between launches): 321.9 ms
// kernels, 396.3 ms end to end, vs 652.1 / 720.2 ms for the whole matrix. Tiles per launch:
// 8192 325.3 ms, 32768 321.9 ms, 131072 322.6 ms (kernels); 32768 is about 25 ms per launch.
constexpr bool kPairwiseSymmetric = true;
constexpr long long kPairwiseSymBlocksPerLaunch = 32768;
// Exact kNN of two relations (and self kNN through knn_wide_kernel): blocks wanted per launch per
// SM (row tiles times column splits; the host merges the splits' lists) and rows per launch,
// measured with the symmetric mode off. 4 per SM gives one split at n = 100,000 (782 row
// tiles): 652.1 ms kernels, 720.2 ms end to end; 8 per SM (two splits) 649.3 ms kernels but
// 798.6 ms end to end (host merge). 131072 rows per launch: 652.1 ms kernels vs 671.3 ms at
// 16384 rows (seven launches, five splits each; 878.9 ms end to end).
constexpr int kPairwiseKnnBlocksPerSm = 4;
constexpr size_t kPairwiseKnnChunkRows = size_t(1) << 17;
// Fast path: most bytes of the TF32 GEMM output per chunk of rows (also at most a quarter of
// the memory budget). Kernels (GEMM + selection + re-rank): 256 MB 185.6 ms, 1 GB 102.8 ms, 2 GB
// 95.1 ms, 4 GB 85.7 ms (GEMM 43.2, selection 32.4, re-rank 9.5).
constexpr size_t kPairwiseFastChunkBytes = size_t(4) << 30;
// Exact precision through the certified TF32 candidates (l2, sqeuclidean, cosine, dot; k <= 128):
// the path is abandoned for the SIMT kernel once the rows whose certificate failed exceed this
// fraction of the rows processed so far. Break-even from the n = 100,000, d = 768 figures above:
// candidates 85.8 ms, a recomputed row 6.5 us (652.1 ms whole matrix / 100,000 rows), SIMT
// exact 321.7 ms for a self kNN (upper triangle) and 652.1 ms for two relations, so the
// certified path wins below (321.7 - 85.8) / 652.1 = 0.36 of the rows recomputed (self) and
// below (652.1 - 85.8) / 652.1 = 0.87 (two relations); the limits keep a margin. Random normal
// vectors (1 row of 100,000 recomputed): 156.8 ms end to end, 86.4 ms kernels, vs 389.4 / 321.3
// ms for the SIMT kernel, same lists.
// Candidates of the certified path from an FP16 GEMM (rows scaled by powers of two, FP32
// accumulation, FP16 output: half the bytes of S written and read, twice the tensor rate of
// TF32) where cublasGemmEx is present; false: the TF32 GEMM with FP32 output. Self kNN l2,
// n = 100,000, d = 768, k = 10, fast, H100 (median of 3, bench_pairwise through
// test/gpu/knn_fast_device.sh): TF32 108.3 ms end to end (GEMM 41.7 ms, selection
// 36.9 ms); FP16 112.7 ms (GEMM 21.8 ms, selection 56.2 ms: same kernel time, 82.3 against
// 82.7 ms), so TF32 where the folded GEMM below gives way.
constexpr bool kPairwiseFp16Gemm = false;
// Candidates of the certified path from the folded FP16 GEMM where cublasGemmEx is present:
// every vector scaled by one power of two, the a rows extended by [1, 1] and the b rows by the
// FP16 hi and lo parts of their scaled squared norms (times -2 on the b side), so the GEMM's
// FP16 output is each pair's score and the selection reads no norms or scales
// (select_fold_kernel). Falls back to the GEMM above where norms overflow, underflow, more
// than a 64th of the rows are below 2^-10 of the largest norm, or the folded operands do not fit
// the memory budget beside a 64-row chunk of the output. Same case, same call (median of
// 3, sweep): folded 69.9 ms end to end (GEMM 24.6 ms, selection 7.7 ms, 35.3 ms of kernels)
// against TF32 116.5 ms (83.4 ms of kernels) and FP16 113.5 ms (82.4 ms), same lists.
constexpr bool kPairwiseFoldGemm = true;
// Fast path selection (select_kernel): one ballot per step of 32 kSelUnroll values (FP16: twice
// that) against the kept kc-th score before the offers, a step no lane can place making none.
// Same run: selection TF32 36.9-37.3 ms with it, 48.9 ms without; FP16 56.2 ms, 62.4 ms without;
// folded FP16 (later run) 7.7 ms with it, 8.2 ms without.
constexpr bool kPairwiseSelectPrefilter = true;
// Host merge and certificate of a chunk beside the next chunk's kernels (two pinned slots): the
// certificate's ~9 ms at the size above leave the critical path (264.2 against 273.7 ms end to
// end, measured both ways in one run with a slower FP16 selection).
constexpr bool kPairwiseFastOverlap = true;
// Fast path: each chunk's certified rows go to the sink right after their certificate, while
// the next chunk's kernels run (the rows before the first uncertified one; the rest after the
// recomputation), instead of all lists after the last chunk. H100, self kNN n = 100,000,
// d = 768, k = 10, one run: 60.4 against 65.4 ms end to end (sink discarding), the sink's work
// after the last certificate 0.2 against 3.5 ms; with the sink keeping the lists and equal
// chunks as well, 60.3 against 67.9 ms.
constexpr bool kPairwiseFastStreamEmit = true;
// Fast path: the first and the last chunk of rows hold this many rows (at most a quarter of a
// chunk, a multiple of 64; 0: chunks of equal size), so the host starts certifying early and
// little host work follows the last kernels. Same run: 0 rows 61.6 ms, 1,024 60.9 ms, 2,048
// 60.4 ms, 4,096 58.5 ms (differences within the run-to-run spread; the last chunk's host work
// of about 2 ms becomes that of 2,048 rows).
constexpr size_t kPairwiseFastEdgeRows = 2048;
// Host to device copy of the vectors: upload_bytes with kParallelUploadBytes and kUploadWorkers
// (the engine's values, below), which tests and benchmarks vary through pairwise_tuning().
constexpr size_t kPairwiseParallelUploadBytes = kParallelUploadBytes;
constexpr int kPairwiseUploadWorkers = kUploadWorkers;
constexpr double kPairwiseCertifiedMaxRedoSelf = 0.25;
constexpr double kPairwiseCertifiedMaxRedoTwo = 0.5;
}  // namespace cuda_tuning
}  // namespace gpu2bs
