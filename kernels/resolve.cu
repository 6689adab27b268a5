// Resolution of whole cell pairs on the GPU (core/resolve.h has the method and its bound): the
// density map is built on the device with CUB (Z-order keys, radix sort, run-length encoding
// per level, exclusive scans), then the cell pairs are walked level by level in bounded chunks:
// each expand kernel tests the child pairs of a chunk of unresolved pairs, counts resolved ones
// whole (n_a x n_b into a block-private histogram, or the pair count), queues the rest for the
// next level, and hands unresolved small pairs (or leaf pairs) to a work list together with
// the bucket range their distance bounds allow.
//
// The work kernel takes one work entry (cell a, cell b) per warp. The points of b come 32 at a
// time, one per lane, and each is first tested against a's bounding box (the bound of
// core/resolve.h with b's box shrunk to the point): a point of b whose distance range to the
// whole cell a maps to one bucket (or one side of r) counts n_a pairs at once. The other points
// of b are compacted into the warp's staging area in shared memory; once 32 or more are staged
// (or b is done), a pass over a tests every point of a against the bounding box of the staged
// points (the same bound, a's side shrunk to the point): a resolved one counts the staged
// points at once, the others queue and are computed 32 at a time, one per lane, against every
// staged point (vector loads, 4 points per load). So only the pairs left by both tests are
// computed. Entries with fewer than kTwoSidedPoints points in a or b test the points of b only
// and compute the others against the lanes' points of a (one pass, less work per entry). An
// SDH entry whose range spans two or three buckets kb0..kb0+2 is counted against the
// thresholds T[k] = the smallest d2 with bucket >= k (computed exactly per call by a binary
// search over the bit patterns with sdh_bucket itself; sdh_bucket is non-decreasing in d2, so
// d2 >= T[k] if and only if bucket(d2) >= k): each pair costs its squared distance and one or
// two comparisons counted in registers. The expand kernel adds the entry's n_a x n_b pairs to
// bucket kb0; the work kernel counts the pairs at or above kb0 + 1 and kb0 + 2 in an "exceed"
// array, and the host folds it in: hist[k] += exceed[k] - exceed[k + 1]. Entries of one cell
// with itself, and entries whose range spans more buckets, take the general path (the engine's
// sdh_bucket per pair, shared-memory histogram). Per entry the warp prefetches its next entry
// into L1, bounds the staged points with integer min / max reductions (float) and sums its
// counts with one integer reduction each (entries of fewer than 2^32 pairs). Memory stays
// bounded: the walk always expands the deepest non-empty level, so the level below it is empty
// and a chunk's children always fit.
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cub/cub.cuh>
#include <type_traits>
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

// Z-order keys of the leaf cells of `geo` and, where idx is not null, the identity order.
template <typename T, int D>
__global__ void keys_kernel(Coords<T> c, size_t n, DensityGeometry geo, u64* keys,
                            uint32_t* idx) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    double x[3];
    for (int k = 0; k < D; ++k) x[k] = double(c.p[k][i]);
    keys[i] = geo.key(x);
    if (idx) idx[i] = uint32_t(i);
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
  DensityGeometry geo;         // the full-depth geometry of the keys (geo.leaf >= dev.leaf)
  std::vector<size_t> cells;   // per built level
  DevMap<T> dev{};             // levels 0 .. dev.leaf
  std::vector<T> root_box;     // host copy of the root's box (2 * D)
};

// The level the map stops at for a walk that splits only cell pairs of more than
// `split_pairs` point pairs: the first level whose uniform cells hold at most
// sqrt(split_pairs) points (at most `leaf`; `leaf` when split_pairs is 0).
int map_stop_level(size_t n, int dims, unsigned long long split_pairs, int leaf) {
  if (!split_pairs) return leaf;
  const double per_cell = std::sqrt(double(split_pairs));
  const double ratio = std::max(1.0, double(n) / per_cell);
  return std::max(0, std::min(leaf, int(std::ceil(std::log2(ratio) / dims))));
}

// Builds the map of the call's points on the device. Points are sorted by their Z-order key at
// the full depth of the geometry (about `leaf_points` per leaf cell), so every cell's points are
// in Z order; the levels are built only down to the stop level of a walk that splits pairs of
// more than `split_pairs` point pairs (0: every level). While a cell of that level holds more
// than sqrt(split_pairs) points (clustered data, or points that do not fill the cube), the walk
// may split its pairs, and the map goes one level deeper, at most to the full depth. So the walk
// never needs a level that is not built.
template <typename T, int D>
DeviceMap<T, D> build_device_map(Call& call, const PointsView& v, Coords<T>& sorted,
                                 double leaf_points, unsigned long long split_pairs) {
  const size_t n = v.n;
  Coords<T> raw{};
  for (int k = 0; k < D; ++k) raw.p[k] = call.alloc<T>(n, "points");
  upload_points<T>(call, v, raw.p);
  auto t0 = Clock::now();
  cudaStream_t st = call.stream();
  // Bounding box of the rounded coordinates (host: the same values as the CPU engine's map),
  // every axis's minimum and maximum read back at once.
  Bounds box;
  box.dims = D;
  {
    T* mm = call.alloc<T>(2 * D, "bounds");
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceReduce::Min(nullptr, tmp_bytes, raw.p[0], mm, n, st));
    void* tmp = call.alloc_bytes(tmp_bytes, "reduce temp");
    for (int k = 0; k < D; ++k) {
      G2_CUDA(cub::DeviceReduce::Min(tmp, tmp_bytes, raw.p[k], mm + 2 * k, n, st));
      G2_CUDA(cub::DeviceReduce::Max(tmp, tmp_bytes, raw.p[k], mm + 2 * k + 1, n, st));
    }
    T h[2 * D];
    G2_CUDA(cudaMemcpyAsync(h, mm, sizeof h, cudaMemcpyDeviceToHost, st));
    call.sync();
    for (int k = 0; k < D; ++k) {
      box.lo[k] = double(h[2 * k]);
      box.hi[k] = double(h[2 * k + 1]);
    }
    call.free(tmp);
    call.free(mm);
  }
  DeviceMap<T, D> m;
  m.geo = density_geometry(n, box, leaf_points);
  const int Lf = m.geo.leaf;

  u64* keys = call.alloc<u64>(n, "map keys");
  u64* keys2 = call.alloc<u64>(n, "map keys");
  uint32_t* idx = call.alloc<uint32_t>(n, "map order");
  uint32_t* idx2 = call.alloc<uint32_t>(n, "map order");
  keys_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, n, m.geo, keys, idx);
  G2_CUDA_LAUNCH("density map keys");
  {
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, keys, keys2, idx, idx2, n, 0,
                                            std::max(1, D * Lf), st));
    void* tmp = call.alloc_bytes(tmp_bytes, "sort temp");
    G2_CUDA(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, keys, keys2, idx, idx2, n, 0,
                                            std::max(1, D * Lf), st));
    call.free(tmp);
  }
  call.free(idx);
  for (int k = 0; k < D; ++k) sorted.p[k] = call.alloc<T>(n, "sorted points");
  gather_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, sorted, idx2, n);
  G2_CUDA_LAUNCH("density map gather");
  call.free(idx2);
  for (int k = 0; k < D; ++k) call.free(raw.p[k]);

  // One temporary buffer serves every run-length pass, scan and maximum (each sized for n).
  u64* uniq = keys;  // the unsorted keys are no longer needed
  uint32_t* counts = call.alloc<uint32_t>(n + 1, "run lengths");
  uint32_t* rd = call.alloc<uint32_t>(2, "run count");  // [0] runs, [1] largest run
  void* tmp = nullptr;
  size_t tmp_bytes = 0;
  {
    size_t a = 0, b = 0, c = 0;
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, a, keys2, uniq, counts, rd, n, st));
    G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, b, counts, counts, n + 1, st));
    G2_CUDA(cub::DeviceReduce::Max(nullptr, c, counts, rd + 1, n, st));
    tmp_bytes = std::max({a, b, c, size_t(1)});
    tmp = call.alloc_bytes(tmp_bytes, "map temp");
  }
  auto run_length = [&](const u64* in, size_t len, u64* out, uint32_t* cnt) {
    size_t tb = tmp_bytes;
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(tmp, tb, in, out, cnt, rd, len, st));
  };
  // Reads the last pass's run count and largest run back (one synchronization).
  auto read_runs = [&](uint32_t* two) {
    G2_CUDA(cudaMemcpyAsync(two, rd, 8, cudaMemcpyDeviceToHost, st));
    call.sync();
  };
  auto exclusive_scan = [&](uint32_t* cnt, size_t len, uint32_t* out) {
    // cnt has len + 1 entries, the last set to 0: out[len] is the total.
    set_u32_kernel<<<1, 1, 0, st>>>(cnt + len, 0);
    G2_CUDA_LAUNCH("scan tail");
    size_t tb = tmp_bytes;
    G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp, tb, cnt, out, len + 1, st));
  };

  // Leaf level of the map: runs of equal keys at the stop level (the sorted keys shifted), with
  // the largest run; the count and the largest run come back in one read. Counts past the runs
  // are zero, so the maximum runs over all n entries before their number is known.
  int L = map_stop_level(n, D, split_pairs, Lf);
  uint32_t hr[2] = {0, 0};
  while (L < Lf) {
    parent_keys_kernel<<<blocks_for(n, 256), 256, 0, st>>>(keys2, n, D * (Lf - L), keys2);
    G2_CUDA_LAUNCH("density map stop keys");
    G2_CUDA(cudaMemsetAsync(counts, 0, n * sizeof(uint32_t), st));
    run_length(keys2, n, uniq, counts);
    size_t tb = tmp_bytes;
    G2_CUDA(cub::DeviceReduce::Max(tmp, tb, counts, rd + 1, n, st));
    read_runs(hr);
    if (u64(hr[1]) * hr[1] <= split_pairs) break;
    // A cell the walk may split (clustered data, or points not filling the cube): one level
    // deeper, the keys again from the sorted points.
    ++L;
    keys_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(sorted, n, m.geo, keys2, nullptr);
    G2_CUDA_LAUNCH("density map keys");
  }
  if (L == Lf) {
    run_length(keys2, n, uniq, counts);
    read_runs(hr);
  }
  m.dev.leaf = L;
  m.cells.assign(size_t(L) + 1, 0);
  {
    const size_t cells = hr[0];
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
    run_length(pk, fc, uniq, counts);
    read_runs(hr);
    const size_t pc = hr[0];
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
  call.free(tmp);
  call.free(counts);
  call.free(keys);
  call.free(keys2);
  call.free(rd);
  m.root_box.resize(2 * D);
  G2_CUDA(cudaMemcpyAsync(m.root_box.data(), m.dev.lv[0].box, 2 * D * sizeof(T),
                          cudaMemcpyDeviceToHost, st));
  call.sync();
  call.ctl.stats.prepare_s += seconds_since(t0);
  return m;
}

// Per-level counters of the walk on the device: visited, resolved, examined (level-major).
struct DevStats {
  // visited, resolved, examined per level (3 * kResolveMaxLevels), resolved point pairs (1),
  // pairs resolved point by box per level (kResolveMaxLevels), work entries taken by the
  // one-sided and by the two-sided test (2)
  u64* c;
};

// SDH operation of the walk.
template <typename T>
struct SdhWalkOp {
  T inv_w, nbt, resolved_beyond, beyond;
  int nb;
  u64* hist;
  u64* exc;       // nb + 3: pairs of fast work entries with bucket >= k (see the file comment)
  const T* thr;   // nb + 3: thresholds T[k] (NaN where no d2 reaches bucket k)
  // The bucket range [k0, k1] of d2 in [lo, hi] (mapped: nb = beyond with an explicit width).
  __device__ void range(T lo, T hi, int* k0, int* k1) const {
    *k0 = sdh_bucket<T>(lo, inv_w, nbt, resolved_beyond);
    *k1 = sdh_bucket<T>(hi, inv_w, nbt, resolved_beyond);
  }
};

// Pair count operation of the walk.
template <typename T>
struct CountWalkOp {
  T r2;
  u64* total;
};

// What the work kernel does with an entry (WorkInfo::mode, low 8 bits; the level above them).
enum WorkMode : uint32_t { kWorkGeneral = 0, kWorkOneEdge = 1, kWorkTwoEdges = 2, kWorkCount = 3 };

// The part of a work entry besides its point ranges: the bounding box of cell a, the first
// bucket kb0 of its distance range (SDH) and the mode with the entry's level.
template <typename T, int D>
struct WorkInfo {
  T box[2 * D];
  uint32_t kb0;
  uint32_t mode;
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
                              u64* out_n, uint4* work, WorkInfo<T, D>* info, u64* work_n,
                              u64 direct_pairs, u64 min_pairs, SdhWalkOp<T> sdh,
                              CountWalkOp<T> cnt, DevStats stats) {
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
        int k0 = 0, k1 = 0, v;
        if (SDH) {
          sdh.range(lo, hi, &k0, &k1);
          v = k0 == k1 ? k0 : -1;
        } else {
          v = resolve_count<T>(lo, hi, cnt.r2);
        }
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
        const bool hopeless = SDH && k1 - k0 >= 2;
        if (cl == map.leaf || pairs <= min_pairs || (pairs <= direct_pairs && hopeless)) {
          examined += pairs;
          const u64 slot = append_slot(work_n);
          work[slot] = make_uint4(i0, i1, j0, j1);
          WorkInfo<T, D> f;
          for (int k = 0; k < 2 * D; ++k) f.box[k] = ab[k];
          uint32_t mode = kWorkGeneral;
          if (SDH && i != j && k1 - k0 <= 2 && k0 < sdh.nb) {
            // fast entry: all its pairs start in bucket k0, the work kernel moves them up
            mode = uint32_t(k1 - k0);
            if (SMEM)
              atomicAdd(&sh[k0], pairs);
            else
              atomicAdd(&sdh.hist[k0], pairs);
          } else if (!SDH && i != j) {
            mode = kWorkCount;
          }
          f.kb0 = uint32_t(k0);
          f.mode = mode | (uint32_t(cl) << 8);
          info[slot] = f;
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

// The general path of a work entry {i0, i1, j0, j1} (i0 == j0: one cell, pairs i < j), for
// one warp: lanes take rows, every lane walks the columns; the SDH bucket per pair with the
// engine's function, 4 buckets from the row's first one counted in registers.
template <typename T, int D, bool SDH, bool SMEM, bool NOCALL>
__device__ void general_entry(const Coords<T>& s, uint4 w, int lane, const SdhWalkOp<T>& sdh,
                              const CountWalkOp<T>& cnt, u64* sh, u64& counted) {
  const bool self = w.x == w.z;
  for (uint32_t i = w.x + lane; i < w.y; i += 32) {
    T a[D];
    for (int k = 0; k < D; ++k) a[k] = s.p[k][i];
    uint32_t c = 0;
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

// A quiet NaN of T: padding points whose every comparison is false.
template <typename T>
__device__ __forceinline__ T nan_of() {
  if constexpr (sizeof(T) == 4)
    return __int_as_float(0x7fffffff);
  else
    return __longlong_as_double(0x7ff8000000000000ll);
}

// c += 1 when d2 >= t (GE) or d2 <= t (!GE) (NaN: never): the comparison of C++ as a float
// compare to a predicate and a predicated increment, two instructions (the compiler's own form
// of c += d2 >= t takes three: the compare, an add and a predicated move).
template <typename T, bool GE>
__device__ __forceinline__ void count_if(unsigned& c, T d2, T t) {
  if constexpr (sizeof(T) == 4) {
    if (GE)
      asm("{\n\t.reg .pred p;\n\tsetp.ge.f32 p, %1, %2;\n\t@p add.u32 %0, %0, 1;\n\t}"
          : "+r"(c) : "f"(d2), "f"(t));
    else
      asm("{\n\t.reg .pred p;\n\tsetp.le.f32 p, %1, %2;\n\t@p add.u32 %0, %0, 1;\n\t}"
          : "+r"(c) : "f"(d2), "f"(t));
  } else {
    c += (GE ? d2 >= t : d2 <= t) ? 1u : 0u;
  }
}

// The lane's pairs with the q4 staged points (SoA with stride S, NaN past the real ones):
// MODE 1 / 2 count d2 >= t1 (and d2 >= t2), MODE 0 counts d2 <= t1 (the pair count).
template <typename T, int D, int MODE, int S>
__device__ __forceinline__ void staged_pairs(const T* stg, int q4, const T (&a)[D], T t1, T t2,
                                             unsigned& c1, unsigned& c2) {
  for (int j = 0; j < q4; j += 4) {
    T q[4][D];
#pragma unroll
    for (int k = 0; k < D; ++k) {
      T v[4];
      load4<T>(stg + k * S + j, v);
#pragma unroll
      for (int u = 0; u < 4; ++u) q[u][k] = v[u];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const T d2 = sq_dist<T, D>(a, q[u]);
      if (MODE == 0) {
        count_if<T, false>(c1, d2, t1);
      } else {
        count_if<T, true>(c1, d2, t1);
        if (MODE == 2) count_if<T, true>(c2, d2, t2);
      }
    }
  }
}

// +infinity of T.
template <typename T>
__device__ __forceinline__ T inf_of() {
  if constexpr (sizeof(T) == 4)
    return __int_as_float(0x7f800000);
  else
    return __longlong_as_double(0x7ff0000000000000ll);
}

// The answer for every pair of a point and a box from their distance bounds [lo, hi]: the
// number k of thresholds t1, t2 at or below the pairs' d2 (SDH) or 1 / 0 for d2 <= r2 or not
// (pair count, r2 = t1); false when the pairs may differ.
template <typename T, bool SDH>
__device__ __forceinline__ bool point_box_answer(T lo, T hi, T t1, T t2, int& k) {
  if (SDH) {
    k = (lo >= t1) + (lo >= t2);
    return k == (hi >= t1) + (hi >= t2);
  }
  k = resolve_count<T>(lo, hi, t1);
  return k >= 0;
}

// Sum over the warp of a 64-bit value (full mask).
__device__ __forceinline__ unsigned long long warp_sum64(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Loads the points c .. min(c + 32, end) of s, one per lane (p; zeros past the end), and tests
// each against the box [lo, hi]: a point whose distance range to the box gives one answer adds
// `per` pairs to the lane's counts (acc1, acc2 as in a_pass) and to pb. Returns the ballot of
// the lanes whose point stays unresolved.
template <typename T, int D, bool SDH>
__device__ __forceinline__ unsigned test_chunk(const Coords<T>& s, uint32_t c, uint32_t end,
                                               int lane, const T* lo, const T* hi, T t1, T t2,
                                               u64 per, T (&p)[D], u64& acc1, u64& acc2,
                                               u64& pb) {
  const bool v = uint32_t(lane) < end - c;
#pragma unroll
  for (int k = 0; k < D; ++k) p[k] = v ? s.p[k][c + lane] : T(0);
  T dlo, dhi;
  d2_bounds<T, D>(lo, hi, p, p, &dlo, &dhi);
  int kk;
  const bool res = point_box_answer<T, SDH>(dlo, dhi, t1, t2, kk);
  if (v && res) {
    pb += per;
    if (kk >= 1) acc1 += per;
    if (SDH && kk >= 2) acc2 += per;
  }
  return __ballot_sync(0xffffffffu, v && !res);
}

// Bounding box [l, h] over the warp of the lanes' values (lanes without a point pass
// l = +inf, h = -inf). Floats go through the warp's integer min / max reduction on keys that
// order like the floats (sign-magnitude to two's complement; only the sign of a zero bound may
// differ from a comparison chain, and the distance bounds square it away).
template <typename T>
__device__ __forceinline__ void warp_box(T& l, T& h) {
  if constexpr (sizeof(T) == 4) {
    const int il = __float_as_int(l), ih = __float_as_int(h);
    const int kl = __reduce_min_sync(0xffffffffu, il ^ ((il >> 31) & 0x7fffffff));
    const int kh = __reduce_max_sync(0xffffffffu, ih ^ ((ih >> 31) & 0x7fffffff));
    l = __int_as_float(kl ^ ((kl >> 31) & 0x7fffffff));
    h = __int_as_float(kh ^ ((kh >> 31) & 0x7fffffff));
  } else {
    for (int o = 16; o > 0; o >>= 1) {
      const T ol = __shfl_xor_sync(0xffffffffu, l, o);
      const T oh = __shfl_xor_sync(0xffffffffu, h, o);
      l = ol < l ? ol : l;
      h = oh > h ? oh : h;
    }
  }
}

// Sum over the warp of a lane's count of an entry's pairs: one integer reduction when the
// entry holds fewer than 2^32 pairs (so does every lane's count), 64-bit shuffles otherwise.
__device__ __forceinline__ u64 warp_sum_pairs(u64 v, bool fits32) {
  if (fits32) return __reduce_add_sync(0xffffffffu, unsigned(v));
  return warp_sum64(v);
}

constexpr int kWorkThreads = 256;
constexpr int kWorkWarps = kWorkThreads / 32;
// Points of b staged per warp (a pass over a starts once 32 are staged, so at most 63 are) and
// points of a queued per warp (a group of 32 is computed once 32 are queued: at most 63).
constexpr int kStageB = 64;
constexpr int kStageA = 64;
// Entries whose cells both hold at least this many points test both sides (fast_entry); smaller
// ones test the points of b only (one_sided_entry), whose single pass costs less per entry.
constexpr uint32_t kTwoSidedPoints = 64;

// One pass over the points of cell a (w.x .. w.y) against the nb staged points of b (sb, with
// their bounding box computed here): a point of a whose distance range to that box gives one
// answer counts nb pairs at once; the others queue in sa and are computed 32 at a time, one per
// lane, against every staged point. Adds to the lane's counts (acc1, acc2: pairs at or above
// t1 and t2, or within r) and pb (pairs resolved point by box).
template <typename T, int D, bool SDH, int MODE>
__device__ __forceinline__ void a_pass(const Coords<T>& s, uint4 w, int lane, unsigned lt, T* sb,
                                       T* sa, uint32_t nb, T t1, T t2, u64& acc1, u64& acc2,
                                       u64& pb) {
  const int q4 = (int(nb) + 3) & ~3;
  if (uint32_t(lane) < uint32_t(q4) - nb) {
#pragma unroll
    for (int k = 0; k < D; ++k) sb[k * kStageB + nb + lane] = nan_of<T>();
  }
  __syncwarp();
  T blo[D], bhi[D];
#pragma unroll
  for (int k = 0; k < D; ++k) {
    const T v0 = sb[k * kStageB + lane], v1 = sb[k * kStageB + 32 + lane];
    const bool h0 = uint32_t(lane) < nb, h1 = uint32_t(lane) + 32 < nb;
    T l = h0 ? v0 : inf_of<T>(), h = h0 ? v0 : -inf_of<T>();
    if (h1) {
      l = v1 < l ? v1 : l;
      h = v1 > h ? v1 : h;
    }
    warp_box<T>(l, h);
    blo[k] = l;
    bhi[k] = h;
  }
  uint32_t nq = 0;
  auto compute = [&](uint32_t valid) {
    T a[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      a[k] = uint32_t(lane) < valid ? sa[k * kStageA + lane] : nan_of<T>();
    unsigned c1 = 0, c2 = 0;
    staged_pairs<T, D, MODE, kStageB>(sb, q4, a, t1, t2, c1, c2);
    acc1 += c1;
    if (MODE == 2) acc2 += c2;
  };
  for (uint32_t ac = w.x; ac < w.y; ac += 32) {
    T a[D];
    const unsigned um =
        test_chunk<T, D, SDH>(s, ac, w.y, lane, blo, bhi, t1, t2, nb, a, acc1, acc2, pb);
    if (um & (1u << lane)) {
      const uint32_t pos = nq + __popc(um & lt);
#pragma unroll
      for (int k = 0; k < D; ++k) sa[k * kStageA + pos] = a[k];
    }
    nq += __popc(um);
    if (nq >= 32) {
      __syncwarp();
      compute(32);
      __syncwarp();
      // the queue's tail (fewer than 32) moves to its front
      if (uint32_t(lane) + 32 < nq) {
#pragma unroll
        for (int k = 0; k < D; ++k) sa[k * kStageA + lane] = sa[k * kStageA + 32 + lane];
      }
      nq -= 32;
      __syncwarp();
    }
  }
  if (nq > 0) {
    __syncwarp();
    compute(nq);
  }
  __syncwarp();
}

// A fast work entry (cells a != b, the SDH's range within kb0 .. kb0 + 2, or the pair count)
// for one warp: the points of b, 32 at a time, are tested against a's box (a point whose range
// gives one answer counts n_a pairs at once); the others are staged and, 32 or more at a time,
// go through a_pass. Counts of the lane as in a_pass.
template <typename T, int D, bool SDH, int MODE>
__device__ __forceinline__ void fast_entry(const Coords<T>& s, uint4 w, const T* abox, int lane,
                                           T* sb, T* sa, T t1, T t2, u64& acc1, u64& acc2,
                                           u64& pb) {
  const unsigned lt = (1u << lane) - 1u;
  const u64 na = w.y - w.x;
  uint32_t nb = 0;
  for (uint32_t bc = w.z; bc < w.w; bc += 32) {
    T b[D];
    const unsigned um =
        test_chunk<T, D, SDH>(s, bc, w.w, lane, abox, abox + D, t1, t2, na, b, acc1, acc2, pb);
    if (um & (1u << lane)) {
      const uint32_t pos = nb + __popc(um & lt);
#pragma unroll
      for (int k = 0; k < D; ++k) sb[k * kStageB + pos] = b[k];
    }
    nb += __popc(um);
    if (nb >= 32 || (bc + 32 >= w.w && nb > 0)) {
      a_pass<T, D, SDH, MODE>(s, w, lane, lt, sb, sa, nb, t1, t2, acc1, acc2, pb);
      nb = 0;
    }
  }
}

// A fast work entry with small cells for one warp: lanes hold the points of a, 32 at a time;
// the points of b, 32 at a time, are tested against a's box and the others staged (stride 32)
// and computed against the lanes' points of a. Cheaper than fast_entry when both cells hold few
// points (no second test pass). Counts of the lane as in a_pass.
template <typename T, int D, bool SDH, int MODE>
__device__ __forceinline__ void one_sided_entry(const Coords<T>& s, uint4 w, const T* abox,
                                                int lane, T* stg, T t1, T t2, u64& acc1,
                                                u64& acc2, u64& pb) {
  const unsigned lt = (1u << lane) - 1u;
  for (uint32_t ac = w.x; ac < w.y; ac += 32) {
    const uint32_t nav = min(32u, w.y - ac);
    T a[D];
    const bool av = uint32_t(lane) < nav;
#pragma unroll
    for (int k = 0; k < D; ++k) a[k] = av ? s.p[k][ac + lane] : nan_of<T>();
    for (uint32_t bc = w.z; bc < w.w; bc += 32) {
      T b[D];
      const unsigned um = test_chunk<T, D, SDH>(s, bc, w.w, lane, abox, abox + D, t1, t2, nav,
                                                b, acc1, acc2, pb);
      const int q = __popc(um);
      if (um & (1u << lane)) {
        const int pos = __popc(um & lt);
#pragma unroll
        for (int k = 0; k < D; ++k) stg[k * 32 + pos] = b[k];
      }
      const int q4 = (q + 3) & ~3;
      if (lane >= q && lane < q4) {
#pragma unroll
        for (int k = 0; k < D; ++k) stg[k * 32 + lane] = nan_of<T>();
      }
      __syncwarp();
      unsigned c1 = 0, c2 = 0;
      staged_pairs<T, D, MODE, 32>(stg, q4, a, t1, t2, c1, c2);
      __syncwarp();
      acc1 += c1;
      if (MODE == 2) acc2 += c2;
    }
  }
}

// Work entries, one warp per entry (see the file comment). Shared memory: the warps' staging
// areas (D x (kStageB + kStageA) values each), then, with SMEM, the block's histogram and
// exceed counts (uint64, nb and nb + 3), then per-level counts of pairs resolved point by box.
// (2-D float entries fit 64 registers without spilling: 4 blocks of kWorkThreads per SM.)
template <typename T, int D, bool SDH, bool SMEM, bool NOCALL>
__global__ void __launch_bounds__(kWorkThreads, (D == 2 && sizeof(T) == 4) ? 4 : 1)
    work_kernel(Coords<T> s, const uint4* work, const WorkInfo<T, D>* info, size_t m,
                SdhWalkOp<T> sdh, CountWalkOp<T> cnt, DevStats stats) {
  extern __shared__ __align__(16) unsigned char wsm[];
  T* stage = reinterpret_cast<T*>(wsm);
  u64* tail =
      reinterpret_cast<u64*>(wsm + sizeof(T) * D * (kStageB + kStageA) * kWorkWarps);
  u64* sh = tail;                                   // SMEM: nb
  u64* sexc = SMEM ? tail + sdh.nb : sdh.exc;       // SMEM: nb + 3
  u64* spb = SMEM ? tail + 2 * sdh.nb + 3 : tail;   // kResolveMaxLevels
  if (SDH && SMEM)
    for (int k = threadIdx.x; k < 2 * sdh.nb + 3; k += blockDim.x) tail[k] = 0;
  for (int k = threadIdx.x; k < kResolveMaxLevels; k += blockDim.x) spb[k] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  T* sb = stage + (threadIdx.x >> 5) * D * (kStageB + kStageA);
  T* sa = sb + D * kStageB;
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) >> 5;
  const size_t warps = (size_t(gridDim.x) * blockDim.x) >> 5;
  u64 counted = 0, one_sided = 0, two_sided = 0;
  for (size_t e = warp; e < m; e += warps) {
    const uint4 w = work[e];
    const WorkInfo<T, D> f = info[e];
    if (e + warps < m && lane < 2) {
      // the warp's next entry moves into L1 while this one is taken
      const void* next = lane == 0 ? static_cast<const void*>(work + e + warps)
                                   : static_cast<const void*>(info + e + warps);
      asm volatile("prefetch.global.L1 [%0];" ::"l"(next));
    }
    const uint32_t mode = f.mode & 0xffu;
    if (mode == kWorkGeneral) {
      general_entry<T, D, SDH, SMEM, NOCALL>(s, w, lane, sdh, cnt, sh, counted);
      continue;
    }
    T t1, t2;
    if (SDH) {
      t1 = sdh.thr[f.kb0 + 1];
      t2 = sdh.thr[f.kb0 + 2];
    } else {
      t1 = cnt.r2;
      t2 = t1;
    }
    u64 acc1 = 0, acc2 = 0, pb = 0;
    if (min(w.y - w.x, w.w - w.z) < kTwoSidedPoints) {
      ++one_sided;
      if (!SDH)
        one_sided_entry<T, D, SDH, 0>(s, w, f.box, lane, sb, t1, t2, acc1, acc2, pb);
      else if (mode == kWorkOneEdge)
        one_sided_entry<T, D, SDH, 1>(s, w, f.box, lane, sb, t1, t2, acc1, acc2, pb);
      else
        one_sided_entry<T, D, SDH, 2>(s, w, f.box, lane, sb, t1, t2, acc1, acc2, pb);
    } else if (!SDH) {
      ++two_sided;
      fast_entry<T, D, SDH, 0>(s, w, f.box, lane, sb, sa, t1, t2, acc1, acc2, pb);
    } else if (mode == kWorkOneEdge) {
      ++two_sided;
      fast_entry<T, D, SDH, 1>(s, w, f.box, lane, sb, sa, t1, t2, acc1, acc2, pb);
    } else {
      ++two_sided;
      fast_entry<T, D, SDH, 2>(s, w, f.box, lane, sb, sa, t1, t2, acc1, acc2, pb);
    }
    const bool fits32 = (u64(w.y - w.x) * (w.w - w.z)) >> 32 == 0;
    acc1 = warp_sum_pairs(acc1, fits32);
    if (SDH) acc2 = warp_sum_pairs(acc2, fits32);
    pb = warp_sum_pairs(pb, fits32);
    if (lane == 0) {
      if (SDH) {
        if (acc1) hist_add<SMEM>(sexc, sdh.exc, int(f.kb0) + 1, acc1);
        if (acc2) hist_add<SMEM>(sexc, sdh.exc, int(f.kb0) + 2, acc2);
      } else {
        counted += acc1;
      }
      if (pb) atomicAdd(&spb[f.mode >> 8], pb);
    }
  }
  if (!SDH) {
    for (int o = 16; o > 0; o >>= 1) counted += __shfl_down_sync(0xffffffffu, counted, o);
    if (lane == 0 && counted) atomicAdd(cnt.total, counted);
  }
  if (lane == 0 && one_sided) atomicAdd(&stats.c[4 * kResolveMaxLevels + 1], one_sided);
  if (lane == 0 && two_sided) atomicAdd(&stats.c[4 * kResolveMaxLevels + 2], two_sided);
  __syncthreads();
  if (SDH && SMEM) {
    for (int k = threadIdx.x; k < sdh.nb; k += blockDim.x)
      if (sh[k]) atomicAdd(&sdh.hist[k], sh[k]);
    for (int k = threadIdx.x; k < sdh.nb + 3; k += blockDim.x)
      if (sexc[k]) atomicAdd(&sdh.exc[k], sexc[k]);
  }
  for (int k = threadIdx.x; k < kResolveMaxLevels; k += blockDim.x)
    if (spb[k]) atomicAdd(&stats.c[3 * kResolveMaxLevels + 1 + k], spb[k]);
}

// Thresholds of the fast work entries: T[k] = the smallest d2 >= +0 with
// sdh_bucket(d2, ..., resolved_beyond) >= k, by binary search over the bit patterns of
// [+0, +inf] (sdh_bucket is non-decreasing there); NaN when no d2 reaches k. T[0] is unused.
template <typename T>
__global__ void thresholds_kernel(T* thr, int entries, T inv_w, T nbt, T resolved_beyond) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= entries) return;
  using U = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
  auto from = [](U u) -> T {
    if constexpr (sizeof(T) == 4)
      return __uint_as_float(u);
    else
      return __longlong_as_double((long long)u);
  };
  const U inf = sizeof(T) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  if (k == 0) {
    thr[0] = T(0);
    return;
  }
  if (sdh_bucket<T>(from(inf), inv_w, nbt, resolved_beyond) < k) {
    thr[k] = nan_of<T>();
    return;
  }
  U lo = 0, hi = inf;
  while (lo < hi) {
    const U mid = lo + (hi - lo) / 2;
    if (sdh_bucket<T>(from(mid), inv_w, nbt, resolved_beyond) >= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  thr[k] = from(lo);
}

constexpr int kExpandThreads = 256;
// Largest SDH histogram kept in shared memory by the walk kernels (the work kernel keeps the
// histogram and the exceed counts there: 64 KB of uint64 at this size).
constexpr int kResolveSmemBuckets = 4096;

// Smallest unresolved cell pair (in point pairs) that the walk splits further: the tuning
// table's value for D, or the call's override (the benchmark's sweep and the tests).
inline unsigned long long resolve_min_pairs(int dims, unsigned long long forced = 0) {
  return forced >= 1 ? forced : cuda_tuning::kResolveMinPairs[dims - 2];
}

// The walk: returns nothing; results accumulate in sdh.hist / sdh.exc or cnt.total on the
// device.
template <typename T, int D, bool SDH>
void walk(Call& call, const DeviceMap<T, D>& m, const Coords<T>& s, SdhWalkOp<T> sdh,
          CountWalkOp<T> cnt, bool nocall, ResolveStats* rs) {
  cudaStream_t st = call.stream();
  const int L = m.dev.leaf;
  const bool smem = SDH && sdh.nb <= kResolveSmemBuckets;
  const size_t smem_bytes = smem ? size_t(sdh.nb) * 8 : 0;
  const size_t work_smem = sizeof(T) * D * (kStageB + kStageA) * kWorkWarps +
                           (smem ? size_t(2 * sdh.nb + 3) * 8 : 0) + kResolveMaxLevels * 8;
  const size_t nstats = 4 * kResolveMaxLevels + 3;
  DevStats stats{call.alloc<u64>(nstats, "walk stats")};
  G2_CUDA(cudaMemsetAsync(stats.c, 0, nstats * 8, st));
  const size_t qcap = cuda_tuning::kResolveQueuePairs;
  const size_t wcap = cuda_tuning::kResolveWorkEntries;
  const size_t maxc = D == 2 ? 16 : 64;  // child pairs of one pair
  const u64 min_pairs = resolve_min_pairs(D, call.ctl.overrides.resolve_min_pairs);
  uint4* work = call.alloc<uint4>(wcap, "work list");
  WorkInfo<T, D>* info = call.alloc<WorkInfo<T, D>>(wcap, "work list");
  u64* ctr = call.alloc<u64>(2, "walk counters");  // [0] next queue, [1] work list
  G2_CUDA(cudaMemsetAsync(ctr, 0, 16, st));
  std::vector<uint2*> q(size_t(L) + 1, nullptr);
  std::vector<size_t> qn(size_t(L) + 1, 0);
  size_t wn = 0;
  auto flush = [&]() {
    if (wn == 0) return;
    const unsigned blocks = blocks_for(wn * 32, kWorkThreads);
    auto launch = [&](auto kern) {
      if (work_smem > 48 * 1024)
        G2_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(work_smem)));
      kern<<<blocks, kWorkThreads, work_smem, st>>>(s, work, info, wn, sdh, cnt, stats);
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
      WorkInfo<T, D> f0{};
      f0.mode = kWorkGeneral;
      G2_CUDA(cudaMemcpyAsync(work, &w0, sizeof w0, cudaMemcpyHostToDevice, st));
      G2_CUDA(cudaMemcpyAsync(info, &f0, sizeof f0, cudaMemcpyHostToDevice, st));
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
          info, ctr + 1, cuda_tuning::kResolveDirectPairs[D - 2], min_pairs, sdh, cnt, stats);
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
  std::vector<u64> hs(nstats);
  G2_CUDA(cudaMemcpyAsync(hs.data(), stats.c, hs.size() * 8, cudaMemcpyDeviceToHost, st));
  call.sync();
  // Pairs of work entries that the work kernel resolved point by cell count as resolved.
  for (int l = 0; l < kResolveMaxLevels; ++l) {
    const u64 pb = hs[size_t(3 * kResolveMaxLevels + 1 + l)];
    const u64 ex = hs[size_t(2 * kResolveMaxLevels + l)] - pb;
    rs->visited[l] += hs[size_t(l)];
    rs->resolved[l] += hs[size_t(kResolveMaxLevels + l)];
    rs->examined[l] += ex;
    rs->examined_pairs += ex;
    rs->resolved_pairs += pb;
  }
  rs->resolved_pairs += hs[3 * kResolveMaxLevels];
  rs->one_sided_entries += hs[4 * kResolveMaxLevels + 1];
  rs->two_sided_entries += hs[4 * kResolveMaxLevels + 2];
}

// The density map of the call's points (their map order in s); its depth and build time
// (upload included) go to rs.
template <typename T, int D>
DeviceMap<T, D> resolve_map(Call& call, const PointsView& v, Coords<T>& s, ResolveStats* rs) {
  const auto t0 = Clock::now();
  auto m = build_device_map<T, D>(call, v, s, cuda_tuning::kResolveLeafPoints,
                                  resolve_min_pairs(D, call.ctl.overrides.resolve_min_pairs));
  rs->levels = m.dev.leaf + 1;
  rs->build_s += seconds_since(t0);
  return m;
}

template <typename T, int D>
std::vector<uint64_t> resolve_sdh_t(const SdhProblem& p, Control& ctl, ResolveStats* rs) {
  Call call(ctl);
  Coords<T> s{};
  const auto m = resolve_map<T, D>(call, p.pts, s, rs);
  const auto t0 = Clock::now();
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
  u64* exc = call.alloc<u64>(size_t(nb) + 3, "exceed counts");
  G2_CUDA(cudaMemsetAsync(exc, 0, (size_t(nb) + 3) * 8, call.stream()));
  T* thr = call.alloc<T>(size_t(nb) + 3, "bucket thresholds");
  thresholds_kernel<T><<<unsigned((nb + 3 + 127) / 128), 128, 0, call.stream()>>>(
      thr, nb + 3, op.inv_w, op.nbt, op.resolved_beyond);
  G2_CUDA_LAUNCH("resolve thresholds");
  op.exc = exc;
  op.thr = thr;
  const bool nocall = sizeof(T) == 4 && p.params.inv_width_f >= 0.0f &&
                      p.params.inv_width_f <= 1099511627776.0f;  // 2^40 (sdh_bucket.cuh)
  walk<T, D, true>(call, m, s, op, CountWalkOp<T>{T(0), nullptr}, nocall, rs);
  std::vector<uint64_t> out(size_t(nb), 0), ex(size_t(nb) + 3, 0);
  download(call, out.data(), hist, size_t(nb) * 8);
  download(call, ex.data(), exc, (size_t(nb) + 3) * 8);
  // Pairs of fast entries counted in kb0 move to their bucket: + exceed[k] - exceed[k + 1]
  // (modulo 2^64, exact: every partial sum is a count of pairs).
  for (size_t k = 0; k < size_t(nb); ++k) out[k] += ex[k] - ex[k + 1];
  const double w = seconds_since(t0);
  rs->walk_s += w;
  ctl.stats.kernel_s += w;
  return out;
}

template <typename T, int D>
uint64_t resolve_count_t(const PairCountProblem& p, Control& ctl, ResolveStats* rs) {
  Call call(ctl);
  Coords<T> s{};
  const auto m = resolve_map<T, D>(call, p.pts, s, rs);
  const auto t0 = Clock::now();
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

// The cost model of gpu2bs.sdh_method = auto for the SDH (kernels/tuning.h): the walk stops at
// the first level whose uniform cell pairs hold at most the stop size in point pairs; the work
// kernel's pairs are about coef * (that level's cell side) / (bucket width) of all pairs.
bool resolve_sdh_wins(size_t n, int dims, int nbuckets) {
  using namespace cuda_tuning;
  if ((dims != 2 && dims != 3) || n < kResolveMinPoints) return false;
  const double per_cell = std::sqrt(double(resolve_min_pairs(dims)));
  const int level = std::max(0, int(std::ceil(std::log2(double(n) / per_cell) / dims)));
  const double s = std::ldexp(1.0, -level);
  const double frac = kResolveUnresolvedCoef[dims - 2] * s * nbuckets / std::sqrt(double(dims));
  return frac < kResolveWinFraction[dims - 2];
}

bool resolve_count_wins(size_t n, int dims, double r_rel) {
  using namespace cuda_tuning;
  if ((dims != 2 && dims != 3) || n < kResolveMinPoints || !(r_rel > 0)) return false;
  const double s = std::pow(kResolveStopPoints / double(n), 1.0 / dims);
  const double shell = (dims == 2 ? 2 * M_PI * r_rel : 4 * M_PI * r_rel * r_rel) * 2 * s;
  const double grid = std::pow(std::min(1.0, 3 * r_rel), dims);
  return shell * kResolveCountCoef[dims - 2] < grid * kResolveCountWinFraction;
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
