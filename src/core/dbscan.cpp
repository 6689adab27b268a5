// DBSCAN over the similarity self-join (dbscan.h): neighbour counts, core flags, union-find over
// the core-core pairs streamed from the engine, nearest core point of each border point.
#include "dbscan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "error.h"

namespace gpu2bs {

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Counts, for every point, the pairs it belongs to (both ends of each pair).
class DegreeSink final : public PairSink {
 public:
  explicit DegreeSink(std::vector<uint32_t>& deg) : deg_(deg) {}
  void consume(const PairRecord* pairs, size_t n) override {
    uint32_t* d = deg_.data();
    for (size_t p = 0; p < n; ++p) {
      ++d[pairs[p].i];
      ++d[pairs[p].j];
    }
    seen += n;
  }
  uint64_t seen = 0;

 private:
  std::vector<uint32_t>& deg_;
};

// Drops the pages an engine hands over while it computes a reduction itself (none are expected).
class NullSink final : public PairSink {
 public:
  void consume(const PairRecord*, size_t) override {}
};

// Union-find over the core points (union by rank, path halving) joined by core-core pairs, and
// for each point that is not core the nearest core point seen so far (dist, then key, then
// index). The parent array also marks the points that are not core (kNone), so a pair costs one
// read per end before any find.
class ClusterSink final : public PairSink {
 public:
  ClusterSink(const std::vector<uint8_t>& core, const int64_t* keys, size_t n)
      : keys_(keys), parent_(n), rank_(n, 0), near_(n, kNone), near_d_(n, HUGE_VAL) {
    for (size_t i = 0; i < n; ++i) parent_[i] = core[i] ? uint32_t(i) : kNone;
  }

  void consume(const PairRecord* pairs, size_t n) override {
    const uint32_t* par = parent_.data();
    for (size_t p = 0; p < n; ++p) {
      const PairRecord& r = pairs[p];
      const bool ci = par[r.i] != kNone, cj = par[r.j] != kNone;
      if (ci && cj)
        unite(r.i, r.j);
      else if (ci)
        offer(r.j, r.i, r.dist);
      else if (cj)
        offer(r.i, r.j, r.dist);
    }
    seen += n;
  }

  // The representative of the set of core point x (halving the path on the way).
  uint32_t find(uint32_t x) {
    uint32_t* par = parent_.data();
    while (par[x] != x) {
      par[x] = par[par[x]];
      x = par[x];
    }
    return x;
  }

  // The nearest core point of a point that is not core (kNone: no core point within eps).
  uint32_t nearest(uint32_t x) const { return near_[x]; }

  uint64_t seen = 0;

 private:
  void unite(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (rank_[a] < rank_[b]) std::swap(a, b);
    parent_[b] = a;
    if (rank_[a] == rank_[b]) ++rank_[a];
  }

  // Core point c at distance d of point b (not core): kept when nearer than b's current one,
  // ties by the smaller key, then the smaller index, so the choice does not depend on the order
  // pairs arrive in.
  void offer(uint32_t b, uint32_t c, double d) {
    const uint32_t cur = near_[b];
    if (cur != kNone) {
      const double cd = near_d_[b];
      if (d > cd) return;
      if (d == cd) {
        if (keys_[c] > keys_[cur]) return;
        if (keys_[c] == keys_[cur] && c > cur) return;
      }
    }
    near_[b] = c;
    near_d_[b] = d;
  }

  const int64_t* keys_;
  std::vector<uint32_t> parent_;  // kNone: not a core point
  std::vector<uint8_t> rank_;
  std::vector<uint32_t> near_;
  std::vector<double> near_d_;
};

}  // namespace

DbscanResult dbscan(Engine& eng, const SimjoinProblem& p, const int64_t* keys, int64_t minpoints,
                    Control& ctl) {
  if (minpoints < 1)
    throw Error(ErrorCode::InvalidParameter, "minpoints must be at least 1",
                "minpoints is " + std::to_string(minpoints) + ".",
                "A point is a core point when at least minpoints points, itself included, lie within eps.");
  if (!p.self || p.filter || p.stage || p.reduce)
    throw Error(ErrorCode::Internal, "dbscan needs a plain self-join problem");
  const size_t n = p.a.n;
  DbscanResult res;
  res.cluster.assign(n, -1);
  res.core.assign(n, 0);
  if (n == 0) return res;

  // Pass 1: core flags. With minpoints = 1 every point is core; with minpoints > n none is.
  std::vector<uint8_t>& core = res.core;
  if (minpoints == 1) {
    std::fill(core.begin(), core.end(), uint8_t(1));
  } else if (uint64_t(minpoints) <= uint64_t(n)) {
    const uint64_t need = uint64_t(minpoints) - 1;  // neighbours besides the point itself
    if (eng.reduces_pairs(PairReduce::Group)) {
      // Each pair counts once under its id1 end (side 0) and once under its id2 end (side 1).
      std::vector<uint64_t> deg(n, 0);
      for (int side = 0; side < 2; ++side) {
        PairReduce red;
        red.kind = PairReduce::Group;
        red.side = side;
        red.want_min = red.want_max = false;
        red.keys_a = red.keys_b = keys;
        SimjoinProblem q = p;
        q.reduce = &red;
        NullSink none;
        eng.simjoin(q, none, ctl);
        if (!red.done || red.group_count.size() != n)
          throw Error(ErrorCode::Internal, "engine did not compute the neighbour counts");
        for (size_t g = 0; g < n; ++g) deg[g] += red.group_count[g];
      }
      for (size_t g = 0; g < n; ++g) core[g] = deg[g] >= need;
    } else {
      std::vector<uint32_t> deg(n, 0);
      DegreeSink sink(deg);
      eng.simjoin(p, sink, ctl);
      res.pairs_seen += sink.seen;
      for (size_t g = 0; g < n; ++g) core[g] = deg[g] >= need;
    }
  }
  for (size_t g = 0; g < n; ++g) res.core_points += core[g];
  if (res.core_points == 0) {
    res.noise_points = n;
    return res;
  }

  // Pass 2: components of the core points, nearest core point of the others.
  ClusterSink cs(core, keys, n);
  eng.simjoin(p, cs, ctl);
  res.pairs_seen += cs.seen;

  // Each point's set (kNone: noise) and, per set, its smallest (key, index) member.
  std::vector<uint32_t> root(n, kNone);
  for (size_t g = 0; g < n; ++g) {
    if (core[g]) {
      root[g] = cs.find(uint32_t(g));
    } else {
      const uint32_t c = cs.nearest(uint32_t(g));
      if (c != kNone) root[g] = cs.find(c);
    }
  }
  std::vector<uint32_t> first(n, kNone);  // per root: its member with the smallest (key, index)
  for (size_t g = 0; g < n; ++g) {
    const uint32_t r = root[g];
    if (r == kNone) continue;
    const uint32_t f = first[r];
    if (f == kNone || keys[g] < keys[f]) first[r] = uint32_t(g);  // g ascends: ties keep f
  }
  std::vector<uint32_t> roots;
  for (size_t g = 0; g < n; ++g)
    if (first[g] != kNone) roots.push_back(uint32_t(g));
  if (roots.size() > size_t(std::numeric_limits<int32_t>::max()))
    throw Error(ErrorCode::ProgramLimit, "too many clusters",
                std::to_string(roots.size()) + " clusters; cluster numbers are integers up to 2147483647.");
  std::sort(roots.begin(), roots.end(), [&](uint32_t a, uint32_t b) {
    const uint32_t fa = first[a], fb = first[b];
    if (keys[fa] != keys[fb]) return keys[fa] < keys[fb];
    return fa < fb;
  });
  std::vector<int32_t> number(n, -1);  // per root
  for (size_t c = 0; c < roots.size(); ++c) number[roots[c]] = int32_t(c);
  for (size_t g = 0; g < n; ++g) {
    if (root[g] == kNone) {
      ++res.noise_points;
      continue;
    }
    res.cluster[g] = number[root[g]];
    if (!core[g]) ++res.border_points;
  }
  res.clusters = roots.size();
  return res;
}

}  // namespace gpu2bs
