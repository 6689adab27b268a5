// In-place data sliding on the GPU: stable select (copy_if / remove_if), unique (adjacent
// duplicates), stream compaction and partition of a device array, in one pass and without a
// second buffer of the array's size (partition passes the smaller of its two parts through
// scratch).
//
// Method: the irregular data-sliding algorithm of J. Gómez-Luna, L.-W. Chang, I.-J. Sung,
// W.-M. Hwu, N. Guil, "In-Place Data Sliding Algorithms for Many-Core Architectures" (ICPP 2015),
// Algorithm 2: a block ("work-group") takes a dynamic tile id from an atomic counter, loads its
// tile (threads x vectors 16-byte chunks, cuda_tuning::kSlide*) into registers, counts the kept
// elements, then synchronizes with the blocks before it, which hands it the running offset (the
// number of kept elements before its tile), publishes its own inclusive offset, and stores its
// kept elements at the offset. Every block stores only after all blocks before it have loaded,
// and a block's output range ends at or before the end of its own tile, so no element is
// overwritten before it was read: the array is its own output.
//
// Synchronization: the paper's adjacent synchronization waits for the predecessor's inclusive
// offset, a chain of one flag hop per tile. On a GPU with thousands of tiles in flight that
// chain, not memory, bounds the throughput (bench_sliding "select adjacent": 37-64 GB/s on the
// H100 against 1300-2400 GB/s), so the default (SlideSync::Lookback) publishes a tile's own count
// as soon as it is loaded (status A) and its inclusive offset once known (status P); a block
// waits for its predecessor's flag and, while it only holds a count, looks further back, 32
// tiles per step, adding counts until a P (the decoupled look-back of Merrill and Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVR-2016-002, built on the chained
// scan the paper cites as [14]). SlideSync::Adjacent is the paper's chain itself (benchmarks).
// Why the look-back is safe in place: block b writes only to [offset_b, offset_b + kept_b) with
// offset_b <= start_b (fewer elements are kept before tile b than there are) and offset_b +
// kept_b <= start_{b+1}, so it writes into tiles <= b only, into two at most (kept_b is at most
// a tile; partition backwards mirrors this: tiles >= its own in the array, all earlier in the
// processing order). The stores of b must follow the loads of every tile they reach
// (and, for unique, the load of tile q's last element by the block of tile q + 1).
// Memory order (SlideOrder::LoadFlags): the look-back flags carry only values and
// are written and read relaxed (st.relaxed.gpu / ld.relaxed.gpu, 64-bit single-copy atomic).
// The ordering comes from a second flag per tile, "loaded": after the block barrier that follows
// the tile's loads, one thread of the last warp (idle until the stage, so the look-back of warp
// 0 does not wait for it) writes it with st.release.gpu. After its look-back, block b knows
// the range it writes and so the tiles q it reaches; lanes 0-2 of warp 0 each poll one of those
// tiles' loaded flags (other than b's own) with ld.acquire.gpu, then the block barrier before
// the stores. In the PTX memory model ("Memory Consistency Model" in the PTX ISA) this puts every
// load of tile q before every store of block b in causality order: a load is in program order
// before the barrier of its block, a CTA barrier synchronizes its participating threads
// (bar.sync synchronizes with bar.sync on the same barrier), the st.release after that barrier
// and the ld.acquire that reads it form a release and an acquire pattern that synchronize, and
// block b's barrier passes the acquire on to its other threads; base causality order is
// transitive over program order and synchronizes-with. The Causality axiom then forbids a load
// that precedes an overlapping store in causality order from reading that store's value. Own-
// tile hazards need only the block's barriers. The loaded flags of far tiles are set long
// before they are polled (at 10 % kept block b writes near tile b / 10), so the acquire rarely
// waits, and the one release per tile costs the last warp, not the flag path every later tile's
// look-back waits on. SlideOrder::Release is the other correct scheme: the look-back flags
// written with st.release.gpu after the block barrier, one fence.acq_rel.gpu after the
// look-back; then a P at tile k means (by induction over the look-backs) that every tile <= k
// has loaded, and b's look-back read a status from every tile between its own and k. The tuned
// kernel takes LoadFlags, except for 16-byte select and partition, where Release measures
// faster (cuda_tuning::kSlideOrder); SlideOrder::Relaxed (benchmarks and tests) orders nothing.
// Flags are 64-bit words (2 status bits, a 24-bit launch epoch, 38 bits of count or offset;
// a loaded flag holds only the epoch). A flag of another epoch is
// unset, so the flags are not zeroed before each launch (one memset launch less per call); the
// scratch zeroes them when the epochs wrap. A block waits only for tiles of smaller ids (look-back
// and loaded flags alike). With
// SlideIds::Block (the default) the id is blockIdx.x, and blocks of smaller index have started
// (blocks are dispatched in index order, which CUB's look-back relies on too); with
// SlideIds::Counter ids come from an atomic counter in the order blocks start, so they have
// started whatever the scheduling, at the price of one round trip before the tile's loads (and
// the counter is not reset either: a launch's ids are its values minus its value before the
// launch). Neither deadlocks however few blocks are resident, the first by the dispatch order,
// the second by construction. A block never stores an element to the position it was read from
// (the leading run of a tile when every element before it is kept), so unique may read the
// element before its tile without a race (before publishing its own loaded or look-back flag).
// Lane 0 of each warp reads the element before the warp's chunks from memory, the other
// predecessors come from the lane or the vector before through warp shuffles: no block barrier
// between loads and count.
//
// Memory access: tiles are laid over the 16-byte chunks of the array (tile 0 starts at the chunk
// holding d[0]), each warp owns a contiguous run of the tile's chunks and a thread loads whole
// chunks with 16-byte loads (a warp: 512 contiguous bytes per load),
// the kept elements are staged in shared memory in order, and the block writes them with
// 16-byte stores to the aligned chunks of their destination (two aligned shared-memory reads
// joined at the shift between source and destination), element by element only in the partial
// chunks at both ends of its range. Ranks come from one ballot per bit of each thread's per-chunk
// count. Nothing outside [d, d + n) is read or written. With an L2 prefetch distance D
// (cuda_tuning::kSlidePrefetch, by element size), thread 0 of a block starts, before its own
// loads, one bulk prefetch (cp.async.bulk.prefetch.L2) of the whole chunks of the tile D places
// later in the processing order: the memory stays busy while the resident blocks count, look
// back and store, and that tile's block finds its data in L2. A prefetch only reads [d, d + n)
// into L2; it changes no result.
//
// Launch: the shape (threads x 16-byte vectors, resident blocks per SM) is tuned by element
// size and mode (cuda_tuning::kSlide*), with a second shape for arrays of at most
// kSlideSmallBytes (slide_tuned). Partition runs three kernels (direction sample, sliding pass,
// append of the part in aux); on sm_90 and later the second and third are launched by
// programmatic dependent launch: each starts while the one before runs and waits for its
// completion (griddepcontrol.wait, which also makes that grid's memory operations visible)
// before its first access to d, the flags or aux, so the in-place argument above is unchanged.
//
// Partition's traffic: forwards or backwards, the part whose place depends on the total count
// (unknown until every tile is read) goes through aux: n + max(kept, rejected) + 3
// min(kept, rejected) elements moved, 3n at 50 % against CUB's 2n out of place (the measured DRAM
// bytes are in docs/methods.md).
//
// ---- API (host, on a device array `d` of n elements and a stream) ------------------------------
//
//   SlidingScratch scratch;              // tile flags, counters, pinned count; reused across calls
//   size_t kept = select_inplace(d, n, keep, stream, scratch);
//       keeps the elements with keep(x) true, in order, in d[0, kept) (copy_if semantics in
//       place); d[kept, n) is unspecified. Waits for the stream (returns the count).
//   select_inplace_async(d, n, keep, d_count, stream, scratch);
//       the same without a host synchronization: the kept count is written to the device word
//       *d_count (unsigned long long) in stream order.
//   remove_if_inplace(d, n, pred, stream, scratch)      removes the elements with pred(x) true
//   unique_inplace(d, n, eq, stream, scratch)           keeps d[0] and every d[i] with
//       !eq(d[i - 1], d[i]) (adjacent input elements, as cub::DeviceSelect::Unique; eq must be an
//       equivalence; BitwiseEqual{} compares the bytes)
//   compact_inplace(d, n, value, stream, scratch)       removes the elements bitwise equal to value
//   partition_inplace(d, n, keep, stream, scratch)      elements with keep(x) true first, then the
//       others, both in their original order (cub::DevicePartition::If reverses the second part);
//       returns the count of the first part. Needs scratch for the smaller part (sized n).
//   ..._async variants of each take `unsigned long long* d_count` after the functor.
//
// T: trivially copyable, 4, 8 or 16 bytes (e.g. uint32_t, double, gpu2bs::PairRecord), `d`
// aligned to sizeof(T). Functors: __device__ callable on `const T&`, copied to the kernel by
// value. n < 2^38. The templates are instantiated in the caller's .cu file (nvcc); errors throw
// gpu2bs::Error (core/error.h). SlidingScratch may allocate through a Call (counted against the
// call's memory limit, freed with it) or, without one, with cudaMalloc (freed by its destructor).
// Not for concurrent use of one SlidingScratch from two streams.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../common.cuh"

namespace gpu2bs {
namespace cuda {
namespace sliding {

// What the pass does with the elements the functor selects.
enum class SlideMode { Select, Unique, Partition };

// Index of an element size in the cuda_tuning::kSlide* tables (4, 8, 16 bytes).
template <typename T>
__host__ __device__ constexpr int slide_size_index() {
  return sizeof(T) == 4 ? 0 : sizeof(T) == 8 ? 1 : 2;
}

// Launch shape of the sliding kernel for elements of T in MODE: threads per block and 16-byte
// vectors per thread (cuda_tuning::kSlideThreads / kSlideVecs; SMALL: the small-array shape,
// kSlideSmallThreads / kSlideSmallVecs).
template <typename T, SlideMode MODE = SlideMode::Select, bool SMALL = false>
__host__ __device__ constexpr int slide_threads() {
  return SMALL ? cuda_tuning::kSlideSmallThreads[slide_size_index<T>()][int(MODE)]
               : cuda_tuning::kSlideThreads[slide_size_index<T>()][int(MODE)];
}
template <typename T, SlideMode MODE = SlideMode::Select, bool SMALL = false>
__host__ __device__ constexpr int slide_vecs() {
  return SMALL ? cuda_tuning::kSlideSmallVecs[slide_size_index<T>()][int(MODE)]
               : cuda_tuning::kSlideVecs[slide_size_index<T>()][int(MODE)];
}

// Resident blocks per SM the compiler is asked to allow (__launch_bounds__; 1: no register cap).
template <typename T, SlideMode MODE = SlideMode::Select, bool SMALL = false>
__host__ __device__ constexpr int slide_min_blocks() {
  return SMALL ? cuda_tuning::kSlideSmallMinBlocks[slide_size_index<T>()][int(MODE)]
               : cuda_tuning::kSlideMinBlocks[slide_size_index<T>()][int(MODE)];
}

// Tiles ahead in the processing order whose whole chunks a block prefetches into L2 when it
// starts (cuda_tuning::kSlidePrefetch; 0: none).
template <typename T>
__host__ __device__ constexpr int slide_prefetch() {
  return cuda_tuning::kSlidePrefetch[sizeof(T) == 4 ? 0 : sizeof(T) == 8 ? 1 : 2];
}

// Where a block's tile id (its place in the processing order) comes from.
enum class SlideIds {
  Counter,  // an atomic counter, read before the tile's loads (no assumption on dispatch)
  Block     // blockIdx.x (relies on blocks being dispatched in index order, as CUB does)
};

// The tile-id source of the tuned kernel for elements of T (cuda_tuning::kSlideTileIds).
template <typename T>
__host__ __device__ constexpr SlideIds slide_ids() {
  return SlideIds(cuda_tuning::kSlideTileIds[sizeof(T) == 4 ? 0 : sizeof(T) == 8 ? 1 : 2]);
}

// Elements per tile (one block) of a launch shape.
template <typename T, int THREADS = slide_threads<T>(), int VECS = slide_vecs<T>()>
__host__ __device__ constexpr size_t tile_elems() {
  return size_t(THREADS) * size_t(VECS) * (16 / sizeof(T));
}

// How the tiles' loads are ordered before other blocks' stores into them.
enum class SlideOrder {
  LoadFlags,  // relaxed look-back flags; per tile a separate "loaded" flag, st.release.gpu by
              // one thread after the block barrier that follows the loads (off the look-back
              // path), acquired (ld.acquire.gpu) by a later block only for the one to three
              // tiles its stores reach
  Release,    // st.release.gpu look-back flags, one fence.acq_rel.gpu after the look-back
              // (the tuned kernel uses one of these two by element size and mode:
              // cuda_tuning::kSlideOrder)
  Relaxed     // relaxed flags, no fence (benchmarks and tests): relies on every loaded chunk
              // being consumed by the functor before the block barrier that precedes the flag,
              // and on the stores' addresses depending on the flags read, as CUB's in-place
              // select does when its block load goes through shared memory; the PTX memory
              // model does not promise that ordering, so it is not the default
};

// How a block learns its running offset.
enum class SlideSync {
  Lookback,  // predecessor's flag, further back while it holds only a count (default)
  Adjacent   // the paper's chain: wait for the predecessor's inclusive offset
};

// The tile-flag ordering of the tuned kernel for elements of T in MODE
// (cuda_tuning::kSlideOrder).
template <typename T, SlideMode MODE>
__host__ __device__ constexpr SlideOrder slide_order() {
  return SlideOrder(cuda_tuning::kSlideOrder[sizeof(T) == 4 ? 0 : sizeof(T) == 8 ? 1 : 2]
                                            [int(MODE)]);
}

// Words of the scratch flags before the tile flags: tile counter, count, partition's direction.
constexpr size_t kFlagsHead = 3;

// The tile flags of one launch: the flags (counter, count, direction, tile flags), the launch's
// epoch (flags of earlier launches carry other epochs, so nothing is zeroed per launch) and the
// tile counter's value before the launch.
struct SlideFlags {
  unsigned long long* flags;
  unsigned epoch;
  unsigned id_base;
};

// Scratch of the sliding primitives: tile flags, tile counter, device count, pinned host count,
// and (partition) room for the rejected elements. Grows on demand; keep one per stream.
class SlidingScratch {
 public:
  // Allocations through `call` when given (its memory limit, freed with it), else cudaMalloc.
  // The last launch epoch before the flags are zeroed again (the flag's 24 epoch bits all set).
  static constexpr unsigned kEpochLimit = (1u << 24) - 1u;

  explicit SlidingScratch(Call* call = nullptr) : call_(call) {}
  ~SlidingScratch();
  SlidingScratch(const SlidingScratch&) = delete;
  SlidingScratch& operator=(const SlidingScratch&) = delete;

  // Device bytes held now.
  size_t device_bytes() const { return flags_bytes_ + aux_bytes_; }
  // Room for `tiles` tile flags and loaded flags (plus the counter and the device count) and a
  // fresh epoch for one launch; `counted`: the launch takes its tile ids from the counter (one
  // per tile). The flags are zeroed on `s` only when allocated and when the epochs wrap.
  SlideFlags flags_for(size_t tiles, bool counted, cudaStream_t s);
  // Device buffer of at least `bytes` (partition's rejected elements).
  void* aux_for(size_t bytes);
  // Pinned host word for the count read-back.
  unsigned long long* host_count();
  // Skips k launch epochs, as k launches would (no flag carries them; tests reach the wrap).
  void skip_epochs(unsigned k) { epoch_ = k >= kEpochLimit - epoch_ ? kEpochLimit : epoch_ + k; }

 private:
  void* dev_alloc(size_t bytes, const char* what);
  void dev_free(void* p);
  Call* call_ = nullptr;
  // [0] tile counter, [1] count, [2] partition's direction, [kFlagsHead..] tile flags, then as
  // many loaded flags
  unsigned long long* flags_ = nullptr;
  size_t flags_bytes_ = 0;
  unsigned epoch_ = 0;    // of the last launch (0: none since the flags were zeroed)
  unsigned id_base_ = 0;  // the tile counter's value after the last launch
  void* aux_ = nullptr;
  size_t aux_bytes_ = 0;
  unsigned long long* host_ = nullptr;
};

// Equality of the bytes of two elements (unique's default).
struct BitwiseEqual {
  template <typename T>
  __host__ __device__ bool operator()(const T& a, const T& b) const {
    static_assert(sizeof(T) % 4 == 0, "elements of a multiple of 4 bytes");
    unsigned x[sizeof(T) / 4], y[sizeof(T) / 4];
    memcpy(x, &a, sizeof(T));
    memcpy(y, &b, sizeof(T));
    unsigned diff = 0;
    for (size_t k = 0; k < sizeof(T) / 4; ++k) diff |= x[k] ^ y[k];
    return diff == 0;
  }
};

namespace detail {

// A tile flag: 2 status bits, the launch's epoch (24 bits), a count or offset (38 bits). A flag
// whose epoch is not the launch's is unset (written by an earlier launch on the same scratch).
constexpr unsigned long long kStatusShift = 62;
constexpr unsigned long long kStatusA = 1ull << kStatusShift;  // the tile's own count
constexpr unsigned long long kStatusP = 2ull << kStatusShift;  // its inclusive offset
constexpr unsigned kEpochShift = 38;
constexpr unsigned kEpochBits = 24;
constexpr unsigned kEpochMask = (1u << kEpochBits) - 1u;
static_assert(kEpochMask == SlidingScratch::kEpochLimit, "one epoch width");
constexpr unsigned long long kValueMask = (1ull << kEpochShift) - 1;

// The epoch bits of a flag of `epoch`.
__host__ __device__ constexpr unsigned long long epoch_bits(unsigned epoch) {
  return (unsigned long long)epoch << kEpochShift;
}

// The machine word of an element size.
template <size_t S>
struct Word;
template <>
struct Word<4> {
  using type = unsigned;
};
template <>
struct Word<8> {
  using type = unsigned long long;
};
template <>
struct Word<16> {
  using type = ulonglong2;
};

// The element held by a word.
template <typename T, typename W>
__device__ __forceinline__ T as_elem(const W& w) {
  T x;
  memcpy(&x, &w, sizeof(T));
  return x;
}

// op applied to each 4-byte part of a word (a warp shuffle per part, as the 64-bit shuffles do).
template <typename W, typename Op>
__device__ __forceinline__ W shfl_parts(W v, Op op) {
  unsigned x[sizeof(W) / 4];
  memcpy(x, &v, sizeof(W));
#pragma unroll
  for (size_t k = 0; k < sizeof(W) / 4; ++k) x[k] = op(x[k]);
  memcpy(&v, x, sizeof(W));
  return v;
}

// Word of the lane `delta` below (its own word for the lowest lanes).
template <typename W>
__device__ __forceinline__ W shfl_up_word(W v, int delta) {
  return shfl_parts(v, [delta](unsigned x) { return __shfl_up_sync(0xffffffffu, x, delta); });
}

// Word of lane `src`.
template <typename W>
__device__ __forceinline__ W shfl_word(W v, int src) {
  return shfl_parts(v, [src](unsigned x) { return __shfl_sync(0xffffffffu, x, src); });
}

// Publishes a tile flag. st.release.gpu orders this thread's earlier memory operations before
// the flag, and (release is cumulative) those of the block's other threads ordered before it by
// the preceding __syncthreads: the tile's loads precede the flag for whoever acquires it.
__device__ __forceinline__ void st_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Publishes a tile flag without ordering (the look-back flags under LoadFlags and Relaxed).
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Publishes a tile flag with the ordering of ORDER.
template <SlideOrder ORDER>
__device__ __forceinline__ void publish_flag(unsigned long long* p, unsigned long long v) {
  if constexpr (ORDER == SlideOrder::Release)
    st_release(p, v);
  else
    st_relaxed(p, v);
}

// Reads a flag with acquire semantics: the loads the publisher's release ordered before the
// flag precede this thread's later memory operations (SlideOrder::LoadFlags).
__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Reads a tile flag without ordering (polling); acquire_fence() after the last read orders it.
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Orders the flags read before it (relaxed) before this thread's later memory operations: with
// the publisher's release, the published tiles' loads precede our stores.
__device__ __forceinline__ void acquire_fence() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

// acquire_fence() under SlideOrder::Release; nothing under LoadFlags (its loaded flags are
// acquired one by one) and Relaxed.
template <SlideOrder ORDER>
__device__ __forceinline__ void order_fence() {
  if constexpr (ORDER == SlideOrder::Release) acquire_fence();
}

// Whether flag s was written in the launch of `epoch`.
__device__ __forceinline__ bool flag_set(unsigned long long s, unsigned epoch) {
  return unsigned(s >> kEpochShift & kEpochMask) == epoch;
}

// Waits until tile t's flag carries a status (A or P) of this launch, and returns it (relaxed
// reads).
__device__ __forceinline__ unsigned long long wait_flag(const unsigned long long* flags,
                                                        long long t, unsigned epoch) {
  unsigned long long s = ld_relaxed(flags + t);
  while (!flag_set(s, epoch)) {
    __nanosleep(32);
    s = ld_relaxed(flags + t);
  }
  return s;
}

// Waits (acquire) until tile t's loaded flag is set in this launch (SlideOrder::LoadFlags).
__device__ __forceinline__ void wait_loaded(const unsigned long long* lflags, long long t,
                                            unsigned epoch) {
  while (!flag_set(ld_acquire(lflags + t), epoch)) __nanosleep(32);
}

// 16 bytes of lo:hi starting at 32-bit word ws (1..3) of lo (ws 0: lo).
__device__ __forceinline__ uint4 funnel16(const uint4& lo, const uint4& hi, int ws) {
  switch (ws) {
    case 1: return make_uint4(lo.y, lo.z, lo.w, hi.x);
    case 2: return make_uint4(lo.z, lo.w, hi.x, hi.y);
    case 3: return make_uint4(lo.w, hi.x, hi.y, hi.z);
    default: return lo;
  }
}

// dst[k] = src[k] for k in [k0, k1), split over `workers` threads (this one is `worker`): every
// 16-byte chunk of the destination that lies wholly in the range is written with one vector
// store, its elements read as two aligned 16-byte loads of src joined at the (uniform) shift
// between the two arrays; the partial chunks at the ends element by element. dst and src are
// aligned to sizeof(W); src may be shared or global memory. Writes no element outside the range.
template <typename W>
__device__ __forceinline__ void copy_elems(W* dst, const W* src, long long k0, long long k1,
                                           long long worker, long long workers) {
  constexpr int S = int(sizeof(W)), V = 16 / S;
  if (k0 >= k1) return;
  const long long gd = (long long)(reinterpret_cast<uintptr_t>(dst) / S % V);  // dst[0] in chunk
  const long long gs = (long long)(reinterpret_cast<uintptr_t>(src) / S % V);
  const int sh = int((gs - gd + V) % V);  // src[k] of a chunk's first k, within its src chunk
  const int ws = sh * S / 4;
  // chunk c of the destination holds dst[c * V - gd, c * V - gd + V)
  const long long c0 = (k0 + gd) / V, c1 = (k1 - 1 + gd) / V;
  for (long long c = c0 + worker; c <= c1; c += workers) {
    const long long kc = c * V - gd;
    if (kc >= k0 && kc + V <= k1) {
      const uint4* p = reinterpret_cast<const uint4*>(src + (kc - sh));
      const uint4 lo = p[0];
      const uint4 out = ws ? funnel16(lo, p[1], ws) : lo;
      *reinterpret_cast<uint4*>(dst + kc) = out;
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const long long k = kc + e;
        if (k >= k0 && k < k1) dst[k] = src[k];
      }
    }
  }
}

// Exclusive count of a per-lane count cnt (0..V, V <= 4) over the lanes below, and the warp's
// total, by ballots of the count's bits.
template <int V>
__device__ __forceinline__ void warp_count_scan(unsigned cnt, unsigned lt, unsigned& excl,
                                                unsigned& total) {
  constexpr unsigned FULL = 0xffffffffu;
  const unsigned b0 = __ballot_sync(FULL, cnt & 1u);
  excl = __popc(b0 & lt);
  total = __popc(b0);
  if constexpr (V >= 2) {
    const unsigned b1 = __ballot_sync(FULL, cnt & 2u);
    excl += 2 * __popc(b1 & lt);
    total += 2 * __popc(b1);
  }
  if constexpr (V >= 4) {
    const unsigned b2 = __ballot_sync(FULL, cnt & 4u);
    excl += 4 * __popc(b2 & lt);
    total += 4 * __popc(b2);
  }
}

// Bit mask over a thread's items (up to 32 or 64).
template <int ITEMS>
using ItemMask = typename std::conditional<(ITEMS > 32), unsigned long long, unsigned>::type;

// Index of the lowest set bit of a non-zero mask.
__device__ __forceinline__ int first_bit(unsigned m) { return __ffs(int(m)) - 1; }
__device__ __forceinline__ int first_bit(unsigned long long m) {
  return __ffsll((long long)m) - 1;
}

// Chunk of the tile holding item (j, e) of a thread: each warp owns VECS x 32 consecutive
// chunks, its vector j the 32 chunks from (warp * VECS + j) * 32 (one 512-byte load per warp).
template <int VECS>
__device__ __forceinline__ int tile_chunk(int warp, int lane, int j) {
  return (warp * VECS + j) * 32 + lane;
}

// Loads thread (warp, lane)'s items of the tile at place `at` into v (item (j, e) is element e
// of chunk tile_chunk(warp, lane, j), position x of the tiles holds d[x - head]) and marks the
// elements inside [0, n) in `valid`; the others are zero.
template <int THREADS, int VECS, typename W, int V, typename M>
__device__ __forceinline__ void load_tile(W (&v)[VECS][V], M& valid, const W* w, unsigned at,
                                          unsigned head, long long nn, int warp, int lane) {
  constexpr long long TILE = (long long)THREADS * VECS * V;
  valid = 0;
#pragma unroll
  for (int j = 0; j < VECS; ++j) {
    const long long i0 = (long long)at * TILE +
                         (long long)tile_chunk<VECS>(warp, lane, j) * V - (long long)head;
    if (i0 >= 0 && i0 + V <= nn) {
      const uint4 q = *reinterpret_cast<const uint4*>(w + i0);
      memcpy(&v[j][0], &q, 16);
      valid |= M((1u << V) - 1u) << (j * V);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if (i0 + e >= 0 && i0 + e < nn) {
          v[j][e] = w[i0 + e];
          valid |= M(1) << (j * V + e);
        } else {
          memset(&v[j][e], 0, sizeof(W));
        }
      }
    }
  }
}

// Starts a bulk prefetch of `bytes` (a multiple of 16, p 16-byte aligned) of global memory into
// L2 (no completion to wait for).
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// Waits until the grid this one depends on by programmatic dependent launch has completed and its
// memory operations are visible (griddepcontrol.wait; returns at once in a grid launched
// without that dependency, and compiles to nothing before sm_90).
__device__ __forceinline__ void wait_prerequisite() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the grid launched after this one by programmatic dependent launch start once every block
// of this grid has passed here or exited (griddepcontrol.launch_dependents; it still waits for
// this grid's completion in wait_prerequisite).
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Dynamic shared memory of the sliding kernel: the staged tile.
template <typename T, int THREADS, int VECS>
constexpr size_t stage_bytes() {
  return size_t(THREADS) * size_t(VECS) * 16;
}

// The sliding pass over d[0, n): see the top of this file. F: the predicate (Select,
// Partition) or the equivalence (Unique). flags[0]: tile counter, flags[1]: unused here,
// flags[2]: Partition's direction (partition_direction_kernel), flags[kFlagsHead + t]: tile t in
// processing order, flags[kFlagsHead + tiles + t]: its loaded flag (SlideOrder::LoadFlags).
// aux: the part of Partition that does not stay in d. d_count: the kept count (may be null).
// Partition runs in one of two directions, both stable: forwards (tiles in order) the kept
// elements slide down in d and the rejected ones go to aux[rank among the rejected]; backwards
// (tiles from the last, as a mirrored select) the rejected elements slide up to their final place
// d[kept + rank] and the kept ones go to aux[n - kept + rank]. A tile's output in d then starts
// at or after its own first element and every tile after it has loaded (the look-back runs over
// the processing order), so the in-place invariant holds mirrored. The direction that leaves the
// smaller part to aux moves n + max(kept, rejected) + 3 min(kept, rejected) elements, against
// n + kept + 3 rejected forwards only; partition_direction_kernel picks it from a sample.
// Tiles are laid over 16-byte chunks: `head` (d's offset in its chunk, in elements) positions
// before d[0] belong to tile 0 and are empty, so every full chunk is loaded with one vector
// load; item (j, e) of a thread is element e of chunk tile_chunk(warp, lane, j). The staged
// tile is in dynamic shared memory (stage_bytes()).
// IDS: tile ids from blockIdx.x (relies on blocks being dispatched in index order, as CUB's
// look-back does) or from the atomic counter (forward progress whatever the block scheduling, one
// round trip before the loads). ORDER: loaded flags acquired by the writers, release / acquire
// look-back flags, or relaxed ones (SlideOrder).
// epoch: the launch's (SlideFlags), id_base: the counter's value before the launch.
template <typename T, SlideMode MODE, SlideSync SYNC, int THREADS, int VECS, int MINB,
          SlideIds IDS, SlideOrder ORDER, typename F>
__global__ void __launch_bounds__(THREADS, MINB) slide_kernel(T* d, unsigned long long n,
                                                        unsigned head, F f,
                                                        unsigned long long* flags, T* aux,
                                                        unsigned long long* d_count,
                                                        unsigned epoch, unsigned id_base,
                                                        unsigned ahead) {
  using W = typename Word<sizeof(T)>::type;
  constexpr int V = 16 / int(sizeof(T));  // elements per 16-byte chunk
  constexpr int ITEMS = VECS * V;
  using M = ItemMask<ITEMS>;
  constexpr int WARPS = THREADS / 32;
  constexpr unsigned TILE = unsigned(THREADS) * ITEMS;
  constexpr int NCNT = VECS * WARPS;        // chunk-column counts of the tile
  constexpr int E = (NCNT + 31) / 32;       // of them per lane of the scanning warp
  constexpr unsigned FULL = 0xffffffffu;
  constexpr bool UNIQUE = MODE == SlideMode::Unique;
  static_assert(THREADS % 32 == 0 && ITEMS <= 64, "launch shape");
  __shared__ unsigned s_bid;
  __shared__ bool s_back;                   // Partition backwards
  __shared__ unsigned s_cnt[NCNT];          // kept per (warp, vector), then their exclusive scan
  __shared__ unsigned s_total;              // kept in the tile
  __shared__ unsigned s_wlead[WARPS];       // per warp: position of its first element not kept
  __shared__ unsigned s_lead;               // position of the tile's first element not kept
  __shared__ unsigned long long s_prefix;   // kept before the tile
  extern __shared__ __align__(16) unsigned char s_dyn[];
  W* const s_stage = reinterpret_cast<W*>(s_dyn);  // the tile, kept elements first (in order)

  constexpr bool COUNTED = IDS == SlideIds::Counter;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long nn = (long long)n;
  W* const w = reinterpret_cast<W*>(d);
  unsigned long long* const tflag = flags + kFlagsHead;
  unsigned long long* const lflag = tflag + gridDim.x;  // loaded flags (SlideOrder::LoadFlags)
  const unsigned lt = (1u << lane) - 1u;
  const unsigned last = gridDim.x - 1;

  // 1. Load the tile (load_tile). With tile ids from blockIdx.x outside Partition the block
  // knows its tile at once and loads it without a barrier first.
  W v[VECS][V];
  M keep = 0, valid = 0;
  constexpr bool SHARED_START = COUNTED || MODE == SlideMode::Partition;
  // Partition: the direction kernel before may still run (programmatic dependent launch); the
  // append kernel after may be launched once every block of this grid has started.
  if constexpr (MODE == SlideMode::Partition) {
    wait_prerequisite();
    allow_dependents();
  }
  if constexpr (SHARED_START) {
    if (tid == 0) {
      if constexpr (COUNTED)
        s_bid = atomicAdd(reinterpret_cast<unsigned*>(flags), 1u) - id_base;
      if constexpr (MODE == SlideMode::Partition) s_back = flags[2] != 0;
    }
    __syncthreads();
  }
  const unsigned bid = COUNTED ? s_bid : blockIdx.x;  // processing order
  // Partition backwards: the rejected elements stay in d ("kept" below), tiles from the last
  const bool back = MODE == SlideMode::Partition && s_back;
  const unsigned pos = back ? last - bid : bid;  // the tile's place in the array
  // positions [base, base + TILE) of the tile
  const long long base = (long long)pos * TILE;
  const long long hv = pos == 0 ? (long long)head : 0;  // empty positions at the tile's start
  const long long tile_first = base + hv - (long long)head;  // index of its first element
  // L2 prefetch of the tile `ahead` places further in the processing order (thread 0, one bulk
  // prefetch of its whole 16-byte chunks inside [0, n)): its block, which starts about when
  // `ahead` blocks before it have finished, then finds its tile in L2. A hint: it reads nothing
  // into the block and writes nothing.
  if (ahead && tid == 0 && (unsigned long long)bid + ahead <= last) {
    const unsigned p2 = back ? pos - ahead : pos + ahead;
    constexpr long long CH = (long long)THREADS * VECS;  // chunks per tile
    // chunk g (of the array's chunks) holds d[g * V - head, g * V - head + V): whole inside
    // [0, n) for g in [lo, hi)
    const long long lo = max((long long)p2 * CH, head ? 1ll : 0ll);
    const long long hi = min((long long)p2 * CH + CH, (nn + (long long)head) / V);
    if (hi > lo) prefetch_l2(w + (lo * V - (long long)head), unsigned(hi - lo) * 16u);
  }
  load_tile<THREADS, VECS>(v, valid, w, pos, head, nn, warp, lane);
  // Unique: the element before the warp's first chunk (lane 0), the last of the previous warp's
  // chunks or of the previous tile. Neither is overwritten before this block's loads are
  // published (its loaded flag under LoadFlags, which the writer into the previous tile
  // acquires; its look-back flag under Release: see the top of the file), and this block reads
  // it before.
  W before;
  memset(&before, 0, sizeof(W));
  if constexpr (UNIQUE) {
    const long long ib = base + (long long)tile_chunk<VECS>(warp, 0, 0) * V - (long long)head - 1;
    if (lane == 0 && ib >= 0 && ib < nn) before = w[ib];
  }
#pragma unroll
  for (int j = 0; j < VECS; ++j) {
    const long long i0 =
        base + (long long)tile_chunk<VECS>(warp, lane, j) * V - (long long)head;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int b = j * V + e;
      bool k = false;
      if constexpr (UNIQUE) {
        W prev;
        if (e > 0) {
          prev = v[j][e - 1];
        } else {
          // lane - 1's chunk; for lane 0 lane 31's chunk of the previous vector, or `before`
          prev = shfl_up_word(v[j][V - 1], 1);
          if (j > 0) {
            const W p31 = shfl_word(v[j - 1][V - 1], 31);
            if (lane == 0) prev = p31;
          } else if (lane == 0) {
            prev = before;
          }
        }
        k = ((valid >> b) & 1u) && (i0 + e == 0 || !f(as_elem<T>(prev), as_elem<T>(v[j][e])));
      } else {
        k = ((valid >> b) & 1u) && (f(as_elem<T>(v[j][e])) != back);
      }
      keep |= M(k) << b;
    }
  }
  // Leading kept run: per warp the position of its first element that is valid and not kept
  // (a thread's items lie in increasing positions, so its first is its lowest bit).
  {
    const M drop = valid & ~keep;
    unsigned lead = TILE;
    if (drop) {
      const int b = first_bit(drop);
      lead = unsigned(tile_chunk<VECS>(warp, lane, b / V)) * V + unsigned(b % V);
    }
    lead = __reduce_min_sync(FULL, lead);
    if (lane == 0) s_wlead[warp] = lead;
  }

  // 2. Ranks: per vector, the warp's count scan by ballots; counts per (vector, warp), one warp
  // scans them in tile order.
  constexpr unsigned VMASK = (1u << V) - 1u;
#pragma unroll
  for (int j = 0; j < VECS; ++j) {
    unsigned ex, tot;
    warp_count_scan<V>(__popc(unsigned(keep >> (j * V)) & VMASK), lt, ex, tot);
    if (lane == 0) s_cnt[warp * VECS + j] = tot;
  }
  __syncthreads();  // also orders every load of the tile before the flag published below
  // The tile's loaded flag: the last warp (idle until the stage) pays the release, not the
  // look-back path of warp 0.
  if constexpr (ORDER == SlideOrder::LoadFlags) {
    if (warp == WARPS - 1 && lane == 0) st_release(lflag + bid, epoch_bits(epoch));
  }
  if (warp == 0) {
    if (lane == 0) {
      unsigned lead = TILE;
#pragma unroll
      for (int k = 0; k < WARPS; ++k) lead = min(lead, s_wlead[k]);
      s_lead = lead;
    }
    unsigned loc[E], sum = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      loc[e] = lane * E + e < NCNT ? s_cnt[lane * E + e] : 0u;
      sum += loc[e];
    }
    unsigned incl = sum;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned t = __shfl_up_sync(FULL, incl, o);
      if (lane >= o) incl += t;
    }
    unsigned run = incl - sum;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      if (lane * E + e < NCNT) s_cnt[lane * E + e] = run;
      run += loc[e];
    }
    if (lane == 31) {
      s_total = incl;
      // Publish the tile's count (tile 0: its inclusive offset).
      if constexpr (SYNC == SlideSync::Lookback)
        publish_flag<ORDER>(tflag + bid,
                            (bid == 0 ? kStatusP : kStatusA) | epoch_bits(epoch) | incl);
      else if (bid == 0)
        publish_flag<ORDER>(tflag, kStatusP | epoch_bits(epoch) | incl);
    }
  }
  __syncthreads();
  const unsigned total = s_total;

  // 3. Stage the tile in shared memory: kept elements at their ranks, then (Partition) the others
  // at total + their rank among the others.
#pragma unroll
  for (int j = 0; j < VECS; ++j) {
    const unsigned kb = unsigned(keep >> (j * V)) & VMASK;
    unsigned ex, tot;
    warp_count_scan<V>(__popc(kb), lt, ex, tot);  // again: fewer registers
    unsigned r = s_cnt[warp * VECS + j] + ex;
    // position of the chunk's first element among the tile's elements
    const long long p0 = (long long)tile_chunk<VECS>(warp, lane, j) * V - hv;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if ((kb >> e) & 1u) {
        s_stage[r++] = v[j][e];
      } else if (MODE == SlideMode::Partition && ((valid >> (j * V + e)) & 1u)) {
        s_stage[total + unsigned(p0 + e) - r] = v[j][e];
      }
    }
  }
  // 4. The running offset from the tiles before (warp 0), and this tile's inclusive offset.
  if (warp == 0) {
    unsigned long long excl = 0;
    if (bid > 0) {
      if constexpr (SYNC == SlideSync::Lookback) {
        long long top = (long long)bid - 1;
        for (;;) {
          const long long t = top - lane;
          const unsigned long long s = t >= 0 ? wait_flag(tflag, t, epoch) : kStatusP;
          const unsigned pmask = __ballot_sync(FULL, (s >> kStatusShift) == 2);
          const int stop = pmask ? __ffs(int(pmask)) - 1 : 31;  // nearest P, or the window
          unsigned long long val = lane <= stop ? (s & kValueMask) : 0ull;
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) val += __shfl_xor_sync(FULL, val, o);
          excl += val;
          if (pmask) break;
          top -= 32;
        }
        order_fence<ORDER>();  // every lane: the tiles whose flags it read have loaded
        if (lane == 0)
          publish_flag<ORDER>(tflag + bid, kStatusP | epoch_bits(epoch) | (excl + total));
      } else {
        if (lane == 0) {
          unsigned long long s = ld_relaxed(tflag + bid - 1);
          while (!flag_set(s, epoch) || (s >> kStatusShift) != 2) {
            __nanosleep(32);
            s = ld_relaxed(tflag + bid - 1);
          }
          order_fence<ORDER>();
          excl = s & kValueMask;
          publish_flag<ORDER>(tflag + bid, kStatusP | epoch_bits(epoch) | (excl + total));
        }
      }
    }
    // LoadFlags: the tiles other than this one that the stores below reach have loaded (lanes
    // 0-2 each acquire one; the barrier after this passes it to every thread of the block).
    if constexpr (ORDER == SlideOrder::LoadFlags) {
      excl = __shfl_sync(FULL, excl, 0);  // the adjacent synchronization read it in lane 0
      if (total > 0) {
        // elements [a, a + total) of d receive this block's kept elements: tiles q_lo..q_hi
        // (array places), this one among them; Unique: the block of tile q + 1 also read
        // tile q's last element
        const long long a = back ? nn - (long long)excl - (long long)total : (long long)excl;
        const long long q_lo = (a + (long long)head) / TILE;
        long long q_hi = (a + (long long)total - 1 + (long long)head) / TILE;
        if (UNIQUE) q_hi = min(q_hi + 1, (long long)pos);
        const long long q = q_lo + lane;
        if (q <= q_hi && q != (long long)pos)
          wait_loaded(lflag, back ? (long long)last - q : q, epoch);
      }
    }
    if (lane == 0) {
      s_prefix = excl;
      // the last tile processed: the count (backwards, excl + total rejected elements)
      if (d_count && bid == last)
        *d_count = back ? (unsigned long long)nn - (excl + total) : excl + total;
    }
  }

  __syncthreads();  // the acquired offset for every warp (and the stage)

  // 5. Store: kept elements at prefix + rank (not those already in place), the others (Partition)
  // to aux at their rank among them. Backwards: the rejected elements ("kept" here) at
  // n - (prefix + total) + rank, the kept ones at aux[n - (kept in this and later tiles) + rank].
  const long long prefix = (long long)s_prefix;
  if (!back) {
    unsigned first = 0;
    if (prefix == tile_first) first = min(unsigned(s_lead - hv), total);
    copy_elems<W>(w + prefix, s_stage, first, total, tid, THREADS);
  } else {
    copy_elems<W>(w + (nn - prefix - (long long)total), s_stage, 0, total, tid, THREADS);
  }
  if constexpr (MODE == SlideMode::Partition) {
    const long long nvalid = min(nn - tile_first, (long long)TILE - hv);
    const long long at = back ? tile_first + prefix + (long long)total : tile_first - prefix;
    copy_elems<W>(reinterpret_cast<W*>(aux) + at, s_stage + total, 0,
                  nvalid - (long long)total, tid, THREADS);
  }
}

// Moves partition's part in aux to its place: forwards d[count + k] = aux[k], k < n - count
// (the rejected elements behind the kept ones), backwards d[k] = aux[n - count + k], k < count
// (the kept ones before the rejected).
template <typename T>
__global__ void append_kernel(T* d, unsigned long long n, const T* aux,
                              const unsigned long long* d_count, const unsigned long long* flags) {
  using W = typename Word<sizeof(T)>::type;
  wait_prerequisite();  // the sliding pass (programmatic dependent launch)
  const unsigned long long count = *d_count;
  const bool back = flags[2] != 0;
  const long long worker = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long workers = (long long)gridDim.x * blockDim.x;
  if (back)
    copy_elems<W>(reinterpret_cast<W*>(d), reinterpret_cast<const W*>(aux) + (n - count), 0,
                  (long long)count, worker, workers);
  else
    copy_elems<W>(reinterpret_cast<W*>(d) + count, reinterpret_cast<const W*>(aux), 0,
                  (long long)(n - count), worker, workers);
}

// Partition's direction into flags[2]: backwards (1) when fewer than half of up to
// kDirectionSamples elements spread evenly over d[0, n) are kept, so the smaller part goes
// through aux. One block; each thread issues its loads together (one memory round trip).
constexpr int kDirectionThreads = 256;
constexpr int kDirectionPerThread = 16;
constexpr int kDirectionSamples = kDirectionPerThread * kDirectionThreads;
template <typename T, typename F>
__global__ void __launch_bounds__(kDirectionThreads) partition_direction_kernel(
    const T* d, unsigned long long n, F f, unsigned long long* flags) {
  __shared__ int s_kept;
  // the sliding pass may be launched at once: it waits for this grid's completion
  allow_dependents();
  const unsigned long long m = n < kDirectionSamples ? n : kDirectionSamples;
  if (threadIdx.x == 0) s_kept = 0;
  T x[kDirectionPerThread];
#pragma unroll
  for (int i = 0; i < kDirectionPerThread; ++i) {
    const unsigned long long k = (unsigned long long)i * kDirectionThreads + threadIdx.x;
    // element k * n / m without overflow (k < 2^12, n < 2^38)
    if (k < m) x[i] = d[k * (n / m) + k * (n % m) / m];
  }
  int kept = 0;
#pragma unroll
  for (int i = 0; i < kDirectionPerThread; ++i) {
    const unsigned long long k = (unsigned long long)i * kDirectionThreads + threadIdx.x;
    if (k < m && f(x[i])) ++kept;
  }
  kept = __reduce_add_sync(0xffffffffu, kept);
  __syncthreads();  // s_kept is zeroed
  if ((threadIdx.x & 31) == 0) atomicAdd(&s_kept, kept);
  __syncthreads();
  if (threadIdx.x == 0) flags[2] = 2ull * (unsigned long long)s_kept < m ? 1ull : 0ull;
}

// Negation of a predicate (remove_if).
template <typename F>
struct Not {
  F f;
  template <typename T>
  __device__ bool operator()(const T& x) const {
    return !f(x);
  }
};

// Bitwise inequality with a value (stream compaction).
template <typename T>
struct NotValue {
  T value;
  __device__ bool operator()(const T& x) const { return !BitwiseEqual()(x, value); }
};

// Lets `kernel` take `bytes` of dynamic shared memory (above the default 48 KiB) on the current
// device, once per device: `done` (one per kernel) holds a bit per device done (devices 0-63).
template <typename K>
void allow_shared(K kernel, size_t bytes, std::atomic<unsigned long long>& done) {
  int dev = 0;
  G2_CUDA(cudaGetDevice(&dev));
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (bit && (done.load(std::memory_order_relaxed) & bit)) return;
  G2_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  done.fetch_or(bit, std::memory_order_relaxed);
}

// Whether the current device takes programmatic dependent launch (compute capability 9 or more).
inline bool pdl_device() {
  int dev = 0, major = 0;
  G2_CUDA(cudaGetDevice(&dev));
  G2_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

// Whether `kernel` was compiled from a virtual architecture of compute_90 or later (its
// ptxVersion), where its griddepcontrol.wait is compiled in: below compute_90 the wait compiles
// to nothing, and PTX of an older target JIT-compiled for a newer device reports that device's
// binaryVersion, so only ptxVersion tells. Cached per device: `known` and `yes` hold a bit per
// device (devices 0-63).
template <typename K>
bool waits_for_prerequisite(K kernel, std::atomic<unsigned long long>& known,
                            std::atomic<unsigned long long>& yes) {
  int dev = 0;
  G2_CUDA(cudaGetDevice(&dev));
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
  if (bit && (known.load(std::memory_order_acquire) & bit))
    return (yes.load(std::memory_order_relaxed) & bit) != 0;
  cudaFuncAttributes a{};
  G2_CUDA(cudaFuncGetAttributes(&a, kernel));
  const bool ok = a.ptxVersion >= 90;
  if (bit) {
    if (ok) yes.fetch_or(bit, std::memory_order_relaxed);
    known.fetch_or(bit, std::memory_order_release);
  }
  return ok;
}

// Checks the arguments every primitive takes.
template <typename T>
void check_args(const T* d, size_t n) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
                "sliding primitives take elements of 4, 8 or 16 bytes");
  static_assert(std::is_trivially_copyable<T>::value, "elements must be trivially copyable");
  if (n && reinterpret_cast<uintptr_t>(d) % sizeof(T) != 0)
    throw Error(ErrorCode::Internal, "sliding primitive on a misaligned device array");
  if (n >> kEpochShift)
    throw Error(ErrorCode::ProgramLimit, "too many elements for a sliding primitive");
}

}  // namespace detail

// The sliding pass with an explicit mode, synchronization and launch shape (the primitives below
// call it with the tuned shape; benchmarks compare SlideSync::Adjacent and other shapes). The
// count goes to *d_count (device) when not null, else to the scratch's device word; returns that
// device word. ahead: the L2 prefetch distance in tiles (-1: the tuned slide_prefetch<T>()).
template <typename T, SlideMode MODE, SlideSync SYNC = SlideSync::Lookback,
          int THREADS = slide_threads<T, MODE>(), int VECS = slide_vecs<T, MODE>(),
          int MINB = slide_min_blocks<T, MODE>(), SlideIds IDS = slide_ids<T>(),
          SlideOrder ORDER = slide_order<T, MODE>(), typename F>
unsigned long long* slide_async(T* d, size_t n, F f, unsigned long long* d_count, cudaStream_t s,
                                SlidingScratch& scratch, int ahead = -1, int pdl = -1) {
  detail::check_args(d, n);
  constexpr size_t TILE = tile_elems<T, THREADS, VECS>();
  // d's position in its 16-byte chunk, in elements: tile 0 starts that many positions before d
  const unsigned head = unsigned(reinterpret_cast<uintptr_t>(d) / sizeof(T) % (16 / sizeof(T)));
  const size_t tiles = (n + head + TILE - 1) / TILE;
  if (tiles > 0x7FFFFFFFull)
    throw Error(ErrorCode::ProgramLimit, "too many elements for a sliding primitive");
  const SlideFlags fl = scratch.flags_for(tiles, n > 0 && IDS == SlideIds::Counter, s);
  unsigned long long* const flags = fl.flags;
  unsigned long long* count = d_count ? d_count : flags + 1;
  if (n == 0) {
    G2_CUDA(cudaMemsetAsync(count, 0, sizeof(unsigned long long), s));
    return count;
  }
  T* aux = nullptr;
  // room for the part that goes through aux, plus one 16-byte chunk: the append kernel's vector
  // loads read whole aligned chunks
  if constexpr (MODE == SlideMode::Partition) {
    aux = static_cast<T*>(scratch.aux_for(n * sizeof(T) + 16));
    detail::partition_direction_kernel<T, F>
        <<<1, detail::kDirectionThreads, 0, s>>>(d, (unsigned long long)n, f, flags);
    G2_CUDA_LAUNCH("partition direction kernel launch");
  }
  constexpr size_t SMEM = detail::stage_bytes<T, THREADS, VECS>();
  auto kernel = detail::slide_kernel<T, MODE, SYNC, THREADS, VECS, MINB, IDS, ORDER, F>;
  // the dynamic stage and the kernel's static shared memory together above the default 48 KiB
  if constexpr (SMEM > 32 * 1024) {
    static std::atomic<unsigned long long> done{0};  // this instantiation's kernel
    detail::allow_shared(kernel, SMEM, done);
  }
  // Partition: the sliding pass and the append kernel by programmatic dependent launch
  // (cuda_tuning::kSlidePdl, pdl 0 / 1 overrides) on devices of compute capability 9 or more,
  // when both kernels are compiled from compute_90 or later
  bool chain = false;
  if constexpr (MODE == SlideMode::Partition) {
    if ((pdl < 0 ? cuda_tuning::kSlidePdl : pdl != 0) && detail::pdl_device()) {
      // both dependents must wait in their code: the sliding pass and the append kernel
      static std::atomic<unsigned long long> slide_known{0}, slide_yes{0};
      static std::atomic<unsigned long long> append_known{0}, append_yes{0};
      chain = detail::waits_for_prerequisite(kernel, slide_known, slide_yes) &&
              detail::waits_for_prerequisite(detail::append_kernel<T>, append_known, append_yes);
    }
  }
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(tiles));
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = SMEM;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = chain ? 1 : 0;
  G2_CUDA(cudaLaunchKernelEx(&cfg, kernel, d, (unsigned long long)n, head, f, flags, aux, count,
                             fl.epoch, fl.id_base,
                             unsigned(ahead < 0 ? slide_prefetch<T>() : ahead)));
  G2_CUDA_LAUNCH("sliding kernel launch");
  if constexpr (MODE == SlideMode::Partition) {
    constexpr int kAppendThreads = 256;
    const size_t chunks = (n * sizeof(T) + 15) / 16 + 1;
    const size_t blocks = std::min<size_t>((chunks + kAppendThreads - 1) / kAppendThreads,
                                           size_t(cuda_tuning::kSlideAppendBlocks));
    cfg.gridDim = dim3(unsigned(blocks));
    cfg.blockDim = dim3(kAppendThreads);
    cfg.dynamicSmemBytes = 0;
    G2_CUDA(cudaLaunchKernelEx(&cfg, detail::append_kernel<T>, d, (unsigned long long)n,
                               static_cast<const T*>(aux),
                               static_cast<const unsigned long long*>(count),
                               static_cast<const unsigned long long*>(flags)));
    G2_CUDA_LAUNCH("partition append kernel launch");
  }
  return count;
}

// Reads a device count on the stream (waits for it).
inline size_t read_count(const unsigned long long* d_count, cudaStream_t s,
                         SlidingScratch& scratch) {
  unsigned long long* h = scratch.host_count();
  G2_CUDA(cudaMemcpyAsync(h, d_count, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
  G2_CUDA(cudaStreamSynchronize(s));
  return size_t(*h);
}

// The tuned sliding pass in MODE: the small-array shape for arrays of at most
// cuda_tuning::kSlideSmallBytes, else the tuned shape; returns the device count word. pdl:
// partition's programmatic dependent launch (-1 the tuned cuda_tuning::kSlidePdl, 0 off, 1 on).
template <typename T, SlideMode MODE, typename F>
unsigned long long* slide_tuned(T* d, size_t n, F f, unsigned long long* d_count, cudaStream_t s,
                                SlidingScratch& scratch, int pdl = -1) {
  if (n * sizeof(T) <= cuda_tuning::kSlideSmallBytes)
    return slide_async<T, MODE, SlideSync::Lookback, slide_threads<T, MODE, true>(),
                       slide_vecs<T, MODE, true>(), slide_min_blocks<T, MODE, true>()>(
        d, n, f, d_count, s, scratch, -1, pdl);
  return slide_async<T, MODE>(d, n, f, d_count, s, scratch, -1, pdl);
}

// Runs the sliding pass in `MODE` and returns its count (waits): the blocking form of every
// primitive below.
template <typename T, SlideMode MODE, typename F>
size_t slide_wait(T* d, size_t n, F f, cudaStream_t s, SlidingScratch& scratch) {
  return read_count(slide_tuned<T, MODE>(d, n, f, nullptr, s, scratch), s, scratch);
}

// Keeps the elements with keep(x) true, in order, in d[0, kept); returns kept (waits).
template <typename T, typename Pred>
size_t select_inplace(T* d, size_t n, Pred keep, cudaStream_t s, SlidingScratch& scratch) {
  return slide_wait<T, SlideMode::Select>(d, n, keep, s, scratch);
}
// select_inplace with the kept count written to *d_count on the device (no host wait).
template <typename T, typename Pred>
void select_inplace_async(T* d, size_t n, Pred keep, unsigned long long* d_count,
                          cudaStream_t s, SlidingScratch& scratch) {
  slide_tuned<T, SlideMode::Select>(d, n, keep, d_count, s, scratch);
}

// Removes the elements with pred(x) true (std::remove_if); returns the count left (waits).
template <typename T, typename Pred>
size_t remove_if_inplace(T* d, size_t n, Pred pred, cudaStream_t s, SlidingScratch& scratch) {
  return select_inplace(d, n, detail::Not<Pred>{pred}, s, scratch);
}
// remove_if_inplace with the count written to *d_count on the device.
template <typename T, typename Pred>
void remove_if_inplace_async(T* d, size_t n, Pred pred, unsigned long long* d_count,
                             cudaStream_t s, SlidingScratch& scratch) {
  select_inplace_async(d, n, detail::Not<Pred>{pred}, d_count, s, scratch);
}

// Keeps the first element of every run of adjacent elements with eq(a, b) true; returns the
// count kept (waits).
template <typename T, typename Eq>
size_t unique_inplace(T* d, size_t n, Eq eq, cudaStream_t s, SlidingScratch& scratch) {
  return slide_wait<T, SlideMode::Unique>(d, n, eq, s, scratch);
}
// unique_inplace with the count written to *d_count on the device.
template <typename T, typename Eq>
void unique_inplace_async(T* d, size_t n, Eq eq, unsigned long long* d_count, cudaStream_t s,
                          SlidingScratch& scratch) {
  slide_tuned<T, SlideMode::Unique>(d, n, eq, d_count, s, scratch);
}

// Removes the elements bitwise equal to `value` (stream compaction); returns the count left.
template <typename T>
size_t compact_inplace(T* d, size_t n, const T& value, cudaStream_t s, SlidingScratch& scratch) {
  return select_inplace(d, n, detail::NotValue<T>{value}, s, scratch);
}
// compact_inplace with the count written to *d_count on the device.
template <typename T>
void compact_inplace_async(T* d, size_t n, const T& value, unsigned long long* d_count,
                           cudaStream_t s, SlidingScratch& scratch) {
  select_inplace_async(d, n, detail::NotValue<T>{value}, d_count, s, scratch);
}

// Stable partition: elements with keep(x) true first, then the others, each in order; returns
// the count of the first part (waits).
template <typename T, typename Pred>
size_t partition_inplace(T* d, size_t n, Pred keep, cudaStream_t s, SlidingScratch& scratch) {
  return slide_wait<T, SlideMode::Partition>(d, n, keep, s, scratch);
}
// partition_inplace with the first part's count written to *d_count on the device.
template <typename T, typename Pred>
void partition_inplace_async(T* d, size_t n, Pred keep, unsigned long long* d_count,
                             cudaStream_t s, SlidingScratch& scratch) {
  slide_tuned<T, SlideMode::Partition>(d, n, keep, d_count, s, scratch);
}

}  // namespace sliding
}  // namespace cuda
}  // namespace gpu2bs
