// The similarity join's entry point on the GPU: grid geometry (over the problem's bounds), the
// grids of both sides, then the batched join (or the serial drain when a benchmark asks for it).
// See join.cuh.
#include "join.cuh"

namespace gpu2bs {
namespace cuda {

namespace {

using namespace join;

// The join of one element type and dimension.
template <typename T, int D>
void simjoin_run(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  Call call(ctl);
  auto t0 = Clock::now();
  const Geometry g = make_geometry(p.box, p.eps, p.prec, D, ctl.overrides.host_grid);
  ctl.stats.prepare_s += seconds_since(t0);
  const T eps2 = sizeof(T) == 4 ? T(p.eps2_f) : T(p.eps2);
  const DevGrid<T> ga = build_grid<T, D>(call, p.a, g, p.prec);
  JoinResult r;
  const bool serial = ctl.overrides.join_serial_drain;
  if (p.self) {
    const auto off = offsets_for(D, true);
    r = serial ? run_join<T, D, true, false>(call, ga, ga, eps2, off, &sink, p.max_pairs)
               : run_join_batched<T, D, true>(call, ga, ga, eps2, off, &sink, p.max_pairs);
  } else {
    const DevGrid<T> gb = build_grid<T, D>(call, p.b, g, p.prec);
    const auto off = offsets_for(D, false);
    r = serial ? run_join<T, D, false, false>(call, ga, gb, eps2, off, &sink, p.max_pairs)
               : run_join_batched<T, D, false>(call, ga, gb, eps2, off, &sink, p.max_pairs);
  }
  ctl.stats.pairs_examined += r.examined;
  ctl.stats.pairs_emitted += r.emitted;
}

// The join of one element type, dispatched on the dimension.
template <typename T>
void simjoin_dims(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  switch (p.a.dims) {
    case 2: return simjoin_run<T, 2>(p, sink, ctl);
    case 3: return simjoin_run<T, 3>(p, sink, ctl);
    case 4: return simjoin_run<T, 4>(p, sink, ctl);
    case 5: return simjoin_run<T, 5>(p, sink, ctl);
    case 6: return simjoin_run<T, 6>(p, sink, ctl);
    default:
      throw Error(ErrorCode::InvalidParameter, "points must have 2 to 6 coordinates");
  }
}

}  // namespace

void simjoin(const SimjoinProblem& p, PairSink& sink, Control& ctl) {
  if (p.a.n == 0 || p.b.n == 0) return;  // point counts were checked by make_simjoin
  if (p.prec == Precision::Float32)
    simjoin_dims<float>(p, sink, ctl);
  else
    simjoin_dims<double>(p, sink, ctl);
}

}  // namespace cuda
}  // namespace gpu2bs
