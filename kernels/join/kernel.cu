// The similarity join kernel and its per-warp helpers (work items, neighbour batches, the
// compare loop with K lanes per query point, the paged direct output). See join.cuh.
#include <string>

#include "core/pair_ir_eval.h"
#include "join.cuh"

namespace gpu2bs {
namespace cuda {
namespace join {

namespace {

// True when the pair (input indices ia of a, jb of b) at distance `dist` passes the pushed-down
// filter: the dist-bucket selection, then the pair IR program on (id1, id2, dist) with the keys
// ordered id1 <= id2 in a self-join, as the rows read. Not inlined: only pairs within eps of a
// filtered join call it, and the interpreter's stack stays out of the join loop's registers.
template <bool SELF, typename T>
__device__ __noinline__ bool keep_pair(const JoinArgs<T>& A, unsigned ia, unsigned jb, double dist) {
  if (A.sel) {
    const unsigned b = dist_bucket(dist, A.bucket_scale, A.nbuckets);
    if (A.sel == 1 ? b > A.sel_bucket : b < A.sel_bucket) return false;
  }
  if (A.pred_n == 0) return true;
  long long x = 0, y = 0;
  if (A.keys_a) {
    x = A.keys_a[ia];
    y = A.keys_b[jb];
    if (SELF && x > y) {
      const long long t = x;
      x = y;
      y = t;
    }
  }
  return eval_pair_program(A.pred, A.pred_n, x, y, dist) == Tri::True;
}

// Neumaier's step: (s, c) += d.
__device__ __forceinline__ void two_sum_add(double& s, double& c, double d) {
  const double t = s + d;
  c += fabs(s) >= fabs(d) ? (s - t) + d : (d - t) + s;
  s = t;
}

// One warp per work item at a time. Items come from the resume list first, then either from
// the atomic queue (A.cursor null: WORKQUEUE) or by static assignment (warp g of W takes items
// base + g, base + g + W, ...; A.cursor[g] counts the items it took, across launches).
// K lanes share one query row (the paper's k threads per point): a step compares 32 / K rows
// (row slot = lane / K) with K candidates (candidate slot = lane % K). The lanes hold a chunk of
// 32 candidates; the chunk is walked in sub-chunks of K candidates (outer) and row steps of
// 32 / K rows (inner), so K = 32 is one row against 32 candidates per step and K = 1 is 32 rows
// against one candidate. Rows come from their owner lane by shuffle (not for K = 1), candidates
// likewise (not for K = 32).
// MODE: kModeEmit writes the pairs that pass the filter to the pool (and counts the pairs
// within eps); kModeCount counts the pairs within eps; kModeReduce counts them and reduces the
// pairs that pass the filter (A.red; kRedHistogram needs nbuckets * 4 bytes of dynamic shared
// memory).
template <typename T, int D, bool SELF, int MODE, int K>
__global__ void __launch_bounds__(kJT, (sizeof(T) * D <= 16 ? cuda_tuning::kJoinMinBlocks
                                                            : cuda_tuning::kJoinMinBlocks - 1))
    join_kernel(JoinArgs<T> A) {
  static_assert(K == 1 || K == 2 || K == 4 || K == 8 || K == 16 || K == 32, "K divides 32");
  constexpr unsigned RPS = 32 / K;  // rows per step
  __shared__ unsigned s_beg[kWarps][32];
  __shared__ unsigned s_excl[kWarps][32];
  __shared__ unsigned s_incl[kWarps][32];
  extern __shared__ unsigned s_hist[];  // kRedHistogram
  constexpr bool COUNT = MODE == kModeCount;
  constexpr bool REDUCE = MODE == kModeReduce;
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
  const bool filtered = A.pred_n != 0 || A.sel != 0;
  // kRedAggregate: this lane's kept pairs.
  unsigned long long a_cnt = 0;
  double a_sum = 0, a_comp = 0, a_lo = HUGE_VAL, a_hi = -HUGE_VAL;
  if (REDUCE && A.red == kRedHistogram) {
    for (unsigned b = threadIdx.x; b < A.nbuckets; b += kJT) s_hist[b] = 0;
    __syncthreads();
  }

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
          const long long nc = find_cell<D>(A.ccoord_b, A.ncells_b, key);
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
            } else if (REDUCE) {
              my_count += hit ? 1u : 0u;
              if (hit) {
                const unsigned ia = A.order_a[i], jb = A.order_b[jc];
                const double dist = double(op_sqrt(d2));
                if (!filtered || keep_pair<SELF>(A, ia, jb, dist)) {
                  if (A.red == kRedAggregate) {
                    ++a_cnt;
                    two_sum_add(a_sum, a_comp, dist);
                    a_lo = fmin(a_lo, dist);
                    a_hi = fmax(a_hi, dist);
                  } else if (A.red == kRedGroup) {
                    unsigned g;
                    if (SELF) {  // id1 is the smaller key (either point when they are equal)
                      const bool i_small = A.keys_a[ia] <= A.keys_a[jb];
                      g = (A.group_side == 0) == i_small ? ia : jb;
                    } else {
                      g = A.group_side == 0 ? ia : jb;
                    }
                    const unsigned long long bits = (unsigned long long)__double_as_longlong(dist);
                    atomicAdd(&A.g_count[g], 1ull);
                    if (A.g_min) atomicMin(&A.g_min[g], bits);
                    if (A.g_max) atomicMax(&A.g_max[g], bits);
                  } else {
                    atomicAdd(&s_hist[dist_bucket(dist, A.bucket_scale, A.nbuckets)], 1u);
                  }
                }
              }
            } else {
              const bool near = hit;
              if (filtered && hit)
                hit = keep_pair<SELF>(A, A.order_a[i], A.order_b[jc], double(op_sqrt(d2)));
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
              my_count += near ? 1u : 0u;  // after the pool check: a stopped step runs again
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
  if (MODE == kModeEmit && lane == 0 && page != kNoPage) A.page_fill[page] = fill;
  for (int s = 16; s > 0; s >>= 1) my_count += __shfl_down_sync(FULL, my_count, s);
  if (lane == 0 && my_count) atomicAdd(&A.ctl->count, my_count);
  if (REDUCE && A.red == kRedAggregate) {
    // The warp's lanes merged in a fixed tree, then added to the warp's part (one writer).
    for (int s = 16; s > 0; s >>= 1) {
      const unsigned long long oc = __shfl_down_sync(FULL, a_cnt, s);
      const double os = __shfl_down_sync(FULL, a_sum, s);
      const double oc2 = __shfl_down_sync(FULL, a_comp, s);
      const double olo = __shfl_down_sync(FULL, a_lo, s);
      const double ohi = __shfl_down_sync(FULL, a_hi, s);
      a_cnt += oc;
      two_sum_add(a_sum, a_comp, os);
      a_comp += oc2;
      a_lo = fmin(a_lo, olo);
      a_hi = fmax(a_hi, ohi);
    }
    if (lane == 0 && a_cnt) {
      AggPart& P = A.agg[gw];
      P.count += a_cnt;
      two_sum_add(P.sum, P.comp, a_sum);
      P.comp += a_comp;
      P.lo = fmin(P.lo, a_lo);
      P.hi = fmax(P.hi, a_hi);
    }
  }
  if (REDUCE && A.red == kRedHistogram) {
    __syncthreads();
    for (unsigned b = threadIdx.x; b < A.nbuckets; b += kJT)
      if (s_hist[b]) atomicAdd(&A.hist[b], (unsigned long long)s_hist[b]);
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

template <typename T, int D, bool SELF, int MODE>
JoinKernel<T> kernel_for_mode(int k) {
  switch (k) {
    case 1: return join_kernel<T, D, SELF, MODE, 1>;
    case 2: return join_kernel<T, D, SELF, MODE, 2>;
    case 4: return join_kernel<T, D, SELF, MODE, 4>;
    case 8: return join_kernel<T, D, SELF, MODE, 8>;
    case 16: return join_kernel<T, D, SELF, MODE, 16>;
    case 32: return join_kernel<T, D, SELF, MODE, 32>;
    default:
      throw Error(ErrorCode::Internal, "join kernel for " + std::to_string(k) + " lanes");
  }
}

}  // namespace

template <typename T, int D, bool SELF, bool COUNT>
JoinKernel<T> join_kernel_for(int k) {
  return kernel_for_mode<T, D, SELF, COUNT ? kModeCount : kModeEmit>(k);
}

template <typename T, int D, bool SELF>
JoinKernel<T> join_reduce_kernel_for(int k) {
  return kernel_for_mode<T, D, SELF, kModeReduce>(k);
}

#define G2_INST_KERNEL(T, D)                                   \
  template JoinKernel<T> join_kernel_for<T, D, true, true>(int);   \
  template JoinKernel<T> join_kernel_for<T, D, true, false>(int);  \
  template JoinKernel<T> join_kernel_for<T, D, false, true>(int);  \
  template JoinKernel<T> join_kernel_for<T, D, false, false>(int);  \
  template JoinKernel<T> join_reduce_kernel_for<T, D, true>(int);  \
  template JoinKernel<T> join_reduce_kernel_for<T, D, false>(int);
G2_JOIN_FOR_ALL(G2_INST_KERNEL)
#undef G2_INST_KERNEL

}  // namespace join
}  // namespace cuda
}  // namespace gpu2bs
