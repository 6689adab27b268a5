// Weighted SDH kernel cost (kernels/weights.cu): the same all-pairs tile kernel without the
// weight sums (WeightedDeviceArgs::weighted) and with them in each shared layout (split32),
// uniform 3-D float32 points in the unit cube, weights uniform in (0, 1], width from the bounding
// box. Kernel time from cudaEvents, median of `reps` runs, as pairs/s. Not a test.
//   build/bench_weights N NBUCKETS [reps]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/weights.h"
#include "kernels/weights.h"

using namespace gpu2bs;

// Throws on a failed CUDA call.
static void bcheck(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(expr) + " at " + file + ":" + std::to_string(line) + ": " +
                             cudaGetErrorName(e));
}
#define BC(expr) bcheck((expr), #expr, __FILE__, __LINE__)

// Runs the benchmark: one line per mode with the median kernel time and pairs/s.
int main(int argc, char** argv) {
  const size_t n = argc > 1 ? size_t(std::atof(argv[1])) : 1000000;
  const int nb = argc > 2 ? std::atoi(argv[2]) : 500;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::vector<double>> c(3, std::vector<double>(n));
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) c[size_t(k)][i] = u(rng);
    w[i] = 1.0 - u(rng);
  }
  PointsView v;
  v.dims = 3;
  v.n = n;
  for (int k = 0; k < 3; ++k) v.coord[k] = c[size_t(k)].data();
  const SdhProblem p = make_sdh(v, nb, 0, false, Precision::Float32);
  cuda::WeightedDeviceArgs a;
  a.dims = 3;
  a.n = n;
  a.f32 = true;
  for (int k = 0; k < 3; ++k) {
    std::vector<float> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = float(c[size_t(k)][i]);
    void* d = nullptr;
    BC(cudaMalloc(&d, n * 4));
    BC(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    a.coord[k] = d;
  }
  double* dw = nullptr;
  BC(cudaMalloc(&dw, n * 8));
  BC(cudaMemcpy(dw, w.data(), n * 8, cudaMemcpyHostToDevice));
  unsigned long long* out = nullptr;
  BC(cudaMalloc(&out, 3 * size_t(nb) * 8));
  a.w = dw;
  a.nbuckets = nb;
  a.clamp = true;
  a.inv_w = p.params.inv_width;
  a.inv_w_f = p.params.inv_width_f;
  a.scale = make_weight_scale(1.0);
  a.pairs = out;
  a.lo = out + nb;
  a.hi = out + 2 * size_t(nb);
  int sms = 0;
  BC(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  BC(cudaGetDeviceProperties(&prop, 0));
  const double pairs = double(n) * double(n - 1) / 2;
  std::printf("device %s, %d SMs; n %zu, 3-D float32, %d buckets, %d runs each\n", prop.name, sms, n, nb, reps);
  std::printf("| kernel | median ms | min ms | pairs/s (median) |\n|---|---|---|---|\n");
  double med[3] = {0, 0, 0};
  const char* names[3] = {"counts only", "counts + weight sums (32-bit words, default)",
                          "counts + weight sums (64-bit limbs)"};
  for (int mode = 0; mode < 3; ++mode) {
    a.weighted = mode > 0;
    a.split32 = mode == 1;
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      BC(cudaMemset(out, 0, 3 * size_t(nb) * 8));
      ms.push_back(cuda::weighted_run(a, nullptr, sms, {}, &bcheck));
    }
    std::sort(ms.begin(), ms.end());
    med[mode] = ms[ms.size() / 2];
    std::vector<unsigned long long> h(3 * size_t(nb));
    BC(cudaMemcpy(h.data(), out, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long total = 0;
    for (int k = 0; k < nb; ++k) total += h[size_t(k)];
    if (double(total) != pairs) std::printf("ERROR: %llu pairs counted, %.0f expected\n", total, pairs);
    std::printf("| %s | %.1f | %.1f | %.3g |\n", names[mode], med[mode], ms.front(), pairs / (med[mode] * 1e-3));
  }
  std::printf("weighted / unweighted kernel time: %.2f (32-bit words), %.2f (64-bit limbs)\n", med[1] / med[0],
              med[2] / med[0]);
  return 0;
}
