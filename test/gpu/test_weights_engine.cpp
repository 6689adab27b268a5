// The CUDA engine's weighted SDH and pair count (Engine::sdh_weighted / pair_count_weighted:
// kernels/weights_engine.cu) against the CPU engine's, bit for bit, with the weight checks and
// a cancel between launches.
#include <random>

#include "core/weights.h"
#include "fixtures.h"

namespace gpu2bs {
namespace gputest {
namespace {

// Weights of both signs spread over 2^-10..2^10, one per point.
std::vector<double> spread_weights(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> e(-10, 10);
  std::vector<double> w(n);
  for (auto& v : w) v = (rng() & 1 ? 1 : -1) * std::exp2(e(rng));
  return w;
}

// Expects equal counts and sums.
void expect_same_counts(const WeightedCounts& g, const WeightedCounts& c, const char* what) {
  ASSERT_EQ(g.pairs, c.pairs) << what;
  ASSERT_EQ(g.sums.size(), c.sums.size()) << what;
  for (size_t k = 0; k < g.sums.size(); ++k) EXPECT_TRUE(g.sums[k] == c.sums[k]) << what << " " << k;
  EXPECT_EQ(g.scale.shift, c.scale.shift) << what;
}

TEST(WeightsEngine, GpuEqualsCpu) {
  REQUIRE_GPU();
  for (Precision prec : {Precision::Float32, Precision::Float64})
    for (int dims : {2, 3, 6}) {
      const ref::Points pts = ref::uniform(5000, dims, 17 + dims);
      const std::vector<double> w = spread_weights(pts.n(), 3 + dims);
      Control gc, cc;
      cc.threads = threads();
      const SdhProblem sp = make_sdh(pts.view(), 200, 0, false, prec);
      expect_same_counts(gpu()->sdh_weighted(sp, w.data(), gc), cpu()->sdh_weighted(sp, w.data(), cc), "sdh");
      const SdhProblem sf = make_sdh(pts.view(), 3000, 0.0002, true, prec);
      expect_same_counts(gpu()->sdh_weighted(sf, w.data(), gc), cpu()->sdh_weighted(sf, w.data(), cc), "sdh fixed");
      const PairCountProblem pp = make_pair_count(pts.view(), 0.1, prec);
      const WeightedCounts g = gpu()->pair_count_weighted(pp, w.data(), gc);
      expect_same_counts(g, cpu()->pair_count_weighted(pp, w.data(), cc), "pair count");
      EXPECT_EQ(g.pairs[0], gpu()->pair_count(pp, gc));
    }
}

TEST(WeightsEngine, RefusesNonFiniteWeights) {
  REQUIRE_GPU();
  const ref::Points pts = ref::uniform(100, 3, 5);
  std::vector<double> w(100, 1.0);
  w[40] = std::nan("");
  Control ctl;
  const PairCountProblem pp = make_pair_count(pts.view(), 0.1, Precision::Float32);
  EXPECT_THROW(gpu()->pair_count_weighted(pp, w.data(), ctl), Error);
}

// A control that asks to stop at its first poll.
class StopAtOnce : public Control {
 public:
  bool interrupt_pending() override { return true; }
};

TEST(WeightsEngine, CancelBetweenLaunches) {
  REQUIRE_GPU();
  const ref::Points pts = ref::uniform(200000, 3, 8);
  const std::vector<double> w(pts.n(), 0.5);
  StopAtOnce ctl;
  const SdhProblem sp = make_sdh(pts.view(), 100, 0, false, Precision::Float32);
  try {
    gpu()->sdh_weighted(sp, w.data(), ctl);
    FAIL() << "no cancel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
  }
}

}  // namespace
}  // namespace gputest
}  // namespace gpu2bs
