// Shared host and device helpers of the CUDA engine: CUDA error checking, the per-call scope
// (stream, device allocations against the memory limit, pinned staging, interrupt polling),
// point uploads, and the entry points of each 2-BS family.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/problem.h"
#include "host_api.h"
#include "tuning.h"

namespace gpu2bs {
namespace cuda {

// ---- errors ----------------------------------------------------------------------------------

// Throws Error(OutOfMemory) for allocation failures, Error(DeviceError) otherwise; the message
// names the call, the file and line, and cudaGetErrorName.
[[noreturn]] void throw_cuda(cudaError_t e, const char* expr, const char* file, int line);

inline void check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda(e, expr, file, line);
}

#define G2_CUDA(expr) ::gpu2bs::cuda::check((expr), #expr, __FILE__, __LINE__)
#define G2_CUDA_LAUNCH(what) ::gpu2bs::cuda::check(cudaGetLastError(), what, __FILE__, __LINE__)

// ---- the device --------------------------------------------------------------------------------

struct DeviceFacts {
  int device = 0;
  cudaDeviceProp prop{};
  int sms = 0;
  size_t smem_per_sm = 0;         // sharedMemPerMultiprocessor
  size_t smem_per_block_optin = 0;  // sharedMemPerBlockOptin
  size_t smem_reserved = 0;       // reservedSharedMemPerBlock
  std::string name;               // "NVIDIA H100 80GB HBM3, sm_90"
};

// Facts of the device the engine runs on (valid once cuda_engine() returned an engine).
const DeviceFacts& device_facts();

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- one engine call ---------------------------------------------------------------------------

// The column block of a block pair for the RECT tile kernels (tiles.cuh): tile pairs (a, b) for
// every anchor tile a of TileArgs::c (n points) and every tile b of c2 (n2 points), item
// t = a * tiles2 + b, no diagonal.
struct RectArgs {
  const void* c2[kMaxDims];
  unsigned n2;
  long long tiles2;
};

// A call's point set in blocks of points, for inputs larger than the call's device budget
// (tiles.cuh plan_blocks, run_block_pairs): a pinned host copy in the call's precision, three
// device slots of `block` points, and what each slot holds.
struct BlockPlan {
  size_t n = 0;                      // points
  size_t block = 0;                  // points per block (the last block may be shorter)
  int dims = 0;
  const char* host[kMaxDims] = {};   // pinned host copy of each coordinate
  void* slot[3][kMaxDims] = {};      // device slots of `block` points each
  int slot_block[3] = {-1, -1, -1};  // block each slot holds (-1: none)
  cudaEvent_t ready[3] = {};         // the last upload into the slot completed
  double d2max = 0;                  // bound of every float32 squared distance (SDH fast path)
  long long pairs_run = 0;           // block pairs run
  long long uploads = 0;             // block uploads
};

// Device and pinned host buffers kept between the Calls made on this thread while the scope
// lives (the sub-joins of a join in slabs): a Call takes a kept buffer of a fitting size
// instead of allocating, and gives its buffers back instead of freeing them. Kept device
// buffers count against every Call's limit (a Call frees kept buffers before it would pass
// it), so the device memory held never exceeds the budget. Scopes nest; the innermost on the
// thread is used by Calls on its device.
class ReuseScope {
 public:
  explicit ReuseScope(int device);
  ~ReuseScope();
  ReuseScope(const ReuseScope&) = delete;
  ReuseScope& operator=(const ReuseScope&) = delete;

  struct Block {
    void* p;
    size_t bytes;
  };
  int device;
  std::vector<Block> dev;   // kept device buffers (idle)
  std::vector<Block> host;  // kept pinned host buffers (idle)
  size_t dev_bytes = 0;     // bytes of `dev`
  size_t hits = 0, misses = 0;
  ReuseScope* outer = nullptr;
  // Takes a kept block of at least `bytes` and at most bytes / slack more (null when none);
  // *got is its size.
  void* take(std::vector<Block>& from, size_t bytes, size_t* got, size_t slack);
  // The size a new kept buffer of `bytes` gets (a class shared by nearby sizes).
  static size_t size_class(size_t bytes);
  // Frees kept device buffers until `need` more bytes fit under `limit` beside `used` (or none
  // is left).
  void evict(size_t used, size_t need, size_t limit);
};

// Owns everything one engine call allocates: a stream, device and pinned buffers, events. The
// destructor synchronizes the stream and frees everything (also after an exception or a
// cancel); under a ReuseScope its buffers are kept for the next Call instead. Device allocations count against Control::device_memory_limit (0: 90 % of the free
// memory when the call starts).
class Call {
 public:
  explicit Call(Control& ctl);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Control& ctl;
  BlockPlan* blocks = nullptr;  // set: run_tiles runs the call's points by block pairs
  cudaStream_t stream() const { return stream_; }
  // Extra stream k (0 <= k < kExtraStreams) of the call, created on first use; the destructor
  // synchronizes it before anything is freed. Work on it is ordered after the main stream's
  // only where the caller says so (events).
  static constexpr int kExtraStreams = 3;
  cudaStream_t extra_stream(int k);

  // Device array of n elements (uninitialized); nullptr for n == 0.
  template <typename T>
  T* alloc(size_t n, const char* what) {
    return static_cast<T*>(alloc_bytes(n * sizeof(T), what));
  }
  void* alloc_bytes(size_t bytes, const char* what);
  // Frees one allocation of this call early (returns its budget).
  void free(void* p);
  // Pinned host buffer, freed with the call.
  void* alloc_host(size_t bytes);
  // Bytes this call may still allocate on the device.
  size_t budget_left() const { return limit_ > used_ ? limit_ - used_ : 0; }
  size_t used() const { return used_; }

  // An event owned by the call (timing events record kernel times).
  cudaEvent_t event(bool timing = false);

  // Throws Error(Interrupted) (after synchronizing the stream) when the caller wants to stop.
  void poll();
  // Waits until `ev` completed, polling for interrupts every few hundred microseconds.
  void wait(cudaEvent_t ev);
  // Waits for everything queued on the stream so far.
  void sync();
  [[noreturn]] void interrupted();

  // Pinned staging: two halves of at least `min_half_bytes` each (the process's cached buffer
  // when no other call holds it, else a buffer of this call); grows on demand.
  char* staging(int half, size_t min_half_bytes);
  size_t half_bytes() const { return half_; }
  cudaEvent_t staging_event(int half) { return staging_ev_[half]; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaStream_t extra_[kExtraStreams] = {nullptr, nullptr, nullptr};
  size_t limit_ = 0;
  size_t used_ = 0;
  struct Alloc {
    void* p;
    size_t bytes;
  };
  std::vector<Alloc> dev_;
  std::vector<Alloc> host_;
  ReuseScope* reuse_ = nullptr;  // the thread's scope on this call's device, or null
  std::vector<cudaEvent_t> events_;
  char* stage_ = nullptr;
  size_t half_ = 0;
  bool stage_cached_ = false;  // stage_ is the process's cached pinned buffer
  cudaEvent_t staging_ev_[2] = {nullptr, nullptr};
  Clock::time_point last_poll_;
};

// Coordinates of `v` converted to T ((float)x for float32) and copied into device SoA arrays
// dst[k] (n elements each), through the pinned staging buffer (double-buffered). From
// kParallelUploadBytes of float64 input on, up to kPointUploadWorkers of the engine's threads
// convert slices into their own parts of the staging halves and queue each slice's copy (the
// whole time goes to stats.prepare_s); otherwise one thread converts (stats.prepare_s) while
// the copies run (the rest to stats.transfer_s).
template <typename T>
void upload_points(Call& call, const PointsView& v, T* const* dst);

// Copies `bytes` from host memory to the device through the call's pinned staging buffer
// (double-buffered; from `parallel_from` bytes on, by up to `workers` of the engine's threads);
// the time goes to stats.transfer_s.
void upload_bytes(Call& call, void* dev, const void* host, size_t bytes, int workers = cuda_tuning::kUploadWorkers,
                  size_t parallel_from = cuda_tuning::kParallelUploadBytes);

// Copies `bytes` from the device to `host` (pageable) through pinned staging; counted as
// transfer time.
void download(Call& call, void* host, const void* dev, size_t bytes);

// ---- device helpers --------------------------------------------------------------------------

// Four consecutive values of a shared-memory row (16-byte aligned) with vector loads (float4, or
// two double2).
template <typename T>
__device__ __forceinline__ void load4(const T* p, T out[4]) {
  if constexpr (sizeof(T) == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  } else {
    const double2 v0 = *reinterpret_cast<const double2*>(p);
    const double2 v1 = *reinterpret_cast<const double2*>(p + 2);
    out[0] = v0.x;
    out[1] = v0.y;
    out[2] = v1.x;
    out[3] = v1.y;
  }
}

// ---- families (one .cu or folder each) ---------------------------------------------------------------------

std::vector<uint64_t> sdh(const SdhProblem& p, Control& ctl);
uint64_t pair_count(const PairCountProblem& p, Control& ctl);
void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl);  // kernels/join/
// DBSCAN's passes on the device over the grid of the join (kernels/join/dbscan.cu).
void dbscan(const SimjoinProblem& p, const int64_t* keys, int64_t minpoints, DbscanComponents& out,
            Control& ctl);
std::vector<uint64_t> rdf(const RdfProblem& p, Control& ctl);          // rdf.cu
// The weighted RDF (rdf.cu): counts and exact weight sums as cpu_rdf_weighted (rdf.h).
WeightedCounts rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                            Control& ctl);
// The join over a periodic box (periodic.cu): pairs to `sink` (null: counted only); returns
// their number.
uint64_t periodic_join(const PeriodicJoin& p, PairSink* sink, Control& ctl);

// Resolution of cell pairs (resolve.cu): the SDH and the pair count over the density map, and
// the cost model that chooses them (kernels/tuning.h); 2-D and 3-D only.
std::vector<uint64_t> resolve_sdh(const SdhProblem& p, Control& ctl);
uint64_t resolve_pair_count(const PairCountProblem& p, Control& ctl);
bool resolve_sdh_wins(size_t n, int dims, int nbuckets);
bool resolve_count_wins(size_t n, int dims, double r_rel);


}  // namespace cuda
}  // namespace gpu2bs
