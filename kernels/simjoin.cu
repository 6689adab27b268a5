// Distance similarity join (2-BS Type-III) on the GPU, and the grid pair count.
//
// Grid index (similarity-join paper): cells of side grid_cell_side(eps, box), cell coordinates
// floor((v - lo) / side) clamped to [0, 2^41] (grid_cell_coord), only non-empty cells stored.
// Built on the GPU: a linearized cell key (dimension 0 most significant, so key order is the
// lexicographic cell order of gpu2bs::Grid), cub::DeviceRadixSort of (key, index) pairs,
// run-length encoding into cells. When the key needs more than 64 bits the grid is built on the
// host with gpu2bs::Grid and uploaded. Either way the device sees cells sorted lexicographically
// by their integer coordinates, looked up by binary search.
//
// Cell access: LID-UNICOMP. Cells have a linear id in lexicographic order; a self-join examines
// the pairs i < j inside a cell plus the cells with a larger linear id among the 3^d neighbours
// (the offsets whose first non-zero component is +1: neighbour_offsets(d, true)), so each pair
// is examined once. A two-relation join examines all 3^d neighbour cells of b around each cell
// of a.
//
// Work: an item is a run of up to 32 points ("rows") of one cell of a. A warp takes items from a
// global queue (atomic counter, WORKQUEUE). For a batch of up to 32 neighbour cells it
// concatenates their points into one candidate list; each lane holds one candidate, the rows
// are broadcast with shuffles, and a ballot collects the hits of one row.
//
// Output: a paged direct output buffer (framework paper 3.3.3). The pool holds `pool_pages`
// pages of `page_size` PairRecords; a warp writes its hits into its own page and takes a new
// page with one atomicAdd on the page counter. When the pool is exhausted (or the launch's time
// budget is spent) the warp records its position (item, neighbour batch, candidate chunk, row)
// in a resume list and stops; the host drains the written pages to the PairSink on the calling
// thread and launches again, warps taking resume entries before new items. The result size is
// estimated first (count mode over a sample of the items); the pool is split into banks, one per
// stream, and batches of items run in one bank while the others drain (run_join_batched).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "common.cuh"
#include "core/grid.h"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kJT = cuda_tuning::kJoinThreads;
constexpr int kWarps = kJT / 32;
constexpr unsigned kRows = 32;  // rows per item (one per lane)
constexpr unsigned kNoPage = 0xFFFFFFFFu;
constexpr double kMaxCellCoord = 2199023255552.0;  // 2^41, as grid_cell_coord

static_assert(sizeof(PairRecord) == 16 && offsetof(PairRecord, i) == 0 &&
                  offsetof(PairRecord, j) == 4 && offsetof(PairRecord, dist) == 8,
              "the device writes PairRecords as two 64-bit words");

// ---- device helpers ------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <typename T>
struct Coords {
  const T* c[kMaxDims];
};

struct Geometry {
  double lo[kMaxDims];
  double inv;                // 1 / side, or 0 (grid_cell_side gave a non-finite side)
  int shift[kMaxDims];       // bit position of each cell coordinate in the key
  int bits[kMaxDims];
  int total_bits;
  bool host;                 // key > 64 bits (or forced): grid built with gpu2bs::Grid
  double side;
};

// grid_cell_coord() on the device: same IEEE operations (no contraction), same clamping.
__device__ __forceinline__ long long cell_coord(double v, double lo, double inv) {
  const double c = floor(op_mul(op_sub(v, lo), inv));
  if (!(c > 0)) return 0;
  if (c > kMaxCellCoord) return (long long)kMaxCellCoord;
  return (long long)c;
}

template <typename T, int D>
__global__ void key_kernel(Coords<T> pts, unsigned n, Geometry g, unsigned long long* keys,
                           unsigned* idx) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned long long key = 0;
#pragma unroll
    for (int k = 0; k < D; ++k)
      key |= (unsigned long long)cell_coord(double(pts.c[k][i]), g.lo[k], g.inv) << g.shift[k];
    keys[i] = key;
    idx[i] = i;
  }
}

template <int D>
__global__ void decode_kernel(const unsigned long long* keys, unsigned ncells, Geometry g,
                              long long* ccoord) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x) {
    const unsigned long long key = keys[c];
#pragma unroll
    for (int k = 0; k < D; ++k) {
      const unsigned long long mask = g.bits[k] ? (~0ull >> (64 - g.bits[k])) : 0ull;
      ccoord[size_t(c) * D + k] = (long long)((key >> g.shift[k]) & mask);
    }
  }
}

__global__ void set_u32_kernel(unsigned* p, unsigned v) { *p = v; }

template <typename T, int D>
__global__ void gather_kernel(Coords<T> in, const unsigned* order, unsigned n, Coords<T> out) {
  for (unsigned s = blockIdx.x * blockDim.x + threadIdx.x; s < n; s += gridDim.x * blockDim.x) {
    const unsigned i = order[s];
#pragma unroll
    for (int k = 0; k < D; ++k) const_cast<T*>(out.c[k])[s] = in.c[k][i];
  }
}

// Items per cell: ceil(points / kRows).
__global__ void item_count_kernel(const unsigned* start, unsigned ncells, unsigned* cnt) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x)
    cnt[c] = (start[c + 1] - start[c] + kRows - 1) / kRows;
}

__global__ void item_fill_kernel(const unsigned* start, unsigned ncells, const unsigned* off,
                                 uint2* items) {
  for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < ncells;
       c += gridDim.x * blockDim.x) {
    unsigned o = off[c];
    for (unsigned r = start[c]; r < start[c + 1]; r += kRows) items[o++] = make_uint2(c, r);
  }
}

// Cell index of integer coordinates `key` (lexicographic binary search), or -1 when empty.
template <int D>
__device__ __forceinline__ int find_cell(const long long* __restrict__ cc, unsigned ncells,
                                         const long long* key) {
  unsigned lo = 0, hi = ncells;
  while (lo < hi) {
    const unsigned mid = (lo + hi) >> 1;
    const long long* m = cc + size_t(mid) * D;
    int cmp = 0;
#pragma unroll
    for (int k = 0; k < D; ++k) {
      const long long v = __ldg(m + k);
      if (cmp == 0 && v != key[k]) cmp = v < key[k] ? -1 : 1;
    }
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo >= ncells) return -1;
  const long long* m = cc + size_t(lo) * D;
#pragma unroll
  for (int k = 0; k < D; ++k)
    if (__ldg(m + k) != key[k]) return -1;
  return int(lo);
}

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
      const int nb = find_cell<D>(cc, ncells, key);
      if (nb >= 0) around += start[nb + 1] - start[nb];
    }
    for (int s = 16; s > 0; s >>= 1) around += __shfl_down_sync(0xffffffffu, around, s);
    if (lane == 0) acc += nc * (nc - 1) / 2 + nc * around;
  }
  if (lane == 0 && acc) atomicAdd(total, acc);
}

// Candidate pairs (rows x candidates) of each work item and the compare-loop steps each K of
// join_kernel would issue, from the neighbour cells' sizes (warp per cell of a, lanes over the
// pattern's offsets, then over the cell's items). Offsets as join_kernel: a self-join's own
// cell (offset 0) counts per item the rows after its first. acc: steps for K = 1, 2, ..., 32
// (6 counters), the sum of the items' workloads, their maximum.
template <int D, bool SELF>
__global__ void plan_kernel(const unsigned* start_a, const long long* cca, unsigned ncells_a,
                            const unsigned* item_off, const unsigned* start_b,
                            const long long* ccb, unsigned ncells_b, const signed char* offsets,
                            int noffsets, unsigned long long* work, unsigned long long* acc) {
  constexpr unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned nwarps = (gridDim.x * blockDim.x) >> 5;
  unsigned long long st[6] = {0, 0, 0, 0, 0, 0}, sum = 0, mx = 0;
  for (unsigned c = warp; c < ncells_a; c += nwarps) {
    const unsigned rows = start_a[c + 1] - start_a[c];
    const unsigned nit = (rows + kRows - 1) / kRows, it0 = item_off[c];
    unsigned long long around = 0;
    for (int b0 = 0; b0 < noffsets; b0 += 32) {
      const int o = b0 + lane;
      unsigned len = 0;
      if (o < noffsets && !(SELF && o == 0)) {
        long long key[D];
#pragma unroll
        for (int k = 0; k < D; ++k) key[k] = cca[size_t(c) * D + k] + offsets[o * D + k];
        const int nb = find_cell<D>(ccb, ncells_b, key);
        if (nb >= 0) len = start_b[nb + 1] - start_b[nb];
      }
      unsigned tb = len;
      for (int s = 16; s > 0; s >>= 1) tb += __shfl_xor_sync(FULL, tb, s);
      around += tb;
      for (unsigned t = lane; t < nit; t += 32) {
        const unsigned nrows = min(kRows, rows - t * kRows);
        const unsigned tot = tb + ((SELF && b0 == 0) ? rows - t * kRows - 1 : 0u);
        const unsigned full = tot / 32, rem = tot % 32;
#pragma unroll
        for (int e = 0; e < 6; ++e) {
          const unsigned K = 1u << e, rps = 32u >> e;
          st[e] += (unsigned long long)(full * rps + (rem + K - 1) / K) * ((nrows + rps - 1) / rps);
        }
      }
    }
    for (unsigned t = lane; t < nit; t += 32) {
      const unsigned long long nrows = min(kRows, rows - t * kRows);
      const unsigned long long w =
          nrows * (around + (SELF ? (unsigned long long)(rows - t * kRows - 1) : 0ull));
      if (work) work[it0 + t] = w;
      sum += w;
      mx = max(mx, w);
    }
  }
  for (int s = 16; s > 0; s >>= 1) {
#pragma unroll
    for (int e = 0; e < 6; ++e) st[e] += __shfl_down_sync(FULL, st[e], s);
    sum += __shfl_down_sync(FULL, sum, s);
    mx = max(mx, __shfl_down_sync(FULL, mx, s));
  }
  if (lane == 0) {
#pragma unroll
    for (int e = 0; e < 6; ++e)
      if (st[e]) atomicAdd(acc + e, st[e]);
    if (sum) atomicAdd(acc + 6, sum);
    if (mx) atomicMax(acc + 7, mx);
  }
}

// ---- the join kernel ----------------------------------------------------------------------------

struct JoinCtl {
  unsigned long long item_next;  // next item of the queue (static assignment: items taken)
  unsigned long long examined;   // candidate pairs examined (this launch)
  unsigned long long count;      // pairs within eps (count mode, this launch)
  unsigned long long slots;      // lane slots issued by the compare loop (this launch)
  unsigned page_next;            // next free page of the pool
  unsigned resume_next;          // next entry of the resume list
  unsigned resume_out;           // entries written to the next resume list
  unsigned pool_full;            // a warp found no free page
};

// Where a stopped warp resumes: item, neighbour batch, candidate chunk, step of the chunk
// (step = sub-chunk * row steps + row step; see join_kernel).
struct WarpState {
  unsigned item, batch, chunk, step;
};

template <typename T>
struct JoinArgs {
  Coords<T> a;                  // points of a, sorted by cell
  Coords<T> b;                  // points of b, sorted by cell (a for a self-join)
  const unsigned* order_a;      // sorted position -> input index
  const unsigned* order_b;
  const unsigned* start_a;      // cell starts of a (cells + 1)
  const unsigned* start_b;
  const long long* ccoord_a;    // cell coordinates (cells * D), lexicographic
  const long long* ccoord_b;
  unsigned ncells_b;
  const uint2* items;           // (cell of a, first row), in the balancing strategy's order
  unsigned long long nitems;
  unsigned long long* cursor;   // static assignment: items taken by each warp; null: queue
  unsigned long long item_base;  // static assignment: first item of the range (a batch)
  const signed char* offsets;   // noffsets * D; a self-join's list starts with the cell itself
  int noffsets;
  T eps2;
  JoinCtl* ctl;
  const WarpState* resume_in;
  unsigned n_in;
  WarpState* resume_out;
  ulonglong2* pool;             // pool_pages * page_size records
  unsigned* page_fill;          // records in each page (written when a warp leaves it)
  unsigned pool_pages;
  unsigned page_size;
  unsigned long long budget_ns;  // time budget of this launch
};

// One warp per work item at a time. Items come from the resume list first, then either from
// the atomic queue (A.cursor null: WORKQUEUE) or by static assignment (warp g of W takes items
// base + g, base + g + W, ...; A.cursor[g] counts the items it took, across launches).
// K lanes share one query row (the paper's k threads per point): a step compares 32 / K rows
// (row slot = lane / K) with K candidates (candidate slot = lane % K). The lanes hold a chunk of
// 32 candidates; the chunk is walked in sub-chunks of K candidates (outer) and row steps of
// 32 / K rows (inner), so K = 32 is one row against 32 candidates per step and K = 1 is 32 rows
// against one candidate. Rows come from their owner lane by shuffle (not for K = 1), candidates
// likewise (not for K = 32).
template <typename T, int D, bool SELF, bool COUNT, int K>
__global__ void __launch_bounds__(kJT, (sizeof(T) * D <= 16 ? cuda_tuning::kJoinMinBlocks
                                                            : cuda_tuning::kJoinMinBlocks - 1))
    join_kernel(JoinArgs<T> A) {
  static_assert(K == 1 || K == 2 || K == 4 || K == 8 || K == 16 || K == 32, "K divides 32");
  constexpr unsigned RPS = 32 / K;  // rows per step
  __shared__ unsigned s_beg[kWarps][32];
  __shared__ unsigned s_excl[kWarps][32];
  __shared__ unsigned s_incl[kWarps][32];
  constexpr unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int w = threadIdx.x >> 5;
  const unsigned rslot = unsigned(lane) / K;  // row of this lane within a step
  const unsigned cslot = unsigned(lane) % K;  // candidate of this lane within a sub-chunk
  const unsigned lt_mask = (1u << lane) - 1u;
  const unsigned long long t_start = __shfl_sync(FULL, global_ns(), 0);
  const int nbatches = (A.noffsets + 31) / 32;
  const unsigned long long gw = (unsigned long long)blockIdx.x * kWarps + unsigned(w);
  const unsigned long long nw = (unsigned long long)gridDim.x * kWarps;
  unsigned long long taken = 0, mine = 0;  // static assignment: items taken (launch, all)
  if (A.cursor && lane == 0) mine = A.cursor[gw];
  unsigned page = kNoPage, fill = 0;
  unsigned long long my_count = 0, examined = 0, steps = 0;

  for (;;) {
    // Next work: a resume entry first, else a new item (lane 0 fetches, the warp follows).
    unsigned item = 0, cb = 0, cc = 0, cs = 0;
    int have = 0;
    if (lane == 0 && global_ns() - t_start < A.budget_ns) {
      const unsigned r = A.n_in ? atomicAdd(&A.ctl->resume_next, 1u) : 0u;
      if (r < A.n_in) {
        const WarpState s = A.resume_in[r];
        item = s.item;
        cb = s.batch;
        cc = s.chunk;
        cs = s.step;
        have = 1;
      } else if (A.cursor) {
        const unsigned long long it = A.item_base + gw + mine * nw;
        if (it < A.nitems) {
          item = unsigned(it);
          ++mine;
          ++taken;
          have = 1;
        }
      } else {
        const unsigned long long it = atomicAdd(&A.ctl->item_next, 1ull);
        if (it < A.nitems) {
          item = unsigned(it);
          have = 1;
        }
      }
    }
    have = __shfl_sync(FULL, have, 0);
    if (!have) break;
    item = __shfl_sync(FULL, item, 0);
    cb = __shfl_sync(FULL, cb, 0);
    cc = __shfl_sync(FULL, cc, 0);
    cs = __shfl_sync(FULL, cs, 0);

    const uint2 itm = A.items[item];
    const unsigned cell = itm.x, r0 = itm.y;
    const unsigned cend = A.start_a[cell + 1];
    const unsigned nrows = min(kRows, cend - r0);
    const unsigned nrs = (nrows + RPS - 1) / RPS;  // row steps per sub-chunk
    T pr[D];
#pragma unroll
    for (int k = 0; k < D; ++k) pr[k] = unsigned(lane) < nrows ? A.a.c[k][r0 + lane] : T(0);
    long long base[D];
#pragma unroll
    for (int k = 0; k < D; ++k) base[k] = A.ccoord_a[size_t(cell) * D + k];

    bool stopped = false;
    WarpState stop{};
    for (int batch = int(cb); batch < nbatches && !stopped; ++batch) {
      // Candidate cells of this batch: lane l looks up offset batch * 32 + l.
      const int o = batch * 32 + lane;
      unsigned beg = 0, len = 0;
      if (o < A.noffsets) {
        if (SELF && o == 0) {  // the cell itself: rows after r0 (j > i is tested per pair)
          beg = r0 + 1;
          len = cend - beg;
        } else {
          long long key[D];
#pragma unroll
          for (int k = 0; k < D; ++k) key[k] = base[k] + A.offsets[o * D + k];
          const int nc = find_cell<D>(A.ccoord_b, A.ncells_b, key);
          if (nc >= 0) {
            beg = A.start_b[nc];
            len = A.start_b[nc + 1] - beg;
          }
        }
      }
      unsigned incl = len;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const unsigned v = __shfl_up_sync(FULL, incl, d);
        if (lane >= d) incl += v;
      }
      const unsigned total = __shfl_sync(FULL, incl, 31);
      __syncwarp();
      s_beg[w][lane] = beg;
      s_incl[w][lane] = incl;
      s_excl[w][lane] = incl - len;
      __syncwarp();
      const unsigned chunk0 = batch == int(cb) ? cc : 0u;
      for (unsigned chunk = chunk0; chunk < total; chunk += 32) {
        // Lane's candidate: position t of the concatenated list -> segment -> sorted index j.
        const unsigned t = chunk + lane;
        const bool cv = t < total;
        unsigned j = 0;
        T q[D];
        if (cv) {
          int lo = 0, hi = 31;
          while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (s_incl[w][mid] > t)
              hi = mid;
            else
              lo = mid + 1;
          }
          j = s_beg[w][lo] + (t - s_excl[w][lo]);
#pragma unroll
          for (int k = 0; k < D; ++k) q[k] = A.b.c[k][j];
        } else {
#pragma unroll
          for (int k = 0; k < D; ++k) q[k] = T(0);
        }
        const unsigned ncand = min(32u, total - chunk);
        const unsigned nsub = (ncand + K - 1) / K;  // sub-chunks of K candidates
        const unsigned step0 = (batch == int(cb) && chunk == chunk0) ? cs : 0u;
        unsigned sc = step0 / nrs, rs = step0 - sc * nrs;
        unsigned ex = 0;  // valid (row, candidate) slots of this lane in this chunk
        for (; sc < nsub; ++sc, rs = 0) {
          // This lane's candidate of sub-chunk sc: chunk position sc * K + cslot.
          const unsigned src = sc * K + cslot;
          const bool qv = src < ncand;
          T qc[D];
          unsigned jc;
          if constexpr (K == 32) {
#pragma unroll
            for (int k = 0; k < D; ++k) qc[k] = q[k];
            jc = j;
          } else {
#pragma unroll
            for (int k = 0; k < D; ++k) qc[k] = __shfl_sync(FULL, q[k], int(src));
            jc = __shfl_sync(FULL, j, int(src));
          }
          for (; rs < nrs; ++rs) {
            const unsigned row = rs * RPS + rslot;  // < 32
            T p[D];
            if constexpr (K == 1) {
#pragma unroll
              for (int k = 0; k < D; ++k) p[k] = pr[k];
            } else {
#pragma unroll
              for (int k = 0; k < D; ++k) p[k] = __shfl_sync(FULL, pr[k], int(row));
            }
            const unsigned i = r0 + row;
            const bool valid = qv && row < nrows;
            T d2 = T(0);
            bool hit = false;
            if (valid) {
              d2 = sq_dist<T, D>(p, qc);
              hit = d2 <= A.eps2 && (!SELF || jc > i);
            }
            ex += valid ? 1u : 0u;
            if (COUNT) {
              my_count += hit ? 1u : 0u;
            } else {
              const unsigned m = __ballot_sync(FULL, hit);
              if (m) {
                const unsigned cnt = __popc(m);
                if (page == kNoPage || fill + cnt > A.page_size) {
                  unsigned np = 0;
                  if (lane == 0) np = atomicAdd(&A.ctl->page_next, 1u);
                  np = __shfl_sync(FULL, np, 0);
                  if (np >= A.pool_pages) {  // pool exhausted: stop before this step's hits
                    stopped = true;
                    stop = WarpState{item, unsigned(batch), chunk, sc * nrs + rs};
                    if (lane == 0) A.ctl->pool_full = 1u;
                    ex -= valid ? 1u : 0u;  // this step runs again on resume
                    break;
                  }
                  if (page != kNoPage && lane == 0) A.page_fill[page] = fill;
                  page = np;
                  fill = 0;
                }
                if (hit) {
                  const unsigned pos = fill + __popc(m & lt_mask);
                  ulonglong2 rec;
                  rec.x = (unsigned long long)A.order_a[i] |
                          ((unsigned long long)A.order_b[jc] << 32);
                  rec.y = (unsigned long long)__double_as_longlong(double(op_sqrt(d2)));
                  A.pool[size_t(page) * A.page_size + pos] = rec;
                }
                fill += cnt;
              }
            }
          }
          if (stopped) break;
        }
        // Steps done in this chunk: up to the stop, else all nsub * nrs.
        steps += sc * nrs + rs - step0;
        examined += ex;
        if (stopped) break;
        // Time budget spent: stop at the next chunk (resumable) unless the item is done.
        const int late = __shfl_sync(FULL, lane == 0 && global_ns() - t_start >= A.budget_ns, 0);
        if (late) {
          WarpState nx{item, unsigned(batch), chunk + 32, 0};
          if (chunk + 32 >= total) {
            nx.batch = unsigned(batch + 1);
            nx.chunk = 0;
          }
          if (int(nx.batch) < nbatches) {
            stopped = true;
            stop = nx;
          }
          break;
        }
      }
      __syncwarp();
    }
    if (stopped) {
      if (lane == 0) {
        const unsigned slot = atomicAdd(&A.ctl->resume_out, 1u);
        A.resume_out[slot] = stop;
      }
      break;
    }
  }
  if (!COUNT && lane == 0 && page != kNoPage) A.page_fill[page] = fill;
  if (COUNT) {
    for (int s = 16; s > 0; s >>= 1) my_count += __shfl_down_sync(FULL, my_count, s);
    if (lane == 0 && my_count) atomicAdd(&A.ctl->count, my_count);
  }
  for (int s = 16; s > 0; s >>= 1) examined += __shfl_down_sync(FULL, examined, s);
  if (lane == 0) {
    if (examined) atomicAdd(&A.ctl->examined, examined);
    if (steps) atomicAdd(&A.ctl->slots, steps * 32ull);
    if (A.cursor) {
      A.cursor[gw] = mine;
      if (taken) atomicAdd(&A.ctl->item_next, taken);
    }
  }
}

// Join kernel for K lanes per query point (1, 2, 4, 8, 16 or 32).
template <typename T, int D, bool SELF, bool COUNT>
auto join_kernel_for(int k) -> decltype(&join_kernel<T, D, SELF, COUNT, 32>) {
  switch (k) {
    case 1: return join_kernel<T, D, SELF, COUNT, 1>;
    case 2: return join_kernel<T, D, SELF, COUNT, 2>;
    case 4: return join_kernel<T, D, SELF, COUNT, 4>;
    case 8: return join_kernel<T, D, SELF, COUNT, 8>;
    case 16: return join_kernel<T, D, SELF, COUNT, 16>;
    case 32: return join_kernel<T, D, SELF, COUNT, 32>;
    default:
      throw Error(ErrorCode::Internal, "join kernel for " + std::to_string(k) + " lanes");
  }
}

// ---- host: grid construction ------------------------------------------------------------------

template <typename T>
struct DevGrid {
  unsigned n = 0;
  unsigned ncells = 0;
  Coords<T> c{};                 // sorted by cell
  unsigned* order = nullptr;     // sorted position -> input index
  unsigned* start = nullptr;     // ncells + 1
  long long* ccoord = nullptr;   // ncells * D
  uint2* items = nullptr;        // work items of this grid, in cell order
  unsigned* item_off = nullptr;  // first item of each cell (ncells + 1)
  unsigned long long nitems = 0;
};

unsigned blocks_for(size_t n, int threads) {
  const size_t cap = size_t(device_facts().sms) * 16;
  return unsigned(std::max<size_t>(1, std::min(cap, (n + threads - 1) / size_t(threads))));
}

// Geometry of the grid for radius `eps` over `box`, as the CPU engine's Grid.
Geometry make_geometry(const Bounds& box, double eps, Precision prec, int dims) {
  Geometry g{};
  g.side = grid_cell_side(eps, box);
  g.inv = std::isfinite(g.side) && g.side > 0 ? 1.0 / g.side : 0.0;
  for (int k = 0; k < dims; ++k) {
    g.lo[k] = box.lo[k];
    // Largest rounded coordinate: rounding and the cell formula are monotone.
    const double vmax = prec == Precision::Float32 ? double(float(box.hi[k])) : box.hi[k];
    const int64_t cmax = grid_cell_coord(vmax, box.lo[k], g.inv);
    int bits = 0;
    while (bits < 63 && (uint64_t(cmax) >> bits) != 0) ++bits;
    g.bits[k] = bits;
  }
  int acc = 0;
  for (int k = dims - 1; k >= 0; --k) {
    g.shift[k] = acc;
    acc += g.bits[k];
  }
  g.total_bits = acc;
  g.host = acc > 64 || force_host_grid();
  return g;
}

// Copies `bytes` from the host to the device through pinned staging.
void upload_bytes(Call& call, void* dev, const void* host, size_t bytes) {
  if (!bytes) return;
  auto t0 = Clock::now();
  const size_t per = std::min(bytes, cuda_tuning::kStagingBytes / 2);
  int h = 0;
  call.staging(0, per);
  for (size_t off = 0; off < bytes; off += per) {
    const size_t cnt = std::min(per, bytes - off);
    call.wait(call.staging_event(h));
    char* s = call.staging(h, per);
    std::memcpy(s, static_cast<const char*>(host) + off, cnt);
    G2_CUDA(cudaMemcpyAsync(static_cast<char*>(dev) + off, s, cnt, cudaMemcpyHostToDevice,
                            call.stream()));
    G2_CUDA(cudaEventRecord(call.staging_event(h), call.stream()));
    h ^= 1;
  }
  call.wait(call.staging_event(0));
  call.wait(call.staging_event(1));
  call.ctl.stats.transfer_s += seconds_since(t0);
}

// Sets stats.prepare_s to its value at construction plus the wall time since, less the
// transfer time counted meanwhile (device work waited for before a transfer counts as
// preparation; preparation counted by callees is part of the wall time, not added twice).
struct PrepareTimer {
  Control& ctl;
  Clock::time_point t0 = Clock::now();
  double prep0, xfer0;
  explicit PrepareTimer(Control& c) : ctl(c), prep0(c.stats.prepare_s), xfer0(c.stats.transfer_s) {}
  ~PrepareTimer() {
    ctl.stats.prepare_s =
        prep0 + std::max(0.0, seconds_since(t0) - (ctl.stats.transfer_s - xfer0));
  }
};

template <typename T>
T read_value(Call& call, const T* dev) {
  call.sync();  // device work before the value counts as the caller's (not as transfer)
  T v{};
  download(call, &v, dev, sizeof(T));
  return v;
}

// Builds the grid of `v` (coordinates rounded to T) on the device, or on the host when the key
// does not fit in 64 bits. Time goes to stats.prepare_s (transfers to transfer_s).
template <typename T, int D>
DevGrid<T> build_grid(Call& call, const PointsView& v, const Geometry& g, Precision prec) {
  LastRun& lr = last_run();
  DevGrid<T> G;
  const unsigned n = unsigned(v.n);
  G.n = n;
  const cudaStream_t st = call.stream();
  Coords<T> raw{};
  for (int k = 0; k < D; ++k) {
    raw.c[k] = call.alloc<T>(n, "points");
    G.c.c[k] = call.alloc<T>(n, "sorted points");
  }
  PrepareTimer prep(call.ctl);
  upload_points<T>(call, v, const_cast<T* const*>(raw.c));
  cudaEvent_t e0 = call.event(true), e1 = call.event(true);
  G2_CUDA(cudaEventRecord(e0, st));
  if (!g.host) {
    unsigned long long* keys_in = call.alloc<unsigned long long>(n, "cell keys");
    unsigned long long* keys_out = call.alloc<unsigned long long>(n, "cell keys");
    unsigned* idx_in = call.alloc<unsigned>(n, "grid order");
    G.order = call.alloc<unsigned>(n, "grid order");
    key_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, n, g, keys_in, idx_in);
    G2_CUDA_LAUNCH("key_kernel");
    const unsigned long long* sorted = keys_in;
    if (g.total_bits > 0) {
      size_t tmp_bytes = 0;
      G2_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, keys_in, keys_out, idx_in,
                                              G.order, n, 0, g.total_bits, st));
      void* tmp = call.alloc_bytes(tmp_bytes, "radix sort");
      G2_CUDA(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, keys_in, keys_out, idx_in, G.order,
                                              n, 0, g.total_bits, st));
      sorted = keys_out;
    } else {
      G2_CUDA(cudaMemcpyAsync(G.order, idx_in, size_t(n) * 4, cudaMemcpyDeviceToDevice, st));
    }
    // Cells: run-length encoding of the sorted keys, starts by an exclusive sum.
    unsigned long long* ukeys = keys_in == sorted ? keys_out : keys_in;  // free buffer
    unsigned* counts = idx_in;
    unsigned* nruns = call.alloc<unsigned>(1, "cell count");
    size_t tmp_bytes = 0;
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, tmp_bytes, sorted, ukeys, counts, nruns,
                                               n, st));
    void* tmp = call.alloc_bytes(tmp_bytes, "run-length encoding");
    G2_CUDA(cub::DeviceRunLengthEncode::Encode(tmp, tmp_bytes, sorted, ukeys, counts, nruns, n,
                                               st));
    G.ncells = read_value(call, nruns);
    G.start = call.alloc<unsigned>(size_t(G.ncells) + 1, "cell starts");
    tmp_bytes = 0;
    G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, counts, G.start, G.ncells, st));
    void* tmp2 = call.alloc_bytes(tmp_bytes, "scan");
    G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp2, tmp_bytes, counts, G.start, G.ncells, st));
    set_u32_kernel<<<1, 1, 0, st>>>(G.start + G.ncells, n);
    G2_CUDA_LAUNCH("set_u32_kernel");
    G.ccoord = call.alloc<long long>(size_t(G.ncells) * D, "cell coordinates");
    decode_kernel<D><<<blocks_for(G.ncells, 256), 256, 0, st>>>(ukeys, G.ncells, g, G.ccoord);
    G2_CUDA_LAUNCH("decode_kernel");
  } else {
    lr.host_grid = true;
    // Rounded coordinates in float64, then gpu2bs::Grid exactly as the CPU engine builds it.
    std::vector<double> rounded(size_t(n) * D);
    const double* rc[kMaxDims] = {};
    for (int k = 0; k < D; ++k) {
      double* out = rounded.data() + size_t(k) * n;
      for (size_t i = 0; i < n; ++i)
        out[i] = prec == Precision::Float32 ? double(float(v.coord[k][i])) : v.coord[k][i];
      rc[k] = out;
    }
    Grid grid(D, n, rc, g.lo, g.side);
    G.ncells = unsigned(grid.num_cells());
    std::vector<unsigned> start(size_t(G.ncells) + 1);
    std::vector<long long> ccoord(size_t(G.ncells) * D);
    for (size_t c = 0; c < G.ncells; ++c) {
      start[c] = unsigned(grid.cell_begin(c));
      for (int k = 0; k < D; ++k) ccoord[c * D + k] = grid.cell_coord(c)[k];
    }
    start[G.ncells] = n;
    G.order = call.alloc<unsigned>(n, "grid order");
    G.start = call.alloc<unsigned>(start.size(), "cell starts");
    G.ccoord = call.alloc<long long>(ccoord.size(), "cell coordinates");
    upload_bytes(call, G.order, grid.order().data(), size_t(n) * 4);
    upload_bytes(call, G.start, start.data(), start.size() * 4);
    upload_bytes(call, G.ccoord, ccoord.data(), ccoord.size() * 8);
  }
  gather_kernel<T, D><<<blocks_for(n, 256), 256, 0, st>>>(raw, G.order, n, G.c);
  G2_CUDA_LAUNCH("gather_kernel");
  // Work items: runs of up to kRows points of one cell.
  unsigned* cnt = call.alloc<unsigned>(size_t(G.ncells) + 1, "item counts");
  unsigned* off = call.alloc<unsigned>(size_t(G.ncells) + 1, "item offsets");
  G2_CUDA(cudaMemsetAsync(cnt, 0, (size_t(G.ncells) + 1) * 4, st));
  item_count_kernel<<<blocks_for(G.ncells, 256), 256, 0, st>>>(G.start, G.ncells, cnt);
  G2_CUDA_LAUNCH("item_count_kernel");
  size_t tmp_bytes = 0;
  G2_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, cnt, off, G.ncells + 1, st));
  void* tmp = call.alloc_bytes(tmp_bytes, "scan");
  G2_CUDA(cub::DeviceScan::ExclusiveSum(tmp, tmp_bytes, cnt, off, G.ncells + 1, st));
  G.nitems = read_value(call, off + G.ncells);
  G.item_off = off;
  G.items = call.alloc<uint2>(G.nitems, "work items");
  item_fill_kernel<<<blocks_for(G.ncells, 256), 256, 0, st>>>(G.start, G.ncells, off, G.items);
  G2_CUDA_LAUNCH("item_fill_kernel");
  G2_CUDA(cudaEventRecord(e1, st));
  call.wait(e1);
  float ms = 0;
  G2_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  lr.grid_ms += ms;
  return G;
}

// Neighbour offsets as int8: a self-join's list is the cell itself then the forward offsets;
// a two-relation join's list is all 3^d offsets.
std::vector<signed char> offsets_for(int dims, bool self) {
  std::vector<signed char> out;
  if (self) out.assign(size_t(dims), 0);
  for (int v : neighbour_offsets(dims, self)) out.push_back(static_cast<signed char>(v));
  return out;
}

signed char* upload_offsets(Call& call, const std::vector<signed char>& off) {
  signed char* d = call.alloc<signed char>(off.size(), "neighbour offsets");
  upload_bytes(call, d, off.data(), off.size());
  return d;
}

// ---- host: work order and lanes per query point ------------------------------------------------

// How run_join schedules the work: items in the strategy's order, static or queued, K.
struct JoinPlan {
  const uint2* items = nullptr;
  bool static_items = false;
  int k = 32;
};

bool valid_threads_per_point(int k) {
  return k == 1 || k == 2 || k == 4 || k == 8 || k == 16 || k == 32;
}

// Orders the items of `ga` for Control::join_balance (Cell: cell order; SortByWorkload and
// WorkQueue: estimated workload descending, cub::DeviceRadixSort, ties in cell order) and picks
// K (Control::join_threads_per_point; when 0, the tuning.h rule from the estimated compare-loop
// steps, or kJoinAutoKWithoutEstimate for Cell, which runs no estimate).
template <typename T, int D, bool SELF>
JoinPlan plan_join(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb,
                   const signed char* d_off, int noffsets) {
  LastRun& lr = last_run();
  const Control& ctl = call.ctl;
  const cudaStream_t st = call.stream();
  JoinPlan plan;
  plan.items = ga.items;
  // Auto is Cell here: no workload estimate, which costs as much as a sparse join's kernel
  // (kernels/tuning.h, kJoinAutoBalance).
  const JoinBalance balance =
      ctl.join_balance == JoinBalance::Auto ? cuda_tuning::kJoinAutoBalance : ctl.join_balance;
  plan.static_items = balance != JoinBalance::WorkQueue;
  const bool sorted = balance != JoinBalance::Cell;
  int k = ctl.join_threads_per_point;
  if (k != 0 && !valid_threads_per_point(k))
    throw Error(ErrorCode::InvalidParameter,
                "gpu2bs.join_threads_per_point must be 0, 1, 2, 4, 8, 16 or 32",
                "Got " + std::to_string(k) + ".");
  lr.join_balance = int(balance);
  lr.join_items = ga.nitems;
  if (k == 0 && !sorted) k = cuda_tuning::kJoinAutoKWithoutEstimate;
  if (sorted) {
    cudaEvent_t e0 = call.event(true), e1 = call.event(true);
    G2_CUDA(cudaEventRecord(e0, st));
    unsigned long long* work =
        sorted ? call.alloc<unsigned long long>(ga.nitems, "item workload") : nullptr;
    unsigned long long* acc = call.alloc<unsigned long long>(8, "workload sums");
    G2_CUDA(cudaMemsetAsync(acc, 0, 8 * sizeof(unsigned long long), st));
    plan_kernel<D, SELF><<<blocks_for(size_t(ga.ncells) * 32, 256), 256, 0, st>>>(
        ga.start, ga.ccoord, ga.ncells, ga.item_off, gb.start, gb.ccoord, gb.ncells, d_off,
        noffsets, work, acc);
    G2_CUDA_LAUNCH("plan_kernel");
    call.sync();
    unsigned long long h[8];
    download(call, h, acc, sizeof h);
    for (int e = 0; e < 6; ++e) lr.join_steps[e] = h[e];
    lr.join_work = h[6];
    if (sorted) {
      int bits = 1;
      while (bits < 64 && (h[7] >> bits) != 0) ++bits;
      unsigned long long* keys = call.alloc<unsigned long long>(ga.nitems, "item workload");
      uint2* items = call.alloc<uint2>(ga.nitems, "sorted work items");
      size_t tmp_bytes = 0;
      G2_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, tmp_bytes, work, keys, ga.items,
                                                        items, unsigned(ga.nitems), 0, bits, st));
      void* tmp = call.alloc_bytes(tmp_bytes, "workload sort");
      G2_CUDA(cub::DeviceRadixSort::SortPairsDescending(tmp, tmp_bytes, work, keys, ga.items,
                                                        items, unsigned(ga.nitems), 0, bits, st));
      plan.items = items;
      call.free(tmp);  // synchronizes the stream
      call.free(keys);
      call.free(work);
    }
    G2_CUDA(cudaEventRecord(e1, st));
    call.wait(e1);
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    lr.join_plan_ms += ms;
    if (k == 0) k = join_auto_threads_per_point(h);
  }
  plan.k = k;
  lr.join_k = k;
  return plan;
}

// ---- host: the launch loop --------------------------------------------------------------------

struct JoinResult {
  uint64_t count = 0;     // count mode
  uint64_t examined = 0;
  uint64_t emitted = 0;
};

[[noreturn]] void too_many_pairs(uint64_t max_pairs) {
  throw Error(ErrorCode::ProgramLimit, "similarity join result exceeds gpu2bs.max_result_rows",
              "More than " + std::to_string(max_pairs) + " pairs are within eps.",
              "Use a smaller eps, or raise gpu2bs.max_result_rows.");
}

// Kernel arguments describing the two grids, the neighbour offsets and eps^2 (the work, pool and
// control fields are set by the caller).
template <typename T>
JoinArgs<T> join_args(const DevGrid<T>& ga, const DevGrid<T>& gb, const signed char* d_off,
                      int noffsets, T eps2) {
  JoinArgs<T> A{};
  A.a = ga.c;
  A.b = gb.c;
  A.order_a = ga.order;
  A.order_b = gb.order;
  A.start_a = ga.start;
  A.start_b = gb.start;
  A.ccoord_a = ga.ccoord;
  A.ccoord_b = gb.ccoord;
  A.ncells_b = gb.ncells;
  A.offsets = d_off;
  A.noffsets = noffsets;
  A.eps2 = eps2;
  return A;
}

template <typename T, int D, bool SELF, bool COUNT>
JoinResult run_join(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                    const std::vector<signed char>& offsets, PairSink* sink, uint64_t max_pairs) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  JoinResult res;
  if (ga.nitems == 0) return res;
  const cudaStream_t st = call.stream();
  std::unique_ptr<PrepareTimer> prep(new PrepareTimer(ctl));
  signed char* d_off = upload_offsets(call, offsets);
  const JoinPlan plan = plan_join<T, D, SELF>(call, ga, gb, d_off, int(offsets.size() / D));
  const auto kernel = join_kernel_for<T, D, SELF, COUNT>(plan.k);
  int bps = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, kJT, 0));
  if (bps < 1) throw Error(ErrorCode::Internal, "CUDA join kernel does not fit on the device");
  const unsigned grid = unsigned(bps * device_facts().sms);
  const size_t warps = size_t(grid) * kWarps;
  // Static assignment: items taken by each warp (the grid is the same at every launch).
  unsigned long long* cursor = nullptr;
  if (plan.static_items) {
    cursor = call.alloc<unsigned long long>(warps, "warp cursors");
    G2_CUDA(cudaMemsetAsync(cursor, 0, warps * sizeof(unsigned long long), st));
  }
  JoinCtl* dctl = call.alloc<JoinCtl>(1, "join control");
  WarpState* resume[2] = {call.alloc<WarpState>(warps, "resume list"),
                          call.alloc<WarpState>(warps, "resume list")};
  JoinCtl* hctl = static_cast<JoinCtl*>(call.alloc_host(sizeof(JoinCtl)));

  // The result pool: Control::max_pages pages when set, else what the memory limit allows
  // (at most kJoinPoolMaxBytes).
  size_t page_size = 0, pool_pages = 0;
  ulonglong2* pool = nullptr;
  unsigned* page_fill = nullptr;
  std::vector<unsigned> fills;
  if (!COUNT) {
    // Control::page_pairs is honoured as the device page size when the pool is given in pages
    // (tests force many drain/resume cycles that way); otherwise pages are at most
    // kJoinPagePairs so that every warp's partly filled page wastes little of the pool.
    page_size = std::min<size_t>(std::max<size_t>(ctl.page_pairs, 64), size_t(1) << 26);
    if (!ctl.max_pages) page_size = std::min(page_size, cuda_tuning::kJoinPagePairs);
    const size_t page_bytes = page_size * sizeof(PairRecord);
    if (ctl.max_pages) {
      pool_pages = ctl.max_pages;
    } else {
      const size_t room = call.budget_left() > (size_t(64) << 20)
                              ? call.budget_left() - (size_t(64) << 20)
                              : call.budget_left() / 2;
      pool_pages = std::min(room, cuda_tuning::kJoinPoolMaxBytes) / (page_bytes + 4);
    }
    pool_pages = std::max<size_t>(1, std::min<size_t>(pool_pages, size_t(1) << 30));
    pool = call.alloc<ulonglong2>(pool_pages * page_size, "result pool");
    page_fill = call.alloc<unsigned>(pool_pages, "page fill");
    lr.pool_pages = pool_pages;
    lr.page_pairs = page_size;
  }
  prep.reset();

  JoinArgs<T> A = join_args(ga, gb, d_off, int(offsets.size() / D), eps2);
  A.items = plan.items;
  A.nitems = ga.nitems;
  A.cursor = cursor;
  A.ctl = dctl;
  A.pool = pool;
  A.page_fill = page_fill;
  A.pool_pages = unsigned(pool_pages);
  A.page_size = unsigned(page_size);
  A.budget_ns = (unsigned long long)(cuda_tuning::kJoinSliceMs * 1e6);

  cudaEvent_t ev_start = call.event(true), ev_end = call.event(true), ev_done = call.event();
  unsigned long long item_next = 0;
  unsigned n_in = 0;
  int cur = 0;
  size_t pages_used = 0;
  double drain_s = 0;

  // Hands the pages [0, used) to the sink: page fills first, then the pages through the two
  // halves of the pinned staging buffer (copy of one half overlaps consuming the other).
  auto drain = [&](size_t used) {
    auto td = Clock::now();
    ++lr.drains;
    fills.resize(used);
    download(call, fills.data(), page_fill, used * 4);
    const size_t page_bytes = page_size * sizeof(PairRecord);
    const size_t per = std::max<size_t>(1, (cuda_tuning::kStagingBytes / 2) / page_bytes);
    const size_t chunk_pages = std::min(per, used);
    call.staging(0, chunk_pages * page_bytes);
    size_t issued = 0;
    int h = 0;
    auto issue = [&](int half) {
      const size_t cnt = std::min(chunk_pages, used - issued);
      call.wait(call.staging_event(half));
      G2_CUDA(cudaMemcpyAsync(call.staging(half, chunk_pages * page_bytes),
                              pool + issued * page_size, cnt * page_bytes,
                              cudaMemcpyDeviceToHost, st));
      G2_CUDA(cudaEventRecord(call.staging_event(half), st));
      const size_t first = issued;
      issued += cnt;
      return std::make_pair(first, cnt);
    };
    auto cur_chunk = issue(h);
    while (cur_chunk.second) {
      std::pair<size_t, size_t> next_chunk{issued, 0};
      if (issued < used) next_chunk = issue(h ^ 1);
      auto tw = Clock::now();
      call.wait(call.staging_event(h));
      ctl.stats.transfer_s += seconds_since(tw);
      const char* base = call.staging(h, chunk_pages * page_bytes);
      for (size_t pg = 0; pg < cur_chunk.second; ++pg) {
        const size_t nrec = fills[cur_chunk.first + pg];
        if (!nrec) continue;
        res.emitted += nrec;
        if (max_pairs && res.emitted > max_pairs) too_many_pairs(max_pairs);
        auto tm = Clock::now();
        sink->consume(reinterpret_cast<const PairRecord*>(base + pg * page_bytes), nrec);
        ctl.stats.merge_s += seconds_since(tm);
        call.poll();
      }
      // The consumed half may be overwritten only after we are done reading it: the next
      // issue() on it waits for its event, which completed; reading is finished here.
      h ^= 1;
      cur_chunk = next_chunk;
    }
    drain_s += seconds_since(td);
  };

  auto tk = Clock::now();
  for (;;) {
    call.poll();
    std::memset(hctl, 0, sizeof(JoinCtl));
    hctl->item_next = item_next;
    hctl->page_next = unsigned(pages_used);
    G2_CUDA(cudaMemcpyAsync(dctl, hctl, sizeof(JoinCtl), cudaMemcpyHostToDevice, st));
    A.resume_in = resume[cur];
    A.n_in = n_in;
    A.resume_out = resume[cur ^ 1];
    G2_CUDA(cudaEventRecord(ev_start, st));
    kernel<<<grid, kJT, 0, st>>>(A);
    G2_CUDA_LAUNCH("join kernel launch");
    G2_CUDA(cudaEventRecord(ev_end, st));
    G2_CUDA(cudaMemcpyAsync(hctl, dctl, sizeof(JoinCtl), cudaMemcpyDeviceToHost, st));
    G2_CUDA(cudaEventRecord(ev_done, st));
    call.wait(ev_done);
    ++lr.launches;
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, ev_start, ev_end));
    lr.kernel_ms += ms;
    res.examined += hctl->examined;
    lr.join_slots += hctl->slots;
    res.count += hctl->count;
    // Resume entries no warp reached carry over behind the new ones.
    const unsigned consumed = std::min(hctl->resume_next, n_in);
    unsigned n_out = hctl->resume_out;
    if (consumed < n_in) {
      G2_CUDA(cudaMemcpyAsync(resume[cur ^ 1] + n_out, resume[cur] + consumed,
                              size_t(n_in - consumed) * sizeof(WarpState),
                              cudaMemcpyDeviceToDevice, st));
      n_out += n_in - consumed;
    }
    if (n_out > warps)
      throw Error(ErrorCode::Internal, "similarity join resume list overflow");
    cur ^= 1;
    n_in = n_out;
    item_next = std::min<unsigned long long>(hctl->item_next, ga.nitems);
    if (!COUNT) pages_used = std::min<size_t>(hctl->page_next, pool_pages);
    const bool done = item_next >= ga.nitems && n_in == 0;
    if (!COUNT && pages_used > 0 &&
        (done || hctl->pool_full ||
         double(pages_used) >= double(pool_pages) * cuda_tuning::kJoinDrainFraction)) {
      drain(pages_used);
      pages_used = 0;
    }
    if (done) break;
  }
  ctl.stats.kernel_s += std::max(0.0, seconds_since(tk) - drain_s);
  if (!COUNT) {
    lr.join_pairs = res.emitted;
    lr.join_streams = 1;
  }
  return res;
}

// ---- host: the batched join ---------------------------------------------------------------------
//
// Result-size estimate: the count-mode kernel runs over every s-th work item (a strided sample,
// counted in consecutive segments), giving estimated pairs per item along the item order.
// The estimate sizes the result banks (no larger than the memory budget allows) and cuts the
// items into batches whose estimated output fills kJoinBatchFill of one bank. Each bank has its
// own stream, control block and resume lists ("lane"); a batch runs in a free lane while the
// banks of earlier batches are copied, in the order they finished, through the two halves of the
// pinned staging buffer and handed to the sink on this thread. A batch whose bank fills (an underestimate) stops at a resumable point, its bank is
// drained, and it resumes in the same bank, so no pair is lost or repeated.

std::atomic<int> g_join_streams{0};
std::atomic<bool> g_join_serial{false};
std::atomic<double> g_join_scale{1.0};

// One stream with its bank of result pages, control block, resume lists and pinned buffers.
struct Lane {
  cudaStream_t st = nullptr;  // Call::extra_stream (synchronized before the Call frees anything)
  JoinCtl* dctl = nullptr;
  JoinCtl* hctl = nullptr;  // pinned
  WarpState* resume[2] = {nullptr, nullptr};
  int cur = 0;
  unsigned n_in = 0;
  ulonglong2* pool = nullptr;  // the bank
  unsigned* page_fill = nullptr;
  size_t pages = 0;
  unsigned* hfills = nullptr;  // pinned copy of page_fill
  cudaEvent_t ev_start = nullptr, ev_end = nullptr, ev_ctl = nullptr;
  enum State { Idle, Running, Draining } state = Idle;
  unsigned long long item_next = 0, item_end = 0;  // current batch (or sample segment)
  unsigned long long* cursor = nullptr;  // static assignment: per-warp items taken (batch)
  unsigned long long item_begin = 0;     // first item of the batch (static assignment)
  size_t pages_used = 0;
  bool batch_done = false;
  // drain in progress: pages [0, d_used), copied up to d_issued, handed over up to d_consumed
  size_t d_used = 0, d_issued = 0, d_consumed = 0;
};

// One half of the pinned staging buffer and the chunk of a lane's pages copied into it.
struct StagingHalf {
  char* buf = nullptr;
  cudaEvent_t beg = nullptr, end = nullptr;
  Lane* lane = nullptr;  // null: free
  size_t first = 0, cnt = 0;
};

// Kernel and copy intervals (ms after a reference event) of the batched join; their union is
// the time at least one of them ran.
struct Intervals {
  std::vector<std::pair<float, float>> v;
  // Adds the interval between two completed events, measured from `ref`.
  void add(cudaEvent_t ref, cudaEvent_t b, cudaEvent_t e) {
    float tb = 0, te = 0;
    G2_CUDA(cudaEventElapsedTime(&tb, ref, b));
    G2_CUDA(cudaEventElapsedTime(&te, ref, e));
    v.emplace_back(tb, std::max(tb, te));
  }
  // Length of the union of the intervals.
  double union_ms() {
    std::sort(v.begin(), v.end());
    double total = 0, cb = 0, ce = -1;
    for (auto& x : v) {
      if (x.first > ce) {
        if (ce > cb) total += ce - cb;
        cb = x.first;
        ce = x.second;
      } else {
        ce = std::max<double>(ce, x.second);
      }
    }
    if (ce > cb) total += ce - cb;
    return total;
  }
};

// Queues one launch of `kernel` on lane L over items [L.item_next, L.item_end) of `items`,
// followed by the read-back of its control block (L.ev_ctl completes when it is on the host).
template <typename T, typename K>
void lane_launch(Lane& L, JoinArgs<T> A, K kernel, unsigned grid, const uint2* items) {
  const cudaStream_t st = L.st;
  std::memset(L.hctl, 0, sizeof(JoinCtl));
  L.hctl->item_next = L.item_next;
  L.hctl->page_next = unsigned(L.pages_used);
  G2_CUDA(cudaMemcpyAsync(L.dctl, L.hctl, sizeof(JoinCtl), cudaMemcpyHostToDevice, st));
  A.items = items;
  A.nitems = L.item_end;
  A.cursor = L.cursor;
  A.item_base = L.item_begin;
  A.ctl = L.dctl;
  A.resume_in = L.resume[L.cur];
  A.n_in = L.n_in;
  A.resume_out = L.resume[L.cur ^ 1];
  A.pool = L.pool;
  A.page_fill = L.page_fill;
  A.pool_pages = unsigned(L.pages);
  G2_CUDA(cudaEventRecord(L.ev_start, st));
  kernel<<<grid, kJT, 0, st>>>(A);
  G2_CUDA_LAUNCH("join kernel launch");
  G2_CUDA(cudaEventRecord(L.ev_end, st));
  G2_CUDA(cudaMemcpyAsync(L.hctl, L.dctl, sizeof(JoinCtl), cudaMemcpyDeviceToHost, st));
  G2_CUDA(cudaEventRecord(L.ev_ctl, st));
  L.state = Lane::Running;
}

// After L.ev_ctl completed: takes the launch's counts and resume entries (entries no warp
// reached carry over behind the new ones). Returns true when the lane's item range is done.
bool lane_finish(Lane& L, JoinResult& res, size_t warps) {
  res.examined += L.hctl->examined;
  res.count += L.hctl->count;
  const unsigned consumed = std::min(L.hctl->resume_next, L.n_in);
  unsigned n_out = L.hctl->resume_out;
  if (consumed < L.n_in) {
    G2_CUDA(cudaMemcpyAsync(L.resume[L.cur ^ 1] + n_out, L.resume[L.cur] + consumed,
                            size_t(L.n_in - consumed) * sizeof(WarpState),
                            cudaMemcpyDeviceToDevice, L.st));
    n_out += L.n_in - consumed;
  }
  if (n_out > warps) throw Error(ErrorCode::Internal, "similarity join resume list overflow");
  L.cur ^= 1;
  L.n_in = n_out;
  L.item_next = std::min<unsigned long long>(L.hctl->item_next, L.item_end);
  if (L.pages) L.pages_used = std::min<size_t>(L.hctl->page_next, L.pages);
  return L.item_next >= L.item_end && L.n_in == 0;
}

// Item ranges [bounds[b], bounds[b + 1]) whose estimated output is about `target` pairs, from
// the estimated pairs per item of each segment [seg_begin[g], seg_begin[g + 1]).
std::vector<unsigned long long> plan_batches(const std::vector<unsigned long long>& seg_begin,
                                             const std::vector<double>& per_item, double target) {
  std::vector<unsigned long long> bounds{0};
  double acc = 0;
  for (size_t g = 0; g + 1 < seg_begin.size(); ++g) {
    unsigned long long it = seg_begin[g];
    const unsigned long long end = seg_begin[g + 1];
    const double d = per_item[g];
    while (it < end) {
      if (!(d > 0)) break;
      const double need = std::ceil((target - acc) / d);
      if (need <= double(end - it)) {
        it += std::max<unsigned long long>(1, (unsigned long long)need);
        if (it > bounds.back()) bounds.push_back(it);
        acc = 0;
      } else {
        acc += double(end - it) * d;
        it = end;
      }
    }
  }
  if (bounds.back() < seg_begin.back()) bounds.push_back(seg_begin.back());
  if (bounds.size() == 1) bounds.push_back(seg_begin.back());  // no items: one empty batch
  return bounds;
}

// The similarity join's output stage with batching (see above): estimate, banks, batches.
template <typename T, int D, bool SELF>
JoinResult run_join_batched(Call& call, const DevGrid<T>& ga, const DevGrid<T>& gb, T eps2,
                            const std::vector<signed char>& offsets, PairSink* sink,
                            uint64_t max_pairs) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  JoinResult res;
  if (ga.nitems == 0) return res;
  std::unique_ptr<PrepareTimer> prep(new PrepareTimer(ctl));
  signed char* d_off = upload_offsets(call, offsets);
  // Item order, static or queued assignment and lanes per point (gpu2bs.join_balance and
  // gpu2bs.join_threads_per_point): the same plan as the serial path.
  const JoinPlan plan = plan_join<T, D, SELF>(call, ga, gb, d_off, int(offsets.size() / D));
  const auto kernel = join_kernel_for<T, D, SELF, false>(plan.k);
  const auto count_kernel = join_kernel_for<T, D, SELF, true>(plan.k);
  int bps = 0, bps_count = 0;
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, kernel, kJT, 0));
  G2_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps_count, count_kernel, kJT, 0));
  if (bps < 1 || bps_count < 1)
    throw Error(ErrorCode::Internal, "CUDA join kernel does not fit on the device");
  const unsigned grid = unsigned(bps * device_facts().sms);
  const unsigned grid_count = unsigned(bps_count * device_facts().sms);
  const size_t warps = size_t(std::max(grid, grid_count)) * kWarps;
  const int streams = join_streams() > 0 ? std::min(join_streams(), Call::kExtraStreams) : cuda_tuning::kJoinStreams;

  // Lanes: streams, control blocks and resume lists (banks come after the estimate).
  std::vector<std::unique_ptr<Lane>> lanes;
  for (int k = 0; k < streams; ++k) {
    lanes.emplace_back(new Lane());
    Lane& L = *lanes.back();
    L.st = call.extra_stream(k);
    L.dctl = call.alloc<JoinCtl>(1, "join control");
    L.hctl = static_cast<JoinCtl*>(call.alloc_host(sizeof(JoinCtl)));
    L.resume[0] = call.alloc<WarpState>(warps, "resume list");
    L.resume[1] = call.alloc<WarpState>(warps, "resume list");
    L.ev_start = call.event(true);
    L.ev_end = call.event(true);
    L.ev_ctl = call.event();
    if (plan.static_items) L.cursor = call.alloc<unsigned long long>(warps, "warp cursors");
  }
  // Work queued on the call's stream (grid, offsets) precedes the lanes' work.
  cudaEvent_t ev_ready = call.event(true);
  G2_CUDA(cudaEventRecord(ev_ready, call.stream()));
  for (auto& L : lanes) G2_CUDA(cudaStreamWaitEvent(L->st, ev_ready, 0));

  JoinArgs<T> A = join_args(ga, gb, d_off, int(offsets.size() / D), eps2);
  A.budget_ns = (unsigned long long)(cuda_tuning::kJoinSliceMs * 1e6);

  // 1. Result-size estimate: count mode over every stride-th item, segment by segment.
  const unsigned long long nitems = ga.nitems;
  const unsigned long long stride =
      std::max<unsigned long long>(1, (nitems + cuda_tuning::kJoinSampleItems - 1) /
                                          cuda_tuning::kJoinSampleItems);
  const unsigned long long nsample = (nitems + stride - 1) / stride;
  Lane& L0 = *lanes[0];
  const uint2* sample = plan.items;
  unsigned long long* const l0_cursor = L0.cursor;
  L0.cursor = nullptr;  // the sample pass takes its items from the queue
  if (stride > 1) {
    uint2* s = call.alloc<uint2>(nsample, "join sample");
    G2_CUDA(cudaMemcpy2DAsync(s, sizeof(uint2), plan.items, stride * sizeof(uint2), sizeof(uint2),
                              nsample, cudaMemcpyDeviceToDevice, L0.st));
    sample = s;
  }
  const int nseg = int(std::max<unsigned long long>(
      1, std::min<unsigned long long>(cuda_tuning::kJoinSampleSegments,
                                      nsample / cuda_tuning::kJoinSampleSegMin)));
  std::vector<unsigned long long> seg_begin(size_t(nseg) + 1);  // in items
  std::vector<double> per_item(static_cast<size_t>(nseg), 0.0);
  double estimate = 0;
  {
    Intervals kin;
    cudaEvent_t ev_sref = call.event(true);
    G2_CUDA(cudaEventRecord(ev_sref, L0.st));
    for (int g = 0; g < nseg; ++g) {
      const unsigned long long kb = nsample * unsigned(g) / unsigned(nseg);
      const unsigned long long ke = nsample * unsigned(g + 1) / unsigned(nseg);
      seg_begin[size_t(g)] = std::min(nitems, kb * stride);
      JoinResult seg;
      L0.item_next = kb;
      L0.item_end = ke;
      L0.n_in = 0;
      while (kb < ke) {
        lane_launch(L0, A, count_kernel, grid_count, sample);
        call.wait(L0.ev_ctl);
        kin.add(ev_sref, L0.ev_start, L0.ev_end);
        if (lane_finish(L0, seg, warps)) break;
      }
      // Each sampled item stands for the `covered / sampled` items of its segment.
      const double covered = double(std::min(nitems, ke * stride) - std::min(nitems, kb * stride));
      double density = 0;
      if (ke > kb) density = double(seg.count) / double(ke - kb);
      per_item[unsigned(g)] = density;
      estimate += density * covered;
    }
    seg_begin[size_t(nseg)] = nitems;
    lr.sample_ms = kin.union_ms();
    L0.state = Lane::Idle;
  }
  L0.cursor = l0_cursor;
  const double scale = join_estimate_scale();
  estimate *= scale;
  for (double& d : per_item) d *= scale;
  lr.join_estimate = (unsigned long long)std::llround(estimate);
  lr.sample_items = size_t(nsample);

  // 2. Banks and batches.
  const size_t room = call.budget_left() > (size_t(64) << 20) ? call.budget_left() - (size_t(64) << 20)
                                                              : call.budget_left() / 2;
  const size_t cap = std::min(room, cuda_tuning::kJoinPoolMaxBytes);
  size_t page_size = 0;
  std::vector<size_t> bank_pages;
  double batch_target = 0;  // estimated pairs per batch
  if (ctl.max_pages) {
    page_size = std::min<size_t>(std::max<size_t>(ctl.page_pairs, 64), size_t(1) << 26);
    const size_t nb = std::min<size_t>(size_t(streams), ctl.max_pages);
    for (size_t k = 0; k < nb; ++k)
      bank_pages.push_back(ctl.max_pages / nb + (k < ctl.max_pages % nb ? 1 : 0));
    batch_target = double(bank_pages.back() * page_size) * cuda_tuning::kJoinBatchFill;
  } else {
    const double want = std::max(estimate * cuda_tuning::kJoinEstimateMargin, 1.0);
    const double lane_cap_pairs = double(cap) / double(streams) / double(sizeof(PairRecord));
    double nb = std::ceil(want / (lane_cap_pairs * cuda_tuning::kJoinBatchFill));
    if (want >= cuda_tuning::kJoinSplitPairs) nb = std::max(nb, double(streams));
    nb = std::max(nb, 1.0);
    const size_t lanes_wanted = size_t(std::min<double>(nb, streams));
    const double bank_pairs = want / nb / cuda_tuning::kJoinBatchFill;
    // Pages: about kJoinPagesPerWarp per resident warp, 64 .. kJoinPagePairs pairs (and at most
    // Control::page_pairs).
    const double per_page = bank_pairs / double(warps * cuda_tuning::kJoinPagesPerWarp);
    page_size = 64;
    while (double(page_size * 2) <= per_page && page_size * 2 <= cuda_tuning::kJoinPagePairs &&
           page_size * 2 <= std::max<size_t>(ctl.page_pairs, 64))
      page_size *= 2;
    size_t pages = size_t(std::ceil(bank_pairs / double(page_size)));
    pages = std::max(pages, warps * cuda_tuning::kJoinMinPagesPerWarp);
    const size_t page_bytes = page_size * sizeof(PairRecord) + 4;
    pages = std::max<size_t>(1, std::min(pages, cap / lanes_wanted / page_bytes));
    pages = std::min<size_t>(pages, size_t(1) << 30);
    bank_pages.assign(lanes_wanted, pages);
    batch_target = double(pages * page_size) * cuda_tuning::kJoinBatchFill /
                   cuda_tuning::kJoinEstimateMargin;
  }
  const auto bounds = plan_batches(seg_begin, per_item, std::max(batch_target, 1.0));
  const size_t nbatches = bounds.size() - 1;
  const size_t nlanes = std::min(bank_pages.size(), nbatches);
  const size_t chunk_bytes_max = cuda_tuning::kStagingBytes / 2;
  const size_t page_bytes = page_size * sizeof(PairRecord);
  size_t total_pages = 0;
  for (size_t k = 0; k < nlanes; ++k) {
    Lane& L = *lanes[k];
    L.pages = bank_pages[k];
    total_pages += L.pages;
    L.pool = call.alloc<ulonglong2>(L.pages * page_size, "result bank");
    L.page_fill = call.alloc<unsigned>(L.pages, "page fill");
    L.hfills = static_cast<unsigned*>(call.alloc_host(L.pages * 4));
  }
  // One staging pair (the process's cached buffer) for all lanes: the sink takes one chunk at a
  // time anyway, and a small ring stays in the CPU's caches.
  const size_t chunk_pages = std::max<size_t>(1, chunk_bytes_max / page_bytes);
  StagingHalf half[2];
  for (int h = 0; h < 2; ++h) {
    half[h].buf = call.staging(h, chunk_pages * page_bytes);
    half[h].beg = call.event(true);
    half[h].end = call.event(true);
  }
  std::deque<Lane*> drainq;  // lanes whose banks are being drained, in the order they filled
  int issue_h = 0, cons_h = 0;
  A.page_size = unsigned(page_size);
  lr.pool_pages = total_pages;
  lr.page_pairs = page_size;
  lr.bank_pages = bank_pages.empty() ? 0 : bank_pages[0];
  lr.join_batches = int(nbatches);
  lr.join_streams = int(nlanes);
  prep.reset();

  // 3. The batches.
  cudaEvent_t ev_ref = call.event(true);
  G2_CUDA(cudaEventRecord(ev_ref, L0.st));
  Intervals kin, cin;
  size_t next = 0;
  double merge_s = 0, xfer_s = 0, other_s = 0;
  auto last_service = Clock::now();

  // Queues copies of the next chunks (drains in FIFO order) into the free staging halves.
  auto issue = [&]() {
    while (!half[issue_h].lane) {
      Lane* L = nullptr;
      for (Lane* q : drainq)
        if (q->d_issued < q->d_used) {
          L = q;
          break;
        }
      if (!L) return;
      StagingHalf& H = half[issue_h];
      const cudaStream_t st = L->st;
      H.lane = L;
      H.first = L->d_issued;
      H.cnt = std::min(chunk_pages, L->d_used - L->d_issued);
      G2_CUDA(cudaEventRecord(H.beg, st));
      G2_CUDA(cudaMemcpyAsync(H.buf, L->pool + H.first * page_size, H.cnt * page_bytes,
                              cudaMemcpyDeviceToHost, st));
      G2_CUDA(cudaEventRecord(H.end, st));
      L->d_issued += H.cnt;
      issue_h ^= 1;
    }
  };
  // Starts draining L's used pages: the page fills now, the pages as staging halves free up.
  auto begin_drain = [&](Lane& L) {
    ++lr.drains;
    L.d_used = L.pages_used;
    L.d_issued = 0;
    L.d_consumed = 0;
    G2_CUDA(cudaMemcpyAsync(L.hfills, L.page_fill, L.d_used * 4, cudaMemcpyDeviceToHost,
                            L.st));
    L.state = Lane::Draining;
    drainq.push_back(&L);
    issue();
  };
  auto launch = [&](Lane& L) { lane_launch(L, A, kernel, grid, plan.items); };
  // Takes the read-back of every lane whose launch completed: relaunch, drain or idle.
  auto service = [&]() {
    bool any = false;
    for (size_t k = 0; k < nlanes; ++k) {
      Lane& L = *lanes[k];
      if (L.state != Lane::Running) continue;
      const cudaError_t e = cudaEventQuery(L.ev_ctl);
      if (e == cudaErrorNotReady) continue;
      G2_CUDA(e);
      any = true;
      ++lr.launches;
      kin.add(ev_ref, L.ev_start, L.ev_end);
      lr.join_slots += L.hctl->slots;
      const bool done = lane_finish(L, res, warps);
      L.batch_done = done;
      if (L.pages_used > 0 &&
          (done || L.hctl->pool_full ||
           double(L.pages_used) >= double(L.pages) * cuda_tuning::kJoinDrainFraction))
        begin_drain(L);
      else if (done)
        L.state = Lane::Idle;
      else
        launch(L);
    }
    last_service = Clock::now();
    return any;
  };
  // Hands the next copied chunk to the sink (false when it is not on the host yet).
  auto consume_chunk = [&]() -> bool {
    StagingHalf& H = half[cons_h];
    if (!H.lane) return false;
    const cudaError_t e = cudaEventQuery(H.end);
    if (e == cudaErrorNotReady) return false;
    G2_CUDA(e);
    cin.add(ev_ref, H.beg, H.end);
    Lane& L = *H.lane;
    const char* base = H.buf;
    const unsigned* fills = L.hfills + H.first;
    for (size_t pg = 0; pg < H.cnt;) {
      // A run of full pages and the page after them are contiguous records: one consume().
      const size_t first = pg;
      size_t nrec = 0;
      while (pg < H.cnt) {
        nrec += fills[pg];
        if (fills[pg++] != page_size) break;
      }
      if (!nrec) continue;
      res.emitted += nrec;
      if (max_pairs && res.emitted > max_pairs) too_many_pairs(max_pairs);
      auto tm = Clock::now();
      sink->consume(reinterpret_cast<const PairRecord*>(base + first * page_bytes), nrec);
      merge_s += seconds_since(tm);
      call.poll();
      // Other lanes' launches end meanwhile: keep them going while the sink works.
      if (seconds_since(last_service) > 5e-4) service();
    }
    // This half is read: it takes the next chunk, if any.
    L.d_consumed += H.cnt;
    H.lane = nullptr;
    cons_h ^= 1;
    if (L.d_consumed == L.d_used) {  // drained (the oldest drain: chunks go in FIFO order)
      if (drainq.front() != &L) throw Error(ErrorCode::Internal, "join drain order broken");
      drainq.pop_front();
      L.pages_used = 0;
      if (L.batch_done)
        L.state = Lane::Idle;
      else
        launch(L);
    }
    issue();
    return true;
  };

  auto t_loop = Clock::now();
  auto t_idle = Clock::now();
  for (;;) {
    call.poll();
    bool progressed = false;
    // Free lanes take the next batches (in the steady state batch b runs in lane b % lanes).
    for (size_t k = 0; k < nlanes && next < nbatches; ++k) {
      Lane& L = *lanes[(next + k) % nlanes];
      if (L.state != Lane::Idle) continue;
      L.item_next = bounds[next];
      L.item_end = bounds[next + 1];
      L.item_begin = L.item_next;
      if (L.cursor)  // static assignment restarts at the batch's first item
        G2_CUDA(cudaMemsetAsync(L.cursor, 0, warps * sizeof(unsigned long long), L.st));
      L.n_in = 0;
      L.pages_used = 0;
      L.batch_done = false;
      ++next;
      launch(L);
      progressed = true;
      k = size_t(-1);  // rescan from the next batch's lane
    }
    progressed |= service();
    progressed |= consume_chunk();
    bool running = false;
    for (size_t k = 0; k < nlanes; ++k) running |= lanes[k]->state == Lane::Running;
    const bool draining = !drainq.empty();
    if (progressed) {
      t_idle = Clock::now();
      continue;
    }
    if (!running && !draining && next >= nbatches) break;
    // Nothing ready: wait (a kernel, or only copies), spinning briefly then sleeping.
    auto tw = Clock::now();
    if (seconds_since(t_idle) > 2e-4) std::this_thread::sleep_for(std::chrono::microseconds(50));
    (running ? other_s : xfer_s) += seconds_since(tw);
  }
  const double loop_s = seconds_since(t_loop);
  lr.kernel_ms += kin.union_ms();
  lr.copy_ms += cin.union_ms();
  lr.join_pairs = res.emitted;
  ctl.stats.merge_s += merge_s;
  ctl.stats.transfer_s += xfer_s;
  ctl.stats.kernel_s += std::max(0.0, loop_s - merge_s - xfer_s);
  (void)other_s;
  return res;
}

template <typename T, int D>
void simjoin_run(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const Geometry g = make_geometry(p.box, p.eps, p.prec, D);
  ctl.stats.prepare_s += seconds_since(t0);
  const T eps2 = sizeof(T) == 4 ? T(p.eps2_f) : T(p.eps2);
  const DevGrid<T> ga = build_grid<T, D>(call, p.a, g, p.prec);
  JoinResult r;
  const bool serial = join_serial_drain();
  if (p.self) {
    const auto off = offsets_for(D, true);
    r = serial ? run_join<T, D, true, false>(call, ga, ga, eps2, off, &sink, p.max_pairs)
               : run_join_batched<T, D, true>(call, ga, ga, eps2, off, &sink, p.max_pairs);
  } else {
    const DevGrid<T> gb = build_grid<T, D>(call, p.b, g, p.prec);
    const auto off = offsets_for(D, false);
    r = serial ? run_join<T, D, false, false>(call, ga, gb, eps2, off, &sink, p.max_pairs)
               : run_join_batched<T, D, false>(call, ga, gb, eps2, off, &sink, p.max_pairs);
  }
  ctl.stats.pairs_examined += r.examined;
  ctl.stats.pairs_emitted += r.emitted;
}

template <typename T>
void simjoin_dims(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  switch (p.a.dims) {
    case 2: return simjoin_run<T, 2>(p, sink, ctl);
    case 3: return simjoin_run<T, 3>(p, sink, ctl);
    case 4: return simjoin_run<T, 4>(p, sink, ctl);
    case 5: return simjoin_run<T, 5>(p, sink, ctl);
    case 6: return simjoin_run<T, 6>(p, sink, ctl);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

template <typename T, int D>
bool grid_count_run(const PairCountProblem& p, Call& call, T r2, uint64_t* count) {
  LastRun& lr = last_run();
  Control& ctl = call.ctl;
  auto t0 = Clock::now();
  const size_t n = p.pts.n;
  const Geometry g = make_geometry(p.box, p.r, p.prec, D);
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
  if (count_forced_path() != 2 &&
      !(double(candidates) * cuda_tuning::kGridCountCost < double(all_pairs)))
    return false;
  lr.count_path = 2;
  JoinResult r = run_join<T, D, true, true>(call, ga, ga, r2, offsets, nullptr, 0);
  ctl.stats.pairs_examined += r.examined;
  *count = r.count;
  return true;
}

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

}  // namespace

int join_auto_threads_per_point(const unsigned long long steps[6]) {
  int best = 5;
  double best_cost = 0;
  for (int e = 5; e >= 0; --e) {  // ties: more lanes per point (fewer rows in flight)
    const double c = double(steps[e]) * cuda_tuning::kJoinStepCost[e];
    if (e == 5 || c < best_cost) {
      best = e;
      best_cost = c;
    }
  }
  return 1 << best;
}

void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  if (p.a.n == 0 || p.b.n == 0) return;  // point counts were checked by make_simjoin
  if (p.prec == Precision::Float32)
    simjoin_dims<float>(p, sink, ctl);
  else
    simjoin_dims<double>(p, sink, ctl);
}

void set_join_streams(int streams) { g_join_streams = streams; }
int join_streams() { return g_join_streams; }
void set_join_serial_drain(bool on) { g_join_serial = on; }
bool join_serial_drain() { return g_join_serial; }
void set_join_estimate_scale(double scale) { g_join_scale = scale; }
double join_estimate_scale() { return g_join_scale; }

bool grid_pair_count(const PairCountProblem& p, Call& call, uint64_t* count) {
  return p.prec == Precision::Float32 ? grid_count_dims<float>(p, call, p.r2_f, count)
                                      : grid_count_dims<double>(p, call, p.r2, count);
}

}  // namespace cuda
}  // namespace gpu2bs
