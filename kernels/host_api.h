// CUDA-free declarations of the CUDA engine for tests and benchmarks: the SDH privatization
// model (pure host code), checks and what the last call did. Code paths are forced per call with
// Control::overrides (core/engine.h). No CUDA headers here.
#pragma once

#include <cstddef>

namespace gpu2bs {
namespace cuda {

// ---- SDH private-copy model (framework paper 3.3.2) ---------------------------------------------

struct PrivChoice {
  bool global = false;  // histogram in global memory (uint64 atomics)
  int copies = 1;       // private shared-memory copies per block (warp-level privatization)
  int stride = 0;       // words between copies (nbuckets rounded up to odd: no bank aliasing)
  size_t smem_bytes = 0;  // dynamic shared memory of the block (tile + copies)
};

struct PrivMachine {
  int sms = 132;
  size_t smem_per_sm = 233472;          // 228 KB
  size_t smem_per_block_optin = 232448;  // 227 KB
  size_t smem_reserved = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int reg_blocks_per_sm = 32;  // blocks per SM allowed by the kernel's registers
};

// Latency L(k, CL) of a warp update when k lanes share one private copy of HS buckets
// (equations 2-5 of the paper), in units of CL.
double priv_latency(int k, double cl, double clp, int hs);
// Estimated relative running time of the SDH kernel with `copies` copies (0 = infeasible).
double priv_estimate(int nbuckets, int copies, int threads, size_t tile_bytes, double n_threads,
                     const PrivMachine& m);
// Chooses global memory or the number of copies (1, 2, 4, ..., 32) minimizing the estimate.
// forced_copies > 0 (bench only) forces a number of copies; -1 forces global memory.
PrivChoice choose_privatization(int nbuckets, int threads, size_t tile_bytes, double n_threads,
                                const PrivMachine& m, int forced_copies = 0);

// Launch configurations of the 3-D float32 tile kernels (EngineOverrides::tile_variant; 0 =
// tuning.h). SDH:
// 1..4 = fast path with 512x2, 1024x1, 512x4, 256x4 threads x register points, 5 = exact path
// (the earlier exact-path kernel), 6 = fast path with the bucket clamp, 7 = exact path 1024x2.
// Pair count: 1..4 = 512x8, 512x4, 128x8, 256x4; 5 = 256x8 with FSETP counting (no carry chain).

// Test/bench hooks of the float32 fast SDH path (kernels/sdh.cu): whether the last SDH
// call on this thread took it and with one shared threshold table (EngineOverrides::sdh_layout
// forces the layout).
bool sdh_last_fast();
bool sdh_last_shared_thresholds();
// Mismatches of the fast bucket function against sdh_bucket over all 2^32 bit patterns of d2
// (-1: the fast path does not apply to these parameters); *first_bits = the smallest mismatch.
// d2max > 0: the unclamped variant, its table sized for d2 <= d2max, checked on those d2 (-2:
// that variant does not apply).
long long sdh_fast_check_all(int nb, float inv_w, bool clamp, unsigned* first_bits,
                             double d2max = 0);

// Lanes per query point of the GPU join for k = 0 (the rule of kernels/tuning.h): the K of
// 1, 2, 4, ..., 32 minimizing steps[e] * kJoinStepCost[e], steps[e] = compare-loop steps the
// workload estimate predicts for K = 2^e (LastRun::join_steps).
int join_auto_threads_per_point(const unsigned long long steps[6]);

// Device memory currently allocated by the engine in this process, in bytes.
size_t engine_bytes_in_use();
// Largest engine_bytes_in_use() since the last reset_engine_peak_bytes() (bench/tests).
size_t engine_peak_bytes();
void reset_engine_peak_bytes();

// What the last engine call on this thread did (tests and benchmarks read it).
struct LastRun {
  int sdh_copies = 0;        // private copies per block (0: global-memory histogram)
  int count_path = 0;        // pair count: 1 all-pairs tiles, 2 grid
  bool host_grid = false;    // grid built on the host (linearized cell key > 64 bits)
  int launches = 0;          // kernel launches of the pairwise stage (slices)
  int drains = 0;            // result pool drains (similarity join)
  size_t pool_pages = 0;     // result pool pages
  size_t page_pairs = 0;     // pairs per page
  double kernel_ms = 0;      // pairwise kernel time measured with cudaEvents
  double grid_ms = 0;        // grid construction kernels (sort, cells), cudaEvents
  size_t kept_hits = 0;      // device buffers a ReuseScope handed out again (join slabs)
  size_t kept_misses = 0;    // device buffers allocated under a ReuseScope
  // Similarity join / grid pair count load balancing (kernels/join/):
  int join_k = 0;                        // lanes per query point used (1..32)
  int join_balance = -1;                 // JoinBalance used
  unsigned long long join_work = 0;      // estimated candidate pairs (0: not estimated)
  unsigned long long join_items = 0;     // work items (runs of <= 32 rows of one cell)
  unsigned long long join_slots = 0;     // lane slots issued by the compare loop (32 x steps)
  unsigned long long join_steps[6] = {};  // predicted steps for K = 1, 2, ..., 32 (estimate ran)
  double join_plan_ms = 0;               // workload estimate + sort (cudaEvents)
  // Similarity join batching (0 on the serial path unless said otherwise):
  unsigned long long join_estimate = 0;  // result pairs estimated from the sample
  unsigned long long join_pairs = 0;     // result pairs handed to the sink (both paths)
  size_t sample_items = 0;   // work items of the count pass over the sample
  int join_batches = 0;      // item ranges planned
  int join_streams = 0;      // streams (banks) used
  size_t bank_pages = 0;     // pages of the largest bank
  double sample_ms = 0;      // count pass over the sample, cudaEvents
  double copy_ms = 0;        // device-to-host copies of result pages, cudaEvents (they
                             // overlap kernels of other streams)
  // Host time of the batched join's launch-and-drain loops (summed over the sub-joins of a join
  // in slabs) and its parts: waits with a launch in flight, waits for page copies alone, the
  // sink's time (in slabs: copies into the page queue and waits for its room), the rest being
  // the loop's own work (CUDA calls, bookkeeping); subjoin_ms is the sub-joins' whole host time.
  double loop_ms = 0, loop_wait_ms = 0, loop_copy_wait_ms = 0, loop_sink_ms = 0;
  double subjoin_ms = 0;
  double launch_lag_ms = 0;  // batched join: host time from each launch's issue to the loop
                             // taking its read-back, summed over the launches
  double queue_wait_ms = 0;  // join in slabs: the worker's waits for room in the page queue
};
LastRun& last_run();

}  // namespace cuda
}  // namespace gpu2bs
