// The similarity join and the pair count over a periodic box on the GPU (src/core/periodic.h):
// the cell lists of src/core/rdf.h (built on the host, the same lists the CPU engine reads,
// wrapping on periodic axes) uploaded once; one block per work item (up to kPerBlock rows of one
// cell of a), each thread holding one row in registers and pairing it with the points of the
// neighbour cells streamed through shared memory in tiles, as the RDF kernel (rdf.cu). A pair is
// kept when periodic_sq_dist(a, b) <= eps2 in the working precision, so the pairs and their
// distances equal the CPU engine's bit for bit. Two passes: the first counts every row's pairs
// (the pair count stops there), the host turns the counts into output offsets, the second writes
// each row's pairs (sorted positions and sqrt(d2)) at its offset, in batches of rows whose pairs
// fit the output buffer; the host maps positions to input indices and hands pages to the sink.
#include <algorithm>
#include <vector>

#include "common.cuh"
#include "core/periodic.h"

namespace gpu2bs {
namespace cuda {

namespace {

constexpr int kPerBlock = 128;                 // threads (= rows) per block
constexpr double kPerSliceEvals = 4e10;        // pair evaluations per launch (~30 ms)
constexpr size_t kPerOutPairs = size_t(1) << 24;  // output buffer (pairs) of the second pass

template <typename T>
struct PerArgs {
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
  T eps2;
  bool self;
  unsigned* counts;                    // pass 1: pairs per row of a (sorted position)
  const unsigned long long* offsets;   // pass 2: first output slot per row, minus out_base
  unsigned long long out_base;
  unsigned* out_i;                     // pass 2: sorted position in a
  unsigned* out_j;                     // pass 2: sorted position in b
  T* out_d;                            // pass 2: sqrt(d2)
};

// Correctly rounded square root (the CPU engine's std::sqrt).
__device__ __forceinline__ float dev_sqrt(float x) { return __fsqrt_rn(x); }
__device__ __forceinline__ double dev_sqrt(double x) { return __dsqrt_rn(x); }

// One block per item: WRITE false counts each row's pairs into counts; WRITE true writes them.
template <typename T, int D, bool WRITE>
__global__ void __launch_bounds__(kPerBlock) periodic_kernel(PerArgs<T> g) {
  extern __shared__ __align__(16) unsigned char g2_smem[];
  T* sb = reinterpret_cast<T*>(g2_smem);  // sb[k * kPerBlock + j]
  const int tid = threadIdx.x;
  const unsigned long long item = g.items[g.item0 + blockIdx.x];
  const unsigned cell = unsigned(item >> 32);
  const unsigned a0 = g.a_start[cell] + unsigned(item & 0xffffffffu);
  const unsigned a1 = g.a_start[cell + 1];
  const unsigned i = a0 + unsigned(tid);
  const bool valid = i < a1;
  T p[D], len[D], half[D];
#pragma unroll
  for (int k = 0; k < D; ++k) {
    p[k] = valid ? g.a[k][i] : T(0);
    len[k] = g.len[k];
    half[k] = g.half[k];
  }
  const T eps2 = g.eps2;
  unsigned found = 0;
  unsigned long long slot = 0;
  if constexpr (WRITE) {
    if (valid) slot = g.offsets[i] - g.out_base;
  }
  const unsigned long long e1 = g.nfirst[cell + 1];
  for (unsigned long long e = g.nfirst[cell]; e < e1; ++e) {
    const unsigned nc = g.ncell[e];
    const bool same = g.self && nc == cell;
    unsigned jb = g.b_start[nc];
    const unsigned je = g.b_start[nc + 1];
    if (same) jb = a0 + 1;  // j > i >= a0
    for (unsigned t0 = jb; t0 < je; t0 += kPerBlock) {
      __syncthreads();
      if (t0 + unsigned(tid) < je) {
#pragma unroll
        for (int k = 0; k < D; ++k) sb[k * kPerBlock + tid] = g.b[k][t0 + tid];
      }
      __syncthreads();
      if (!valid) continue;
      const int m = int(min(unsigned(kPerBlock), je - t0));
      // Pairs with j <= i (own cell, self-join) are skipped: from u0 on every j exceeds i.
      int u0 = 0;
      if (same && i + 1 > t0) u0 = int(min(unsigned(m), i + 1 - t0));
      for (int u = u0; u < m; ++u) {
        T q[D];
#pragma unroll
        for (int k = 0; k < D; ++k) q[k] = sb[k * kPerBlock + u];
        const T d2 = periodic_sq_dist<T, D>(p, q, len, half);
        if (d2 <= eps2) {
          if constexpr (WRITE) {
            g.out_i[slot] = i;
            g.out_j[slot] = t0 + unsigned(u);
            g.out_d[slot] = dev_sqrt(d2);
            ++slot;
          } else {
            ++found;
          }
        }
      }
    }
  }
  if constexpr (!WRITE) {
    if (valid) g.counts[i] = found;
  }
}

// Uploads a host vector to a new device array of the call.
template <typename V>
V* put(Call& call, const std::vector<V>& v, const char* what) {
  V* d = call.alloc<V>(std::max<size_t>(v.size(), 1), what);
  if (!v.empty()) upload_bytes(call, d, v.data(), v.size() * sizeof(V));
  return d;
}

// Launches `kernel` over items [first, last) in slices of about kPerSliceEvals pair
// evaluations, waiting (and polling for cancel) after each.
template <typename T>
void launch_items(Call& call, void (*kernel)(PerArgs<T>), PerArgs<T> g, size_t smem,
                  const std::vector<double>& evals, size_t first, size_t last) {
  LastRun& lr = last_run();
  size_t next = first;
  while (next < last) {
    double w = 0;
    size_t end = next;
    while (end < last && (end == next || w + evals[end] <= kPerSliceEvals) &&
           end - next < 0x7fffffffu)
      w += evals[end++];
    g.item0 = (long long)next;
    kernel<<<unsigned(end - next), kPerBlock, smem, call.stream()>>>(g);
    G2_CUDA_LAUNCH("periodic join kernel launch");
    ++lr.launches;
    next = end;
    const cudaEvent_t done = call.event();
    G2_CUDA(cudaEventRecord(done, call.stream()));
    call.wait(done);
  }
}

template <typename T, int D>
uint64_t periodic_run(const PeriodicJoin& pj, PairSink* sink, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const RdfProblem& p = pj.cells;
  const RdfCells<T> c = build_rdf_cells<T>(p);
  const RdfNeighbors nbl = rdf_neighbors<T>(p, c);
  const std::vector<uint32_t>& bs = p.self ? c.a_start : c.b_start;
  const std::vector<uint32_t>& order_b = p.self ? c.a_order : c.b_order;
  // Work items: runs of kPerBlock rows of one cell, with their pair evaluations.
  std::vector<unsigned long long> items;
  std::vector<double> evals;
  std::vector<uint32_t> item_row;  // first sorted row of each item
  uint64_t examined = 0;
  for (uint64_t q = 0; q < c.cells; ++q) {
    const uint32_t r0 = c.a_start[q], r1 = c.a_start[q + 1];
    if (r0 == r1) continue;
    uint64_t per_row = 0;
    for (uint64_t e = nbl.first[q]; e < nbl.first[q + 1]; ++e)
      per_row += bs[nbl.cell[e] + 1] - bs[nbl.cell[e]];
    if (per_row == 0) continue;
    examined += per_row * (r1 - r0);
    for (uint32_t r = 0; r < r1 - r0; r += kPerBlock) {
      items.push_back((q << 32) | r);
      evals.push_back(double(std::min<uint32_t>(kPerBlock, r1 - r0 - r)) * double(per_row));
      item_row.push_back(r0 + r);
    }
  }
  ctl.stats.prepare_s += seconds_since(t0);
  ctl.stats.pairs_examined += examined;
  const size_t na = p.a.n;
  if (items.empty()) return 0;
  PerArgs<T> g{};
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
  g.eps2 = sizeof(T) == 4 ? T(pj.join.eps2_f) : T(pj.join.eps2);
  g.self = p.self;
  g.counts = call.alloc<unsigned>(na, "row counts");
  // Rows outside every item (cells without neighbours' points) count 0.
  G2_CUDA(cudaMemsetAsync(g.counts, 0, na * sizeof(unsigned), call.stream()));
  const size_t smem = sizeof(T) * D * kPerBlock;
  const cudaEvent_t ev0 = call.event(true), ev1 = call.event(true);
  auto t1 = Clock::now();
  G2_CUDA(cudaEventRecord(ev0, call.stream()));
  launch_items<T>(call, periodic_kernel<T, D, false>, g, smem, evals, 0, items.size());
  std::vector<unsigned> counts(na);
  download(call, counts.data(), g.counts, na * sizeof(unsigned));
  // Output offsets per sorted row of a.
  std::vector<unsigned long long> offs(na + 1, 0);
  for (size_t i = 0; i < na; ++i) offs[i + 1] = offs[i] + counts[i];
  const uint64_t total = offs[na];
  if (!sink || total == 0) {
    G2_CUDA(cudaEventRecord(ev1, call.stream()));
    call.wait(ev1);
    float ms = 0;
    G2_CUDA(cudaEventElapsedTime(&ms, ev0, ev1));
    last_run().kernel_ms += ms;
    ctl.stats.kernel_s += seconds_since(t1);
    return total;
  }
  const uint64_t max_pairs = pj.join.max_pairs;
  if (max_pairs && total > max_pairs)
    throw Error(ErrorCode::ProgramLimit, "similarity join result exceeds gpu2bs.max_result_rows",
                "More than " + std::to_string(max_pairs) + " pairs are within eps.",
                "Use a smaller eps, or raise gpu2bs.max_result_rows.");
  g.offsets = put(call, offs, "output offsets");
  // The output buffer: kPerOutPairs pairs, or the largest item's pairs when more.
  size_t cap = size_t(std::min<uint64_t>(total, kPerOutPairs));
  for (size_t it = 0; it < items.size(); ++it) {
    const uint32_t r0 = item_row[it];
    const uint32_t r1 = std::min<uint32_t>(c.a_start[(items[it] >> 32) + 1], r0 + kPerBlock);
    cap = std::max<size_t>(cap, size_t(offs[r1] - offs[r0]));
  }
  g.out_i = call.alloc<unsigned>(cap, "pairs");
  g.out_j = call.alloc<unsigned>(cap, "pairs");
  g.out_d = call.alloc<T>(cap, "pairs");
  std::vector<unsigned> hi(cap), hj(cap);
  std::vector<T> hd(cap);
  const size_t page = std::max<size_t>(1, ctl.page_pairs);
  std::vector<PairRecord> recs;
  recs.reserve(std::min(page, cap));
  size_t next = 0;
  double merge_s = 0;
  while (next < items.size()) {
    // Items [next, end) whose pairs fit the buffer (at least one).
    const uint64_t base = offs[item_row[next]];
    size_t end = next;
    uint64_t stop = base;
    while (end < items.size()) {
      const uint32_t r0 = item_row[end];
      const uint32_t r1 = std::min<uint32_t>(c.a_start[(items[end] >> 32) + 1], r0 + kPerBlock);
      if (end > next && offs[r1] - base > cap) break;
      stop = offs[r1];
      ++end;
    }
    const size_t n = size_t(stop - base);
    if (n > 0) {
      g.out_base = base;
      launch_items<T>(call, periodic_kernel<T, D, true>, g, smem, evals, next, end);
      download(call, hi.data(), g.out_i, n * sizeof(unsigned));
      download(call, hj.data(), g.out_j, n * sizeof(unsigned));
      download(call, hd.data(), g.out_d, n * sizeof(T));
      auto tm = Clock::now();
      for (size_t s = 0; s < n; s += page) {
        const size_t m = std::min(page, n - s);
        recs.resize(m);
        for (size_t q = 0; q < m; ++q)
          recs[q] = PairRecord{c.a_order[hi[s + q]], order_b[hj[s + q]], double(hd[s + q])};
        sink->consume(recs.data(), m);
      }
      merge_s += seconds_since(tm);
    }
    next = end;
  }
  G2_CUDA(cudaEventRecord(ev1, call.stream()));
  call.wait(ev1);
  float ms = 0;
  G2_CUDA(cudaEventElapsedTime(&ms, ev0, ev1));
  last_run().kernel_ms += ms;
  ctl.stats.kernel_s += seconds_since(t1) - merge_s;
  ctl.stats.merge_s += merge_s;
  ctl.stats.pairs_emitted += total;
  return total;
}

template <typename T>
uint64_t periodic_t(const PeriodicJoin& pj, PairSink* sink, Control& ctl) {
  switch (pj.cells.a.dims) {
    case 2: return periodic_run<T, 2>(pj, sink, ctl);
    case 3: return periodic_run<T, 3>(pj, sink, ctl);
    case 4: return periodic_run<T, 4>(pj, sink, ctl);
    case 5: return periodic_run<T, 5>(pj, sink, ctl);
    default: return periodic_run<T, 6>(pj, sink, ctl);
  }
}

}  // namespace

uint64_t periodic_join(const PeriodicJoin& pj, PairSink* sink, Control& ctl) {
  if (pj.cells.a.n == 0 || pj.cells.b.n == 0) return 0;
  return pj.cells.prec == Precision::Float32 ? periodic_t<float>(pj, sink, ctl)
                                             : periodic_t<double>(pj, sink, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
