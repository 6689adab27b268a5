// DBSCAN engine benchmark (not a test): the CPU engine's gpu_dbscan work without PostgreSQL,
// and the host-side cost of the GPU path. Points: Gaussian blobs (n / 500 of them, sigma in
// [0.0015, 0.003]) and 10 % uniform noise in the unit square, std::mt19937_64(seed).
//   cpu:    dbscan() on the CPU engine (both joins, counting and union-find on the calling
//           thread), median of 3;
//   replay: the pairs within eps stored once (in runs of kReplayRun pairs), then dbscan() on an
//           engine that hands back the stored runs and computes the neighbour counts itself (as
//           the GPU engine's Group reduction does, on the device): the time left is the host's
//           share of the GPU path (the union-find and nearest-core pass over every pair, shared
//           among `threads` threads, and the labels), in CPU time of the process and in wall
//           time, median of 3;
//   gpu:    (built with -DG2_BENCH_CUDA, test/gpu: make -C test/gpu bench) dbscan() on the CUDA
//           engine, every pass on the device, float32 and float64, median of 3 with the split of
//           the last run (prepare, transfer, kernel), its labels checked against the CPU engine's.
// PARTS: a comma-separated subset of cpu,replay,gpu (default: all that are built).
// Usage: bench_dbscan N [eps] [minpoints] [threads] [seed] [PARTS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "core/dbscan.h"
#include "core/engine.h"
#include "core/pair_expr.h"

using namespace gpu2bs;

namespace {

using Clock = std::chrono::steady_clock;

// Pairs per replayed call: about one run of full pages of the GPU engine's drain (2,048-pair
// pages, runs broken by the pages warps left partly filled).
constexpr size_t kReplayRun = 32768;

// Stores every pair of a join in runs of kReplayRun pairs.
struct Store final : PairSink {
  std::vector<std::vector<PairRecord>> pages;
  // Appends the page to the last run, starting a new run when it is full.
  void consume(const PairRecord* p, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      if (pages.empty() || pages.back().size() == kReplayRun) {
        pages.emplace_back();
        pages.back().reserve(kReplayRun);
      }
      pages.back().push_back(p[k]);
    }
  }
};

// Hands back stored pages; computes Group reductions from them without timing them as host work.
class ReplayEngine final : public Engine {
 public:
  explicit ReplayEngine(const Store& s) : s_(s) {}
  std::string name() const override { return "replay"; }
  std::vector<uint64_t> sdh(const SdhProblem&, Control&) override { return {}; }
  uint64_t pair_count(const PairCountProblem&, Control&) override { return 0; }
  void pairwise(const PairwiseProblem&, PairSink&, Control&) override {}
  PairExprResult pair_expr(const PairExprProblem&, PairSink*, Control&) override { return {}; }
  bool reduces_pairs(PairReduce::Kind k) const override { return k == PairReduce::Group; }
  // A Group reduction counted from the stored pairs, else the stored pages in order.
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control&) override {
    if (p.reduce) {
      PairReduce& r = *p.reduce;
      r.group_count.assign(p.a.n, 0);
      r.group_min.assign(p.a.n, 0);
      r.group_max.assign(p.a.n, 0);
      for (const auto& pg : s_.pages)
        for (const PairRecord& x : pg) {
          const bool i_small = r.keys_a[x.i] <= r.keys_a[x.j];
          ++r.group_count[(r.side == 0) == i_small ? x.i : x.j];
        }
      r.done = true;
      return;
    }
    for (const auto& pg : s_.pages) sink.consume(pg.data(), pg.size());
  }

 private:
  const Store& s_;
};

// CPU seconds of the whole process (the calling thread and the helpers), which other load on the
// machine does not inflate the way it inflates wall time.
double process_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The median of three timings.
double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

// Builds the points, times dbscan() on the CPU engine and on replayed pages, prints the figures.
int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s N [eps] [minpoints] [threads] [seed]\n", argv[0]);
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const double eps = argc > 2 ? std::atof(argv[2]) : 0.003;
  const int64_t minpoints = argc > 3 ? std::atoll(argv[3]) : 10;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  const unsigned seed = argc > 5 ? unsigned(std::atoi(argv[5])) : 1;
  const std::string parts = argc > 6 ? argv[6] : "cpu,replay,gpu";
  auto want = [&](const char* part) { return parts.find(part) != std::string::npos; };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  const size_t k = std::max<size_t>(1, n / 500);
  std::vector<double> cx(k), cy(k), sg(k);
  for (size_t c = 0; c < k; ++c) {
    cx[c] = 0.02 + 0.96 * u(rng);
    cy[c] = 0.02 + 0.96 * u(rng);
    sg[c] = 0.0015 + 0.0015 * u(rng);
  }
  std::vector<double> x(n), y(n);
  std::vector<int64_t> keys(n);
  for (size_t i = 0; i < n; ++i) {
    if (i % 10 == 9) {
      x[i] = u(rng);
      y[i] = u(rng);
    } else {
      const size_t c = rng() % k;
      x[i] = cx[c] + sg[c] * g(rng);
      y[i] = cy[c] + sg[c] * g(rng);
    }
    keys[i] = int64_t(i + 1);
  }
  PointsView v;
  v.dims = 2;
  v.n = n;
  v.coord[0] = x.data();
  v.coord[1] = y.data();
  SimjoinProblem prob = make_simjoin(v, nullptr, eps, Precision::Float32, 0);
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  Control ctl;
  ctl.threads = threads;

  std::vector<double> t_cpu;
  DbscanResult res;
  for (int r = 0; r < 3; ++r) {
    auto t0 = Clock::now();
    res = dbscan(*cpu, prob, keys.data(), minpoints, ctl);
    t_cpu.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::printf("points %zu eps %g minpoints %lld threads %d: clusters %llu, core %llu, border %llu, noise %llu\n",
              n, eps, (long long)minpoints, threads, (unsigned long long)res.clusters,
              (unsigned long long)res.core_points, (unsigned long long)res.border_points,
              (unsigned long long)res.noise_points);
  if (want("cpu")) std::printf("cpu engine dbscan float32 (wall, median of 3): %.1f ms\n", median3(t_cpu) * 1e3);
  if (want("replay")) {
    std::vector<double> t_replay, w_replay;
    Store store;
    cpu->simjoin(prob, store, ctl);
    uint64_t pairs = 0;
    for (const auto& pg : store.pages) pairs += pg.size();
    ReplayEngine replay(store);
    for (int r = 0; r < 3; ++r) {
      const double t0 = process_cpu_s();
      const auto w0 = Clock::now();
      DbscanResult rr = dbscan(replay, prob, keys.data(), minpoints, ctl);
      t_replay.push_back(process_cpu_s() - t0);
      w_replay.push_back(std::chrono::duration<double>(Clock::now() - w0).count());
      if (rr.cluster != res.cluster) {
        std::fprintf(stderr, "replay result differs\n");
        return 1;
      }
    }
    // The Group reduction's own time (done on the device in the GPU path), to subtract.
    std::vector<double> t_group, w_group;
    for (int r = 0; r < 3; ++r) {
      PairReduce red;
      red.kind = PairReduce::Group;
      red.keys_a = red.keys_b = keys.data();
      SimjoinProblem q = prob;
      q.reduce = &red;
      Store none;
      const double t0 = process_cpu_s();
      const auto w0 = Clock::now();
      replay.simjoin(q, none, ctl);
      red.side = 1;
      replay.simjoin(q, none, ctl);
      t_group.push_back(process_cpu_s() - t0);
      w_group.push_back(std::chrono::duration<double>(Clock::now() - w0).count());
    }
    std::printf("pairs within eps %llu; host share of a pair-streaming GPU path (replayed runs of %zu pairs, median of 3): "
                "%.1f ms CPU (%.1f M pairs per CPU second), %.1f ms wall on %d threads\n",
                (unsigned long long)pairs, size_t(kReplayRun), (median3(t_replay) - median3(t_group)) * 1e3,
                double(pairs) / (median3(t_replay) - median3(t_group)) / 1e6,
                (median3(w_replay) - median3(w_group)) * 1e3, threads);
  }
#ifdef G2_BENCH_CUDA
  if (want("gpu")) {
    std::string why;
    Engine* gpu = cuda_engine(&why);
    if (!gpu) {
      std::printf("gpu: no usable GPU (%s)\n", why.c_str());
      return 1;
    }
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      SimjoinProblem pp = make_simjoin(v, nullptr, eps, prec, 0);
      const DbscanResult want_res = prec == Precision::Float32 ? res : dbscan(*cpu, pp, keys.data(), minpoints, ctl);
      std::vector<double> t_gpu;
      DbscanResult gr;
      Control gctl;
      gctl.threads = threads;
      for (int r = 0; r < 4; ++r) {  // the first call (CUDA start, pinned buffers) is not timed
        gctl.stats = RunStats();
        auto t0 = Clock::now();
        gr = dbscan(*gpu, pp, keys.data(), minpoints, gctl);
        if (r > 0) t_gpu.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      const bool same = gr.cluster == want_res.cluster && gr.core == want_res.core;
      std::printf("gpu engine dbscan %s (wall, median of 3): %.1f ms [last: prepare %.1f, transfer %.1f, kernel %.1f ms]; "
                  "pairs within eps %llu, clusters %llu, noise %llu; labels %s the cpu engine's\n",
                  prec == Precision::Float32 ? "float32" : "float64", median3(t_gpu) * 1e3,
                  gctl.stats.prepare_s * 1e3, gctl.stats.transfer_s * 1e3, gctl.stats.kernel_s * 1e3,
                  (unsigned long long)gr.neighbour_pairs, (unsigned long long)gr.clusters,
                  (unsigned long long)gr.noise_points, same ? "equal to" : "DIFFER FROM");
      if (!same) return 1;
    }
  }
#endif
  return 0;
}
