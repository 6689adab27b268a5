// Pair-expression GPU benchmark (kernels/expr/, NVRTC-compiled tile kernels):
//   bench_expr [all|manhattan|compile|euclid|sweep|hist|histsweep|histone|sum|programs] [runs] | bench_expr cold <k>
//   manhattan  Count of |a.x-b.x| + |a.y-b.y| <= 0.001 AND a.t < b.t, 200,000 x 200,000 rows
//              (two relations) and 200,000 rows self, float32 and float64: kernel pair
//              evaluations/s (cudaEvents) and end-to-end time;
//   compile    NVRTC compile + load time of new sources (differing in a comment), and the
//              cached call; G2_BENCH_TOKEN=<t> also compiles one fixed source first;
//   euclid     generated Euclidean pair count vs the hand-written pair-count tile kernel on
//              the same 1e6 3-D points (float32 and float64, all-pairs tiles forced);
//   sweep      the Manhattan count and the generated Euclidean count over tile configurations
//              (threads x rows per thread);
//   hist       angular-separation histogram (acos of the clamped dot product, 1000 buckets)
//              of 118,218 unit vectors (the Hipparcos catalogue's size): the hand-written source
//              (float32 through the threshold table: it defines the table's pair), and the code
//              generator's (float32 with the threshold table and without, float64);
//              G2_HIST_OUT=<prefix>: the generated float32 histograms to <prefix>-<name>.txt;
//   histsweep  the generated float32 angular histogram through the threshold table (the stars of
//              G2_STARS, else the synthetic unit vectors) over tile configurations and forced
//              private copies per block: kernel times, the copies used, histograms compared;
//   histone    histsweep's default configuration alone (e.g. under a profiler);
//   sum        pair energy sum 1/sqrt(d2) of 200,000 3-D points, full-tile and compact loop;
//   programs   cold NVRTC compile + load of every program above (float32 and float64, each
//              compile a new program: a constant differs), without and with --Ofast-compile=min;
//   cold <k>   program k's first compile in this process and the cached call (run each k in a
//              fresh process: the cold compile of a new backend).
// Figures are medians of `runs` runs after one warm-up (which compiles the module).
// G2_BENCH_FAST=<level|none>: NVRTC's --Ofast-compile level for every compile of the run
// (default: the level each call chooses by its number of pairs, expr_gpu.cu).
// G2_STARS=<csv.gz with id,x,y,z>: hist also runs on those points (normalized to unit vectors).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../gpu/expr_fixtures.h"
#include "common/reference.h"
#include "core/error.h"
#include "core/engine.h"
#include "core/problem.h"
#include "kernels/expr/nvrtc_cache.h"
#include "kernels/host_api.h"

using namespace gpu2bs;
using namespace gpu2bs::exprtest;
using exprgpu::Job;
using exprgpu::Kind;
using exprgpu::Result;
using Clock = std::chrono::steady_clock;

namespace {

int g_runs = 3;
bool g_sweep = false;  // euclid: also the tile configurations
double g_lane_cycles = 0;  // FP32 lanes x clock (Hz): the FP32 issue limit in lane-cycles/s
double g_check_ms = 0;     // the threshold table's check time of the last warm-up call
int g_copies = 0;          // histograms' private copies per block forced (0: the default)
bool g_sweep_one = false;  // histsweep: the default configuration only (histone)

// Median of the values.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Timing {
  double kern_ms, e2e_ms, compile_ms;
  Result r;
  std::string split;  // NVRTC and load parts of the warm-up's compile
};

std::string split_last();
Cols read_stars(const char* path);

// Runs the job once to warm up (compile), then g_runs times: median kernel and wall times.
Timing time_job(const Job& j) {
  Control warm;
  warm.overrides.sdh_copies = g_copies;
  Timing t{};
  Result first = exprgpu::run(j, nullptr, warm);
  t.compile_ms = first.compile_ms;
  g_check_ms = first.check_ms;
  t.split = first.cache_hit ? "cached" : split_last();
  std::vector<double> k, e;
  for (int i = 0; i < g_runs; ++i) {
    Control ctl;
    ctl.overrides.sdh_copies = g_copies;
    auto t0 = Clock::now();
    t.r = exprgpu::run(j, nullptr, ctl);
    e.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    k.push_back(cuda::last_run().kernel_ms);
  }
  t.kern_ms = median(k);
  t.e2e_ms = median(e);
  return t;
}

// One result line: pairs/s from the kernel time, and per FP32 lane-cycle.
void report(const char* what, double pairs, const Timing& t) {
  const double pps = pairs / (t.kern_ms * 1e-3);
  printf("%-44s pairs %.3e  kern_ms %8.2f  e2e_ms %8.2f  pairs/s %.3e  pairs/lane-cycle %.3f  "
         "count %llu  (cold compile %.1f ms: %s)\n",
         what, pairs, t.kern_ms, t.e2e_ms, pps, g_lane_cycles > 0 ? pps / g_lane_cycles : 0.0,
         (unsigned long long)t.r.count, t.compile_ms, t.split.c_str());
}

// A job of `k` over a (self when b is null).
Job job(Kind k, bool f32, const Cols& a, const Cols* b, const std::string& src) {
  Job j;
  j.kind = k;
  j.float32 = f32;
  j.self = b == nullptr;
  j.a = a.side();
  if (b) j.b = b->side();
  j.device_source = src;
  return j;
}

// The Manhattan band count and join, two relations and self, both precisions.
void bench_manhattan() {
  const Cols a = uniform_cols(200000, 3, 1), b = uniform_cols(200000, 3, 2);
  for (bool f32 : {true, false}) {
    const std::string p = f32 ? "f32" : "f64";
    report(("manhattan count 200k x 200k " + p).c_str(), 4e10,
           time_job(job(Kind::Count, f32, a, &b, manhattan_source(0.001))));
    report(("manhattan count 200k self " + p).c_str(), 2e10 - 1e5,
           time_job(job(Kind::Count, f32, a, nullptr, manhattan_source(0.001))));
    report(("manhattan join 200k x 200k " + p).c_str(), 4e10,
           time_job(job(Kind::Join, f32, a, &b, manhattan_source(0.001))));
  }
}

// The Manhattan count over tile configurations.
void bench_sweep() {
  const Cols a = uniform_cols(200000, 3, 1), b = uniform_cols(200000, 3, 2);
  const int cfg[][2] = {{128, 1}, {128, 2}, {128, 4}, {256, 1}, {256, 2}, {256, 4}, {512, 2}, {64, 4}};
  for (bool f32 : {true, false})
    for (auto& c : cfg) {
      exprgpu::detail::set_tile_override(c[0], c[1]);
      char what[96];
      snprintf(what, sizeof what, "manhattan 200k x 200k %s %dx%d", f32 ? "f32" : "f64", c[0], c[1]);
      report(what, 4e10, time_job(job(Kind::Count, f32, a, &b, manhattan_source(0.001))));
    }
  exprgpu::detail::set_tile_override(0, 0);
}

// The last compile's split (NVRTC, load) from gpu2bs_info's rows.
std::string split_last() {
  for (auto& r : exprgpu::nvrtc_info())
    if (r.first == "nvrtc_compile_split_ms_last") return r.second;
  return "?";
}

void bench_compile() {
  const Cols a = uniform_cols(1000, 3, 3);
  std::vector<double> cold, cached, tiny;
  // A source other processes can compile again (G2_BENCH_TOKEN): shows whether anything caches
  // compiles across processes.
  const char* fixed = std::getenv("G2_BENCH_TOKEN");
  if (fixed) {
    Job j = job(Kind::Count, true, a, nullptr, std::string("// fixed ") + fixed + "\n" + manhattan_source(0.001));
    Control c;
    Result r = exprgpu::run(j, nullptr, c);
    printf("compile: fixed-token source %s: %.1f ms (%s), first compile of this process\n", fixed,
           r.compile_ms, split_last().c_str());
  }
  for (int i = 0; i < std::max(3, g_runs); ++i) {
    const std::string token = "// cold " + std::to_string(Clock::now().time_since_epoch().count()) + "\n";
    Job j = job(Kind::Count, true, a, nullptr, token + manhattan_source(0.001));
    Control c1;
    Result r = exprgpu::run(j, nullptr, c1);
    cold.push_back(r.compile_ms);
    printf("compile: cold %d: %.1f ms (%s)\n", i, r.compile_ms, split_last().c_str());
    Control c2;
    auto t0 = Clock::now();
    Result r2 = exprgpu::run(j, nullptr, c2);
    tiny.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r2.cache_hit) printf("second call missed the cache\n");
    // A cached call on 2 rows: the lookup (the whole kernel source is the key) plus the call's
    // fixed costs.
    const Cols t = uniform_cols(2, 3, 9);
    Job jt = j;
    jt.a = t.side();
    auto t1 = Clock::now();
    for (int k = 0; k < 100; ++k) {
      Control c3;
      exprgpu::run(jt, nullptr, c3);
    }
    cached.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count() / 100);
  }
  // The sources above differ from each other in a comment only: after the first, the compiler
  // below NVRTC may have seen the same code (see docs/pair-expressions-gpu.md).
  printf("compile: new-comment NVRTC compile+load median %.1f ms (min %.1f, max %.1f); cached "
         "call of 1000 rows e2e %.2f ms; cached call of 2 rows e2e %.3f ms\n",
         median(cold), *std::min_element(cold.begin(), cold.end()),
         *std::max_element(cold.begin(), cold.end()), median(tiny), median(cached));
  // A cold compile right after a long kernel run (the host thread slept in the wait loop).
  const Cols big = uniform_cols(200000, 3, 1), big2 = uniform_cols(200000, 3, 2);
  Job bj = job(Kind::Count, true, big, &big2, manhattan_source(0.001));
  Control cb;
  exprgpu::run(bj, nullptr, cb);
  for (int i = 0; i < 3; ++i) {
    Control cb2;
    exprgpu::run(bj, nullptr, cb2);
    const std::string token = "// after " + std::to_string(Clock::now().time_since_epoch().count()) + "\n";
    Job j = job(Kind::Count, true, a, nullptr, token + manhattan_source(0.001));
    Control c1;
    Result r = exprgpu::run(j, nullptr, c1);
    printf("compile: cold after a 200k x 200k run: %.1f ms (%s)\n", r.compile_ms, split_last().c_str());
  }
}

// Generated vs hand-written Euclidean pair count on the same 1e6 points.
void bench_euclid() {
  const size_t n = 1000000;
  const Cols a = uniform_cols(int64_t(n), 3, 4);
  ref::Points pts;
  pts.dims = 3;
  pts.c.assign(3, std::vector<double>(n));
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < n; ++i) pts.c[size_t(k)][i] = a.at(k, int64_t(i));
  const double r = 0.01;
  std::string why;
  Engine* gpu = cuda_engine(&why);
  for (bool f32 : {true, false}) {
    const PairCountProblem p = make_pair_count(pts.view(), r, f32 ? Precision::Float32 : Precision::Float64);
    const Job ej = job(Kind::Count, f32, a, nullptr, euclid_source(3, f32 ? double(p.r2_f) : p.r2));
    const Timing t = time_job(ej);
    if (g_sweep) {  // the generated kernel's tile configurations
      const int cfg[][2] = {{128, 1}, {128, 4}, {128, 8}, {256, 2}, {256, 4}, {512, 2}};
      for (auto& c : cfg) {
        exprgpu::detail::set_tile_override(c[0], c[1]);
        char what[96];
        snprintf(what, sizeof what, "euclid generated 1e6 self %s %dx%d", f32 ? "f32" : "f64", c[0], c[1]);
        report(what, double(n) * double(n - 1) / 2, time_job(ej));
      }
      exprgpu::detail::set_tile_override(0, 0);
    }
    std::vector<double> k;
    uint64_t hand = 0;
    for (int i = 0; i < g_runs + 1; ++i) {
      Control ctl;
      ctl.overrides.count_path = 1;  // all-pairs tiles
      ctl.sdh_method = SdhMethod::Brute;
      hand = gpu->pair_count(p, ctl);
      if (i > 0) k.push_back(cuda::last_run().kernel_ms);
    }
    const double pairs = double(n) * double(n - 1) / 2;
    report(f32 ? "euclid generated 1e6 self f32" : "euclid generated 1e6 self f64", pairs, t);
    const double hk = median(k);
    printf("%-44s kern_ms %8.2f  pairs/s %.3e  count %llu  generated/hand-written time %.3f  %s\n",
           f32 ? "euclid hand-written 1e6 self f32" : "euclid hand-written 1e6 self f64", hk,
           pairs / (hk * 1e-3), (unsigned long long)hand, t.kern_ms / hk,
           hand == t.r.count ? "counts equal" : "COUNTS DIFFER");
  }
}

// The generated angular histogram (angle_generated: the code generator's source for
// acos(least(1, greatest(-1, dot)))) of `s`: float32 with the threshold table and with it
// turned off, float64; the histograms of the two float32 runs compared bucket for bucket.
void bench_hist_generated(const Cols& s, const char* name) {
  const double pairs = double(s.n) * double(s.n - 1) / 2;
  std::vector<uint64_t> with_table;
  for (int mode = 0; mode < 3; ++mode) {
    const bool f32 = mode < 2;
    Job j = job(Kind::Histogram, f32, s, nullptr, angle_generated(f32));
    j.lo = 0;
    j.hi = M_PI;
    j.nbuckets = 1000;
    exprgpu::detail::set_histogram_table(mode == 0);
    const Timing t = time_job(j);
    exprgpu::detail::set_histogram_table(true);
    char what[120];
    snprintf(what, sizeof what, "angular generated %s 1000 %s", name,
             mode == 0 ? "f32 table" : mode == 1 ? "f32 direct" : "f64");
    report(what, pairs, t);
    if (mode == 0) {
      with_table = t.r.hist;
      printf("  table %d (dec %d, climb %d), check %.2f ms (warm-up call)\n", int(t.r.table), int(t.r.table_dec),
             int(t.r.table_climb), g_check_ms);
    }
    if (mode == 1)
      printf("  f32 table vs direct histograms: %s\n", with_table == t.r.hist ? "equal" : "DIFFER");
    if (mode == 0) {
      printf("  %s f32 buckets 0..4: %llu %llu %llu %llu %llu\n", name, (unsigned long long)t.r.hist[0],
             (unsigned long long)t.r.hist[1], (unsigned long long)t.r.hist[2], (unsigned long long)t.r.hist[3],
             (unsigned long long)t.r.hist[4]);
      if (const char* dump = std::getenv("G2_HIST_OUT")) {  // the histogram, for a peer's comparison
        std::string path = std::string(dump) + "-" + name + ".txt";
        if (FILE* f = fopen(path.c_str(), "w")) {
          for (uint64_t h : t.r.hist) fprintf(f, "%llu\n", (unsigned long long)h);
          fclose(f);
        }
      }
    }
  }
}

// Angular-separation histogram of unit vectors.
void bench_hist() {
  const Cols a = unit_vectors(118218, 5);
  for (bool f32 : {true, false}) {
    Job j = job(Kind::Histogram, f32, a, nullptr, angle_source());
    j.lo = 0;
    j.hi = M_PI;
    j.nbuckets = 1000;
    report(f32 ? "angular histogram 118218 self 1000 f32" : "angular histogram 118218 self 1000 f64",
           118218.0 * 118217.0 / 2, time_job(j));
  }
  bench_hist_generated(a, "synthetic118218");
  const char* stars = std::getenv("G2_STARS");
  if (!stars) return;
  const Cols s = read_stars(stars);
  if (s.n < 2) {
    printf("no stars read from %s\n", stars);
    return;
  }
  bench_hist_generated(s, "stars");
  for (bool f32 : {true, false}) {
    Job j = job(Kind::Histogram, f32, s, nullptr, angle_source());
    j.lo = 0;
    j.hi = M_PI;
    j.nbuckets = 1000;
    char what[96];
    snprintf(what, sizeof what, "angular histogram stars %lld self 1000 %s", (long long)s.n, f32 ? "f32" : "f64");
    const Timing t = time_job(j);
    report(what, double(s.n) * double(s.n - 1) / 2, t);
    if (f32) {  // the histogram for a comparison outside (e.g. TreeCorr's counts)
      unsigned long long tot = 0;
      for (uint64_t h : t.r.hist) tot += h;
      printf("  stars f32 buckets 0..4: %llu %llu %llu %llu %llu, total %llu\n",
             (unsigned long long)t.r.hist[0], (unsigned long long)t.r.hist[1], (unsigned long long)t.r.hist[2],
             (unsigned long long)t.r.hist[3], (unsigned long long)t.r.hist[4], tot);
    }
  }
}

// Unit vectors of the rows of a gzip'd CSV (header, then id,x,y,z), or no rows.
Cols read_stars(const char* path) {
  Cols c;
  c.ncols = 3;
  std::vector<double> xs[3];
  const std::string cmd = std::string("gzip -dc '") + path + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return c;
  char line[512];
  bool header = true;
  while (fgets(line, sizeof line, f)) {
    if (header) {
      header = false;
      continue;
    }
    long long id;
    double x, y, z;
    if (sscanf(line, "%lld,%lf,%lf,%lf", &id, &x, &y, &z) != 4) continue;
    const double n = std::sqrt(x * x + y * y + z * z);
    if (!(n > 0)) continue;
    xs[0].push_back(x / n);
    xs[1].push_back(y / n);
    xs[2].push_back(z / n);
  }
  pclose(f);
  c.n = int64_t(xs[0].size());
  for (auto& v : xs) c.data.insert(c.data.end(), v.begin(), v.end());
  return c;
}

// The benchmark's program shapes: name, kind, precision, source family (0 Manhattan, 1
// Euclidean, 2 hand-written angle, 3 energy, 4 generated angle) and the compact-loop override
// (-1: the call's own choice; 0: the full-tile loop, the default of float32 sums).
struct Program {
  const char* name;
  Kind k;
  bool f32;
  int which;
  int compact;
};
const Program kPrograms[] = {
    {"manhattan count f32", Kind::Count, true, 0, -1},      {"manhattan count f64", Kind::Count, false, 0, -1},
    {"manhattan join f32", Kind::Join, true, 0, -1},        {"manhattan join f64", Kind::Join, false, 0, -1},
    {"euclid count f32", Kind::Count, true, 1, -1},         {"euclid count f64", Kind::Count, false, 1, -1},
    {"angular hist f32", Kind::Histogram, true, 2, -1},     {"angular hist f64", Kind::Histogram, false, 2, -1},
    {"angular gen f32 table", Kind::Histogram, true, 4, -1}, {"angular gen f64", Kind::Histogram, false, 4, -1},
    {"energy sum f32", Kind::Sum, true, 3, -1},             {"energy sum f64", Kind::Sum, false, 3, -1},
    {"energy sum f32 full loop", Kind::Sum, true, 3, 0},    {"energy sum f64 full loop", Kind::Sum, false, 3, 0}};
constexpr int kNumPrograms = int(sizeof kPrograms / sizeof kPrograms[0]);

// Program p's job over `a`, made a program not compiled before by `serial` (1 .. 2^20): its
// constant scaled by 1 + serial * 2^-21, distinct in float32 too.
Job program_job(const Program& p, const Cols& a, long long serial) {
  const double s = 1 + double(serial % 1000003 + 1) * std::ldexp(1.0, -21);
  std::string src = p.which == 0   ? manhattan_source(0.001 * s)
                    : p.which == 1 ? euclid_source(3, 1e-4 * s)
                    : p.which == 2 ? angle_source(s)
                    : p.which == 4 ? angle_generated(p.f32, s)
                                   : energy_source(s);
  Job j = job(p.k, p.f32, a, nullptr, src);
  if (p.k == Kind::Histogram) {
    j.lo = 0;
    j.hi = M_PI;
    j.nbuckets = 1000;
  }
  return j;
}

// A serial no earlier run of the benchmark used (from the clock).
long long fresh_serial() { return (long long)(Clock::now().time_since_epoch().count() / 1000 % 1000000) * 64; }

// Cold compile + load of every benchmark program in this process, each compile a program not
// seen before (a constant differs: compiles of the same code, even in another process, are
// served faster), without and with --Ofast-compile=min.
void bench_programs() {
  const Cols a = uniform_cols(1000, 3, 3);
  const long long salt0 = fresh_serial();
  int serial = 0;
  for (const char* level : {"", "min"}) {
    exprgpu::detail::set_fast_compile_override(level);
    for (const Program& p : kPrograms) {
      exprgpu::detail::set_compact_override(p.compact);
      std::vector<double> ms;
      std::string splits;
      for (int i = 0; i < std::max(3, g_runs); ++i) {
        Job j = program_job(p, a, salt0 + ++serial);
        Control c;
        Result r = exprgpu::run(j, nullptr, c);
        ms.push_back(r.compile_ms);
        splits += " " + split_last() + (r.table ? " check " + std::to_string(r.check_ms) + " ms" : "") + ";";
      }
      printf("compile %-26s --Ofast-compile=%-4s median %6.1f ms  min %6.1f  max %6.1f  (%s)\n", p.name,
             *level ? level : "none", median(ms), *std::min_element(ms.begin(), ms.end()),
             *std::max_element(ms.begin(), ms.end()), splits.c_str());
    }
  }
  exprgpu::detail::set_compact_override(-1);
  exprgpu::detail::set_fast_compile_override(nullptr);
}

// bench_expr cold <k>: program k's first compile in this process (run it in a fresh process),
// a program no earlier run compiled, at the level a call of 1000 rows gets; a second new
// program of the shape; then the cached call: the median wall time of a call of the first
// program on 2 rows (module cache hit).
void bench_cold(int k) {
  if (k < 0 || k >= kNumPrograms) {
    printf("cold: program index 0..%d\n", kNumPrograms - 1);
    return;
  }
  const Program& p = kPrograms[k];
  exprgpu::detail::set_compact_override(p.compact);
  const Cols a = uniform_cols(1000, 3, 3), tiny = uniform_cols(2, 3, 9);
  Job j = program_job(p, a, fresh_serial() + k);
  Control c;
  const auto t0 = Clock::now();
  const Result r = exprgpu::run(j, nullptr, c);
  const double call_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const std::string split = split_last();
  // A second new program of the shape in the same process: the compile without NVRTC's
  // first-use costs in the process.
  Job j2 = program_job(p, a, fresh_serial() + 500000 + k);
  Control c2;
  const Result r2 = exprgpu::run(j2, nullptr, c2);
  j.a = tiny.side();
  std::vector<double> hit;
  bool all_hits = true;
  for (int i = 0; i < 21; ++i) {
    Control c3;
    const auto t1 = Clock::now();
    const Result r3 = exprgpu::run(j, nullptr, c3);
    hit.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
    all_hits = all_hits && r3.cache_hit;
  }
  printf("cold %-26s first compile in process %6.1f ms (%s; the call %6.1f ms)  second %6.1f ms%s  "
         "cached call of 2 rows median %.3f ms max %.3f ms%s\n",
         p.name, r.compile_ms, split.c_str(), call_ms, r2.compile_ms, r2.cache_hit ? " (HIT)" : "",
         median(hit), *std::max_element(hit.begin(), hit.end()), all_hits ? "" : "  (A CACHED CALL MISSED)");
  exprgpu::detail::set_compact_override(-1);
}

// Pair energy sum: the kernel with the full-tile loop and with the compact loop (the default of
// a float64 call of this size; float32 calls keep the full-tile loop), the same bits expected.
// The threshold-table angular histogram (float32, 1000 buckets) over tile configurations
// (threads x rows; 0 x 0: the default) and forced private copies (0: the default), each
// histogram compared with the default configuration's.
void bench_hist_sweep() {
  const char* stars = std::getenv("G2_STARS");
  const Cols s = stars ? read_stars(stars) : unit_vectors(118218, 5);
  const double pairs = double(s.n) * double(s.n - 1) / 2;
  Job j = job(Kind::Histogram, true, s, nullptr, angle_generated(true));
  j.lo = 0;
  j.hi = M_PI;
  j.nbuckets = 1000;
  std::vector<uint64_t> first;
  const int cfg[][2] = {{0, 0}, {1024, 1}, {1024, 2}, {1024, 4}, {512, 1}, {512, 2},
                        {512, 4},  {256, 2},  {256, 4},  {128, 2}};
  for (auto& c : cfg)
    for (int copies : {0, 8, 16, 32}) {
      if (g_sweep_one && (c[0] != 0 || copies != 0)) continue;
      exprgpu::detail::set_tile_override(c[0], c[1]);
      g_copies = copies;
      const Timing t = time_job(j);
      g_copies = 0;
      exprgpu::detail::set_tile_override(0, 0);
      if (first.empty()) first = t.r.hist;
      char what[120];
      snprintf(what, sizeof what, "angular table %s %dx%d copies %d (used %d)", stars ? "stars" : "synthetic", c[0],
               c[1], copies, cuda::last_run().sdh_copies);
      report(what, pairs, t);
      if (!t.r.table || t.r.hist != first) printf("  table %d, histogram %s\n", int(t.r.table), t.r.hist == first ? "equal" : "DIFFERS");
    }
}

// Pair energy sum.
void bench_sum() {
  const Cols a = uniform_cols(200000, 3, 6);
  for (bool f32 : {true, false}) {
    double sums[2];
    for (int compact : {0, 1}) {
      exprgpu::detail::set_compact_override(compact);
      const Timing t = time_job(job(Kind::Sum, f32, a, nullptr, energy_source()));
      std::string what = std::string("energy sum 200k self ") + (f32 ? "f32" : "f64") +
                         (compact ? " compact loop" : " full-tile loop");
      report(what.c_str(), 2e10 - 1e5, t);
      printf("  sum = %.17g\n", t.r.sum);
      sums[compact] = t.r.sum;
    }
    exprgpu::detail::set_compact_override(-1);
    printf("  %s sums of the two loops: %s\n", f32 ? "f32" : "f64",
           std::memcmp(&sums[0], &sums[1], sizeof(double)) == 0 ? "same bits" : "DIFFER");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "all";
  if (argc > 2 && mode != "cold") g_runs = std::max(1, atoi(argv[2]));
  std::string why;
  if (const char* fast = std::getenv("G2_BENCH_FAST"))
    exprgpu::detail::set_fast_compile_override(std::string(fast) == "none" ? "" : fast);
  Engine* gpu = cuda_engine(&why);
  if (!gpu) {
    printf("no usable GPU: %s\n", why.c_str());
    return 0;
  }
  if (!exprgpu::nvrtc_available(&why)) {
    printf("no NVRTC: %s\n", why.c_str());
    return 0;
  }
  int clock_khz = 0, sms = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  g_lane_cycles = double(sms) * 128.0 * double(clock_khz) * 1e3;
  printf("gpu2bs bench_expr, engine %s, mode %s, median of %d runs after a warm-up\n",
         gpu->name().c_str(), mode.c_str(), g_runs);
  printf("FP32 issue limit: %d SMs x 128 lanes x %.0f MHz = %.3e lane-cycles/s\n", sms,
         clock_khz / 1e3, g_lane_cycles);
  for (auto& r : exprgpu::nvrtc_info()) printf("  %-24s %s\n", r.first.c_str(), r.second.c_str());
  try {
    if (mode == "all" || mode == "compile") bench_compile();
    if (mode == "all" || mode == "manhattan") bench_manhattan();
    if (mode == "all" || mode == "euclid") bench_euclid();
    if (mode == "all" || mode == "hist") bench_hist();
    if (mode == "histsweep") bench_hist_sweep();
    if (mode == "histone") {
      g_sweep_one = true;
      bench_hist_sweep();
    }
    if (mode == "all" || mode == "sum") bench_sum();
    if (mode == "programs") bench_programs();
    if (mode == "cold") bench_cold(argc > 2 ? atoi(argv[2]) : -1);
    if (mode == "sweep") {
      g_sweep = true;
      bench_sweep();
      bench_euclid();
    }
  } catch (const Error& e) {
    printf("error: %s (%s)\n", e.what(), e.detail().c_str());
    return 1;
  }
  for (auto& r : exprgpu::nvrtc_info()) printf("  %-24s %s\n", r.first.c_str(), r.second.c_str());
  return 0;
}
