// The CUDA engine's weighted SDH and pair count: the points (in the call's precision) and the
// weights uploaded through the call's staging buffer, the all-pairs weighted kernels
// (weights.cu), the counts and 128-bit sums downloaded. The points must fit in device memory
// (no blocks): 53200 otherwise.
#include "common.cuh"
#include "weights.h"

namespace gpu2bs {
namespace cuda {
namespace {

// Uploads the points and weights, runs the kernels for nb buckets (0: the pair count) and
// returns the counts and sums on grid `s`.
template <typename T>
WeightedCounts weighted_gpu(const PointsView& pts, const double* w, WeightedDeviceArgs a,
                            Control& ctl) {
  Call call(ctl);
  const size_t n = pts.n;
  const size_t slots = a.nbuckets ? size_t(a.nbuckets) : 1;
  WeightedCounts res;
  res.scale = a.scale;
  res.pairs.assign(slots, 0);
  res.sums.assign(slots, WeightSum());
  T* dc[kMaxDims] = {};
  for (int k = 0; k < pts.dims; ++k) dc[k] = call.alloc<T>(std::max<size_t>(n, 1), "points");
  upload_points<T>(call, pts, dc);
  double* dw = call.alloc<double>(std::max<size_t>(n, 1), "weights");
  upload_bytes(call, dw, w, n * sizeof(double));
  unsigned long long* out = call.alloc<unsigned long long>(3 * slots, "weighted histogram");
  G2_CUDA(cudaMemsetAsync(out, 0, 3 * slots * sizeof(unsigned long long), call.stream()));
  a.dims = pts.dims;
  a.n = n;
  a.f32 = sizeof(T) == 4;
  for (int k = 0; k < pts.dims; ++k) a.coord[k] = dc[k];
  a.w = dw;
  a.pairs = out;
  a.lo = out + slots;
  a.hi = out + 2 * slots;
  const auto t0 = Clock::now();
  const double ms = weighted_run(a, call.stream(), device_facts().sms, [&] { call.poll(); }, &check);
  ctl.stats.kernel_s += seconds_since(t0);
  LastRun& lr = last_run();
  lr.kernel_ms += ms;
  std::vector<unsigned long long> host(3 * slots);
  download(call, host.data(), out, host.size() * sizeof(unsigned long long));
  for (size_t k = 0; k < slots; ++k) {
    res.pairs[k] = host[k];
    res.sums[k].lo = host[slots + k];
    res.sums[k].hi = host[2 * slots + k];
  }
  ctl.stats.pairs_examined += uint64_t(n) * (uint64_t(n) - 1) / 2;
  return res;
}

}  // namespace

WeightedCounts sdh_weighted(const SdhProblem& p, const double* w, Control& ctl) {
  WeightedDeviceArgs a;
  a.scale = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  a.nbuckets = p.params.nbuckets;
  a.clamp = !p.params.explicit_width;
  a.inv_w = p.params.inv_width;
  a.inv_w_f = p.params.inv_width_f;
  return p.prec == Precision::Float32 ? weighted_gpu<float>(p.pts, w, a, ctl)
                                      : weighted_gpu<double>(p.pts, w, a, ctl);
}

WeightedCounts pair_count_weighted(const PairCountProblem& p, const double* w, Control& ctl) {
  WeightedDeviceArgs a;
  a.scale = make_weight_scale(weight_max(w, p.pts.n, p.pts.name));
  a.r2 = p.r2;
  a.r2_f = p.r2_f;
  return p.prec == Precision::Float32 ? weighted_gpu<float>(p.pts, w, a, ctl)
                                      : weighted_gpu<double>(p.pts, w, a, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
