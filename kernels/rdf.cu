// Radial distribution function on the GPU: the cell lists of src/core/rdf.h (built on the host,
// the same lists the CPU engine reads) uploaded once; one block per work item (up to kRdfBlock
// rows of one cell of a), each thread holding one row in registers and pairing it with the points
// of the neighbour cells streamed through shared memory in tiles. Output privatization as the
// SDH kernels (framework paper 3.3.1): one private histogram of 32-bit counters per block in
// shared memory, merged into the uint64 counts with one global atomic per non-empty bucket at
// the end of the block; when the histogram does not fit (or a block could count 2^32 pairs),
// every pair goes straight to the global counts. Distances and buckets are periodic_sq_dist and
// rdf_bucket (or, with bin edges, edges_bucket over the squared edges held in shared memory), so
// the counts equal the CPU engine's bit for bit. The weighted form stages the b points' weights
// beside them and adds each counted pair's fixed-point product w_i * w_j (src/core/weights.h) to
// an exact 128-bit sum per bucket: in the private shared histogram as three 32-bit words per
// bucket (weight_atomics.cuh add_split32), flushed with 128-bit global atomics, or straight to
// the global limbs; integer adds are associative, so the sums equal the CPU engine's too.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "common.cuh"
#include "core/rdf.h"
#include "weight_atomics.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kRdfBlock = 128;                       // threads (= rows) per block
constexpr size_t kRdfSharedHistBytes = 160 * 1024;   // largest shared private histogram
constexpr double kRdfSliceEvals = 4e10;              // pair evaluations per launch (~30 ms)

template <typename T>
struct RdfArgs {
  const T* a[kMaxDims];
  const T* b[kMaxDims];
  const unsigned* a_start;
  const unsigned* b_start;
  const unsigned long long* nfirst;
  const unsigned* ncell;
  const unsigned long long* items;  // (cell << 32) | first row offset within the cell
  long long item0;
  T len[kMaxDims];
  T half[kMaxDims];
  T cut2, inv_w, nb_t;
  const T* e2;                      // nb + 1 squared edges (EDGES kernels)
  unsigned long long* hist;
  const double* wa;                 // weights of a and b in sorted order (W kernels)
  const double* wb;
  WeightScale s;
  unsigned long long* lo;           // 128-bit weight sums per bucket (W kernels)
  unsigned long long* hi;
  int nb;
  bool self;
};

// Shared memory of a block: (W) the tile's weights, the tile of b points, then (EDGES) the
// nb + 1 squared edges, then (SHARED) the private histogram: nb 32-bit counts and (W) the
// 32-bit words l, h, x of each bucket's weight sum (nb each).
template <typename T, int D, bool SHARED, bool EDGES, bool W>
__global__ void __launch_bounds__(kRdfBlock) rdf_kernel(RdfArgs<T> g) {
  extern __shared__ __align__(16) unsigned char g2_smem[];
  constexpr size_t wbytes = W ? sizeof(double) * kRdfBlock : 0;
  double* sw = reinterpret_cast<double*>(g2_smem);
  T* sb = reinterpret_cast<T*>(g2_smem + wbytes);  // sb[k * kRdfBlock + j]
  T* se2 = reinterpret_cast<T*>(g2_smem + wbytes + sizeof(T) * D * kRdfBlock);
  unsigned* sh = reinterpret_cast<unsigned*>(g2_smem + wbytes + sizeof(T) * D * kRdfBlock +
                                             (EDGES ? sizeof(T) * size_t(g.nb + 1) : 0));
  const int tid = threadIdx.x;
  const int nb = g.nb;
  if constexpr (SHARED) {
    for (int k = tid; k < (W ? 4 : 1) * nb; k += kRdfBlock) sh[k] = 0;
  }
  if constexpr (EDGES) {
    for (int k = tid; k <= g.nb; k += kRdfBlock) se2[k] = g.e2[k];
  }
  const unsigned long long item = g.items[g.item0 + blockIdx.x];
  const unsigned cell = unsigned(item >> 32);
  const unsigned a0 = g.a_start[cell] + unsigned(item & 0xffffffffu);
  const unsigned a1 = g.a_start[cell + 1];
  const unsigned i = a0 + unsigned(tid);
  const bool valid = i < a1;
  T p[D], len[D], half[D];
  double wi = 0;
  if constexpr (W) wi = valid ? g.wa[i] : 0.0;
#pragma unroll
  for (int k = 0; k < D; ++k) {
    p[k] = valid ? g.a[k][i] : T(0);
    len[k] = g.len[k];
    half[k] = g.half[k];
  }
  const T cut2 = g.cut2, inv_w = g.inv_w, nb_t = g.nb_t;
  const unsigned long long e1 = g.nfirst[cell + 1];
  for (unsigned long long e = g.nfirst[cell]; e < e1; ++e) {
    const unsigned nc = g.ncell[e];
    const bool same = g.self && nc == cell;
    unsigned jb = g.b_start[nc];
    const unsigned je = g.b_start[nc + 1];
    if (same) jb = a0 + 1;  // j > i >= a0
    for (unsigned t0 = jb; t0 < je; t0 += kRdfBlock) {
      __syncthreads();
      if (t0 + unsigned(tid) < je) {
#pragma unroll
        for (int k = 0; k < D; ++k) sb[k * kRdfBlock + tid] = g.b[k][t0 + tid];
        if constexpr (W) sw[tid] = g.wb[t0 + tid];
      }
      __syncthreads();
      if (!valid) continue;
      const int m = int(min(unsigned(kRdfBlock), je - t0));
      // Pairs with j <= i (own cell, self form) are skipped: from u0 on every j exceeds i.
      int u0 = 0;
      if (same && i + 1 > t0) u0 = int(min(unsigned(m), i + 1 - t0));
#pragma unroll 4
      for (int u = u0; u < m; ++u) {
        T q[D];
#pragma unroll
        for (int k = 0; k < D; ++k) q[k] = sb[k * kRdfBlock + u];
        const T d2 = periodic_sq_dist<T, D>(p, q, len, half);
        int kb;
        if constexpr (EDGES)
          kb = d2 < cut2 ? edges_bucket<T>(d2, se2, g.nb) : -1;
        else
          kb = rdf_bucket<T>(d2, cut2, inv_w, nb_t);
        if (kb >= 0) {
          if constexpr (SHARED) {
            atomicAdd(&sh[kb], 1u);
            if constexpr (W)
              add_split32(&sh[nb + kb], &sh[2 * nb + kb], &sh[3 * nb + kb],
                          weight_fixed(wi, sw[u], g.s));
          } else {
            atomicAdd(&g.hist[kb], 1ull);
            if constexpr (W) add128(&g.lo[kb], &g.hi[kb], weight_fixed(wi, sw[u], g.s));
          }
        }
      }
    }
  }
  if constexpr (SHARED) {
    __syncthreads();
    for (int k = tid; k < nb; k += kRdfBlock) {
      if (!sh[k]) continue;
      atomicAdd(&g.hist[k], (unsigned long long)sh[k]);
      if constexpr (W) {
        const WeightSum v = split32_sum(sh[nb + k], sh[2 * nb + k], sh[3 * nb + k], sh[k]);
        if (v.lo || v.hi) add128(&g.lo[k], &g.hi[k], v.lo, v.hi);
      }
    }
  }
}

// Uploads a host vector to a new device array of the call.
template <typename V>
V* put(Call& call, const std::vector<V>& v, const char* what) {
  V* d = call.alloc<V>(std::max<size_t>(v.size(), 1), what);
  if (!v.empty()) upload_bytes(call, d, v.data(), v.size() * sizeof(V));
  return d;
}

// The counts (and with weights `wa`, `wb` by input index the sums on grid `s` into `sums`) of
// the problem in precision T over D axes.
template <typename T, int D>
std::vector<uint64_t> rdf_run(const RdfProblem& p, Control& ctl, const double* wa = nullptr,
                              const double* wb = nullptr, const WeightScale* s = nullptr,
                              std::vector<WeightSum>* sums = nullptr) {
  const bool weighted = wa != nullptr;
  Call call(ctl);
  auto t0 = Clock::now();
  const RdfCells<T> c = build_rdf_cells<T>(p);
  const RdfNeighbors nbl = rdf_neighbors<T>(p, c);
  const std::vector<uint32_t>& bs = p.self ? c.a_start : c.b_start;
  // Work items: runs of kRdfBlock rows of one cell, with their pair evaluations.
  std::vector<unsigned long long> items;
  std::vector<double> evals;
  uint64_t examined = 0, max_per_row = 0;
  for (uint64_t q = 0; q < c.cells; ++q) {
    const uint32_t r0 = c.a_start[q], r1 = c.a_start[q + 1];
    if (r0 == r1) continue;
    uint64_t per_row = 0;
    for (uint64_t e = nbl.first[q]; e < nbl.first[q + 1]; ++e)
      per_row += bs[nbl.cell[e] + 1] - bs[nbl.cell[e]];
    if (per_row == 0) continue;
    max_per_row = std::max(max_per_row, per_row);
    examined += per_row * (r1 - r0);
    for (uint32_t r = 0; r < r1 - r0; r += kRdfBlock) {
      items.push_back((q << 32) | r);
      evals.push_back(double(std::min<uint32_t>(kRdfBlock, r1 - r0 - r)) * double(per_row));
    }
  }
  ctl.stats.prepare_s += seconds_since(t0);
  const int nb = p.nbuckets;
  unsigned long long* hist = call.alloc<unsigned long long>(size_t(nb), "histogram");
  G2_CUDA(cudaMemsetAsync(hist, 0, size_t(nb) * 8, call.stream()));
  std::vector<uint64_t> out(size_t(nb), 0);
  if (weighted) sums->assign(size_t(nb), WeightSum());
  if (items.empty()) return out;
  RdfArgs<T> g{};
  if (weighted) {
    std::vector<double> swa(c.a_order.size()), swb(p.self ? 0 : c.b_order.size());
    for (size_t i = 0; i < swa.size(); ++i) swa[i] = wa[c.a_order[i]];
    for (size_t i = 0; i < swb.size(); ++i) swb[i] = wb[c.b_order[i]];
    g.wa = put(call, swa, "weights");
    g.wb = p.self ? g.wa : put(call, swb, "weights");
    g.s = *s;
    g.lo = call.alloc<unsigned long long>(2 * size_t(nb), "weight sums");
    g.hi = g.lo + nb;
    G2_CUDA(cudaMemsetAsync(g.lo, 0, 2 * size_t(nb) * 8, call.stream()));
  }
  for (int k = 0; k < D; ++k) {
    g.a[k] = put(call, c.a[k], "points");
    g.b[k] = p.self ? g.a[k] : put(call, c.b[k], "points");
    g.len[k] = c.len[k];
    g.half[k] = c.half[k];
  }
  g.a_start = put(call, c.a_start, "cells");
  g.b_start = p.self ? g.a_start : put(call, c.b_start, "cells");
  std::vector<unsigned long long> first(nbl.first.begin(), nbl.first.end());
  g.nfirst = put(call, first, "neighbours");
  g.ncell = put(call, nbl.cell, "neighbours");
  g.items = put(call, items, "work items");
  g.cut2 = c.cut2;
  g.inv_w = c.inv_w;
  g.nb_t = c.nb_t;
  const bool edges = !c.e2.empty();
  g.e2 = edges ? put(call, c.e2, "bin edges") : nullptr;
  g.hist = hist;
  g.nb = nb;
  g.self = p.self;
  // A block's 32-bit private counters stay below 2^32: at most kRdfBlock * max_per_row pairs.
  // The weighted form's 32-bit carry words count at most that many adds too.
  const size_t tile = sizeof(T) * D * kRdfBlock + (weighted ? sizeof(double) * kRdfBlock : 0);
  const size_t hist_bytes = size_t(nb) * 4 * (weighted ? 4 : 1);
  const bool shared = hist_bytes <= kRdfSharedHistBytes &&
                      double(kRdfBlock) * double(max_per_row) < 4294967295.0;
  const size_t smem =
      tile + (edges ? sizeof(T) * size_t(nb + 1) : 0) + (shared ? hist_bytes : 0);
  auto pick = [&](auto w) {
    constexpr bool Wt = decltype(w)::value;
    return edges ? (shared ? rdf_kernel<T, D, true, true, Wt> : rdf_kernel<T, D, false, true, Wt>)
                 : (shared ? rdf_kernel<T, D, true, false, Wt> : rdf_kernel<T, D, false, false, Wt>);
  };
  auto kernel = weighted ? pick(std::true_type()) : pick(std::false_type());
  G2_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  LastRun& lr = last_run();
  const cudaEvent_t ev0 = call.event(true), ev1 = call.event(true);
  auto t1 = Clock::now();
  G2_CUDA(cudaEventRecord(ev0, call.stream()));
  // Launches of about kRdfSliceEvals pair evaluations, polling for cancel between them.
  size_t next = 0;
  while (next < items.size()) {
    double w = 0;
    size_t end = next;
    while (end < items.size() && (end == next || w + evals[end] <= kRdfSliceEvals) &&
           end - next < 0x7fffffffu)
      w += evals[end++];
    g.item0 = (long long)next;
    kernel<<<unsigned(end - next), kRdfBlock, smem, call.stream()>>>(g);
    G2_CUDA_LAUNCH("rdf kernel launch");
    ++lr.launches;
    next = end;
    const cudaEvent_t done = call.event();
    G2_CUDA(cudaEventRecord(done, call.stream()));
    call.wait(done);
  }
  G2_CUDA(cudaEventRecord(ev1, call.stream()));
  call.wait(ev1);
  float ms = 0;
  G2_CUDA(cudaEventElapsedTime(&ms, ev0, ev1));
  lr.kernel_ms += ms;
  ctl.stats.kernel_s += seconds_since(t1);
  download(call, out.data(), hist, size_t(nb) * 8);
  if (weighted) {
    std::vector<unsigned long long> limbs(2 * size_t(nb));
    download(call, limbs.data(), g.lo, limbs.size() * 8);
    for (size_t k = 0; k < size_t(nb); ++k) {
      (*sums)[k].lo = limbs[k];
      (*sums)[k].hi = limbs[size_t(nb) + k];
    }
  }
  ctl.stats.pairs_examined += examined;
  return out;
}

// rdf_run for the problem's dimensions.
template <typename T>
std::vector<uint64_t> rdf_t(const RdfProblem& p, Control& ctl, const double* wa = nullptr,
                            const double* wb = nullptr, const WeightScale* s = nullptr,
                            std::vector<WeightSum>* sums = nullptr) {
  switch (p.a.dims) {
    case 2: return rdf_run<T, 2>(p, ctl, wa, wb, s, sums);
    case 3: return rdf_run<T, 3>(p, ctl, wa, wb, s, sums);
    case 4: return rdf_run<T, 4>(p, ctl, wa, wb, s, sums);
    case 5: return rdf_run<T, 5>(p, ctl, wa, wb, s, sums);
    default: return rdf_run<T, 6>(p, ctl, wa, wb, s, sums);
  }
}

}  // namespace

std::vector<uint64_t> rdf(const RdfProblem& p, Control& ctl) {
  if (p.a.n == 0 || p.b.n == 0) return std::vector<uint64_t>(size_t(p.nbuckets), 0);
  return p.prec == Precision::Float32 ? rdf_t<float>(p, ctl) : rdf_t<double>(p, ctl);
}

WeightedCounts rdf_weighted(const RdfProblem& p, const double* wa, const double* wb,
                            Control& ctl) {
  WeightedCounts res;
  res.scale = rdf_weight_scale(p, wa, wb);
  if (p.a.n == 0 || p.b.n == 0) {
    res.pairs.assign(size_t(p.nbuckets), 0);
    res.sums.assign(size_t(p.nbuckets), WeightSum());
    return res;
  }
  const double* wbb = p.self ? wa : wb;
  res.pairs = p.prec == Precision::Float32
                  ? rdf_t<float>(p, ctl, wa, wbb, &res.scale, &res.sums)
                  : rdf_t<double>(p, ctl, wa, wbb, &res.scale, &res.sums);
  return res;
}

}  // namespace cuda
}  // namespace gpu2bs
