// CUDA engine benchmark: SDH (500 buckets, 3-D uniform), pair count and similarity join (eps for
// ~30 neighbours per point) at N = 1e4 .. 4e6, median of >= 5 runs. For each: the kernel-only
// time (sum of the pairwise kernels' cudaEvent times, from cuda::last_run()) and the end-to-end
// time of the Engine call with its stats split (prepare, transfer, kernel, merge).
//
//   bench_kernels quick            N = 1e4, 1e5, 1e6
//   bench_kernels full             N = 1e4, 3e4, 1e5, 3e5, 1e6, 2e6, 4e6, plus CPU at 1e5
//   bench_kernels privatization    SDH time vs private copies (1..32, global) and buckets
//   bench_kernels paths            pair count: tiles vs grid; join: pool size
//   bench_kernels configs          tile kernels: threads per block x register points
//   bench_kernels tiles            tile kernel figures at N = 1,048,576 (3-D uniform, kernel
//                                  time):
//                                  SDH 10..50000 buckets, SDH and all-pairs count launch
//                                  variants (fast / exact SDH, carry / FSETP count), float64
//   bench_kernels joinlb [runs]    similarity join load balancing: the load-imbalance
//                                  paper's synthetic sets (2e6 points, uniform in the unit cube
//                                  and exponential lambda = 40, 2-6-D), ~10 and ~100 neighbours
//                                  per point and one larger eps; every gpu2bs.join_balance x
//                                  lanes per point (0 = auto, 1..32); counting sink
//   bench_kernels joinlb-ncu       the same kernel once per strategy x k in {1, 8, 32} on Expo2D
//                                  and Unif3D (for ncu --kernel-name regex:join_kernel)
//   bench_kernels batch [pairs..]   engine-level self-joins of 2e6 uniform 3-D float32
//                                  points with ~1e8 and ~1e9 result pairs (or the given
//                                  counts) into a counting/checksum sink: serial drain (before)
//                                  vs batched on 1, 2, 3 streams (after), and batched under a
//                                  512 MB device memory limit; total, kernel, copy ms, sink
//                                  pairs/s, peak device memory, host peak RSS
// Built by test/gpu/Makefile (make -C test/gpu bench).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "kernels/host_api.h"

using namespace gpu2bs;


namespace {

using Clock = std::chrono::steady_clock;

// Code paths the running measurement forces: every Control the benchmark builds starts from them.
EngineOverrides& forced() {
  static EngineOverrides o;
  return o;
}

struct NullSink : PairSink {
  size_t count = 0;
  void consume(const PairRecord*, size_t n) override { count += n; }
};

struct Sample {
  double wall_ms, kernel_ms, prepare_ms, transfer_ms, kernel_s_ms, merge_ms;
  uint64_t examined, emitted;
  int launches, drains, copies, path;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Runs fn `runs` times after one warm-up; medians of every field.
Sample measure(int runs, const std::function<void(Control&)>& fn) {
  {
    Control warm;
    warm.overrides = forced();
    warm.threads = int(std::thread::hardware_concurrency());
    fn(warm);
  }
  std::vector<double> wall, kern, prep, xfer, ks, merge;
  Sample s{};
  for (int r = 0; r < runs; ++r) {
    Control ctl;
    ctl.overrides = forced();
    ctl.threads = int(std::thread::hardware_concurrency());
    auto t0 = Clock::now();
    fn(ctl);
    wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    kern.push_back(cuda::last_run().kernel_ms);
    prep.push_back(ctl.stats.prepare_s * 1e3);
    xfer.push_back(ctl.stats.transfer_s * 1e3);
    ks.push_back(ctl.stats.kernel_s * 1e3);
    merge.push_back(ctl.stats.merge_s * 1e3);
    s.examined = ctl.stats.pairs_examined;
    s.emitted = ctl.stats.pairs_emitted;
    s.launches = cuda::last_run().launches;
    s.drains = cuda::last_run().drains;
    s.copies = cuda::last_run().sdh_copies;
    s.path = cuda::last_run().count_path;
  }
  s.wall_ms = median(wall);
  s.kernel_ms = median(kern);
  s.prepare_ms = median(prep);
  s.transfer_ms = median(xfer);
  s.kernel_s_ms = median(ks);
  s.merge_ms = median(merge);
  return s;
}

double eps_for(size_t n, int dims, double nb) {
  const double unit_ball[7] = {0, 2, M_PI, 4.18879, 4.9348, 5.26379, 5.16771};
  return std::pow(nb / (double(n) * unit_ball[dims]), 1.0 / dims);
}

void header() {
  printf("%-22s %9s %4s %10s %10s | %8s %8s %9s %8s | %11s %11s  %s\n", "kernel", "N", "runs",
         "e2e_ms", "kern_ms", "prep_ms", "xfer_ms", "kernel_ms", "merge_ms", "pairs/s_kern",
         "pairs/s_e2e", "notes");
}

void row(const char* name, size_t n, int runs, const Sample& s, double pairs, const char* notes) {
  printf("%-22s %9zu %4d %10.3f %10.3f | %8.3f %8.3f %9.3f %8.3f | %11.3e %11.3e  %s\n", name, n,
         runs, s.wall_ms, s.kernel_ms, s.prepare_ms, s.transfer_ms, s.kernel_s_ms, s.merge_ms,
         s.kernel_ms > 0 ? pairs / (s.kernel_ms * 1e-3) : 0.0, pairs / (s.wall_ms * 1e-3), notes);
  fflush(stdout);
}

void bench_sizes(Engine* gpu, const std::vector<size_t>& sizes, int runs, bool with_cpu) {
  header();
  for (size_t n : sizes) {
    auto pts = ref::uniform(n, 3, 1);
    const double all = double(n) * double(n - 1) / 2;
    char notes[160];
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      if (prec == Precision::Float64 && n > 1000000) continue;
      const char* pn = prec == Precision::Float32 ? "f32" : "f64";
      // SDH, 500 buckets
      SdhProblem sp;
      sp.pts = pts.view();
      sp.prec = prec;
      sp.params = make_sdh_params(500, 0, false, compute_bounds(sp.pts), prec);
      Sample s = measure(runs, [&](Control& c) { gpu->sdh(sp, c); });
      snprintf(notes, sizeof notes, "copies=%d launches=%d", s.copies, s.launches);
      row((std::string("sdh500 ") + pn).c_str(), n, runs, s, all, notes);
      // pair count, r for ~30 neighbours (the engine picks tiles or grid)
      auto cp = make_pair_count(pts.view(), eps_for(n, 3, 30), prec);
      uint64_t cnt = 0;
      s = measure(runs, [&](Control& c) { cnt = gpu->pair_count(cp, c); });
      snprintf(notes, sizeof notes, "path=%s examined=%.3e (%.3e/s kern) count=%llu",
               s.path == 2 ? "grid" : "tiles", double(s.examined),
               double(s.examined) / (s.kernel_ms * 1e-3), (unsigned long long)cnt);
      row((std::string("pair_count ") + pn).c_str(), n, runs, s, all, notes);
      // similarity join, eps for ~30 neighbours
      auto jp = make_simjoin(pts.view(), nullptr, eps_for(n, 3, 30), prec, 0);
      s = measure(runs, [&](Control& c) {
        NullSink sink;
        gpu->simjoin(jp, sink, c);
      });
      snprintf(notes, sizeof notes, "examined=%.3e emitted=%.3e (%.1f/pt) launches=%d drains=%d",
               double(s.examined), double(s.emitted), 2.0 * double(s.emitted) / double(n),
               s.launches, s.drains);
      // join rate: examined candidate pairs per second
      row((std::string("simjoin ") + pn).c_str(), n, runs, s, double(s.examined), notes);
    }
  }
  if (with_cpu) {
    auto cpu = make_cpu_engine();
    const size_t n = 100000;
    auto pts = ref::uniform(n, 3, 1);
    const double all = double(n) * double(n - 1) / 2;
    printf("\nCPU engine (%s, %u threads) at N=%zu for comparison (float32)\n",
           cpu->name().c_str(), std::thread::hardware_concurrency(), n);
    header();
    SdhProblem sp;
    sp.pts = pts.view();
    sp.params = make_sdh_params(500, 0, false, compute_bounds(sp.pts), sp.prec);
    Sample s = measure(3, [&](Control& c) { cpu->sdh(sp, c); });
    s.kernel_ms = s.kernel_s_ms;
    row("cpu sdh500 f32", n, 3, s, all, "kern_ms = stats.kernel_s");
    auto cp = make_pair_count(pts.view(), eps_for(n, 3, 30), Precision::Float32);
    s = measure(3, [&](Control& c) { cpu->pair_count(cp, c); });
    s.kernel_ms = s.kernel_s_ms;
    row("cpu pair_count f32", n, 3, s, all, "");
    auto jp = make_simjoin(pts.view(), nullptr, eps_for(n, 3, 30), Precision::Float32, 0);
    s = measure(3, [&](Control& c) {
      NullSink sink;
      cpu->simjoin(jp, sink, c);
    });
    s.kernel_ms = s.kernel_s_ms;
    row("cpu simjoin f32", n, 3, s, double(s.emitted), "pairs/s = emitted pairs");
  }
}

// SDH kernel time for every number of private copies (and global memory) per bucket count.
void bench_privatization(Engine* gpu, size_t n, int runs) {
  auto pts = ref::uniform(n, 3, 2);
  const double all = double(n) * double(n - 1) / 2;
  const int copies[] = {-1, 1, 2, 4, 8, 16, 32};
  printf("SDH 3-D float32, N=%zu: kernel-only pairs/s (1e9) by private copies; '-' does not fit\n",
         n);
  printf("%8s %8s", "buckets", "global");
  for (int c : copies)
    if (c > 0) printf(" %8d", c);
  printf(" %8s %8s\n", "model", "best");
  for (int nb : {1, 2, 4, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 30000,
                 50000}) {
    SdhProblem sp;
    sp.pts = pts.view();
    sp.params = make_sdh_params(nb, 0, false, compute_bounds(sp.pts), sp.prec);
    printf("%8d", nb);
    double best = 0;
    int best_c = 0;
    for (int c : copies) {
      if (c < 0 && nb < 1000) {  // all threads on a few global counters: hopeless and slow
        printf(" %8s", "skip");
        continue;
      }
      forced().sdh_copies = c;
      Sample s = measure(runs, [&](Control& ctl) { gpu->sdh(sp, ctl); });
      const int used = s.copies;
      const bool ok = c < 0 ? used == 0 : used == c;
      const double rate = all / (s.kernel_ms * 1e-3);
      if (ok) {
        printf(" %8.1f", rate * 1e-9);
        if (rate > best) {
          best = rate;
          best_c = c < 0 ? 0 : c;
        }
      } else {
        printf(" %8s", "-");
      }
    }
    forced().sdh_copies = 0;
    Sample s = measure(runs, [&](Control& ctl) { gpu->sdh(sp, ctl); });
    printf(" %5.1f/%-2d %8d\n", all / (s.kernel_ms * 1e-3) * 1e-9, s.copies, best_c);
    fflush(stdout);
  }
}

void bench_paths(Engine* gpu, int runs) {
  header();
  for (size_t n : {100000, 1000000}) {
    auto pts = ref::uniform(n, 3, 3);
    const double all = double(n) * double(n - 1) / 2;
    for (double nb : {30.0, 3000.0}) {
      auto cp = make_pair_count(pts.view(), eps_for(n, 3, nb), Precision::Float32);
      for (int path : {1, 2}) {
        forced().count_path = path;
        Sample s = measure(runs, [&](Control& c) { gpu->pair_count(cp, c); });
        char notes[96];
        snprintf(notes, sizeof notes, "%.0f nbrs examined=%.3e (%.3e/s)", nb, double(s.examined),
                 double(s.examined) / (s.kernel_ms * 1e-3));
        row(path == 1 ? "count tiles" : "count grid", n, runs, s, all, notes);
      }
      forced().count_path = 0;
    }
  }
  auto pts = ref::uniform(1000000, 3, 4);
  auto jp = make_simjoin(pts.view(), nullptr, eps_for(1000000, 3, 30), Precision::Float32, 0);
  for (size_t pages : {size_t(16), size_t(256), size_t(0)}) {
    Sample s = measure(runs, [&](Control& c) {
      c.max_pages = pages;
      NullSink sink;
      gpu->simjoin(jp, sink, c);
    });
    char notes[96];
    snprintf(notes, sizeof notes, "pool pages=%zu (0=auto) launches=%d drains=%d", pages,
             s.launches, s.drains);
    row("simjoin pool", 1000000, runs, s, double(s.examined), notes);
  }
}

// Launch configurations of the tile kernels (3-D float32, N = 1e6): SDH 500 buckets and the
// all-pairs pair count, kernel-only pairs/s.
void bench_configs(Engine* gpu, int runs) {
  const size_t n = 1000000;
  auto pts = ref::uniform(n, 3, 5);
  const double all = double(n) * double(n - 1) / 2;
  const char* sdh_names[] = {"tuning.h", "fast 512x2", "fast 1024x1", "fast 512x4", "fast 256x4"};
  const char* cnt_names[] = {"tuning.h", "512x8", "512x4", "128x8", "256x4"};
  header();
  SdhProblem sp;
  sp.pts = pts.view();
  sp.params = make_sdh_params(500, 0, false, compute_bounds(sp.pts), sp.prec);
  for (int v = 0; v <= 4; ++v) {
    forced().tile_variant = v;
    Sample s = measure(runs, [&](Control& c) { gpu->sdh(sp, c); });
    char notes[96];
    snprintf(notes, sizeof notes, "threads x points %s copies=%d", sdh_names[v], s.copies);
    row("sdh500 f32 config", n, runs, s, all, notes);
  }
  auto cp = make_pair_count(pts.view(), eps_for(n, 3, 30), Precision::Float32);
  forced().count_path = 1;
  for (int v = 0; v <= 4; ++v) {
    forced().tile_variant = v;
    Sample s = measure(runs, [&](Control& c) { gpu->pair_count(cp, c); });
    char notes[96];
    snprintf(notes, sizeof notes, "threads x points %s", cnt_names[v]);
    row("count tiles f32 config", n, runs, s, all, notes);
  }
  forced().count_path = 0;
  forced().tile_variant = 0;
}

// The tile kernels' figures at N = 2^20, kernel-only pairs/s (median of `runs`).
void bench_tiles(Engine* gpu, int runs) {
  const size_t n = 1048576;
  auto pts = ref::uniform(n, 3, 5);
  const double all = double(n) * double(n - 1) / 2;
  header();
  char notes[160];
  for (int nb : {10, 50, 500, 5000, 50000}) {
    SdhProblem sp;
    sp.pts = pts.view();
    sp.params = make_sdh_params(nb, 0, false, compute_bounds(sp.pts), sp.prec);
    bool fast = false;
    Sample s = measure(runs, [&](Control& c) {
      gpu->sdh(sp, c);
      fast = cuda::sdh_last_fast();
    });
    snprintf(notes, sizeof notes, "buckets=%d %s%s copies=%d launches=%d", nb,
             fast ? "fast" : "exact", cuda::sdh_last_shared_thresholds() ? " shared-T" : "",
             s.copies, s.launches);
    row("sdh f32 buckets", n, runs, s, all, notes);
  }
  // mid-size histograms: thresholds per copy vs one shared table (and the model's choice)
  for (int nb : {1000, 2000, 5000, 10000, 20000}) {
    SdhProblem sp;
    sp.pts = pts.view();
    sp.params = make_sdh_params(nb, 0, false, compute_bounds(sp.pts), sp.prec);
    for (int layout : {0, 1, 2}) {
      forced().sdh_layout = layout;
      bool fast = false, sh = false;
      Sample s = measure(runs, [&](Control& c) {
        gpu->sdh(sp, c);
        fast = cuda::sdh_last_fast();
        sh = cuda::sdh_last_shared_thresholds();
      });
      snprintf(notes, sizeof notes, "buckets=%d layout=%s -> %s%s copies=%d", nb,
               layout == 0 ? "model" : layout == 1 ? "per-copy" : "shared",
               fast ? "fast" : "exact", sh ? " shared-T" : "", s.copies);
      row("sdh f32 layout", n, runs, s, all, notes);
    }
    forced().sdh_layout = 0;
  }
  {
    SdhProblem sp;
    sp.pts = pts.view();
    sp.params = make_sdh_params(500, 0, false, compute_bounds(sp.pts), sp.prec);
    const char* names[] = {"tuning.h", "fast 512x2", "fast 1024x1", "fast 512x4", "fast 256x4",
                           "exact 512x2 (before)", "fast, clamp kept", "exact 1024x2 (call sqrt)"};
    for (int v = 1; v <= 7; ++v) {
      forced().tile_variant = v;
      bool fast = false;
      Sample s = measure(runs, [&](Control& c) {
        gpu->sdh(sp, c);
        fast = cuda::sdh_last_fast();
      });
      snprintf(notes, sizeof notes, "500 buckets variant %d %s (%s) copies=%d", v, names[v],
               fast ? "fast" : "exact", s.copies);
      row("sdh500 f32 variant", n, runs, s, all, notes);
    }
    forced().tile_variant = 0;
    {
      SdhProblem sp5;
      sp5.pts = pts.view();
      sp5.params = make_sdh_params(50000, 0, false, compute_bounds(sp5.pts), sp5.prec);
      forced().tile_variant = 7;
      Sample s = measure(runs, [&](Control& c) { gpu->sdh(sp5, c); });
      forced().tile_variant = 0;
      snprintf(notes, sizeof notes, "50000 buckets exact 1024x2 (call sqrt) copies=%d", s.copies);
      row("sdh f32 variant", n, runs, s, all, notes);
    }
    // copies forced (the model's choice is in the rows above)
    for (int c : {8, 16, 32}) {
      forced().sdh_copies = c;
      Sample s = measure(runs, [&](Control& ctl) { gpu->sdh(sp, ctl); });
      snprintf(notes, sizeof notes, "500 buckets forced copies %d (used %d)", c, s.copies);
      row("sdh500 f32 copies", n, runs, s, all, notes);
    }
    forced().sdh_copies = 0;
  }
  {
    auto cp = make_pair_count(pts.view(), eps_for(n, 3, 30), Precision::Float32);
    forced().count_path = 1;
    const char* names[] = {"tuning.h", "512x8", "512x4", "128x8", "256x4", "256x8 FSETP"};
    for (int v = 0; v <= 5; ++v) {
      forced().tile_variant = v;
      uint64_t cnt = 0;
      Sample s = measure(runs, [&](Control& c) { cnt = gpu->pair_count(cp, c); });
      snprintf(notes, sizeof notes, "variant %d %s count=%llu", v, names[v],
               (unsigned long long)cnt);
      row("count tiles f32", n, runs, s, all, notes);
    }
    forced().tile_variant = 0;
    auto cp64 = make_pair_count(pts.view(), eps_for(n, 3, 30), Precision::Float64);
    uint64_t cnt = 0;
    Sample s = measure(runs, [&](Control& c) { cnt = gpu->pair_count(cp64, c); });
    snprintf(notes, sizeof notes, "count=%llu", (unsigned long long)cnt);
    row("count tiles f64", n, runs, s, all, notes);
    forced().count_path = 0;
  }
  {
    SdhProblem sp;
    sp.pts = pts.view();
    sp.prec = Precision::Float64;
    sp.params = make_sdh_params(500, 0, false, compute_bounds(sp.pts), sp.prec);
    Sample s = measure(runs, [&](Control& c) { gpu->sdh(sp, c); });
    snprintf(notes, sizeof notes, "500 buckets copies=%d", s.copies);
    row("sdh f64", n, runs, s, all, notes);
  }
}

// ---- similarity join load balancing ------------------------------------------------------------

const char* balance_name(JoinBalance b) {
  return b == JoinBalance::WorkQueue ? "workqueue" : b == JoinBalance::Cell ? "cell" : "sortbywl";
}

struct LbSet {
  std::string name;  // the paper's naming: Unif3D2M, Expo2D2M
  ref::Points pts;
  int dims;
  bool expo;
};

// The paper's synthetic set: 2e6 points, uniform in the unit cube or Exp(40) per coordinate.
LbSet lb_set(bool expo, int dims, size_t n) {
  LbSet s;
  s.dims = dims;
  s.expo = expo;
  s.pts = expo ? ref::exponential(n, dims, 500 + dims, 40.0) : ref::uniform(n, dims, 400 + dims);
  s.name = std::string(expo ? "Expo" : "Unif") + std::to_string(dims) + "D" +
           std::to_string(n / 1000000) + "M";
  return s;
}

// eps for about `nb` neighbours per point: uniform in the unit cube, or at the exponential
// set's mean density (integral of f^2 = (lambda / 2)^d: eps shrinks by lambda / 2 = 20).
double lb_eps(const LbSet& s, double nb) {
  const double e = eps_for(s.pts.n(), s.dims, nb);
  return s.expo ? e / 20.0 : e;
}

struct LbRow {
  double kernel_ms = 0, plan_ms = 0, e2e_ms = 0;
  uint64_t pairs = 0, examined = 0, slots = 0;
  int k = 0, launches = 0, drains = 0;
  unsigned long long steps[6] = {};
};

// One configuration: `runs` timed calls (medians), counting sink.
LbRow lb_run(Engine* gpu, const SimjoinProblem& jp, JoinBalance bal, int k, int runs) {
  std::vector<double> kern, plan, wall;
  LbRow r;
  for (int i = 0; i < runs; ++i) {
    Control c;
    c.overrides = forced();
    c.threads = int(std::thread::hardware_concurrency());
    c.join_balance = bal;
    c.join_threads_per_point = k;
    NullSink sink;
    auto t0 = Clock::now();
    gpu->simjoin(jp, sink, c);
    wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    const cuda::LastRun& lr = cuda::last_run();
    kern.push_back(lr.kernel_ms);
    plan.push_back(lr.join_plan_ms);
    r.pairs = sink.count;
    r.examined = c.stats.pairs_examined;
    r.slots = lr.join_slots;
    r.k = lr.join_k;
    r.launches = lr.launches;
    r.drains = lr.drains;
    for (int e = 0; e < 6; ++e) r.steps[e] = lr.join_steps[e];
  }
  r.kernel_ms = median(kern);
  r.plan_ms = median(plan);
  r.e2e_ms = median(wall);
  return r;
}

void lb_header() {
  printf("%-10s %9s %7s %-9s %3s %4s | %9s %8s %9s | %11s %11s %10s %10s %6s | %s\n", "set",
         "eps", "nbrs/pt", "balance", "k", "used", "kern_ms", "plan_ms", "e2e_ms", "pairs",
         "examined", "pairs/s", "exam/s", "lanes", "launches/drains");
}

// Every strategy x k on one set and eps; the estimate's predicted lane use per K first.
void lb_dataset(Engine* gpu, const LbSet& s, double eps, int runs, const std::vector<int>& ks) {
  auto jp = make_simjoin(s.pts.view(), nullptr, eps, Precision::Float32, 0);
  {  // warm-up (and the estimate's predicted steps for every K)
    LbRow w = lb_run(gpu, jp, JoinBalance::WorkQueue, 0, 1);
    printf("%-10s %9.3g  predicted lane use (examined / 32 x steps) k=1..32:", s.name.c_str(), eps);
    for (int e = 0; e < 6; ++e)
      printf(" %.3f", w.steps[e] ? double(w.examined) / (32.0 * double(w.steps[e])) : 0.0);
    printf("  rows/item %.2f cand/row %.1f -> auto k=%d\n",
           double(s.pts.n()) / double(cuda::last_run().join_items),
           double(w.examined) / double(s.pts.n()), w.k);
  }
  for (JoinBalance bal : {JoinBalance::Cell, JoinBalance::SortByWorkload, JoinBalance::WorkQueue})
    for (int k : ks) {
      LbRow r = lb_run(gpu, jp, bal, k, runs);
      char ld[32];
      snprintf(ld, sizeof ld, "%d/%d", r.launches, r.drains);
      printf("%-10s %9.3g %7.1f %-9s %3d %4d | %9.3f %8.3f %9.3f | %11llu %11llu %10.3e %10.3e "
             "%6.3f | %s\n",
             s.name.c_str(), eps, 2.0 * double(r.pairs) / double(s.pts.n()), balance_name(bal), k,
             r.k, r.kernel_ms, r.plan_ms, r.e2e_ms, (unsigned long long)r.pairs,
             (unsigned long long)r.examined, double(r.pairs) / (r.kernel_ms * 1e-3),
             double(r.examined) / (r.kernel_ms * 1e-3),
             r.slots ? double(r.examined) / double(r.slots) : 0.0, ld);
      fflush(stdout);
    }
}

void bench_joinlb(Engine* gpu, int runs) {
  const size_t n = 2000000;
  const std::vector<int> all_k = {0, 1, 2, 4, 8, 16, 32};
  printf("columns: kern_ms = join kernel (sum of launches, cudaEvents, median of %d); plan_ms =\n"
         "workload estimate + CUB sort; pairs/s = emitted pairs / kernel s; exam/s = candidate\n"
         "pairs examined / kernel s; lanes = in-kernel lane utilisation (examined / issued lane\n"
         "slots of the compare loop); float32, self-join, counting sink\n\n",
         runs);
  lb_header();
  for (bool expo : {false, true})
    for (int dims = 2; dims <= 6; ++dims) {
      LbSet s = lb_set(expo, dims, n);
      for (double nb : {10.0, 100.0}) lb_dataset(gpu, s, lb_eps(s, nb), runs, all_k);
    }
  // One of the paper's larger eps values (Tables III-V: Expo2D2M at eps = 0.2, its heaviest
  // and most imbalanced case; the paper's coordinate scale is not given): here ~400 neighbours
  // at the mean density of Expo2D2M (the dense corner has far more).
  printf("\nlarger eps\n");
  lb_header();
  LbSet s = lb_set(true, 2, n);
  lb_dataset(gpu, s, lb_eps(s, 400.0), 1, {0, 1, 8, 32});
}

// One call per strategy x k in {1, 8, 32} on Expo2D2M and Unif3D2M (~50 neighbours), no
// warm-up: for ncu --kernel-name regex:join_kernel (the order is printed).
void bench_joinlb_ncu(Engine* gpu) {
  int launch = 0;
  for (bool expo : {true, false}) {
    LbSet s = lb_set(expo, expo ? 2 : 3, 2000000);
    auto jp = make_simjoin(s.pts.view(), nullptr, lb_eps(s, 50.0), Precision::Float32, 0);
    for (JoinBalance bal : {JoinBalance::Cell, JoinBalance::SortByWorkload, JoinBalance::WorkQueue})
      for (int k : {1, 8, 32}) {
        LbRow r = lb_run(gpu, jp, bal, k, 1);
        printf("call %2d: %s %s k=%d launches=%d kern_ms=%.3f lanes=%.3f pairs=%llu\n", launch++,
               s.name.c_str(), balance_name(bal), k, r.launches, r.kernel_ms,
               r.slots ? double(r.examined) / double(r.slots) : 0.0,
               (unsigned long long)r.pairs);
        fflush(stdout);
      }
  }
}

// Counts the pairs and sums a hash of each record (order-independent checksum of the multiset).
struct ChecksumSink : PairSink {
  uint64_t count = 0, sum = 0;
  void consume(const PairRecord* p, size_t n) override {
    uint64_t s = 0;
    for (size_t k = 0; k < n; ++k) {
      uint64_t bits;
      std::memcpy(&bits, &p[k].dist, 8);
      s += ((uint64_t(p[k].i) << 32) | p[k].j) * 0x9E3779B97F4A7C15ull + (bits ^ (bits >> 29));
    }
    count += n;
    sum += s;
  }
};

// A /proc/self/status field in kB (VmHWM, VmRSS), or -1.
long proc_status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t kl = strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, kl, key) == 0 && line.size() > kl && line[kl] == ':')
      return atol(line.c_str() + kl + 1);
  return -1;
}

// Resets the process's peak RSS (VmHWM) to the current RSS (Linux clear_refs 5).
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

// Batched, overlapped join output vs the serial drain at ~1e8 and ~1e9 result pairs.
void bench_batch(Engine* gpu, int runs, const std::vector<double>& targets) {
  const size_t n = 2000000;
  auto pts = ref::uniform(n, 3, 7);
  printf("self-join of %zu uniform 3-D float32 points, counting + checksum sink, median of %d "
         "runs (after one warm-up per size)\n",
         n, runs);
  printf("columns: total_ms = Engine::simjoin wall; kern_ms = union of join kernel intervals "
         "(cudaEvents); copy_ms = union of device-to-host page copies (cudaEvents); stats: "
         "kernel_s / transfer_s (host blocked on copies only) / merge_s (sink); sample_ms = "
         "count pass over the sample; peak_dev = engine_peak_bytes; rss_hwm = VmHWM after "
         "clear_refs, baseline VmRSS %ld MB\n\n",
         proc_status_kb("VmRSS") / 1024);
  printf("%-16s %11s %11s %9s %9s %9s %7s %7s %7s %8s %10s %8s %5s %4s %10s %6s %6s %8s %8s  %s\n",
         "config", "pairs", "estimate", "total_ms", "kern_ms", "copy_ms", "st.kern", "st.xfer",
         "st.merg", "sample", "sink_p/s", "launches", "drains", "str", "bank", "batch", "pgsz",
         "peak_MB", "rss_MB", "checksum");
  struct Config {
    const char* name;
    bool serial;
    int streams;
    size_t mem_limit;
  };
  const Config configs[] = {{"serial (before)", true, 1, 0},
                            {"batched 1 str", false, 1, 0},
                            {"batched 2 str", false, 2, 0},
                            {"batched 3 str", false, 3, 0},
                            {"batched 3 512MB", false, 3, size_t(512) << 20}};
  for (double target : targets) {
    const double eps = eps_for(n, 3, 2.0 * target / double(n));
    auto jp = make_simjoin(pts.view(), nullptr, eps, Precision::Float32, 0);
    {
      Control warm;
      warm.overrides = forced();
      ChecksumSink sink;
      gpu->simjoin(jp, sink, warm);
    }
    uint64_t ref_sum = 0, ref_count = 0;
    for (const Config& c : configs) {
      forced().join_serial_drain = c.serial;
      forced().join_streams = c.streams;
      std::vector<double> total, kern, copy, sk, sx, sm, samp;
      cuda::LastRun lr;
      ChecksumSink last;
      size_t peak = 0;
      long rss = 0;
      for (int r = 0; r < runs; ++r) {
        Control ctl;
        ctl.overrides = forced();
        ctl.threads = int(std::thread::hardware_concurrency());
        ctl.device_memory_limit = c.mem_limit;
        ChecksumSink sink;
        cuda::reset_engine_peak_bytes();
        reset_peak_rss();
        auto t0 = Clock::now();
        gpu->simjoin(jp, sink, ctl);
        total.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        rss = std::max(rss, proc_status_kb("VmHWM"));
        peak = std::max(peak, cuda::engine_peak_bytes());
        lr = cuda::last_run();
        kern.push_back(lr.kernel_ms);
        copy.push_back(lr.copy_ms);
        samp.push_back(lr.sample_ms);
        sk.push_back(ctl.stats.kernel_s * 1e3);
        sx.push_back(ctl.stats.transfer_s * 1e3);
        sm.push_back(ctl.stats.merge_s * 1e3);
        last = sink;
      }
      if (!ref_count) {
        ref_count = last.count;
        ref_sum = last.sum;
      }
      const double t = median(total);
      printf("%-16s %11llu %11llu %9.1f %9.1f %9.1f %7.1f %7.1f %7.1f %8.2f %10.3e %8d %5d %4d "
             "%10zu %6d %6zu %8.1f %8.1f  %016llx%s\n",
             c.name, (unsigned long long)last.count, (unsigned long long)lr.join_estimate, t,
             median(kern), median(copy), median(sk), median(sx), median(sm), median(samp),
             double(last.count) / (t * 1e-3), lr.launches, lr.drains, lr.join_streams,
             lr.bank_pages, lr.join_batches, lr.page_pairs, double(peak) / 1048576.0,
             double(rss) / 1024.0, (unsigned long long)last.sum,
             last.count == ref_count && last.sum == ref_sum ? "" : "  MISMATCH");
      fflush(stdout);
    }
    forced().join_serial_drain = false;
    forced().join_streams = 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "quick";
  const bool lb = mode == "joinlb" || mode == "joinlb-ncu";
  const int runs = lb ? std::max(1, argc > 2 ? atoi(argv[2]) : 2)
                      : std::max(5, argc > 2 ? atoi(argv[2]) : 5);
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (!gpu) {
    printf("no usable GPU: %s\n", why.c_str());
    return 0;
  }
  printf("gpu2bs bench_kernels, engine %s, mode %s, median of %d runs (after 1 warm-up)\n",
         gpu->name().c_str(), mode.c_str(), runs);
  for (auto& r : cuda_info()) printf("  %-24s %s\n", r.first.c_str(), r.second.c_str());
  printf("columns: e2e_ms = wall time of the Engine call; kern_ms = pairwise kernels (cudaEvents);\n"
         "prep/xfer/kernel/merge_ms = Control::stats; pairs/s over all N(N-1)/2 pairs for SDH and\n"
         "pair count, over examined candidate pairs for the join\n\n");
  try {
    if (mode == "quick") {
      bench_sizes(gpu, {10000, 100000, 1000000}, runs, false);
    } else if (mode == "full") {
      bench_sizes(gpu, {10000, 30000, 100000, 300000, 1000000, 2000000, 4000000}, runs, true);
    } else if (mode == "privatization") {
      bench_privatization(gpu, argc > 3 ? size_t(atof(argv[3])) : 100000, runs);
    } else if (mode == "configs") {
      bench_configs(gpu, runs);
    } else if (mode == "tiles") {
      bench_tiles(gpu, runs);
    } else if (mode == "paths") {
      bench_paths(gpu, runs);
    } else if (mode == "joinlb") {
      bench_joinlb(gpu, runs);
    } else if (mode == "joinlb-ncu") {
      bench_joinlb_ncu(gpu);
    } else if (mode == "batch") {
      std::vector<double> targets;
      for (int k = 3; k < argc; ++k) targets.push_back(atof(argv[k]));
      if (targets.empty()) targets = {1e8, 1e9};
      bench_batch(gpu, argc > 2 ? std::max(1, atoi(argv[2])) : 3, targets);
    } else {
      printf("unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const Error& e) {
    printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
