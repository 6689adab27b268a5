// gpu_rdf engines without PostgreSQL: the CUDA engine against the CPU engine (bit for bit) and
// both against a brute-force pass over every pair with the same arithmetic (periodic_sq_dist,
// rdf_bucket), on small sets with edge cases; then timings on the MDAnalysisTests water box
// replicated to 1,000,000 atoms (periodic, 500 buckets).
//   bench_rdf check                      differential checks (exit status 1 on a mismatch)
//   bench_rdf bench ATOMS.csv [R_MAX...]  timings, median of 3 after one warm-up
//   bench_rdf counts ATOMS.csv N R_MAX NB OUT [THREADS]  CPU engine counts of the replicated set
//                                            to OUT (THREADS workers, default 2)
//   bench_rdf weighted ATOMS.csv [R_MAX...]  the weighted RDF: CUDA vs CPU counts and 128-bit
//                                        sums (bit for bit) on small cases, then weighted vs
//                                        unweighted timings on the 1,000,000 atoms
// ATOMS.csv: id,x,y,z in Å (test/data/prepare.py atoms), a cubic box of 110 Å replicated 2x2x2
// (shift 110 Å per copy) and truncated to N atoms, box 220 Å.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/rdf.h"
#include "core/weights.h"
#include "kernels/host_api.h"

using namespace gpu2bs;

// Kernel time of the CUDA engine's last call (cudaEvents), 0 in a build without CUDA.
static double gpu_kernel_ms() {
#if defined(G2_BENCH_CUDA)
  return cuda::last_run().kernel_ms;
#else
  return 0;
#endif
}

namespace {

struct Set {
  int dims = 3;
  std::vector<double> c[kMaxDims];
  size_t n() const { return c[0].size(); }
  PointsView view() const {
    PointsView v;
    v.dims = dims;
    v.n = n();
    for (int k = 0; k < dims; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// n uniform points in [lo, hi)^dims.
Set uniform(size_t n, int dims, double lo, double hi, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Set s;
  s.dims = dims;
  for (int k = 0; k < dims; ++k)
    for (size_t i = 0; i < n; ++i) s.c[k].push_back(u(g));
  return s;
}

// Brute force over every pair with the engines' arithmetic on coordinates wrapped as
// build_rdf_cells wraps them.
template <typename T>
std::vector<uint64_t> brute(const RdfProblem& p) {
  const int D = p.a.dims;
  auto wrap = [&](const PointsView& v, std::vector<T>* out) {
    for (int k = 0; k < D; ++k) {
      out[k].resize(v.n);
      const double L = p.box[k];
      for (size_t i = 0; i < v.n; ++i) {
        double x = v.coord[k][i];
        if (L > 0) {
          x = x - L * std::floor(x / L);
          if (!(x < L) || x < 0) x = 0;
        }
        out[k][i] = T(x);
      }
    }
  };
  std::vector<T> A[kMaxDims], B[kMaxDims];
  wrap(p.a, A);
  wrap(p.b, B);
  T len[kMaxDims], half[kMaxDims];
  for (int k = 0; k < D; ++k) {
    len[k] = p.box[k] > 0 ? T(p.box[k]) : T(0);
    half[k] = p.box[k] > 0 ? T(p.box[k] / 2) : std::numeric_limits<T>::infinity();
  }
  const T cut2 = T(p.r_max * p.r_max * (1.0 + 0x1p-10));
  const T inv_w = sizeof(T) == 4 ? T(p.params.inv_width_f) : T(p.params.inv_width);
  std::vector<uint64_t> h(size_t(p.nbuckets), 0);
  for (size_t i = 0; i < p.a.n; ++i)
    for (size_t j = p.self ? i + 1 : 0; j < p.b.n; ++j) {
      T a[kMaxDims], b[kMaxDims];
      for (int k = 0; k < D; ++k) {
        a[k] = A[k][i];
        b[k] = B[k][j];
      }
      T d2;
      switch (D) {
        case 2: d2 = periodic_sq_dist<T, 2>(a, b, len, half); break;
        case 3: d2 = periodic_sq_dist<T, 3>(a, b, len, half); break;
        default: d2 = periodic_sq_dist<T, 4>(a, b, len, half); break;
      }
      const int kb = rdf_bucket<T>(d2, cut2, inv_w, T(p.nbuckets));
      if (kb >= 0) ++h[size_t(kb)];
    }
  return h;
}

int g_fail = 0;

// One differential case: CPU engine, CUDA engine (when present) and brute force.
void check_case(const char* name, const Set& a, const Set* b, int nb, double r_max,
                const std::vector<double>& box, Precision prec, Engine* gpu) {
  auto cpu = make_cpu_engine();
  const PointsView va = a.view();
  PointsView vb;
  if (b) vb = b->view();
  RdfProblem p = make_rdf(va, b ? &vb : nullptr, nb, r_max, box.empty() ? nullptr : box.data(),
                          int(box.size()), prec);
  Control c1;
  c1.threads = 4;
  const std::vector<uint64_t> hc = cpu->rdf(p, c1);
  // Brute force on sets small enough for one thread (the large cases compare the engines).
  const bool small = double(a.n()) * double(b ? b->n() : a.n()) <= 2e8;
  const std::vector<uint64_t> hr =
      !small ? hc : prec == Precision::Float32 ? brute<float>(p) : brute<double>(p);
  std::vector<uint64_t> hg;
  double kms = 0;
  if (gpu) {
    Control c2;
    hg = gpu->rdf(p, c2);
    kms = gpu_kernel_ms();
  }
  uint64_t total = 0;
  for (uint64_t v : hc) total += v;
  const bool ok_ref = hc == hr;
  const bool ok_gpu = !gpu || hg == hc;
  if (!ok_ref || !ok_gpu) ++g_fail;
  printf("%-44s %-4s n=%-6zu pairs=%-10llu cpu==brute %s  gpu==cpu %s  (kernel %.3f ms)\n", name,
         prec == Precision::Float32 ? "f32" : "f64", a.n(), (unsigned long long)total,
         !small ? "n/a" : ok_ref ? "yes" : "NO", gpu ? (ok_gpu ? "yes" : "NO") : "n/a", kms);
}

int run_check(Engine* gpu) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    Set s = uniform(3000, 3, 0, 10, 1);
    check_case("self periodic 3-D r_max=3", s, nullptr, 60, 3.0, {10, 10, 10}, prec, gpu);
    check_case("self periodic 3-D r_max=L/2 (one cell)", s, nullptr, 50, 5.0, {10, 10, 10}, prec, gpu);
    check_case("self non-periodic 3-D", s, nullptr, 40, 2.0, {}, prec, gpu);
    check_case("self mixed box {10,0,10}", s, nullptr, 40, 1.5, {10, 0, 10}, prec, gpu);
    Set t = uniform(2500, 3, -5, 15, 2);  // outside the box: wrapped
    check_case("two sets periodic, points outside box", s, &t, 70, 2.5, {10, 10, 10}, prec, gpu);
    check_case("two sets non-periodic", s, &t, 70, 2.5, {}, prec, gpu);
    Set s2 = uniform(4000, 2, 0, 20, 3);
    check_case("self periodic 2-D", s2, nullptr, 100, 4.0, {20, 20}, prec, gpu);
    // Points on the box faces (0 and L), duplicates, a lattice at exactly r_max = L/2.
    Set f;
    f.dims = 3;
    for (int i = 0; i <= 10; ++i)
      for (int j = 0; j <= 10; ++j)
        for (int k = 0; k <= 10; ++k) {
          f.c[0].push_back(i);
          f.c[1].push_back(j);
          f.c[2].push_back(k);
        }
    for (int r = 0; r < 50; ++r)
      for (int k = 0; k < 3; ++k) f.c[k].push_back(f.c[k][size_t(r)]);
    check_case("lattice on faces + duplicates, r_max=L/2", f, nullptr, 20, 5.0, {10, 10, 10}, prec, gpu);
    check_case("lattice on faces, r_max=1 (edges)", f, nullptr, 4, 1.0, {10, 10, 10}, prec, gpu);
    Set big = uniform(200000, 3, 0, 50, 4);
    check_case("self periodic 200k, 500 buckets", big, nullptr, 500, 4.0, {50, 50, 50}, prec, gpu);
    Set big2 = uniform(150000, 3, 0, 50, 5);
    check_case("two sets periodic 200k x 150k", big, &big2, 500, 4.0, {50, 50, 50}, prec, gpu);
    Set one = uniform(1, 3, 0, 10, 6);
    check_case("one point", one, nullptr, 10, 2.0, {10, 10, 10}, prec, gpu);
    check_case("many buckets (global histogram)", s, nullptr, 100000, 3.0, {10, 10, 10}, prec, gpu);
  }
  printf("%s: %d mismatching case(s)\n", g_fail ? "FAIL" : "PASS", g_fail);
  return g_fail ? 1 : 0;
}

// The water box replicated 2x2x2 (shift 110 Å) and truncated to n atoms.
Set atoms(const char* path, size_t n) {
  FILE* f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(2);
  }
  Set base;
  char line[256];
  if (!fgets(line, sizeof line, f)) exit(2);
  double x, y, z;
  long id;
  while (fscanf(f, "%ld,%lf,%lf,%lf", &id, &x, &y, &z) == 4) {
    base.c[0].push_back(x);
    base.c[1].push_back(y);
    base.c[2].push_back(z);
  }
  fclose(f);
  Set s;
  for (int i = 0; i < 2 && s.n() < n; ++i)
    for (int j = 0; j < 2 && s.n() < n; ++j)
      for (int l = 0; l < 2 && s.n() < n; ++l)
        for (size_t r = 0; r < base.n() && s.n() < n; ++r) {
          s.c[0].push_back(base.c[0][r] + 110.0 * i);
          s.c[1].push_back(base.c[1][r] + 110.0 * j);
          s.c[2].push_back(base.c[2][r] + 110.0 * l);
        }
  return s;
}

double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run_bench(Engine* gpu, const char* path, const std::vector<double>& rmaxes) {
  const Set s = atoms(path, 1000000);
  const PointsView v = s.view();
  const std::vector<double> box = {220, 220, 220};
  auto cpu = make_cpu_engine();
  const double allpairs = double(s.n()) * double(s.n() - 1) / 2;
  printf("# bench_rdf: %zu atoms (water box 110 A replicated 2x2x2, truncated), box 220 A periodic, "
         "500 buckets, float32; median of 3 after 1 warm-up\n", s.n());
  printf("%-6s %-5s %8s %10s %10s %12s %14s %14s %s\n", "engine", "r_max", "threads", "e2e_ms",
         "kernel_ms", "examined", "examined/s", "allpairs/s", "counts==cpu");
  for (double rm : rmaxes) {
    RdfProblem p = make_rdf(v, nullptr, 500, rm, box.data(), 3, Precision::Float32);
    std::vector<uint64_t> ref;
    for (int threads : {16, 0}) {
      if (threads == 0 && !gpu) continue;
      Engine* e = threads ? cpu.get() : gpu;
      std::vector<double> e2e, kern;
      uint64_t examined = 0;
      std::vector<uint64_t> h;
      for (int rep = 0; rep < 4; ++rep) {
        Control c;
        c.threads = threads ? threads : 16;
        auto t0 = std::chrono::steady_clock::now();
        h = e->rdf(p, c);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        examined = c.stats.pairs_examined;
        if (rep == 0) continue;
        e2e.push_back(ms);
        kern.push_back(threads ? c.stats.kernel_s * 1e3 : gpu_kernel_ms());
      }
      if (threads) ref = h;
      const double km = median3(kern);
      printf("%-6s %-5.1f %8d %10.2f %10.3f %12.4g %14.4g %14.4g %s\n", threads ? "cpu" : "cuda", rm,
             threads ? threads : 0, median3(e2e), km, double(examined), double(examined) / (km * 1e-3),
             allpairs / (km * 1e-3), threads ? "-" : (h == ref ? "yes" : "NO"));
      if (!threads && h != ref) g_fail++;
    }
  }
  return g_fail ? 1 : 0;
}

// Weights of a set: water-like masses (16 for every third point, else 1: integers, so every
// sum is exact) or real charge-like values (-0.834, 0.417, 0.417).
std::vector<double> weights_of(size_t n, bool real) {
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i)
    w[i] = real ? (i % 3 == 0 ? -0.834 : 0.417) : (i % 3 == 0 ? 16.0 : 1.0);
  return w;
}

// True when two weighted results have the same counts and the same 128-bit sums.
bool same_weighted(const WeightedCounts& x, const WeightedCounts& y) {
  if (x.pairs != y.pairs || x.sums.size() != y.sums.size()) return false;
  for (size_t k = 0; k < x.sums.size(); ++k)
    if (!(x.sums[k] == y.sums[k])) return false;
  return true;
}

// One weighted differential case: the CUDA engine against the CPU engine (counts and sums bit
// for bit), and the counts against the unweighted CPU engine.
void check_weighted(const char* name, const RdfProblem& p, const double* wa, const double* wb,
                    Engine* gpu) {
  auto cpu = make_cpu_engine();
  Control c1, c2, c3;
  c1.threads = 16;
  c3.threads = 16;
  const WeightedCounts hc = cpu->rdf_weighted(p, wa, wb, c1);
  const bool ok_counts = hc.pairs == cpu->rdf(p, c3);
  WeightedCounts hg;
  double kms = 0;
  if (gpu) {
    hg = gpu->rdf_weighted(p, wa, wb, c2);
    kms = gpu_kernel_ms();
  }
  const bool ok_gpu = !gpu || same_weighted(hg, hc);
  if (!ok_counts || !ok_gpu) ++g_fail;
  uint64_t total = 0;
  double wsum = 0;
  for (size_t k = 0; k < hc.pairs.size(); ++k) {
    total += hc.pairs[k];
    wsum += weight_value(hc.sums[k], hc.scale);
  }
  printf("%-44s %-4s n=%-7zu pairs=%-10llu weight=%-14.8g counts==unweighted %s  gpu==cpu %s  (kernel %.3f ms)\n",
         name, p.prec == Precision::Float32 ? "f32" : "f64", p.a.n, (unsigned long long)total, wsum,
         ok_counts ? "yes" : "NO", gpu ? (ok_gpu ? "yes" : "NO") : "n/a", kms);
}

// The weighted checks, then weighted vs unweighted timings on the water set.
int run_weighted(Engine* gpu, const char* path, const std::vector<double>& rmaxes) {
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    const Set s = uniform(20000, 3, 0, 10, 11), t = uniform(15000, 3, -3, 13, 12);
    const PointsView vs = s.view(), vt = t.view();
    const std::vector<double> ws = weights_of(s.n(), false), wt = weights_of(t.n(), false);
    const std::vector<double> rs = weights_of(s.n(), true), rt = weights_of(t.n(), true);
    const double box[3] = {10, 10, 10}, mixed[3] = {10, 0, 10};
    check_weighted("self periodic, masses", make_rdf(vs, nullptr, 300, 3.0, box, 3, prec), ws.data(), nullptr, gpu);
    check_weighted("self periodic, charges", make_rdf(vs, nullptr, 300, 3.0, box, 3, prec), rs.data(), nullptr, gpu);
    check_weighted("self r_max = L/2", make_rdf(vs, nullptr, 100, 5.0, box, 3, prec), rs.data(), nullptr, gpu);
    check_weighted("self mixed box", make_rdf(vs, nullptr, 100, 1.0, mixed, 3, prec), rs.data(), nullptr, gpu);
    check_weighted("self not periodic", make_rdf(vs, nullptr, 100, 1.0, nullptr, 0, prec), ws.data(), nullptr, gpu);
    check_weighted("two sets periodic", make_rdf(vs, &vt, 200, 3.0, box, 3, prec), rs.data(), wt.data(), gpu);
    check_weighted("two sets not periodic", make_rdf(vs, &vt, 200, 3.0, nullptr, 0, prec), ws.data(), rt.data(), gpu);
    check_weighted("edges, two sets", make_rdf_edges(vs, &vt, {0, 0.1, 0.3, 0.9, 2.0, 4.5}, box, 3, prec),
                   rs.data(), rt.data(), gpu);
    check_weighted("global-memory histogram", make_rdf(vs, nullptr, 50000, 2.0, box, 3, prec), rs.data(), nullptr, gpu);
  }
  printf("%s: %d mismatching weighted case(s)\n", g_fail ? "FAIL" : "PASS", g_fail);
  if (!path) return g_fail ? 1 : 0;
  const Set s = atoms(path, 1000000);
  const PointsView v = s.view();
  const std::vector<double> w = weights_of(s.n(), false);
  const double box[3] = {220, 220, 220};
  auto cpu = make_cpu_engine();
  const double allpairs = double(s.n()) * double(s.n() - 1) / 2;
  printf("# weighted vs unweighted: %zu atoms, box 220 A periodic, 500 buckets, float32, weights "
         "16/1/1 per water; CUDA median of 3 after 1 warm-up, CPU (16 threads) one run\n", s.n());
  printf("%-6s %-10s %-5s %10s %10s %14s %s\n", "engine", "form", "r_max", "e2e_ms", "kernel_ms",
         "allpairs/s", "equal");
  for (double rm : rmaxes) {
    const RdfProblem p = make_rdf(v, nullptr, 500, rm, box, 3, Precision::Float32);
    WeightedCounts ref;
    for (int eng = 0; eng < 2; ++eng) {
      if (eng == 1 && !gpu) continue;
      Engine* e = eng ? gpu : cpu.get();
      for (int weighted = 0; weighted < 2; ++weighted) {
        std::vector<double> e2e, kern;
        WeightedCounts h;
        // The CPU engine once (its counts are the reference), the CUDA engine 1 + 3 times.
        const int reps = eng ? 4 : 1;
        for (int rep = 0; rep < reps; ++rep) {
          Control c;
          c.threads = 16;
          auto t0 = std::chrono::steady_clock::now();
          if (weighted)
            h = e->rdf_weighted(p, w.data(), nullptr, c);
          else
            h.pairs = e->rdf(p, c);
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (rep == 0 && reps > 1) continue;
          e2e.push_back(ms);
          kern.push_back(eng ? gpu_kernel_ms() : c.stats.kernel_s * 1e3);
        }
        bool equal = true;
        if (weighted && eng == 0) ref = h;
        if (weighted && eng == 1) equal = same_weighted(h, ref);
        if (!weighted && !ref.pairs.empty()) equal = h.pairs == ref.pairs;
        if (!equal) ++g_fail;
        const double km = median3(kern);
        printf("%-6s %-10s %-5.1f %10.2f %10.3f %14.4g %s\n", eng ? "cuda" : "cpu",
               weighted ? "weighted" : "unweighted", rm, median3(e2e), km, allpairs / (km * 1e-3),
               (weighted && eng == 0) ? "-" : (equal ? "yes" : "NO"));
      }
    }
  }
  return g_fail ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (!gpu) printf("# no CUDA engine: %s\n", why.c_str());
  try {
    if (mode == "check") return run_check(gpu);
    if (mode == "bench" && argc > 2) {
      std::vector<double> rm;
      for (int i = 3; i < argc; ++i) rm.push_back(atof(argv[i]));
      if (rm.empty()) rm = {15.0};
      return run_bench(gpu, argv[2], rm);
    }
    if (mode == "weighted") {
      std::vector<double> rm;
      for (int i = 3; i < argc; ++i) rm.push_back(atof(argv[i]));
      if (rm.empty()) rm = {15.0};
      return run_weighted(gpu, argc > 2 ? argv[2] : nullptr, rm);
    }
    if (mode == "counts" && argc > 6) {
      const Set s = atoms(argv[2], size_t(atoll(argv[3])));
      const PointsView v = s.view();
      const double box[3] = {220, 220, 220};
      RdfProblem p = make_rdf(v, nullptr, atoi(argv[5]), atof(argv[4]), box, 3, Precision::Float32);
      auto cpu = make_cpu_engine();
      Control c;
      c.threads = argc > 7 ? atoi(argv[7]) : 2;
      std::vector<double> ms;
      std::vector<uint64_t> h;
      for (int rep = 0; rep < 4; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        h = cpu->rdf(p, c);
        if (rep) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      FILE* f = fopen(argv[6], "w");
      const std::vector<RdfRow> rows = rdf_rows(p, h);
      for (const RdfRow& r : rows) fprintf(f, "%.17g %.17g %llu %.17g\n", r.r_lo, r.r_hi, (unsigned long long)r.pairs, r.g);
      fclose(f);
      printf("cpu engine, %d threads, %zu atoms, r_max %s, %s buckets: median %.1f ms (runs:", c.threads, s.n(), argv[4],
             argv[5], median3(ms));
      for (double m : ms) printf(" %.1f", m);
      printf(")\n");
      return 0;
    }
  } catch (const Error& e) {
    fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  fprintf(stderr, "usage: bench_rdf check | bench ATOMS.csv [R_MAX...] | counts ATOMS.csv N R_MAX NB OUT [THREADS] | weighted [ATOMS.csv [R_MAX...]]\n");
  return 2;
}
