// gpu_xi's pair counts without PostgreSQL: DD, DR and RR of uniform points in the unit box in
// log-spaced bins, on the CPU engine and (when one is usable) the CUDA engine, with the counts of
// both engines compared; the points and counts can be written for test/bench/xi_corrfunc.py.
//   bench_xi N NR R_MAX NB PREC REPS [DUMP]
// N data and NR random points uniform in [0, 1)^3 (fixed seeds), NB bins log-spaced from
// R_MAX / 100 to R_MAX, PREC f32 or f64, no periodic box; each count is timed REPS times (median),
// from the float64 coordinates to the counts (cell lists built on the host included). DUMP: a
// file of float64 values: N, NR, NB, the edges, the data x, y, z, the randoms x, y, z, then the
// CPU engine's DD, DR and RR counts. Prints Markdown rows; exit status 1 when the engines differ.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.h"
#include "core/error.h"
#include "core/rdf.h"

using namespace gpu2bs;

namespace {

struct Set {
  std::vector<double> c[3];
  // The points as an engine view.
  PointsView view() const {
    PointsView v;
    v.dims = 3;
    v.n = c[0].size();
    for (int k = 0; k < 3; ++k) v.coord[k] = c[k].data();
    return v;
  }
};

// n uniform points in [0, 1)^3.
Set uniform(size_t n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Set s;
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < n; ++i) s.c[k].push_back(u(g));
  return s;
}

// One count on one engine: median seconds of `reps` runs and the counts of the last.
double time_count(Engine* e, const PointsView& a, const PointsView* b,
                  const std::vector<double>& edges, Precision prec, int reps,
                  std::vector<uint64_t>* out) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    Control c;
    c.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto t0 = std::chrono::steady_clock::now();
    const RdfProblem p = make_rdf_edges(a, b, edges, nullptr, 0, prec);
    *out = e->rdf(p, c);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Sum of the counts.
uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

}  // namespace

// Runs the benchmark described at the top of the file.
int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: bench_xi N NR R_MAX NB f32|f64 REPS [DUMP]\n");
    return 2;
  }
  const size_t n = size_t(std::atof(argv[1])), nr = size_t(std::atof(argv[2]));
  const double r_max = std::atof(argv[3]);
  const int nb = std::atoi(argv[4]);
  const Precision prec = std::strcmp(argv[5], "f64") == 0 ? Precision::Float64 : Precision::Float32;
  const int reps = std::max(1, std::atoi(argv[6]));
  std::vector<double> edges;
  for (int k = 0; k <= nb; ++k) edges.push_back(r_max / 100 * std::pow(100.0, double(k) / nb));
  edges.back() = r_max;
  const Set d = uniform(n, 1), r = uniform(nr, 2);
  const PointsView vd = d.view(), vr = r.view();
  try {
    std::string why;
    Engine* gpu = cuda_engine(&why);
    auto cpu = make_cpu_engine();
    std::printf("| engine | threads | N | N_R | bins | prec | DD s | DR s | RR s | total s | pairs in bins |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<uint64_t> counts[2][3];
    int fail = 0;
    Engine* engines[2] = {cpu.get(), gpu};
    for (int e = 0; e < 2; ++e) {
      if (!engines[e]) continue;
      const double tdd = time_count(engines[e], vd, nullptr, edges, prec, reps, &counts[e][0]);
      const double tdr = time_count(engines[e], vd, &vr, edges, prec, reps, &counts[e][1]);
      const double trr = time_count(engines[e], vr, nullptr, edges, prec, reps, &counts[e][2]);
      std::printf("| %s | %u | %zu | %zu | %d | %s | %.3f | %.3f | %.3f | %.3f | %llu + %llu + %llu |\n",
                  engines[e]->name().c_str(), std::thread::hardware_concurrency(), n, nr, nb,
                  argv[5], tdd, tdr, trr, tdd + tdr + trr, (unsigned long long)sum(counts[e][0]),
                  (unsigned long long)sum(counts[e][1]), (unsigned long long)sum(counts[e][2]));
      if (e == 1)
        for (int k = 0; k < 3; ++k)
          if (counts[1][k] != counts[0][k]) {
            std::printf("MISMATCH: %s count differs between the engines\n", k == 0 ? "DD" : k == 1 ? "DR" : "RR");
            fail = 1;
          }
    }
    if (gpu && !fail) std::printf("\nCUDA counts equal the CPU engine's (DD, DR, RR, every bin).\n");
    if (!gpu) std::printf("\nno CUDA engine: %s\n", why.c_str());
    if (argc > 7) {
      FILE* f = std::fopen(argv[7], "wb");
      if (!f) return 2;
      std::vector<double> head = {double(n), double(nr), double(nb)};
      head.insert(head.end(), edges.begin(), edges.end());
      std::fwrite(head.data(), 8, head.size(), f);
      for (const Set* s : {&d, &r})
        for (int k = 0; k < 3; ++k) std::fwrite(s->c[k].data(), 8, s->c[k].size(), f);
      for (int k = 0; k < 3; ++k)
        for (uint64_t c : counts[0][k]) {
          const double v = double(c);
          std::fwrite(&v, 8, 1, f);
        }
      std::fclose(f);
    }
    return fail;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
