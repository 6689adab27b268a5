// Resolution of whole cell pairs on the GPU (core/resolve.h has the method and its bound): the
// density map is built on the device with CUB (Z-order keys, radix sort, run-length encoding
// per level, exclusive scans), then the cell pairs are walked level by level in bounded chunks:
// each expand kernel tests the child pairs of a chunk of unresolved pairs, counts resolved ones
// whole (n_a x n_b into a block-private histogram, or the pair count), queues the rest for the
// next level, and hands unresolved leaf pairs (or small ones) to a work list that a warp-per-
// pair kernel computes with the engine's per-pair arithmetic (sq_dist, sdh_bucket). Memory stays
// bounded: the walk always expands the deepest non-empty level, so the level below it is empty
// and a chunk's children always fit.
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cub/cub.cuh>
#include <vector>

#include "common.cuh"
#include "core/density_map.h"
#include "core/resolve.h"
#include "sdh_bucket.cuh"

namespace cg = cooperative_groups;

namespace gpu2bs {
namespace cuda {

namespace {

using u64 = unsigned long long;

// Device coordinate arrays (SoA), passed to kernels by value.
template <typename T>
struct Coords {
  T* p[3];
};

// One level of the map on the device: point ranges, child ranges, boxes (AoS, 2 * D per cell).
template <typename T>
struct DevLevel {
  const uint32_t* begin;
  const uint32_t* child;
  const T* box;
};

template <typename T>
struct DevMap {
  DevLevel<T> lv[kResolveMaxLevels];
  int leaf;
};

template <typename T, int D>
__global__ void keys_kernel(Coords<T> c, size_t n, DensityGeometry geo, u64* keys,
                            uint32_t* idx) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    double x[3];
    for (int k = 0; k < D; ++k) x[k] = double(c.p[k][i]);
    keys[i] = geo.key(x);
    idx[i] = uint32_t(i);
  }
}

template <typename T, int D>
__global__ void gather_kernel(Coords<T> in, Coords<T> out, const uint32_t* order,
                              size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t s = order[i];
    for (int k = 0; k < D; ++k) out.p[k][i] = in.p[k][s];
  }
}

// Boxes of the leaf cells from their sorted points.
template <typename T, int D>
__global__ void leaf_box_kernel(Coords<T> s, const uint32_t* begin, size_t cells, T* box) {
  for (size_t c = blockIdx.x * size_t(blockDim.x) + threadIdx.x; c < cells;
       c += size_t(gridDim.x) * blockDim.x) {
    const uint32_t b0 = begin[c], b1 = begin[c + 1];
    for (int k = 0; k < D; ++k) {
      T lo = s.p[k][b0], hi = lo;
      for (uint32_t i = b0 + 1; i < b1; ++i) {
        const T v = s.p[k][i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      box[c * 2 * D + k] = lo;
      box[c * 2 * D + D + k] = hi;
    }
  }
}

__global__ void parent_keys_kernel(const u64* keys, size_t cells, int shift, u64* out) {
  for (size_t c = blockIdx.x * size_t(blockDim.x) + threadIdx.x; c < cells;
       c += size_t(gridDim.x) * blockDim.x)
    out[c] = keys[c] >> shift;
}

// Point ranges and boxes of a level from its children (child = exclusive scan of child counts).
template <typename T, int D>
__global__ void parent_kernel(const uint32_t* child, size_t cells, const uint32_t* fbegin,
                              const T* fbox, uint32_t* begin, T* box) {
  for (size_t c = blockIdx.x * size_t(blockDim.x) + threadIdx.x; c < cells;
       c += size_t(gridDim.x) * blockDim.x) {
    const uint32_t c0 = child[c], c1 = child[c + 1];
    begin[c] = fbegin[c0];
    for (int k = 0; k < D; ++k) {
      T lo = fbox[size_t(c0) * 2 * D + k], hi = fbox[size_t(c0) * 2 * D + D + k];
      for (uint32_t f = c0 + 1; f < c1; ++f) {
        const T l = fbox[size_t(f) * 2 * D + k], h = fbox[size_t(f) * 2 * D + D + k];
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
      }
      box[c * 2 * D + k] = lo;
      box[c * 2 * D + D + k] = hi;
    }
  }
}

__global__ void set_u32_kernel(uint32_t* p, uint32_t v) { *p = v; }

// Blocks for a grid-stride loop over n items.
unsigned blocks_for(size_t n, int threads) {
  const size_t want = (n + size_t(threads) - 1) / size_t(threads);
  const size_t cap = size_t(device_facts().sms) * 32;
  return unsigned(std::max<size_t>(1, std::min(want, cap)));
}

// Density map on the device; `sorted` receives the coordinates in map order.
template <typename T, int D>
struct DeviceMap {
  DensityGeometry geo;
  std::vector<size_t> cells;  // per level
  DevMap<T> dev{};
  std::vector<T> root_box;     // host copy of the root's box (2 * D)
};

template <typename T, int D>
DeviceMap<T, D> build_device_map(Call& call, const PointsView& v, Coords<T>& sorted,
                                 double leaf_points) {
  const size_t n = v.n;
  Coords<T> raw{};
  for (int k = 0; k < D; ++k) raw.p[k] = call.alloc<T>(n, "points");
  upload_points<T>(call, v, raw.p);
  auto t0 = Clock::now();
  cudaStream_t st = call.stream();
  // Bounding box of the rounded coordinates (host: the same values as the CPU engine's map).
  Bounds box;
  box.dims = D;
  {
    T* mm = call.alloc<T>(2, "bounds");
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceReduce::Min(nullptr, tmp_bytes, raw.p[0], mm, n, st));
    void* tmp = call.alloc_bytes(tmp_bytes, "reduce temp");
    for (int k = 0; k < D; ++k) {
      G2_CUDA(cub::DeviceReduce::Min(tmp, tmp_bytes, raw.p[k], mm, n, st));
      G2_CUDA(cub::DeviceReduce::Max(tmp, tmp_bytes, raw.p[k], mm + 1, n, st));
      T h[2];
      G2_CUDA(cudaMemcpyAsync(h, mm, sizeof h, cudaMemcpyDeviceToHost, st));
      call.sync();
      box.lo[k] = double(h[0]);
      box.hi[k] = double(h[1]);
    }
    call.free(tmp);
    call.free(mm);
  }
  DeviceMap<T, D> m;
  m.geo = density_geometry(n, box, leaf_points);
  const int L = m.geo.leaf;
  m.dev.leaf = L;
  m.cells.assign(size_t(L) + 1, 0);

  u64* keys = call.alloc<u64>(n, "map keys");
  u64* keys2 = call.alloc<u64>(n, "map keys");
  uint32_t* idx = call.alloc<uint32_t>(n, "map order");
  uint32_t* idx2 = call.alloc<uint32_t>(n, "map order");
  keys_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, n, m.geo, keys, idx);
  G2_CUDA_LAUNCH("density map keys");
  {
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, keys, keys2, idx, idx2, n, 0,
                                            std::max(1, D * L), st));
    void* tmp = call.alloc_bytes(tmp_bytes, "sort temp");
    G2_CUDA(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, keys, keys2, idx, idx2, n, 0,
                                            std::max(1, D * L), st));
    call.free(tmp);
  }
  call.free(idx);
  for (int k = 0; k < D; ++k) sorted.p[k] = call.alloc<T>(n, "sorted points");
  gather_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, sorted, idx2, n);
  G2_CUDA_LAUNCH("density map gather");
  call.free(idx2);
  for (int k = 0; k < D; ++k) call.free(raw.p[k]);

  // Leaf level: runs of equal keys (keys2 sorted), counts -> begin by an exclusive scan.
  uint32_t* nruns = call.alloc<uint32_t>(1, "run count");
  auto run_length = [&](const u64* in, size_t len, u64* uniq, uint32_t* counts) -> size_t {
    size_t tb = 0;
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, tb, in, uniq, counts, nruns, len, st));
    void* tmp = call.alloc_bytes(tb, "run-length temp");
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(tmp, tb, in, uniq, counts, nruns, len, st));
    uint32_t h = 0;
    G2_CUDA(cudaMemcpyAsync(&h, nruns, 4, cudaMemcpyDeviceToHost, st));
    call.sync();
    call.free(tmp);
    return h;
  };
  auto exclusive_scan = [&](uint32_t* counts, size_t len, uint32_t* out) {
    // counts has len + 1 entries, the last set to 0: out[len] is the total.
    set_u32_kernel<<<1, 1, 0, st>>>(counts + len, 0);
    G2_CUDA_LAUNCH("scan tail");
    size_t tb = 0;
    G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tb, counts, out, len + 1, st));
    void* tmp = call.alloc_bytes(tb, "scan temp");
    G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp, tb, counts, out, len + 1, st));
    call.free(tmp);
  };
  u64* uniq = keys;  // the unsorted keys are no longer needed
  uint32_t* counts = call.alloc<uint32_t>(n + 1, "run lengths");
  size_t cells = run_length(keys2, n, uniq, counts);
  {
    uint32_t* begin = call.alloc<uint32_t>(cells + 1, "map begin");
    exclusive_scan(counts, cells, begin);
    T* bx = call.alloc<T>(cells * 2 * D, "map boxes");
    leaf_box_kernel<T, D><<<blocks_for(cells, 128), 128, 0, st>>>(sorted, begin, cells, bx);
    G2_CUDA_LAUNCH("density map leaf boxes");
    m.dev.lv[L] = DevLevel<T>{begin, nullptr, bx};
    m.cells[size_t(L)] = cells;
  }
  // Coarser levels: parent keys of the finer level's cells, runs, scans.
  u64* pk = keys2;
  for (int l = L - 1; l >= 0; --l) {
    const size_t fc = m.cells[size_t(l) + 1];
    parent_keys_kernel<<<blocks_for(fc, 256), 256, 0, st>>>(uniq, fc, D, pk);
    G2_CUDA_LAUNCH("density map parent keys");
    const size_t pc = run_length(pk, fc, uniq, counts);
    uint32_t* child = call.alloc<uint32_t>(pc + 1, "map children");
    exclusive_scan(counts, pc, child);
    uint32_t* begin = call.alloc<uint32_t>(pc + 1, "map begin");
    set_u32_kernel<<<1, 1, 0, st>>>(begin + pc, uint32_t(n));
    G2_CUDA_LAUNCH("map end");
    T* bx = call.alloc<T>(pc * 2 * D, "map boxes");
    parent_kernel<T, D><<<blocks_for(pc, 128), 128, 0, st>>>(
        child, pc, m.dev.lv[l + 1].begin, m.dev.lv[l + 1].box, begin, bx);
    G2_CUDA_LAUNCH("density map parents");
    m.dev.lv[l] = DevLevel<T>{begin, child, bx};
    m.cells[size_t(l)] = pc;
  }
  call.free(counts);
  call.free(keys);
  call.free(keys2);
  call.free(nruns);
  m.root_box.resize(2 * D);
  G2_CUDA(cudaMemcpyAsync(m.root_box.data(), m.dev.lv[0].box, 2 * D * sizeof(T),
                          cudaMemcpyDeviceToHost, st));
  call.sync();
  call.ctl.stats.prepare_s += seconds_since(t0);
  return m;
}

// Per-level counters of the walk on the device: visited, resolved, examined (level-major).
struct DevStats {
  u64* c;  // 3 * kResolveMaxLevels + 1 (resolved point pairs)
};

// SDH operation of the walk.
template <typename T>
struct SdhWalkOp {
  T inv_w, nbt, resolved_beyond, beyond;
  int nb;
  u64* hist;
  __device__ int test(T lo, T hi) const { return resolve_bucket<T>(lo, hi, inv_w, nbt, resolved_beyond); }
  __device__ bool hopeless(T lo, T hi) const {
    return sdh_bucket<T>(hi, inv_w, nbt, resolved_beyond) -
               sdh_bucket<T>(lo, inv_w, nbt, resolved_beyond) >= 2;
  }
};

// Pair count operation of the walk.
template <typename T>
struct CountWalkOp {
  T r2;
  u64* total;
  __device__ int test(T lo, T hi) const { return resolve_count<T>(lo, hi, r2); }
  __device__ bool hopeless(T, T) const { return false; }
};

// Appends to a list with one atomic per group of active lanes; returns the slot.
__device__ __forceinline__ u64 append_slot(u64* counter) {
  cg::coalesced_group g = cg::coalesced_threads();
  u64 base = 0;
  if (g.thread_rank() == 0) base = atomicAdd(counter, u64(g.size()));
  return g.shfl(base, 0) + g.thread_rank();
}

// Expands a chunk of unresolved cell pairs of `level`: tests every child pair. `smem_hist`:
// the SDH's resolved counts go through a shared-memory histogram (nb <= the block's space).
template <typename T, int D, bool SDH, bool SMEM>
__global__ void expand_kernel(DevMap<T> map, int level, const uint2* in, uint32_t m, uint2* out,
                              u64* out_n, uint4* work, u64* work_n, u64 direct_pairs,
                              u64 min_pairs, SdhWalkOp<T> sdh, CountWalkOp<T> cnt, DevStats stats) {
  extern __shared__ u64 sh[];
  if (SDH && SMEM) {
    for (int k = threadIdx.x; k < sdh.nb; k += blockDim.x) sh[k] = 0;
    __syncthreads();
  }
  const DevLevel<T> lv = map.lv[level];
  const int cl = level + 1;
  const DevLevel<T> cv = map.lv[cl];
  u64 visited = 0, resolved = 0, examined = 0, resolved_pairs = 0, counted = 0;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < m; t += gridDim.x * blockDim.x) {
    const uint2 p = in[t];
    const uint32_t a0 = lv.child[p.x], a1 = lv.child[p.x + 1];
    const uint32_t b0 = lv.child[p.y], b1 = lv.child[p.y + 1];
    for (uint32_t i = a0; i < a1; ++i) {
      const uint32_t i0 = cv.begin[i], i1 = cv.begin[i + 1];
      T ab[2 * D];
      for (int k = 0; k < 2 * D; ++k) ab[k] = cv.box[size_t(i) * 2 * D + k];
      for (uint32_t j = p.x == p.y ? i : b0; j < b1; ++j) {
        const uint32_t j0 = cv.begin[j], j1 = cv.begin[j + 1];
        const u64 na = i1 - i0;
        const u64 pairs = i == j ? na * (na - 1) / 2 : na * u64(j1 - j0);
        if (pairs == 0) continue;
        ++visited;
        T bb[2 * D];
        for (int k = 0; k < 2 * D; ++k) bb[k] = cv.box[size_t(j) * 2 * D + k];
        T lo, hi;
        d2_bounds<T, D>(ab, ab + D, bb, bb + D, &lo, &hi);
        const int v = SDH ? sdh.test(lo, hi) : cnt.test(lo, hi);
        if (v >= 0) {
          ++resolved;
          resolved_pairs += pairs;
          if (SDH) {
            if (v < sdh.nb) {
              if (SMEM)
                atomicAdd(&sh[v], pairs);
              else
                atomicAdd(&sdh.hist[v], pairs);
            }
          } else if (v == 1) {
            counted += pairs;
          }
          continue;
        }
        const bool hopeless = SDH ? sdh.hopeless(lo, hi) : cnt.hopeless(lo, hi);
        if (cl == map.leaf || pairs <= min_pairs || (pairs <= direct_pairs && hopeless)) {
          examined += pairs;
          work[append_slot(work_n)] = make_uint4(i0, i1, j0, j1);
        } else {
          out[append_slot(out_n)] = make_uint2(i, j);
        }
      }
    }
  }
  if (visited) atomicAdd(&stats.c[cl], visited);
  if (resolved) atomicAdd(&stats.c[kResolveMaxLevels + cl], resolved);
  if (examined) atomicAdd(&stats.c[2 * kResolveMaxLevels + cl], examined);
  if (resolved_pairs) atomicAdd(&stats.c[3 * kResolveMaxLevels], resolved_pairs);
  if (!SDH && counted) atomicAdd(cnt.total, counted);
  if (SDH && SMEM) {
    __syncthreads();
    for (int k = threadIdx.x; k < sdh.nb; k += blockDim.x)
      if (sh[k]) atomicAdd(&sdh.hist[k], sh[k]);
  }
}

// Adds v to bucket k of the block's shared histogram or of the global one.
template <bool SMEM>
__device__ __forceinline__ void hist_add(u64* sh, u64* global, int k, u64 v) {
  if (SMEM)
    atomicAdd(&sh[k], v);
  else
    atomicAdd(&global[k], v);
}

// Unresolved point ranges, one warp per entry {i0, i1, j0, j1} (i0 == j0: one cell, pairs
// i < j): lanes take rows, every lane walks the columns.
template <typename T, int D, bool SDH, bool SMEM, bool NOCALL>
__global__ void work_kernel(Coords<T> s, const uint4* work, size_t m, SdhWalkOp<T> sdh,
                            CountWalkOp<T> cnt) {
  extern __shared__ u64 sh[];
  if (SDH && SMEM) {
    for (int k = threadIdx.x; k < sdh.nb; k += blockDim.x) sh[k] = 0;
    __syncthreads();
  }
  const int lane = threadIdx.x & 31;
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) >> 5;
  const size_t warps = (size_t(gridDim.x) * blockDim.x) >> 5;
  u64 counted = 0;
  for (size_t e = warp; e < m; e += warps) {
    const uint4 w = work[e];
    const bool self = w.x == w.z;
    for (uint32_t i = w.x + lane; i < w.y; i += 32) {
      T a[D];
      for (int k = 0; k < D; ++k) a[k] = s.p[k][i];
      uint32_t c = 0;
      // SDH: the pairs of an unresolved cell pair fall in a few adjacent buckets, so each row
      // counts the 4 buckets from `base` in registers and adds them to the histogram once;
      // other buckets go to it pair by pair.
      int base = -1;
      uint32_t r0 = 0, r1 = 0, r2 = 0, r3 = 0;
      for (uint32_t j = self ? i + 1 : w.z; j < w.w; ++j) {
        T b[D];
        for (int k = 0; k < D; ++k) b[k] = __ldg(&s.p[k][j]);
        const T d2 = sq_dist<T, D>(a, b);
        if (SDH) {
          int kb;
          if constexpr (NOCALL && sizeof(T) == 4)
            kb = sdh_bucket_nocall(d2, sdh.inv_w, sdh.nbt, sdh.beyond);
          else
            kb = sdh_bucket<T>(d2, sdh.inv_w, sdh.nbt, sdh.beyond);
          if (base < 0) base = kb > 0 ? kb - 1 : 0;
          const int off = kb - base;
          r0 += off == 0;
          r1 += off == 1;
          r2 += off == 2;
          r3 += off == 3;
          if (kb >= 0 && (off < 0 || off > 3)) hist_add<SMEM>(sh, sdh.hist, kb, 1);
        } else {
          c += d2 <= cnt.r2 ? 1u : 0u;
        }
      }
      if (SDH && base >= 0) {
        // base >= 0 and base + 3 may pass the last bucket only with zero counts there
        if (r0) hist_add<SMEM>(sh, sdh.hist, base, r0);
        if (r1) hist_add<SMEM>(sh, sdh.hist, base + 1, r1);
        if (r2) hist_add<SMEM>(sh, sdh.hist, base + 2, r2);
        if (r3) hist_add<SMEM>(sh, sdh.hist, base + 3, r3);
      }
      counted += c;
    }
  }
  if (!SDH) {
    for (int o = 16; o > 0; o >>= 1) counted += __shfl_down_sync(0xffffffffu, counted, o);
    if (lane == 0 && counted) atomicAdd(cnt.total, counted);
  }
  if (SDH && SMEM) {
    __syncthreads();
    for (int k = threadIdx.x; k < sdh.nb; k += blockDim.x)
      if (sh[k]) atomicAdd(&sdh.hist[k], sh[k]);
  }
}

constexpr int kExpandThreads = 256;
constexpr int kWorkThreads = 256;
// Largest SDH histogram kept in shared memory by the walk kernels (64 KB of uint64).
constexpr int kResolveSmemBuckets = 8192;

// The walk: returns nothing; results accumulate in sdh.hist or cnt.total on the device.
template <typename T, int D, bool SDH>
void walk(Call& call, const DeviceMap<T, D>& m, const Coords<T>& s, SdhWalkOp<T> sdh,
          CountWalkOp<T> cnt, bool nocall, ResolveStats* rs) {
  cudaStream_t st = call.stream();
  const int L = m.geo.leaf;
  const bool smem = SDH && sdh.nb <= kResolveSmemBuckets;
  const size_t smem_bytes = smem ? size_t(sdh.nb) * 8 : 0;
  DevStats stats{call.alloc<u64>(3 * kResolveMaxLevels + 1, "walk stats")};
  G2_CUDA(cudaMemsetAsync(stats.c, 0, (3 * kResolveMaxLevels + 1) * 8, st));
  const size_t qcap = cuda_tuning::kResolveQueuePairs;
  const size_t wcap = cuda_tuning::kResolveWorkEntries;
  const size_t maxc = D == 2 ? 16 : 64;  // child pairs of one pair
  uint4* work = call.alloc<uint4>(wcap, "work list");
  u64* ctr = call.alloc<u64>(2, "walk counters");  // [0] next queue, [1] work list
  G2_CUDA(cudaMemsetAsync(ctr, 0, 16, st));
  std::vector<uint2*> q(size_t(L) + 1, nullptr);
  std::vector<size_t> qn(size_t(L) + 1, 0);
  size_t wn = 0;
  auto flush = [&]() {
    if (wn == 0) return;
    const unsigned blocks = blocks_for(wn * 32, kWorkThreads);
    auto launch = [&](auto kern) {
      if (smem_bytes > 48 * 1024)
        G2_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(smem_bytes)));
      kern<<<blocks, kWorkThreads, smem_bytes, st>>>(s, work, wn, sdh, cnt);
    };
    if (smem)
      nocall ? launch(work_kernel<T, D, SDH, true, true>) : launch(work_kernel<T, D, SDH, true, false>);
    else
      nocall ? launch(work_kernel<T, D, SDH, false, true>) : launch(work_kernel<T, D, SDH, false, false>);
    G2_CUDA_LAUNCH("resolve work kernel");
    wn = 0;
    G2_CUDA(cudaMemsetAsync(ctr + 1, 0, 8, st));
    call.poll();
  };
  // The root pair: resolved whole, or split (or computed when the map has one level).
  {
    T lo, hi;
    d2_bounds<T, D>(m.root_box.data(), m.root_box.data() + D, m.root_box.data(),
                    m.root_box.data() + D, &lo, &hi);
    const int v = SDH ? resolve_bucket<T>(lo, hi, sdh.inv_w, sdh.nbt, sdh.resolved_beyond)
                      : resolve_count<T>(lo, hi, cnt.r2);
    uint32_t total = 0;
    G2_CUDA(cudaMemcpyAsync(&total, m.dev.lv[0].begin + 1, 4, cudaMemcpyDeviceToHost, st));
    call.sync();
    const u64 pairs = u64(total) * (total - 1) / 2;
    rs->visited[0]++;
    if (v >= 0) {
      rs->resolved[0]++;
      rs->resolved_pairs += pairs;
      if (SDH && v < sdh.nb) {
        std::vector<u64> h(size_t(sdh.nb), 0);
        h[size_t(v)] = pairs;
        G2_CUDA(cudaMemcpyAsync(sdh.hist, h.data(), h.size() * 8, cudaMemcpyHostToDevice, st));
        call.sync();
      }
      if (!SDH && v == 1) {
        G2_CUDA(cudaMemcpyAsync(cnt.total, &pairs, 8, cudaMemcpyHostToDevice, st));
        call.sync();
      }
      return;
    }
    if (L == 0) {
      const uint4 w0 = make_uint4(0, total, 0, total);
      G2_CUDA(cudaMemcpyAsync(work, &w0, sizeof w0, cudaMemcpyHostToDevice, st));
      wn = 1;
      rs->examined[0] += pairs;
      rs->examined_pairs += pairs;
      flush();
      call.sync();
      return;
    }
    q[0] = call.alloc<uint2>(1, "walk queue");
    const uint2 r0 = make_uint2(0, 0);
    G2_CUDA(cudaMemcpyAsync(q[0], &r0, sizeof r0, cudaMemcpyHostToDevice, st));
    qn[0] = 1;
  }
  for (;;) {
    int l = -1;
    for (int k = L - 1; k >= 0; --k)
      if (qn[size_t(k)]) {
        l = k;
        break;
      }
    if (l < 0) break;
    if (wcap - wn < maxc * 64) {
      flush();
      continue;
    }
    const size_t chunk = std::min({qn[size_t(l)], qcap / maxc, (wcap - wn) / maxc});
    if (l + 1 < L && !q[size_t(l) + 1]) q[size_t(l) + 1] = call.alloc<uint2>(qcap, "walk queue");
    qn[size_t(l)] -= chunk;
    G2_CUDA(cudaMemsetAsync(ctr, 0, 8, st));
    const unsigned blocks = blocks_for(chunk, kExpandThreads);
    auto launch = [&](auto kern) {
      if (smem_bytes > 48 * 1024)
        G2_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(smem_bytes)));
      kern<<<blocks, kExpandThreads, smem_bytes, st>>>(
          m.dev, l, q[size_t(l)] + qn[size_t(l)], uint32_t(chunk), q[size_t(l) + 1], ctr, work,
          ctr + 1, cuda_tuning::kResolveDirectPairs[D - 2], cuda_tuning::kResolveMinPairs, sdh,
          cnt, stats);
    };
    smem ? launch(expand_kernel<T, D, SDH, true>) : launch(expand_kernel<T, D, SDH, false>);
    G2_CUDA_LAUNCH("resolve expand kernel");
    u64 h[2];
    G2_CUDA(cudaMemcpyAsync(h, ctr, 16, cudaMemcpyDeviceToHost, st));
    call.sync();
    if (l + 1 < L) qn[size_t(l) + 1] = size_t(h[0]);
    wn = size_t(h[1]);
    if (wn > wcap / 2) flush();
  }
  flush();
  std::vector<u64> hs(3 * kResolveMaxLevels + 1);
  G2_CUDA(cudaMemcpyAsync(hs.data(), stats.c, hs.size() * 8, cudaMemcpyDeviceToHost, st));
  call.sync();
  for (int l = 0; l < kResolveMaxLevels; ++l) {
    rs->visited[l] += hs[size_t(l)];
    rs->resolved[l] += hs[size_t(kResolveMaxLevels + l)];
    rs->examined[l] += hs[size_t(2 * kResolveMaxLevels + l)];
    rs->examined_pairs += hs[size_t(2 * kResolveMaxLevels + l)];
  }
  rs->resolved_pairs += hs[3 * kResolveMaxLevels];
}

template <typename T, int D>
std::vector<uint64_t> resolve_sdh_t(const SdhProblem& p, Control& ctl, ResolveStats* rs) {
  Call call(ctl);
  auto t0 = Clock::now();
  Coords<T> s{};
  auto m = build_device_map<T, D>(call, p.pts, s, cuda_tuning::kResolveLeafPoints);
  rs->levels = m.geo.leaf + 1;
  rs->build_s += seconds_since(t0);
  t0 = Clock::now();
  const int nb = p.params.nbuckets;
  u64* hist = call.alloc<u64>(size_t(nb), "histogram");
  G2_CUDA(cudaMemsetAsync(hist, 0, size_t(nb) * 8, call.stream()));
  SdhWalkOp<T> op;
  op.inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  op.nbt = T(nb);
  op.resolved_beyond = T(p.params.explicit_width ? nb : nb - 1);
  op.beyond = sdh_beyond<T>(nb, !p.params.explicit_width);
  op.nb = nb;
  op.hist = hist;
  const bool nocall = sizeof(T) == 4 && p.params.inv_width_f >= 0.0f &&
                      p.params.inv_width_f <= 1099511627776.0f;  // 2^40 (sdh_bucket.cuh)
  walk<T, D, true>(call, m, s, op, CountWalkOp<T>{T(0), nullptr}, nocall, rs);
  std::vector<uint64_t> out(size_t(nb), 0);
  download(call, out.data(), hist, size_t(nb) * 8);
  const double w = seconds_since(t0);
  rs->walk_s += w;
  ctl.stats.kernel_s += w;
  return out;
}

template <typename T, int D>
uint64_t resolve_count_t(const PairCountProblem& p, Control& ctl, ResolveStats* rs) {
  Call call(ctl);
  auto t0 = Clock::now();
  Coords<T> s{};
  auto m = build_device_map<T, D>(call, p.pts, s, cuda_tuning::kResolveLeafPoints);
  rs->levels = m.geo.leaf + 1;
  rs->build_s += seconds_since(t0);
  t0 = Clock::now();
  u64* total = call.alloc<u64>(1, "pair count");
  G2_CUDA(cudaMemsetAsync(total, 0, 8, call.stream()));
  CountWalkOp<T> op{sizeof(T) == 4 ? T(p.r2_f) : T(p.r2), total};
  walk<T, D, false>(call, m, s, SdhWalkOp<T>{}, op, false, rs);
  u64 out = 0;
  download(call, &out, total, 8);
  const double w = seconds_since(t0);
  rs->walk_s += w;
  ctl.stats.kernel_s += w;
  return out;
}

}  // namespace

bool resolve_sdh_wins(size_t n, int dims, int nbuckets) {
  using namespace cuda_tuning;
  if ((dims != 2 && dims != 3) || n < kResolveMinPoints) return false;
  const double s = std::pow(kResolveStopPoints / double(n), 1.0 / dims);
  const double frac = kResolveUnresolvedCoef[dims - 2] * s * nbuckets / std::sqrt(double(dims));
  return frac < kResolveWinFraction;
}

bool resolve_count_wins(size_t n, int dims, double r_rel) {
  using namespace cuda_tuning;
  if ((dims != 2 && dims != 3) || n < kResolveMinPoints || !(r_rel > 0)) return false;
  const double s = std::pow(kResolveStopPoints / double(n), 1.0 / dims);
  const double shell = (dims == 2 ? 2 * M_PI * r_rel : 4 * M_PI * r_rel * r_rel) * 2 * s;
  const double grid = std::pow(std::min(1.0, 3 * r_rel), dims);
  return shell * kResolveUnresolvedCoef[dims - 2] < grid * kResolveWinFraction;
}

std::vector<uint64_t> resolve_sdh(const SdhProblem& p, Control& ctl) {
  ResolveStats local;
  ResolveStats* rs = ctl.resolve_stats ? ctl.resolve_stats : &local;
  const uint64_t before = rs->examined_pairs;
  std::vector<uint64_t> out;
  if (p.prec == Precision::Float32)
    out = p.pts.dims == 2 ? resolve_sdh_t<float, 2>(p, ctl, rs) : resolve_sdh_t<float, 3>(p, ctl, rs);
  else
    out = p.pts.dims == 2 ? resolve_sdh_t<double, 2>(p, ctl, rs)
                          : resolve_sdh_t<double, 3>(p, ctl, rs);
  ctl.stats.pairs_examined += rs->examined_pairs - before;
  return out;
}

uint64_t resolve_pair_count(const PairCountProblem& p, Control& ctl) {
  ResolveStats local;
  ResolveStats* rs = ctl.resolve_stats ? ctl.resolve_stats : &local;
  const uint64_t before = rs->examined_pairs;
  uint64_t out;
  if (p.prec == Precision::Float32)
    out = p.pts.dims == 2 ? resolve_count_t<float, 2>(p, ctl, rs)
                          : resolve_count_t<float, 3>(p, ctl, rs);
  else
    out = p.pts.dims == 2 ? resolve_count_t<double, 2>(p, ctl, rs)
                          : resolve_count_t<double, 3>(p, ctl, rs);
  ctl.stats.pairs_examined += rs->examined_pairs - before;
  return out;
}

}  // namespace cuda
}  // namespace gpu2bs
