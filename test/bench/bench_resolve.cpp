// Resolution of cell pairs vs brute force at engine level (core/resolve.h): for 2-D/3-D,
// uniform/clustered points, N and bucket counts, the time of gpu2bs.sdh_method = resolve and of
// brute force, the equality of their histograms, the resolved fraction, and cell pairs
// visited / resolved and point pairs examined per density-map level.
//
//   bench_resolve ENGINE sdh   DIMS DIST N NB [BRUTE_MAX]
//   bench_resolve ENGINE count DIMS DIST N R_REL [BRUTE_MAX]
//   bench_resolve ENGINE map   DIMS DIST N1,N2,.. NB1,NB2,.. [BRUTE_MAX]
//
// ENGINE: cpu or gpu; DIST: uniform (unit cube) or clustered (16 Gaussian blobs, sigma 0.05).
// Brute force runs on the whole set when N <= BRUTE_MAX (default 2^22); otherwise on the first
// BRUTE_MAX points, where it must equal resolve on the same subset (checked), and its time at
// N is extrapolated as t(BRUTE_MAX) * (N / BRUTE_MAX)^2 (all-pairs work). Prints Markdown rows.
// BENCH_RESOLVE_CAP=F stops a resolution run after F times the brute-force time (at N) and
// prints "> t (stopped)": the map's cells where resolution loses by far cost little device
// time. The "auto" column is the engine's cost model's choice and "ok" when its method is
// within 10% of the faster one (or the slower one is stopped past 1.1x the faster one).
// BENCH_RESOLVE_MIN_PAIRS=K sets the GPU walk's stop size (EngineOverrides::resolve_min_pairs).
// BENCH_RESOLVE_REPEAT=K runs both methods K times alternately where brute force is measured on
// the whole set: medians in the row, every run's time on a "times" line.
// BENCH_RESOLVE_THREADS=T gives the engine T host threads (default: every core); with 1 the
// bounds pass and the conversion of the upload run on one thread. BENCH_RESOLVE_UPLOAD_WORKERS=W
// converts and copies the points on up to W of them (EngineOverrides::upload_workers).
// Built by test/unit (CPU: test/unit/build/bench_resolve) and test/gpu (make -C test/gpu bench).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/resolve.h"
#include "core/resolve_cpu.h"

#ifdef G2_BENCH_CUDA
namespace gpu2bs {
namespace cuda {
bool resolve_sdh_wins(size_t n, int dims, int nbuckets);  // kernels/resolve.cu
}  // namespace cuda
}  // namespace gpu2bs
#endif

using namespace gpu2bs;

namespace {

using Clock = std::chrono::steady_clock;

Engine* g_engine = nullptr;

ref::Points make_points(const std::string& dist, size_t n, int dims) {
  if (dist == "clustered") return ref::clustered(n, dims, 1234, 16, 0.05);
  return ref::uniform(n, dims, 1234);
}

ref::Points prefix(const ref::Points& p, size_t n) {
  ref::Points q;
  q.dims = p.dims;
  for (auto& c : p.c) q.c.emplace_back(c.begin(), c.begin() + long(std::min(n, c.size())));
  return q;
}

// CPU time of the process (user + system), seconds: on a shared machine the wall time of the
// CPU engine depends on the other users; its CPU time much less.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Run {
  std::vector<uint64_t> out;
  double seconds = 0;
  double cpu = 0;
  bool stopped = false;
  ResolveStats st;
  double setup_s = 0;      // the problem: bounds of the points on the host
  double prepare_s = 0;    // the engine's stats: conversion, map or grid build
  double transfer_s = 0;   // host to device copies
  double kernel_s = 0;     // the walk or the pair kernels
};

// A Control that asks the engine to stop after `cap_s` seconds (0: never).
class CapControl final : public Control {
 public:
  explicit CapControl(double cap_s) : cap_s_(cap_s), t0_(Clock::now()) {}
  bool interrupt_pending() override {
    return cap_s_ > 0 && std::chrono::duration<double>(Clock::now() - t0_).count() > cap_s_;
  }

 private:
  double cap_s_;
  Clock::time_point t0_;
};

// The engine's own choice for an SDH of n points (the cost model of gpu2bs.sdh_method = auto).
bool auto_resolves(size_t n, int dims, int nb) {
#ifdef G2_BENCH_CUDA
  if (g_engine->name().rfind("cuda", 0) == 0) return cuda::resolve_sdh_wins(n, dims, nb);
#endif
  return cpu_resolve_sdh_wins(n, dims, nb);
}

Run run(const ref::Points& pts, bool sdh, int nb, double r_rel, SdhMethod m, double cap_s = 0) {
  Run res;
  CapControl ctl(cap_s);
  ctl.threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* t = getenv("BENCH_RESOLVE_THREADS")) ctl.threads = std::max(1, atoi(t));
  ctl.sdh_method = m;
  ctl.resolve_stats = &res.st;
  if (const char* uw = getenv("BENCH_RESOLVE_UPLOAD_WORKERS"))
    ctl.overrides.upload_workers = atoi(uw);
  if (const char* mp = getenv("BENCH_RESOLVE_MIN_PAIRS"))
    ctl.overrides.resolve_min_pairs = strtoull(mp, nullptr, 10);
  auto t0 = Clock::now();
  const double c0 = cpu_seconds();
  try {
    if (sdh) {
      SdhProblem p;
      p.pts = pts.view();
      p.prec = Precision::Float32;
      p.params = make_sdh_params(nb, 0, false, compute_bounds(p.pts, nullptr, &ctl), p.prec);
      res.setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
      res.out = g_engine->sdh(p, ctl);
    } else {
      const PairCountProblem p = make_pair_count(pts.view(), r_rel, Precision::Float32, &ctl);
      res.setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
      res.out = {g_engine->pair_count(p, ctl)};
    }
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Interrupted) throw;
    res.stopped = true;
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  res.cpu = cpu_seconds() - c0;
  res.prepare_s = ctl.stats.prepare_s;
  res.transfer_s = ctl.stats.transfer_s;
  res.kernel_s = ctl.stats.kernel_s;
  return res;
}

// One line of where a run's wall time went: the host's bounds pass, the engine's conversion
// and map or grid build, its transfers, its kernels or walk, and the rest (allocation, frees,
// stream setup and teardown).
void phases(const char* what, const Run& r) {
  const double rest = r.seconds - r.setup_s - r.prepare_s - r.transfer_s - r.kernel_s;
  printf("phases %s: total %.3f s = setup %.3f + prepare %.3f + transfer %.3f + kernels %.3f "
         "+ rest %.3f\n",
         what, r.seconds, r.setup_s, r.prepare_s, r.transfer_s, r.kernel_s, rest);
}

// Per-level counters "L<level>:visited/resolved/examined", then the GPU work entries by test.
std::string levels(const ResolveStats& st) {
  std::ostringstream o;
  for (int l = 0; l < st.levels; ++l) {
    if (!st.visited[l]) continue;
    o << "L" << l << ":" << st.visited[l] << "/" << st.resolved[l] << "/" << st.examined[l]
      << " ";
  }
  if (st.one_sided_entries + st.two_sided_entries)
    o << "work entries one-sided/two-sided: " << st.one_sided_entries << "/"
      << st.two_sided_entries;
  return o.str();
}

void one(int dims, const std::string& dist, size_t n, bool sdh, int nb, double r_rel,
         size_t brute_max) {
  auto pts = make_points(dist, n, dims);
  // BENCH_RESOLVE_DUMP=FILE: the points as float64, coordinate by coordinate (for Corrfunc,
  // test/bench/corrfunc_dd.py), then exit.
  if (const char* dump = getenv("BENCH_RESOLVE_DUMP")) {
    FILE* f = fopen(dump, "wb");
    for (auto& c : pts.c) fwrite(c.data(), sizeof(double), c.size(), f);
    fclose(f);
    exit(0);
  }
  double brute_s, brute_cpu;
  const char* how;
  bool equal = false;
  Run b;
  // BENCH_RESOLVE_REPEAT=K (measured rows): brute force and resolution run K times each,
  // alternately; the row gives the median of each, and a "times" line every run.
  const char* repf = getenv("BENCH_RESOLVE_REPEAT");
  const int reps = n <= brute_max && repf ? std::max(1, atoi(repf)) : 1;
  std::vector<Run> bs, rs_all;
  if (n <= brute_max) {
    b = run(pts, sdh, nb, r_rel, SdhMethod::Brute);
    how = "measured";
  } else {
    // The subset first, printed at once: its row stands even if the full run is stopped.
    auto sub = prefix(pts, brute_max);
    b = run(sub, sdh, nb, r_rel, SdhMethod::Brute);
    Run rs = run(sub, sdh, nb, r_rel, SdhMethod::Resolve);
    equal = b.out == rs.out;
    printf("| %s | %d-D | %s | %zu (subset) | %s | %.3f | %.3f (measured) | %.2fx | %.2f | %.2f | "
           "%.2fx | %s | %.4f | %.3f | %.3f | - | %s |\n",
           g_engine->name().c_str(), dims, dist.c_str(), brute_max,
           sdh ? std::to_string(nb).c_str() : ("r=" + std::to_string(r_rel)).c_str(),
           rs.seconds, b.seconds, b.seconds / rs.seconds, rs.cpu, b.cpu,
           b.cpu / std::max(rs.cpu, 1e-9), equal ? "equal" : "DIFFERENT",
           rs.st.resolved_fraction(), rs.st.build_s, rs.st.walk_s, levels(rs.st).c_str());
    fflush(stdout);
    how = "extrapolated";
  }
  if (n <= brute_max) {
    brute_s = b.seconds;
    brute_cpu = b.cpu;
  } else {
    const double f = double(n) / double(brute_max);
    brute_s = b.seconds * f * f;
    brute_cpu = b.cpu * f * f;
  }
  const char* capf = getenv("BENCH_RESOLVE_CAP");
  const double cap = capf ? atof(capf) * brute_s : 0.0;
  Run r = run(pts, sdh, nb, r_rel, SdhMethod::Resolve, cap);
  if (n <= brute_max) equal = !r.stopped && b.out == r.out;
  if (reps > 1) {
    bs.push_back(b);
    rs_all.push_back(r);
    for (int i = 1; i < reps; ++i) {
      bs.push_back(run(pts, sdh, nb, r_rel, SdhMethod::Brute));
      rs_all.push_back(run(pts, sdh, nb, r_rel, SdhMethod::Resolve, cap));
      equal = equal && !rs_all.back().stopped && bs.back().out == b.out &&
              rs_all.back().out == b.out;
    }
    auto median = [](std::vector<Run> v) {
      std::sort(v.begin(), v.end(), [](const Run& x, const Run& y) { return x.seconds < y.seconds; });
      return v[v.size() / 2];
    };
    printf("times (s, in run order) brute:");
    for (const Run& x : bs) printf(" %.3f", x.seconds);
    printf("; resolve:");
    for (const Run& x : rs_all) printf(" %.3f", x.seconds);
    printf("\n");
    b = median(bs);
    r = median(rs_all);
    brute_s = b.seconds;
    brute_cpu = b.cpu;
  }
  // The cost model's choice, and whether its method is within 10% of the faster one.
  std::string pick = "-";
  if (sdh) {
    const bool res = auto_resolves(n, dims, nb);
    const double mine = res ? r.seconds : brute_s, other = res ? brute_s : r.seconds;
    const bool ok = r.stopped ? !res : mine <= 1.1 * other;
    pick = std::string(res ? "resolve" : "brute") + (ok ? " ok" : " MISS");
  }
  char rsec[48];
  snprintf(rsec, sizeof rsec, r.stopped ? "> %.3f (stopped)" : "%.3f", r.seconds);
  printf("| %s | %d-D | %s | %zu | %s | %s | %.3f (%s) | %s%.2fx | %.2f | %.2f | %.2fx | %s | "
         "%.4f | %.3f | %.3f | %s | %s |\n",
         g_engine->name().c_str(), dims, dist.c_str(), n,
         sdh ? std::to_string(nb).c_str() : ("r=" + std::to_string(r_rel)).c_str(), rsec,
         brute_s, how, r.stopped ? "< " : "", brute_s / r.seconds, r.cpu, brute_cpu,
         brute_cpu / std::max(r.cpu, 1e-9), r.stopped ? "-" : (equal ? "equal" : "DIFFERENT"),
         r.st.resolved_fraction(), r.st.build_s, r.st.walk_s, pick.c_str(),
         levels(r.st).c_str());
  if (n <= brute_max) phases("brute", b);
  phases("resolve", r);
  fflush(stdout);
}

std::vector<double> list(const char* s) {
  std::vector<double> v;
  for (const char* p = s; *p;) {
    v.push_back(atof(p));
    const char* c = strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr,
            "usage: %s cpu|gpu sdh|count|map DIMS uniform|clustered N|N1,.. NB|R_REL|NB1,.. "
            "[BRUTE_MAX]\n",
            argv[0]);
    return 2;
  }
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  std::string why;
  g_engine = std::string(argv[1]) == "gpu" ? cuda_engine(&why) : cpu.get();
  if (!g_engine) {
    fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 1;
  }
  const std::string mode = argv[2];
  const int dims = atoi(argv[3]);
  const std::string dist = argv[4];
  const size_t brute_max = argc > 7 ? size_t(atof(argv[7])) : size_t(1) << 22;
  printf("| engine | dims | points | N | buckets | resolve s | brute s | speedup | resolve cpu s | "
         "brute cpu s | cpu speedup | histograms | resolved fraction | build s | walk s | "
         "auto | per level: visited/resolved/examined |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  try {
    if (mode == "sdh") {
      one(dims, dist, size_t(atof(argv[5])), true, atoi(argv[6]), 0, brute_max);
    } else if (mode == "count") {
      one(dims, dist, size_t(atof(argv[5])), false, 0, atof(argv[6]), brute_max);
    } else if (mode == "map") {
      for (double n : list(argv[5]))
        for (double nb : list(argv[6])) one(dims, dist, size_t(n), true, int(nb), 0, brute_max);
    } else {
      fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
  } catch (const Error& e) {
    fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
