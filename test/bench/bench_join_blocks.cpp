// The similarity join in slabs under a device budget against the join in memory, timed at the
// engine level: the budget is 1/8 of what the in-memory path needs (its points and grid,
// split::join_core_bytes, plus the banks' kJoinMinBankBytes), and, for comparison with earlier
// figures, 1/8 of the points and grid plus 64 MiB. Pairs are checked equal by count and an
// order-independent checksum of (i, j, dist bits); "plan" is split::plan_slabs_for_budget's
// host time alone. Not a test: results are printed.
//   test/gpu/build/bench_join_blocks [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/split.h"
#include "kernels/host_api.h"

using namespace gpu2bs;

namespace {

// Counts the pairs and adds a mix of each (smaller index first, larger, dist bits).
struct SumSink : PairSink {
  uint64_t n = 0, sum = 0;
  void consume(const PairRecord* p, size_t k) override {
    uint64_t s = 0;
    for (size_t q = 0; q < k; ++q) {
      const uint64_t i = std::min(p[q].i, p[q].j), j = std::max(p[q].i, p[q].j);
      uint64_t d;
      std::memcpy(&d, &p[q].dist, 8);
      uint64_t h = (i * 0x9E3779B97F4A7C15ull) ^ (j * 0xC2B2AE3D27D4EB4Full) ^ d;
      h ^= h >> 29;
      s += h * 0xBF58476D1CE4E5B9ull;
    }
    n += k;
    sum += s;
  }
};

// One timed run: wall time, engine stats, kernel time (cudaEvents), slabs, reuse counts.
struct Run {
  double wall_ms = 0;
  RunStats st;
  double kernel_ms = 0;
  uint64_t n = 0, sum = 0;
  size_t hits = 0, misses = 0;
  size_t peak = 0;
  double grid_ms = 0, jplan_ms = 0, sample_ms = 0, copy_ms = 0;  // cudaEvents, summed
  int launches = 0, drains = 0;
  cuda::LastRun lr;  // the run's loop and worker times (host)
};

// The median run (by wall time) of `reps` joins of `p` under `limit` bytes (0: none).
Run median_run(Engine* gpu, const SimjoinProblem& p, size_t limit, int reps) {
  std::vector<Run> runs;
  for (int r = 0; r < reps; ++r) {
    Control c;
    c.threads = 8;
    c.device_memory_limit = limit;
    SumSink s;
    cuda::reset_engine_peak_bytes();
    const auto t0 = std::chrono::steady_clock::now();
    gpu->simjoin(p, s, c);
    Run x;
    x.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    x.st = c.stats;
    x.kernel_ms = cuda::last_run().kernel_ms;
    x.hits = cuda::last_run().kept_hits;
    x.misses = cuda::last_run().kept_misses;
    x.peak = cuda::engine_peak_bytes();
    x.grid_ms = cuda::last_run().grid_ms;
    x.jplan_ms = cuda::last_run().join_plan_ms;
    x.sample_ms = cuda::last_run().sample_ms;
    x.copy_ms = cuda::last_run().copy_ms;
    x.launches = cuda::last_run().launches;
    x.drains = cuda::last_run().drains;
    x.lr = cuda::last_run();
    x.n = s.n;
    x.sum = s.sum;
    runs.push_back(x);
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.wall_ms < b.wall_ms; });
  return runs[runs.size() / 2];
}

// The median time (ms) of `reps` slab plans of `p` under `limit` bytes (the host part of
// prepare that runs before any sub-join).
double plan_ms(const SimjoinProblem& p, size_t limit, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const split::SlabPlan plan = split::plan_slabs_for_budget(p, limit, 8);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    (void)plan;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Prints one configuration's line. In slabs, the sink runs on the calling thread while a worker
// runs the sub-joins: merge is the sink's time, and prepare + kernel_s + merge above the wall
// is the time the two overlapped.
void show(const char* what, const Run& r, const Run& mem, size_t limit, double plan) {
  printf("  %-34s limit %7.1f MB: wall %8.1f ms (%.2fx in-memory throughput), kernel %7.1f ms (%.2fx), "
         "slabs %llu, plan %.1f, prepare %.1f, transfer %.1f, kernel_s %.1f, merge %.1f ms, peak %.1f MB, "
         "buffers kept/new %zu/%zu, pairs %llu, equal %s\n"
         "    device: grid %.1f ms, join plan %.1f ms, estimate %.1f ms, page copies %.1f ms, "
         "launches %d, drains %d\n"
         "    host: sub-joins %.1f ms, loops %.1f ms (waits with a launch in flight %.1f, for copies "
         "alone %.1f, sink %.1f [of it queue room %.1f], rest %.1f), launch lag %.1f ms (%.3f ms per launch)\n",
         what, double(limit) / 1048576.0, r.wall_ms, mem.wall_ms / r.wall_ms, r.kernel_ms,
         r.kernel_ms > 0 ? mem.kernel_ms / r.kernel_ms : 0.0, (unsigned long long)r.st.slabs, plan,
         r.st.prepare_s * 1e3, r.st.transfer_s * 1e3, r.st.kernel_s * 1e3, r.st.merge_s * 1e3,
         double(r.peak) / 1048576.0, r.hits, r.misses, (unsigned long long)r.n,
         r.n == mem.n && r.sum == mem.sum ? "yes" : "NO", r.grid_ms, r.jplan_ms, r.sample_ms,
         r.copy_ms, r.launches, r.drains, r.lr.subjoin_ms, r.lr.loop_ms, r.lr.loop_wait_ms,
         r.lr.loop_copy_wait_ms, r.lr.loop_sink_ms, r.lr.queue_wait_ms,
         r.lr.loop_ms - r.lr.loop_wait_ms - r.lr.loop_copy_wait_ms - r.lr.loop_sink_ms,
         r.lr.launch_lag_ms, r.launches ? r.lr.launch_lag_ms / r.launches : 0.0);
}

// The in-memory join and the slab joins of one input.
void bench(Engine* gpu, const char* name, size_t n, double eps, uint64_t seed, int reps) {
  auto pts = ref::uniform(n, 2, seed, 0, 1);
  const SimjoinProblem p = make_simjoin(pts.view(), nullptr, eps, Precision::Float32, 0);
  const uint64_t core = split::join_core_bytes(p.a.n, 0, true, 2, p.prec);
  const uint64_t need = core + split::kJoinMinBankBytes;
  printf("%s: N=%zu 2-D float32 uniform in [0,1)^2, eps=%g, self-join, median of %d runs; in-memory need %.1f MB\n",
         name, n, eps, reps, double(need) / 1048576.0);
  (void)median_run(gpu, p, 0, 1);  // warm-up (CUDA context, staging)
  const Run mem = median_run(gpu, p, 0, reps);
  show("in memory", mem, mem, 0, 0);
  const size_t strict = size_t(need / 8);
  show("slabs, 1/8 of the in-memory need", median_run(gpu, p, strict, reps), mem, strict,
       plan_ms(p, strict, reps));
  const size_t lenient = size_t(core / 8 + split::kJoinMinBankBytes);
  show("slabs, points+grid/8 + 64 MiB", median_run(gpu, p, lenient, reps), mem, lenient,
       plan_ms(p, lenient, reps));
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (!gpu) {
    printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  bench(gpu, "u2", 1000000, 0.01, 7, reps);
  bench(gpu, "4M", 4000000, 0.002, 8, reps);
  bench(gpu, "2M (bench_multigpu's input)", 2000000, 0.002, 3, reps);
  return 0;
}
