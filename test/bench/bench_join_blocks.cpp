// The similarity join in slabs under a device budget against the join in memory, timed at the
// engine level: the budget is 1/8 of what the in-memory path needs (its points and grid,
// split::join_core_bytes, plus the banks' kJoinMinBankBytes), and, for comparison with earlier
// figures, 1/8 of the points and grid plus 64 MiB. After a warm-up round the three
// configurations run interleaved (in memory, 1/8, lenient; in memory, 1/8, lenient; ...), so a
// change of the host's speed during the run reaches all three alike; each round's slab walls are
// compared with the same round's in-memory wall, and the medians, minima and maxima are printed.
// Pairs are checked equal by count and an order-independent checksum of (i, j, dist bits);
// "plan" is split::plan_slabs_for_budget's host time alone. Each round also times the sink alone
// on 8 MiB of pair records just copied from the device into a pinned buffer, on the oldest of 8
// such buffers (64 MiB copied after it) and on 8 MiB it has just read (in the CPU's caches).
// Not a test: results are printed.
//   test/gpu/build/bench_join_blocks [rounds (5)] [all | strict (1/8 of the need only)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

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

// One join of `p` under `limit` bytes (0: none), timed.
Run one_run(Engine* gpu, const SimjoinProblem& p, size_t limit) {
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
  return x;
}

// The run of median wall time among `runs` (not empty).
Run median_of(std::vector<Run> runs) {
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.wall_ms < b.wall_ms; });
  return runs[runs.size() / 2];
}

// The median of `v` (not empty).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Sink-alone times per pair (ns): over 8 MiB of records right after their copy from the device
// into a pinned buffer, over the oldest of 8 such buffers copied one after another, and over
// 8 MiB the sink has just read (in the CPU's caches).
struct Probe {
  double fresh_ns = 0, oldest_ns = 0, cached_ns = 0;
};

// Device records and 8 pinned buffers for the sink-alone probes, made once.
class SinkProbe {
 public:
  static constexpr size_t kBytes = size_t(8) << 20;
  static constexpr int kBufs = 8;
  // Fills the device buffer with pseudo-random records (on a CUDA error ok() is false).
  SinkProbe() {
    if (cudaMalloc(&dev_, kBytes) != cudaSuccess) return;
    for (int b = 0; b < kBufs; ++b)
      if (cudaHostAlloc(&host_[b], kBytes, cudaHostAllocDefault) != cudaSuccess) return;
    std::vector<PairRecord> r(kBytes / sizeof(PairRecord));
    uint64_t x = 88172645463325252ull;
    for (auto& q : r) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      q.i = uint32_t(x);
      q.j = uint32_t(x >> 32);
      q.dist = double(x >> 11) * 0x1p-53;
    }
    ok_ = cudaMemcpy(dev_, r.data(), kBytes, cudaMemcpyHostToDevice) == cudaSuccess;
  }
  // Frees the buffers.
  ~SinkProbe() {
    for (int b = 0; b < kBufs; ++b)
      if (host_[b]) cudaFreeHost(host_[b]);
    if (dev_) cudaFree(dev_);
  }
  SinkProbe(const SinkProbe&) = delete;
  SinkProbe& operator=(const SinkProbe&) = delete;
  // True when the buffers exist.
  bool ok() const { return ok_; }
  // One measurement of the three cases.
  Probe measure() {
    Probe p;
    const size_t n = kBytes / sizeof(PairRecord);
    auto sink_ns = [&](const void* buf) {
      SumSink s;
      const auto t0 = std::chrono::steady_clock::now();
      s.consume(static_cast<const PairRecord*>(buf), n);
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      sums_ += s.sum;
      return ns / double(n);
    };
    cudaMemcpy(host_[0], dev_, kBytes, cudaMemcpyDeviceToHost);
    p.fresh_ns = sink_ns(host_[0]);
    p.cached_ns = sink_ns(host_[0]);
    for (int b = 0; b < kBufs; ++b) cudaMemcpy(host_[b], dev_, kBytes, cudaMemcpyDeviceToHost);
    p.oldest_ns = sink_ns(host_[0]);
    return p;
  }
  // The probes' checksums (printed, so the compiler keeps the sink's work).
  uint64_t sums() const { return sums_; }

 private:
  void* dev_ = nullptr;
  void* host_[kBufs] = {};
  bool ok_ = false;
  uint64_t sums_ = 0;
};

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


// Prints one configuration's line (its median run, the walls' spread and the per-round ratios
// against the same round's in-memory wall). In slabs, the sink runs on the calling thread while
// a worker runs the sub-joins: merge is the sink's time, and prepare + kernel_s + merge above
// the wall is the time the two overlapped.
void show(const char* what, const std::vector<Run>& runs, const std::vector<Run>& mems, size_t limit,
          double plan) {
  const Run r = median_of(runs), mem = median_of(mems);
  double lo = 1e300, hi = 0;
  std::vector<double> ratios;
  bool equal = true;
  for (size_t k = 0; k < runs.size(); ++k) {
    lo = std::min(lo, runs[k].wall_ms);
    hi = std::max(hi, runs[k].wall_ms);
    ratios.push_back(mems[k].wall_ms / runs[k].wall_ms);
    equal = equal && runs[k].n == mems[0].n && runs[k].sum == mems[0].sum;
  }
  printf("  %-34s limit %7.1f MB: wall median %8.1f ms (min %.1f, max %.1f), %.2fx in-memory throughput "
         "(medians; per round min %.2f, median %.2f, max %.2f), kernel %7.1f ms (%.2fx), slabs %llu, "
         "plan %.1f, prepare %.1f, transfer %.1f, kernel_s %.1f, merge %.1f ms, peak %.1f MB, "
         "buffers kept/new %zu/%zu, pairs %llu, equal %s\n"
         "    device: grid %.1f ms, join plan %.1f ms, estimate %.1f ms, page copies %.1f ms, "
         "launches %d, drains %d\n"
         "    host: sub-joins %.1f ms, loops %.1f ms (waits with a launch in flight %.1f, for copies "
         "alone %.1f, sink %.1f [of it queue room %.1f], rest %.1f), launch lag %.1f ms (%.3f ms per launch)\n",
         what, double(limit) / 1048576.0, r.wall_ms, lo, hi, mem.wall_ms / r.wall_ms,
         *std::min_element(ratios.begin(), ratios.end()), median(ratios),
         *std::max_element(ratios.begin(), ratios.end()), r.kernel_ms,
         r.kernel_ms > 0 ? mem.kernel_ms / r.kernel_ms : 0.0, (unsigned long long)r.st.slabs, plan,
         r.st.prepare_s * 1e3, r.st.transfer_s * 1e3, r.st.kernel_s * 1e3, r.st.merge_s * 1e3,
         double(r.peak) / 1048576.0, r.hits, r.misses, (unsigned long long)r.n, equal ? "yes" : "NO",
         r.grid_ms, r.jplan_ms, r.sample_ms, r.copy_ms, r.launches, r.drains, r.lr.subjoin_ms, r.lr.loop_ms,
         r.lr.loop_wait_ms, r.lr.loop_copy_wait_ms, r.lr.loop_sink_ms, r.lr.queue_wait_ms,
         r.lr.loop_ms - r.lr.loop_wait_ms - r.lr.loop_copy_wait_ms - r.lr.loop_sink_ms, r.lr.launch_lag_ms,
         r.launches ? r.lr.launch_lag_ms / r.launches : 0.0);
}

// The in-memory join and the slab joins of one input: a warm-up round, then `rounds` rounds of
// the configurations in turn (the lenient budget only with `lenient_too`), each round's walls,
// sink times and sink-alone probes printed.
void bench(Engine* gpu, SinkProbe& probe, const char* name, size_t n, double eps, uint64_t seed, int rounds,
           bool lenient_too) {
  auto pts = ref::uniform(n, 2, seed, 0, 1);
  const SimjoinProblem p = make_simjoin(pts.view(), nullptr, eps, Precision::Float32, 0);
  const uint64_t core = split::join_core_bytes(p.a.n, 0, true, 2, p.prec);
  const uint64_t need = core + split::kJoinMinBankBytes;
  const size_t strict = size_t(need / 8);
  const size_t lenient = size_t(core / 8 + split::kJoinMinBankBytes);
  printf("%s: N=%zu 2-D float32 uniform in [0,1)^2, eps=%g, self-join, %d interleaved rounds after a "
         "warm-up round; in-memory need %.1f MB\n",
         name, n, eps, rounds, double(need) / 1048576.0);
  (void)one_run(gpu, p, 0);  // warm-up (CUDA context, staging, pools)
  (void)one_run(gpu, p, strict);
  if (lenient_too) (void)one_run(gpu, p, lenient);
  std::vector<Run> mem, slab, len;
  for (int r = 0; r < rounds; ++r) {
    mem.push_back(one_run(gpu, p, 0));
    slab.push_back(one_run(gpu, p, strict));
    len.push_back(lenient_too ? one_run(gpu, p, lenient) : Run());
    const Probe pr = probe.ok() ? probe.measure() : Probe();
    const Run &m = mem.back(), &s = slab.back(), &l = len.back();
    printf("  round %d: in memory %.1f ms (sink %.1f ms, %.2f ns/pair), 1/8 %.1f ms (%.2fx; sink %.1f ms, "
           "%.2f ns/pair, prepare %.1f ms), lenient %.1f ms (%.2fx; sink %.1f ms); sink alone: fresh %.2f, "
           "oldest of 8 %.2f, cached %.2f ns/pair\n",
           r, m.wall_ms, m.st.merge_s * 1e3, m.st.merge_s * 1e9 / double(m.n), s.wall_ms, m.wall_ms / s.wall_ms,
           s.st.merge_s * 1e3, s.st.merge_s * 1e9 / double(s.n), s.st.prepare_s * 1e3, l.wall_ms,
           l.wall_ms > 0 ? m.wall_ms / l.wall_ms : 0.0, l.st.merge_s * 1e3, pr.fresh_ns, pr.oldest_ns, pr.cached_ns);
  }
  show("in memory", mem, mem, 0, 0);
  show("slabs, 1/8 of the in-memory need", slab, mem, strict, plan_ms(p, strict, rounds));
  if (lenient_too) show("slabs, points+grid/8 + 64 MiB", len, mem, lenient, plan_ms(p, lenient, rounds));
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (!gpu) {
    printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  const int rounds = std::max(1, argc > 1 ? std::atoi(argv[1]) : 5);
  SinkProbe probe;
  const bool all = argc <= 2 || std::strcmp(argv[2], "strict") != 0;
  if (!probe.ok()) printf("sink-alone probes: no buffers (CUDA error), printed as 0\n");
  bench(gpu, probe, "u2", 1000000, 0.01, 7, rounds, all);
  bench(gpu, probe, "4M", 4000000, 0.002, 8, rounds, all);
  bench(gpu, probe, "2M (bench_multigpu's input)", 2000000, 0.002, 3, rounds, all);
  printf("probe checksum %llx\n", (unsigned long long)probe.sums());
  return 0;
}
