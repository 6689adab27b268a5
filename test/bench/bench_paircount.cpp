// CPU engine pair count and SDH preparation benchmark: uniform points in the unit cube, prints
// the engine's prepare / kernel / merge split per run and the median total.
//   bench_paircount [N=1000000] [dims=3] [r=0.01] [threads=all] [runs=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/reference.h"
#include "core/cpu_kernels.h"
#include "core/engine.h"

using namespace gpu2bs;

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? size_t(atof(argv[1])) : 1000000;
  const int dims = argc > 2 ? atoi(argv[2]) : 3;
  const double r = argc > 3 ? atof(argv[3]) : 0.01;
  const int threads = argc > 4 ? atoi(argv[4]) : int(std::thread::hardware_concurrency());
  const int runs = argc > 5 ? atoi(argv[5]) : 5;
  auto pts = ref::uniform(n, dims, 1);
  auto eng = make_cpu_engine();
  printf("cpu engine %s, N=%zu, dims=%d, r=%g, threads=%d\n", cpu_kernels().isa, n, dims, r,
         threads);
  std::vector<double> tot;
  for (int run = 0; run < runs; ++run) {
    Control ctl;
    ctl.threads = threads;
    auto t0 = std::chrono::steady_clock::now();
    PairCountProblem p = make_pair_count(pts.view(), r, Precision::Float32);
    uint64_t c = eng->pair_count(p, ctl);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tot.push_back(s);
    printf("pair_count f32: %llu pairs, total %.1f ms (prepare %.1f, kernel %.1f), examined %.3e\n",
           (unsigned long long)c, s * 1e3, ctl.stats.prepare_s * 1e3, ctl.stats.kernel_s * 1e3,
           double(ctl.stats.pairs_examined));
  }
  std::sort(tot.begin(), tot.end());
  printf("median total %.1f ms\n", tot[tot.size() / 2] * 1e3);
  return 0;
}
