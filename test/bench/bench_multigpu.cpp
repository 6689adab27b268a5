// Several devices in one call, timed: the SDH, the pair count by tiles and the similarity join
// with the devices listed in EngineOverrides::devices (one ordinal repeated emulates several
// devices on one GPU: the figures then show the split's overhead, not a speedup), and the join
// in slabs under a small budget against the in-memory join. Not a test: results are printed.
//   test/gpu/build/bench_multigpu [devices, e.g. 0,0 or 0,1] [reps] [sizes]
// sizes "small" (default): SDH and pair count of 1,000,000 3-D points, join of 2,000,000 2-D
// points (eps 0.002, 2.5e7 pairs); "large": SDH and pair count of 4,194,304 points, join of
// 4,000,000 2-D points (eps 0.002, about 1.0e8 pairs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/reference.h"
#include "core/engine.h"
#include "core/split.h"

using namespace gpu2bs;

namespace {

// Counts pairs without keeping them.
struct CountSink : PairSink {
  uint64_t n = 0;
  void consume(const PairRecord*, size_t k) override { n += k; }
};

// Median wall time of `reps` runs of fn, in milliseconds.
template <class F>
double median_ms(int reps, F fn) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  Engine* gpu = cuda_engine(&why);
  if (!gpu) {
    printf("no GPU: %s\n", why.c_str());
    return 0;
  }
  std::vector<int> devs;
  std::string err;
  const std::string list = argc > 1 ? argv[1] : "0,0";
  for (size_t pos = 0; pos <= list.size();) {  // ordinals may repeat here (emulated devices)
    const size_t c = list.find(',', pos);
    devs.push_back(std::atoi(list.substr(pos, c - pos).c_str()));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool large = argc > 3 && std::string(argv[3]) == "large";
  const size_t n_sdh = large ? 4194304 : 1000000, n_join = large ? 4000000 : 2000000;
  printf("devices %s, median of %d runs, wall ms\n", list.c_str(), reps);
  auto ctl_for = [&](bool many) {
    Control c;
    c.threads = 8;
    if (many) c.overrides.devices = devs;
    return c;
  };
  {
    auto pts = ref::uniform(n_sdh, 3, 1, 0, 10);
    const SdhProblem p = make_sdh(pts.view(), 500, 0, false, Precision::Float32);
    std::vector<uint64_t> h1, hm;
    const double t1 = median_ms(reps, [&] { Control c = ctl_for(false); c.sdh_method = SdhMethod::Brute; h1 = gpu->sdh(p, c); });
    const double tm = median_ms(reps, [&] { Control c = ctl_for(true); c.sdh_method = SdhMethod::Brute; hm = gpu->sdh(p, c); });
    printf("sdh N=%zu 3-D float32 500 buckets brute: one device %.1f ms, shares %.1f ms, speedup %.2fx, equal %s\n",
           n_sdh, t1, tm, t1 / tm, h1 == hm ? "yes" : "NO");
  }
  {
    auto pts = ref::uniform(n_sdh, 3, 2, 0, 10);
    const PairCountProblem p = make_pair_count(pts.view(), 0.5, Precision::Float32);
    uint64_t c1 = 0, cm = 0;
    const double t1 = median_ms(reps, [&] { Control c = ctl_for(false); c.overrides.count_path = 1; c1 = gpu->pair_count(p, c); });
    const double tm = median_ms(reps, [&] { Control c = ctl_for(true); c.overrides.count_path = 1; cm = gpu->pair_count(p, c); });
    printf("pair count N=%zu 3-D float32 r=0.5 tiles: one device %.1f ms, shares %.1f ms, speedup %.2fx, equal %s\n",
           n_sdh, t1, tm, t1 / tm, c1 == cm ? "yes" : "NO");
  }
  {
    auto pts = ref::uniform(n_join, 2, 3, 0, 1);
    PointsView v = pts.view();
    const SimjoinProblem p = make_simjoin(v, nullptr, 0.002, Precision::Float32, 0);
    uint64_t n1 = 0, nm = 0, ns = 0, slabs = 0;
    RunStats s1, sm, ss;
    const double t1 = median_ms(reps, [&] { Control c = ctl_for(false); CountSink s; gpu->simjoin(p, s, c); n1 = s.n; s1 = c.stats; });
    const double tm = median_ms(reps, [&] { Control c = ctl_for(true); CountSink s; gpu->simjoin(p, s, c); nm = s.n; sm = c.stats; });
    const uint64_t core = split::join_core_bytes(p.a.n, 0, true, 2, p.prec);
    const double ts = median_ms(reps, [&] {
      Control c = ctl_for(false);
      c.device_memory_limit = size_t(core / 8 + split::kJoinMinBankBytes);
      CountSink s;
      gpu->simjoin(p, s, c);
      ns = s.n;
      slabs = c.stats.slabs;
      ss = c.stats;
    });
    printf("join N=%zu 2-D float32 eps=0.002 self (%llu pairs): one device %.1f ms, shares %.1f ms (%.2fx), "
           "%llu slabs on one device under %.0f MB %.1f ms, equal %s\n",
           n_join, (unsigned long long)n1, t1, tm, t1 / tm, (unsigned long long)slabs,
           double(core / 8 + split::kJoinMinBankBytes) / 1048576.0, ts, n1 == nm && n1 == ns ? "yes" : "NO");
    auto show = [](const char* what, const RunStats& st) {
      printf("  %s: prepare %.1f ms, transfer %.1f ms, kernel %.1f ms, merge %.1f ms (largest share)\n", what,
             st.prepare_s * 1e3, st.transfer_s * 1e3, st.kernel_s * 1e3, st.merge_s * 1e3);
    };
    show("one device", s1);
    show("shares", sm);
    show("slabs under the budget", ss);
    printf("  join kernel speedup (one device's kernel / the largest share's): %.2fx\n",
           sm.kernel_s > 0 ? s1.kernel_s / sm.kernel_s : 0.0);
  }
  return 0;
}
