// DBSCAN on the CUDA engine (kernels/join/dbscan.cu: counts, core flags, union-find and border
// points on the device): core flags, cluster numbers and counts equal to the CPU engine's on
// random, blob, all-noise, one-cluster, duplicate and lattice data, both precisions, 2-D to 6-D,
// sets larger than one launch, the host-built grid; on lattices (exact squared distances) also
// equal to a brute-force float64 DBSCAN with the documented rules.
#include "core/dbscan.h"
#include "fixtures.h"

using namespace gpu2bs;
using namespace gpu2bs::gputest;

namespace {

// Keys 3k + 7 shuffled (or, with `repeat`, every key shared by two points).
std::vector<int64_t> keys_for(size_t n, uint64_t seed, bool repeat = false) {
  std::vector<int64_t> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = int64_t(repeat ? i / 2 : i) * 3 + 7;
  std::mt19937_64 rng(seed);
  std::shuffle(k.begin(), k.end(), rng);
  return k;
}

// DBSCAN of `pts` on engine `e`.
DbscanResult run_dbscan(Engine* e, const ref::Points& pts, const std::vector<int64_t>& keys,
                        double eps, int64_t minpoints, Precision prec) {
  auto p = make_simjoin(pts.view(), nullptr, eps, prec, 0);
  Ctl ctl;
  return dbscan(*e, p, keys.data(), minpoints, ctl);
}

// Brute-force DBSCAN in float64 with the documented rules (exact where squared distances are).
std::vector<int32_t> reference(const ref::Points& pts, const std::vector<int64_t>& keys,
                               double eps, int64_t minpoints) {
  const size_t n = pts.n();
  const double e2 = eps * eps;
  auto d2 = [&](size_t a, size_t b) {
    double s = 0;
    for (int k = 0; k < pts.dims; ++k) {
      const double d = pts.c[size_t(k)][a] - pts.c[size_t(k)][b];
      s += d * d;
    }
    return s;
  };
  std::vector<char> core(n);
  for (size_t a = 0; a < n; ++a) {
    int64_t c = 0;
    for (size_t b = 0; b < n; ++b) c += d2(a, b) <= e2;
    core[a] = c >= minpoints;
  }
  std::vector<size_t> comp(n, SIZE_MAX);
  size_t ncomp = 0;
  for (size_t s = 0; s < n; ++s) {
    if (!core[s] || comp[s] != SIZE_MAX) continue;
    std::vector<size_t> stack{s};
    comp[s] = ncomp;
    while (!stack.empty()) {
      const size_t a = stack.back();
      stack.pop_back();
      for (size_t b = 0; b < n; ++b)
        if (core[b] && comp[b] == SIZE_MAX && d2(a, b) <= e2) {
          comp[b] = ncomp;
          stack.push_back(b);
        }
    }
    ++ncomp;
  }
  for (size_t a = 0; a < n; ++a) {
    if (core[a]) continue;
    size_t best = SIZE_MAX;
    for (size_t b = 0; b < n; ++b) {
      if (!core[b] || d2(a, b) > e2) continue;
      if (best == SIZE_MAX || d2(a, b) < d2(a, best) ||
          (d2(a, b) == d2(a, best) && (keys[b] < keys[best] || (keys[b] == keys[best] && b < best))))
        best = b;
    }
    if (best != SIZE_MAX) comp[a] = comp[best];
  }
  std::vector<std::pair<int64_t, size_t>> first(ncomp, {INT64_MAX, SIZE_MAX});
  for (size_t a = 0; a < n; ++a)
    if (comp[a] != SIZE_MAX) first[comp[a]] = std::min(first[comp[a]], std::make_pair(keys[a], a));
  std::vector<size_t> order(ncomp);
  for (size_t c = 0; c < ncomp; ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  std::vector<int32_t> num(ncomp);
  for (size_t r = 0; r < ncomp; ++r) num[order[r]] = int32_t(r);
  std::vector<int32_t> out(n, -1);
  for (size_t a = 0; a < n; ++a)
    if (comp[a] != SIZE_MAX) out[a] = num[comp[a]];
  return out;
}

// The first point whose label or core flag differs, for messages.
std::string dbscan_diff(const DbscanResult& g, const DbscanResult& c) {
  for (size_t i = 0; i < std::min(g.cluster.size(), c.cluster.size()); ++i)
    if (g.cluster[i] != c.cluster[i] || g.core[i] != c.core[i])
      return "point " + std::to_string(i) + ": gpu cluster " + std::to_string(g.cluster[i]) +
             " core " + std::to_string(g.core[i]) + ", cpu cluster " + std::to_string(c.cluster[i]) +
             " core " + std::to_string(c.core[i]);
  return "sizes " + std::to_string(g.cluster.size()) + " vs " + std::to_string(c.cluster.size());
}

// GPU and CPU DBSCAN of `pts` agree point for point; returns the GPU's result.
DbscanResult dbscan_case(const ref::Points& pts, const std::vector<int64_t>& keys, double eps,
                         int64_t minpoints, Precision prec, const std::string& what) {
  SCOPED_TRACE(what);
  const DbscanResult g = run_dbscan(gpu(), pts, keys, eps, minpoints, prec);
  const DbscanResult c = run_dbscan(cpu(), pts, keys, eps, minpoints, prec);
  EXPECT_EQ(g.pairs_seen, 0u) << "the GPU path hands no pair to the host";
  EXPECT_TRUE(g.cluster == c.cluster && g.core == c.core) << dbscan_diff(g, c);
  EXPECT_EQ(g.clusters, c.clusters);
  EXPECT_EQ(g.core_points, c.core_points);
  EXPECT_EQ(g.border_points, c.border_points);
  EXPECT_EQ(g.noise_points, c.noise_points);
  EXPECT_EQ(g.core_points + g.border_points + g.noise_points, pts.n());
  return g;
}

// Gaussian blobs (sigma `sigma`, `nblobs` centres in [0.05, 0.95]^dims) and 10 % uniform noise.
ref::Points blobs(size_t n, int dims, size_t nblobs, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> ctr(nblobs * size_t(dims));
  for (auto& v : ctr) v = 0.05 + 0.9 * u(rng);
  ref::Points p;
  p.dims = dims;
  p.c.assign(size_t(dims), std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    const bool noise = i % 10 == 9;
    const size_t b = rng() % nblobs;
    for (int k = 0; k < dims; ++k)
      p.c[size_t(k)][i] = noise ? u(rng) : ctr[b * size_t(dims) + size_t(k)] + sigma * g(rng);
  }
  return p;
}

TEST(DbscanGpu, RandomAndBlobs) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int dims : {2, 3, 4, 6}) {
      const size_t n = dims <= 3 ? 20000 : 6000;
      auto u = ref::uniform(n, dims, 300 + dims);
      const double eps = eps_for(n, dims, 6);
      for (int64_t mp : {1, 2, 5, 8})
        dbscan_case(u, keys_for(n, 1), eps, mp, prec,
                     std::string("uniform d=") + std::to_string(dims) + " " + pname(prec) +
                         " minpoints=" + std::to_string(mp));
      auto b = blobs(n, dims, 40, 0.01, 310 + dims);
      for (int64_t mp : {3, 10, 25})
        dbscan_case(b, keys_for(n, 2), dims == 2 ? 0.006 : 0.03, mp, prec,
                    std::string("blobs d=") + std::to_string(dims) + " " + pname(prec) +
                        " minpoints=" + std::to_string(mp));
    }
}

TEST(DbscanGpu, AllNoiseOneClusterAndLimits) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto u = ref::uniform(5000, 2, 320);
    auto k = keys_for(5000, 3);
    auto g = dbscan_case(u, k, 1e-5, 3, prec, "all noise (tiny eps)");
    EXPECT_EQ(g.noise_points, 5000u);
    g = dbscan_case(u, k, 0.05, 5001, prec, "all noise (minpoints > n)");
    EXPECT_EQ(g.noise_points, 5000u);
    g = dbscan_case(u, k, 2.0, 5, prec, "one cluster (eps beyond the box)");
    EXPECT_EQ(g.clusters, 1u);
    EXPECT_EQ(g.core_points, 5000u);
    g = dbscan_case(ref::uniform(1500, 3, 321), keys_for(1500, 4), INFINITY, 1500, prec, "eps=inf");
    EXPECT_EQ(g.clusters, 1u);
    g = dbscan_case(u, k, 1e-5, 1, prec, "minpoints=1: every point its own cluster");
    EXPECT_EQ(g.clusters, 5000u);
    dbscan_case(ref::uniform(1, 2, 322), {5}, 0.1, 1, prec, "one point");
    dbscan_case(ref::uniform(1, 2, 322), {5}, 0.1, 2, prec, "one point, noise");
    dbscan_case(ref::uniform(0, 2, 322), {}, 0.1, 2, prec, "no points");
  }
}

TEST(DbscanGpu, DuplicatesAndRepeatedKeys) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64}) {
    auto g = dbscan_case(same_point(3000, 2), keys_for(3000, 5), 0.01, 10, prec, "all equal");
    EXPECT_EQ(g.clusters, 1u);
    dbscan_case(few_distinct(4000, 2, 6, 50), keys_for(4000, 6), 0.02, 40, prec, "50 distinct points");
    dbscan_case(few_distinct(4000, 3, 7, 300), keys_for(4000, 7, true), 0.05, 12, prec,
                "300 distinct points, repeated keys");
    dbscan_case(blobs(8000, 2, 20, 0.004, 8), keys_for(8000, 9, true), 0.004, 6, prec,
                "blobs, repeated keys");
  }
}

TEST(DbscanGpu, LatticeAgainstReference) {
  REQUIRE_GPU();
  // Half-integer lattices: squared distances exact in both precisions, so every tie (equal
  // distances to several core points) is decided by the keys, as in the float64 reference.
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int dims : {2, 3}) {
      ref::Points p = lattice(3000, dims, 330 + dims, 40);
      for (auto& col : p.c)
        for (auto& v : col) v /= 2;
      auto k = keys_for(3000, 10 + dims, dims == 3);
      for (double eps : {0.5, 1.0, 1.5})
        for (int64_t mp : {2, 4, 7}) {
          const std::string what = std::string("lattice d=") + std::to_string(dims) + " " +
                                   pname(prec) + " eps=" + std::to_string(eps) +
                                   " minpoints=" + std::to_string(mp);
          auto g = dbscan_case(p, k, eps, mp, prec, what);
          EXPECT_TRUE(g.cluster == reference(p, k, eps, mp)) << what << ": reference differs";
        }
    }
}

TEST(DbscanGpu, LargerThanOneLaunchAndHostGrid) {
  REQUIRE_GPU();
  // More points than one launch covers, blobs as in the benchmark.
  const size_t n = cuda_tuning::kDbscanLaunchPoints * 2 + 12345;
  auto b = blobs(n, 2, n / 500, 0.002, 340);
  auto g = dbscan_case(b, keys_for(n, 11), 0.003, 10, Precision::Float32, "blobs over 2 launches");
  EXPECT_GT(g.clusters, 10u);
  EXPECT_GT(g.border_points, 0u);
  EXPECT_GT(g.noise_points, 0u);
  // The grid built on the host (keys wider than 64 bits, forced here).
  forced().host_grid = true;
  auto u = blobs(20000, 3, 30, 0.01, 341);
  dbscan_case(u, keys_for(20000, 12), 0.02, 8, Precision::Float64, "host grid");
  forced().host_grid = false;
}

}  // namespace
