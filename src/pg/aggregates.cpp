// Final functions of gpu_sdh, gpu_sdh_width and gpu_pair_count: run the chosen engine on the
// collected points.
#include "pg.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
}

#include "../core/error.h"
#include "points_state.h"
#include "admission.h"
#include "settings.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// The SDH problem of the state (bucket count, explicit or derived width), validated; the
// bounding box on ctl's threads when given.
SdhProblem sdh_problem_of(const PointsState* st, Control* ctl = nullptr) {
  return make_sdh(points_view(st), st->nbuckets, st->has_param ? st->param : 0, st->has_param,
                  current_precision(), ctl);
}

}  // namespace

// gpu_sdh final: the histogram as bigint[nbuckets].
GPU2BS_FUNCTION(gpu2bs_sdh_final) {
  if (PG_ARGISNULL(0)) PG_RETURN_NULL();
  const PointsState* st = (const PointsState*)PG_GETARG_POINTER(0);
  PgControl ctl;
  const SdhProblem prob = sdh_problem_of(st, &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  ctl.stats.scan_s = scan_seconds(st);
  DeviceGrant grant(eng, ctl, admission_want(prob.pts, prob.prec, prob.params.nbuckets),
                    admission_min(prob.pts, prob.prec, prob.params.nbuckets),
                    admission_in_memory(prob.pts, prob.prec, prob.params.nbuckets), true);
  std::vector<uint64_t> hist = eng->sdh(prob, ctl);
  record_run("gpu_sdh", eng->name(), ctl.stats);
  ArrayType* result = nullptr;
  const uint64_t* h = hist.data();
  const int nb = int(hist.size());
  pg_guard([&] {
    Datum* elems = (Datum*)palloc(sizeof(Datum) * size_t(nb));
    for (int k = 0; k < nb; ++k) elems[k] = Int64GetDatum(int64(h[k]));
    result = construct_array(elems, nb, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
  });
  PG_RETURN_ARRAYTYPE_P(result);
}

// gpu_sdh_width final: the bucket width w the histogram uses (edges are k * w).
GPU2BS_FUNCTION(gpu2bs_sdh_width_final) {
  if (PG_ARGISNULL(0)) PG_RETURN_NULL();
  const PointsState* st = (const PointsState*)PG_GETARG_POINTER(0);
  PgControl ctl;
  PG_RETURN_FLOAT8(sdh_problem_of(st, &ctl).params.width);
}

// gpu_pair_count final: unordered pairs with distance <= r.
GPU2BS_FUNCTION(gpu2bs_pair_count_final) {
  if (PG_ARGISNULL(0)) PG_RETURN_NULL();
  const PointsState* st = (const PointsState*)PG_GETARG_POINTER(0);
  PgControl ctl;
  const PairCountProblem prob =
      make_pair_count(points_view(st), st->param, current_precision(), &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  ctl.stats.scan_s = scan_seconds(st);
  DeviceGrant grant(eng, ctl, admission_want_count(prob.pts, prob.prec, prob.r), admission_min(prob.pts, prob.prec, 0),
                    admission_in_memory(prob.pts, prob.prec, 0), true);
  uint64_t n = eng->pair_count(prob, ctl);
  record_run("gpu_pair_count", eng->name(), ctl.stats);
  PG_RETURN_INT64(int64(n));
}
