// Planning of the similarity join's work on the GPU: the per-item workload estimate (plan
// kernel), the item order of the balancing strategy, the lanes per query point (K), and the
// batches of the batched join. See join.cuh.
#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <vector>

#include "join.cuh"

namespace gpu2bs {
namespace cuda {
namespace join {

namespace {

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
        const long long nb = find_cell<D>(ccb, ncells_b, key);
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

}  // namespace

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

#define G2_INST_PLAN(T, D)                                                                 \
  template JoinPlan plan_join<T, D, true>(Call&, const DevGrid<T>&, const DevGrid<T>&,    \
                                          const signed char*, int);                        \
  template JoinPlan plan_join<T, D, false>(Call&, const DevGrid<T>&, const DevGrid<T>&,   \
                                           const signed char*, int);
G2_JOIN_FOR_ALL(G2_INST_PLAN)
#undef G2_INST_PLAN

}  // namespace join

// K = 2^e minimizing the predicted steps times their cost (host_api.h).
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

}  // namespace cuda
}  // namespace gpu2bs
