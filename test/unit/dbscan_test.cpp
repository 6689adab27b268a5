// DBSCAN (src/core/dbscan): the CPU engine's clustering against a brute-force float64 DBSCAN
// with the same rules (core: >= minpoints points within eps, itself included; clusters:
// components of core points; border: nearest core point, ties by key then index; numbering by
// the smallest (key, index) member), on lattices with ties and duplicates and on random blobs,
// through both neighbour-count paths: pair pages, and an engine that reduces Group itself; and
// the CPU engine's own grid passes against the pair-streaming path in 2-D to 6-D.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "core/dbscan.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/pair_expr.h"

using namespace gpu2bs;

namespace {

struct Pts {
  std::vector<double> x, y;
  std::vector<int64_t> keys;
  // The points as the engine reads them.
  PointsView view() const {
    PointsView v;
    v.dims = 2;
    v.n = x.size();
    v.coord[0] = x.data();
    v.coord[1] = y.data();
    return v;
  }
};

// Half-integer lattice points (exact squared distances, many ties and duplicates), keys shuffled.
Pts lattice(size_t n, int side, unsigned seed) {
  std::mt19937_64 rng(seed);
  Pts p;
  for (size_t k = 0; k < n; ++k) {
    p.x.push_back(double(rng() % side) / 2);
    p.y.push_back(double(rng() % side) / 2);
    p.keys.push_back(int64_t(k) * 3 + 7);
  }
  std::shuffle(p.keys.begin(), p.keys.end(), rng);
  return p;
}

// Gaussian blobs and uniform noise in the unit square.
Pts blobs(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 0.01);
  std::uniform_real_distribution<double> u(0, 1);
  Pts p;
  for (size_t k = 0; k < n; ++k) {
    if (k % 10 == 9) {
      p.x.push_back(u(rng));
      p.y.push_back(u(rng));
    } else {
      p.x.push_back(0.1 + 0.2 * double(k % 5) + g(rng));
      p.y.push_back(0.2 + 0.3 * double(k % 3) + g(rng));
    }
    p.keys.push_back(int64_t(n - k));
  }
  return p;
}

// Brute-force DBSCAN in float64 (d^2 <= eps^2) with the documented rules.
std::vector<int32_t> reference(const Pts& p, double eps, int64_t minpoints) {
  const size_t n = p.x.size();
  const double e2 = eps * eps;
  auto d2 = [&](size_t a, size_t b) {
    const double dx = p.x[a] - p.x[b], dy = p.y[a] - p.y[b];
    return dx * dx + dy * dy;
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
          (d2(a, b) == d2(a, best) && (p.keys[b] < p.keys[best] || (p.keys[b] == p.keys[best] && b < best))))
        best = b;
    }
    if (best != SIZE_MAX) comp[a] = comp[best];
  }
  std::vector<std::pair<int64_t, size_t>> first(ncomp, {INT64_MAX, SIZE_MAX});
  for (size_t a = 0; a < n; ++a)
    if (comp[a] != SIZE_MAX) first[comp[a]] = std::min(first[comp[a]], std::make_pair(p.keys[a], a));
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

// The CPU engine, also computing PairReduce::Group itself (as the GPU engine does: per point of
// the id1 or id2 side, keys deciding the side in a self-join), so dbscan's Group path runs.
class GroupingEngine final : public Engine {
 public:
  GroupingEngine() : cpu_(make_cpu_engine()) {}
  std::string name() const override { return "cpu+group"; }
  std::vector<uint64_t> sdh(const SdhProblem& p, Control& c) override { return cpu_->sdh(p, c); }
  uint64_t pair_count(const PairCountProblem& p, Control& c) override { return cpu_->pair_count(p, c); }
  void pairwise(const PairwiseProblem& p, PairSink& s, Control& c) override { cpu_->pairwise(p, s, c); }
  PairExprResult pair_expr(const PairExprProblem& p, PairSink* s, Control& c) override { return cpu_->pair_expr(p, s, c); }
  bool reduces_pairs(PairReduce::Kind k) const override { return k == PairReduce::Group; }
  // A Group reduction counted from the CPU engine's pairs; any other join forwarded.
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) override {
    if (!p.reduce) return cpu_->simjoin(p, sink, ctl);
    PairReduce& r = *p.reduce;
    ++group_runs;
    struct Counter final : PairSink {
      PairReduce* r;
      void consume(const PairRecord* pairs, size_t n) override {
        for (size_t k = 0; k < n; ++k) {
          const bool i_small = r->keys_a[pairs[k].i] <= r->keys_a[pairs[k].j];
          ++r->group_count[(r->side == 0) == i_small ? pairs[k].i : pairs[k].j];
        }
      }
    } counter;
    counter.r = &r;
    r.group_count.assign(p.a.n, 0);
    r.group_min.assign(p.a.n, 0);
    r.group_max.assign(p.a.n, 0);
    SimjoinProblem q = p;
    q.reduce = nullptr;
    cpu_->simjoin(q, counter, ctl);
    r.done = true;
  }
  int group_runs = 0;

 private:
  std::unique_ptr<Engine> cpu_;
};

// The CPU engine's pairs handed over in one call per join (as the GPU engine hands over long runs
// of pages), so the sinks split them among workers; Group reductions as GroupingEngine.
class BatchEngine final : public Engine {
 public:
  BatchEngine() : cpu_(make_cpu_engine()) {}
  std::string name() const override { return "cpu+batch"; }
  std::vector<uint64_t> sdh(const SdhProblem& p, Control& c) override { return cpu_->sdh(p, c); }
  uint64_t pair_count(const PairCountProblem& p, Control& c) override { return cpu_->pair_count(p, c); }
  void pairwise(const PairwiseProblem& p, PairSink& s, Control& c) override { cpu_->pairwise(p, s, c); }
  PairExprResult pair_expr(const PairExprProblem& p, PairSink* s, Control& c) override { return cpu_->pair_expr(p, s, c); }
  bool reduces_pairs(PairReduce::Kind k) const override { return k == PairReduce::Group; }
  // The CPU engine's pairs, reversed, in one call; a Group reduction counted from them.
  void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) override {
    struct All final : PairSink {
      std::vector<PairRecord> v;
      void consume(const PairRecord* pairs, size_t n) override { v.insert(v.end(), pairs, pairs + n); }
    } all;
    SimjoinProblem q = p;
    q.reduce = nullptr;
    cpu_->simjoin(q, all, ctl);
    largest_call = std::max(largest_call, all.v.size());
    if (!p.reduce) {
      std::reverse(all.v.begin(), all.v.end());  // another order than the pages came in
      sink.consume(all.v.data(), all.v.size());
      return;
    }
    PairReduce& r = *p.reduce;
    r.group_count.assign(p.a.n, 0);
    r.group_min.assign(p.a.n, 0);
    r.group_max.assign(p.a.n, 0);
    for (const PairRecord& x : all.v) {
      const bool i_small = r.keys_a[x.i] <= r.keys_a[x.j];
      ++r.group_count[(r.side == 0) == i_small ? x.i : x.j];
    }
    r.done = true;
  }
  size_t largest_call = 0;

 private:
  std::unique_ptr<Engine> cpu_;
};

// dbscan() on `eng` against reference() for one eps and minpoints: every point's cluster.
void check(Engine& eng, const Pts& p, double eps, int64_t minpoints, const char* what, int threads = 2) {
  Control ctl;
  ctl.threads = threads;
  SimjoinProblem prob = make_simjoin(p.view(), nullptr, eps, Precision::Float64, 0);
  const DbscanResult got = dbscan(eng, prob, p.keys.data(), minpoints, ctl);
  const std::vector<int32_t> want = reference(p, eps, minpoints);
  size_t differ = 0;
  for (size_t a = 0; a < want.size(); ++a) differ += got.cluster[a] != want[a];
  EXPECT_EQ(differ, 0u) << what << " eps " << eps << " minpoints " << minpoints << " on " << eng.name();
  uint64_t noise = 0;
  for (int32_t c : want) noise += c < 0;
  EXPECT_EQ(got.noise_points, noise);
  EXPECT_EQ(got.core_points + got.border_points + got.noise_points, uint64_t(p.x.size()));
}

}  // namespace

TEST(Dbscan, LatticeAgainstBruteForce) {
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  GroupingEngine grouping;
  const Pts p = lattice(900, 50, 11);
  for (Engine* eng : {cpu.get(), static_cast<Engine*>(&grouping)})
    for (auto [eps, mp] : std::vector<std::pair<double, int64_t>>{{0.5, 2}, {1.0, 3}, {1.0, 6}, {1.5, 5}, {2.0, 12}, {0.5, 1}, {100.0, 900}, {100.0, 901}})
      check(*eng, p, eps, mp, "lattice");
  EXPECT_GT(grouping.group_runs, 0);
}

TEST(Dbscan, BlobsAgainstBruteForce) {
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  GroupingEngine grouping;
  const Pts p = blobs(1500, 5);
  for (Engine* eng : {cpu.get(), static_cast<Engine*>(&grouping)})
    for (auto [eps, mp] : std::vector<std::pair<double, int64_t>>{{0.005, 4}, {0.01, 10}, {0.02, 30}, {0.003, 2}})
      check(*eng, p, eps, mp, "blobs");
}

TEST(Dbscan, LongRunsOnSeveralWorkers) {
  // Calls of more than 65,536 pairs: counts and union-find shared by 4 workers.
  BatchEngine batch;
  const Pts b = blobs(3000, 9);
  for (auto [eps, mp] : std::vector<std::pair<double, int64_t>>{{0.01, 10}, {0.02, 40}, {0.01, 1}})
    check(batch, b, eps, mp, "blobs, one call per join", 4);
  const Pts l = lattice(1200, 30, 3);
  for (auto [eps, mp] : std::vector<std::pair<double, int64_t>>{{2.0, 20}, {1.5, 12}})
    check(batch, l, eps, mp, "lattice, one call per join", 4);
  EXPECT_GT(batch.largest_call, size_t(65536));
}

TEST(Dbscan, EmptyAndErrors) {
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  Control ctl;
  Pts none;
  SimjoinProblem prob = make_simjoin(none.view(), nullptr, 1.0, Precision::Float32, 0);
  EXPECT_EQ(dbscan(*cpu, prob, nullptr, 3, ctl).cluster.size(), 0u);
  const Pts p = lattice(10, 4, 1);
  prob = make_simjoin(p.view(), nullptr, 1.0, Precision::Float32, 0);
  try {
    dbscan(*cpu, prob, p.keys.data(), 0, ctl);
    FAIL() << "minpoints 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidParameter);
  }
}

TEST(Dbscan, GridPassesEqualStreamedPairs) {
  // The CPU engine's own passes over the grid (dbscan_components) against the pair-streaming
  // path (GroupingEngine, which does not run them), 2-D to 6-D, both precisions, duplicates,
  // repeated keys and eps = infinity: every core flag and cluster equal.
  std::unique_ptr<Engine> cpu = make_cpu_engine();
  GroupingEngine streamed;
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(0, 1);
  for (int dims = 2; dims <= 6; ++dims)
    for (Precision prec : {Precision::Float32, Precision::Float64}) {
      const size_t n = 2500;
      std::vector<std::vector<double>> c(static_cast<size_t>(dims), std::vector<double>(n, 0.0));
      for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < dims; ++k)  // every fifth point repeats the one before
          c[size_t(k)][i] = (i % 5 == 4) ? c[size_t(k)][i - 1] : u(rng);
      std::vector<int64_t> keys(n);
      for (size_t i = 0; i < n; ++i) keys[i] = int64_t(i % 1700);  // some keys repeat
      PointsView v;
      v.dims = dims;
      v.n = n;
      for (int k = 0; k < dims; ++k) v.coord[k] = c[size_t(k)].data();
      const double eps = 0.6 * std::pow(8.0 / double(n), 1.0 / dims);
      for (auto [e, mp] : std::vector<std::pair<double, int64_t>>{{eps, 3}, {eps, 8}, {eps / 3, 2}, {HUGE_VAL, 2500}, {eps, 1}}) {
        Control ctl;
        ctl.threads = 3;
        SimjoinProblem prob = make_simjoin(v, nullptr, e, prec, 0);
        const DbscanResult g = dbscan(*cpu, prob, keys.data(), mp, ctl);
        const DbscanResult s = dbscan(streamed, prob, keys.data(), mp, ctl);
        EXPECT_TRUE(g.cluster == s.cluster && g.core == s.core)
            << "d=" << dims << " eps=" << e << " minpoints=" << mp << " f32=" << (prec == Precision::Float32);
        EXPECT_EQ(g.clusters, s.clusters);
        EXPECT_EQ(g.pairs_seen, 0u);
        if (mp == 1) {
          EXPECT_EQ(g.core_points, uint64_t(n));
        }
        if (std::isinf(e)) {
          EXPECT_EQ(g.clusters, 1u);
        }
      }
    }
}
