// Bin-by-bin account of the angular-separation histogram of the stars against TreeCorr
// (test/bench/angular_treecorr.py, metric Arc, bin_slop 0): every pair once, on all cores.
//
//   angular_edges STARS.csv.gz NBINS GPU_HIST.txt TREECORR_HIST.txt [THREADS]
//   g++ -O2 -std=c++17 -fopenmp -ffp-contract=off test/bench/angular_edges.cpp -o angular_edges
//
// The stars are read and normalized as bench_expr's read_stars does (float64 unit vectors, then
// rounded to float32 as the float32 call uploads them). Per pair:
//   theta64  acos of the float64 dot product of the float64 unit vectors (the float64
//            reference; its error is below 1e-13 rad away from theta = 0, where no edge lies);
//   k64      width_bucket of theta64 over [0, pi) as PostgreSQL 15 computes it (g2_bucket);
//   k32      the same of the float32 value the GPU histogram buckets: the dot product of the
//            float32 coordinates, (x x' + y y') + z z' in float32 without fused operations,
//            clamped to [-1, 1], glibc's acosf (CUDA's acosf is within 2 ulp of it).
// A pair whose k32 differs from k64 crosses the edges between them; each crossing is checked
// against the float32 rounding bound of theta at that pair,
//   delta = 8 u / sin(theta64) + 4 u theta64 + 1e-12,  u = 2^-24
// (coordinates rounded, three products and two sums: |g32 - g64| <= 6 u + O(u^2) since
// |x x'| + |y y'| + |z z'| <= 1; d theta = d g / sin(theta); acosf within 2 ulp, 4 u theta
// with margin), and counted as outside it where |theta64 - edge| > delta.
// Output: the totals, the three histograms' differences (GPU - host float32, float64 -
// TreeCorr, GPU - TreeCorr), and per bin where the GPU and TreeCorr differ: both counts, the
// float64 count, the pairs crossing the bin's lower and upper edges in each direction, the
// pairs within delta of each edge, and the largest |theta64 - edge| / delta of a crossing pair.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// Unit vectors of the rows of a gzip'd CSV (header, then id,x,y,z), as bench_expr reads them.
void read_stars(const char* path, std::vector<double>* x, std::vector<double>* y, std::vector<double>* z) {
  const std::string cmd = std::string("gzip -dc '") + path + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return;
  char line[512];
  bool header = true;
  while (fgets(line, sizeof line, f)) {
    if (header) {
      header = false;
      continue;
    }
    long long id;
    double a, b, c;
    if (sscanf(line, "%lld,%lf,%lf,%lf", &id, &a, &b, &c) != 4) continue;
    const double n = std::sqrt(a * a + b * b + c * c);
    if (!(n > 0)) continue;
    x->push_back(a / n);
    y->push_back(b / n);
    z->push_back(c / n);
  }
  pclose(f);
}

// One count per line (bench_expr G2_HIST_OUT, angular_treecorr.py TC_HIST_OUT).
std::vector<double> read_hist(const char* path) {
  std::vector<double> h;
  FILE* f = fopen(path, "r");
  if (!f) return h;
  double v;
  while (fscanf(f, "%lf", &v) == 1) h.push_back(v);
  fclose(f);
  return h;
}

// The bucket (0-based; -1 below, nb at or above the top) of v over [0, pi) in nb buckets, as
// PostgreSQL 15's width_bucket_float8 computes it (kernels/expr/kernel_text.h, g2_bucket).
int bucket(double v, int nb) {
  const double lo = 0, hi = M_PI, span = hi - lo;
  if (v < lo) return -1;
  if (v >= hi) return nb;
  const double q = double(nb) * (v - lo) / span + 1.0;
  const int k = int(q) - 1;
  return k < nb ? k : nb;
}

// The float32 rounding bound of theta at a pair whose float64 separation is th (see above).
inline double delta_of(double th) {
  const double u = std::ldexp(1.0, -24);
  return 8 * u / std::sin(std::fmax(th, 1e-300)) + 4 * u * th + 1e-12;
}

// Per-thread tallies.
struct Tally {
  std::vector<uint64_t> h32, h64, up, down, near;  // up[k]/down[k]: crossings of edge k
  std::vector<double> worst;                       // largest |theta - edge| / delta of a crossing
  uint64_t outside = 0, multi = 0, pairs = 0;
  explicit Tally(int nb)
      : h32(nb + 2), h64(nb + 2), up(nb + 1), down(nb + 1), near(nb + 1), worst(nb + 1) {}
};

}  // namespace

// Reads the stars and both histograms, recounts every pair on all cores and prints the account.
int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: angular_edges STARS.csv.gz NBINS GPU_HIST.txt TREECORR_HIST.txt [THREADS]\n");
    return 2;
  }
  const int nb = atoi(argv[2]);
  if (argc > 5) omp_set_num_threads(atoi(argv[5]));
  std::vector<double> x, y, z;
  read_stars(argv[1], &x, &y, &z);
  const long long n = (long long)x.size();
  std::vector<float> xf(n), yf(n), zf(n);
  for (long long i = 0; i < n; ++i) {
    xf[i] = float(x[i]);
    yf[i] = float(y[i]);
    zf[i] = float(z[i]);
  }
  const std::vector<double> gpu = read_hist(argv[3]), tc = read_hist(argv[4]);
  if ((int)gpu.size() != nb || (int)tc.size() != nb) {
    fprintf(stderr, "histograms of %zu and %zu bins, expected %d\n", gpu.size(), tc.size(), nb);
    return 1;
  }
  const double u = std::ldexp(1.0, -24), w = M_PI / nb;
  const double t0 = omp_get_wtime();
  std::vector<Tally> parts;
  const int nt = omp_get_max_threads();
  for (int t = 0; t < nt; ++t) parts.emplace_back(nb);
#pragma omp parallel
  {
    Tally& T = parts[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 64)
    for (long long i = 0; i < n; ++i) {
      for (long long j = i + 1; j < n; ++j) {
        const double g64 = x[i] * x[j] + y[i] * y[j] + z[i] * z[j];
        const double th = std::acos(std::fmin(1.0, std::fmax(-1.0, g64)));
        float g32 = xf[i] * xf[j];
        g32 = g32 + yf[i] * yf[j];
        g32 = g32 + zf[i] * zf[j];
        g32 = g32 > 1.f ? 1.f : (g32 < -1.f ? -1.f : g32);
        const float th32 = acosf(g32);
        const int k64 = bucket(th, nb), k32 = bucket(double(th32), nb);
        ++T.h64[k64 + 1];
        ++T.h32[k32 + 1];
        ++T.pairs;
        // Pairs within delta of the nearest edge (the edges between buckets 0 .. nb); delta
        // only where the pair may be that near (sin(theta) >= (2 / pi) min(theta, pi - theta)).
        const long long ke = std::llround(th / w);
        const double dist = std::fabs(th - double(ke) * w);
        const double dmax = 4 * M_PI * u / std::fmax(std::fmin(th, M_PI - th), 1e-300) + 4 * M_PI * u + 1e-12;
        if (ke >= 1 && ke < nb && dist <= dmax && dist <= delta_of(th)) ++T.near[ke];
        if (k32 != k64) {
          const double delta = delta_of(th);
          if (k32 - k64 > 1 || k64 - k32 > 1) ++T.multi;
          const int lo = k32 < k64 ? k32 : k64, hi = k32 < k64 ? k64 : k32;
          for (int e = lo + 1; e <= hi; ++e) {  // edge e separates buckets e - 1 and e
            if (e < 1 || e > nb - 1) continue;
            if (k32 > k64)
              ++T.up[e];
            else
              ++T.down[e];
            const double r = std::fabs(th - e * w) / delta;
            if (r > T.worst[e]) T.worst[e] = r;
            if (r > 1) ++T.outside;
          }
        }
      }
    }
  }
  Tally S(nb);
  for (const Tally& T : parts) {
    for (int k = 0; k < nb + 2; ++k) {
      S.h32[k] += T.h32[k];
      S.h64[k] += T.h64[k];
    }
    for (int k = 0; k <= nb; ++k) {
      S.up[k] += T.up[k];
      S.down[k] += T.down[k];
      S.near[k] += T.near[k];
      if (T.worst[k] > S.worst[k]) S.worst[k] = T.worst[k];
    }
    S.outside += T.outside;
    S.multi += T.multi;
    S.pairs += T.pairs;
  }
  const double secs = omp_get_wtime() - t0;
  printf("angular_edges: %lld stars, %llu pairs, %d bins over [0, pi), %d threads, %.1f s\n", n,
         (unsigned long long)S.pairs, nb, nt, secs);
  printf("crossings outside delta: %llu; pairs moved by more than one bin: %llu\n",
         (unsigned long long)S.outside, (unsigned long long)S.multi);
  int d_gh = 0, d_6t = 0, d_gt = 0, d_g6 = 0;
  double s_gh = 0, s_6t = 0, s_gt = 0, s_g6 = 0;
  for (int k = 0; k < nb; ++k) {
    const double h32 = double(S.h32[k + 1]), h64 = double(S.h64[k + 1]);
    d_gh += gpu[k] != h32;
    s_gh += std::fabs(gpu[k] - h32);
    d_6t += h64 != tc[k];
    s_6t += std::fabs(h64 - tc[k]);
    d_gt += gpu[k] != tc[k];
    s_gt += std::fabs(gpu[k] - tc[k]);
    d_g6 += gpu[k] != h64;
    s_g6 += std::fabs(gpu[k] - h64);
  }
  printf("bins differing: GPU vs host float32 %d (sum |diff| %.0f); float64 vs TreeCorr %d (%.0f); "
         "GPU vs float64 %d (%.0f); GPU vs TreeCorr %d (%.0f)\n",
         d_gh, s_gh, d_6t, s_6t, d_g6, s_g6, d_gt, s_gt);
  // Each bin's GPU - float64 difference is the crossings of its two edges: in from below
  // (up at its lower edge), in from above (down at its upper edge), out likewise.
  int explained = 0, unexplained = 0;
  printf("%5s %10s %10s %10s %6s | %6s %6s %6s %6s | %7s %7s | %6s %6s | %s\n", "bin", "gpu", "treecorr",
         "float64", "g-tc", "lo_up", "lo_dn", "hi_up", "hi_dn", "near_lo", "near_hi", "wlo", "whi", "account");
  for (int k = 0; k < nb; ++k) {
    if (gpu[k] == tc[k]) continue;
    const long long lo_up = k >= 1 ? (long long)S.up[k] : 0, lo_dn = k >= 1 ? (long long)S.down[k] : 0;
    const long long hi_up = k + 1 <= nb - 1 ? (long long)S.up[k + 1] : 0,
                    hi_dn = k + 1 <= nb - 1 ? (long long)S.down[k + 1] : 0;
    const double h64 = double(S.h64[k + 1]);
    // float32 host = float64 + in - out
    const double host = h64 + lo_up + hi_dn - lo_dn - hi_up;
    const bool ok = host == double(S.h32[k + 1]) && gpu[k] == host && h64 == tc[k];
    ok ? ++explained : ++unexplained;
    printf("%5d %10.0f %10.0f %10.0f %6.0f | %6lld %6lld %6lld %6lld | %7llu %7llu | %6.3f %6.3f | %s\n", k, gpu[k],
           tc[k], h64, gpu[k] - tc[k], lo_up, lo_dn, hi_up, hi_dn,
           (unsigned long long)(k >= 1 ? S.near[k] : 0), (unsigned long long)(k + 1 <= nb - 1 ? S.near[k + 1] : 0),
           k >= 1 ? S.worst[k] : 0.0, k + 1 <= nb - 1 ? S.worst[k + 1] : 0.0,
           ok ? "crossings" : (gpu[k] != S.h32[k + 1] ? "GPU != host float32" : (h64 != tc[k] ? "float64 != TreeCorr" : "?")));
  }
  printf("differing bins: %d, accounted for by float32 crossings within delta of an edge (GPU = host "
         "float32, float64 = TreeCorr): %d, otherwise: %d\n",
         explained + unexplained, explained, unexplained);
  return 0;
}
