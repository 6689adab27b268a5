// CPU engine benchmark: SDH (500, 10, 5000 buckets), pair count and similarity join on uniform
// points in the unit cube; prints pairs per second, per core, median of the runs.
//   bench_cpu [N=100000] [threads=all] [runs=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/reference.h"
#include "core/cpu_kernels.h"
#include "core/engine.h"

using namespace gpu2bs;

namespace {

template <typename F>
double median_seconds(int runs, F fn) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

class NullSink : public PairSink {
 public:
  void consume(const PairRecord*, size_t n) override { count += n; }
  size_t count = 0;
};

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? size_t(atof(argv[1])) : 100000;
  int threads = argc > 2 ? atoi(argv[2]) : int(std::thread::hardware_concurrency());
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  auto pts = ref::uniform(n, 3, 1);
  auto eng = make_cpu_engine();
  Control ctl;
  ctl.threads = threads;
  const double pairs = double(n) * double(n - 1) / 2;
  printf("cpu engine %s, N=%zu, threads=%d, median of %d runs\n", cpu_kernels().isa, n, threads, runs);
  printf("%-34s %12s %14s %16s\n", "kernel", "seconds", "pairs/s", "pairs/s/thread");
  Bounds box = compute_bounds(pts.view());
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const char* pn = prec == Precision::Float32 ? "f32" : "f64";
    for (int nb : {10, 500, 5000}) {
      SdhProblem p;
      p.pts = pts.view();
      p.prec = prec;
      p.params = make_sdh_params(nb, 0, false, box, prec);
      double s = median_seconds(runs, [&] { eng->sdh(p, ctl); });
      char name[64];
      snprintf(name, sizeof name, "sdh %s %d buckets", pn, nb);
      printf("%-34s %12.4f %14.3e %16.3e\n", name, s, pairs / s, pairs / s / threads);
    }
    auto pc = make_pair_count(pts.view(), INFINITY, prec);
    pc.r2 = 0.01;  // all-pairs tiles (r = inf) with a real comparison (r = 0.1)
    pc.r2_f = 0.01f;
    double s = median_seconds(runs, [&] { eng->pair_count(pc, ctl); });
    printf("%-34s %12.4f %14.3e %16.3e\n", (std::string("pair count (tiles) ") + pn).c_str(), s,
           pairs / s, pairs / s / threads);
  }
  return 0;
}
