// Relation forms of gpu_sdh and gpu_pair_count: the relation's coordinates are read like
// gpu_simjoin reads them (one query through SPI as the calling user, rows streamed by a
// DestReceiver into SoA arrays, no per-row aggregate calls), then the chosen engine runs.
#include "pg.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/memutils.h"
}

#include "../core/error.h"
#include "../core/periodic.h"
#include "../core/rdf.h"
#include "admission.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// Frees the points' memory context.
void drop_points(SimjoinInput* in) {
  MemoryContext ctx = in->ctx;
  in->ctx = nullptr;
  if (ctx) pg_guard([&] { MemoryContextDelete(ctx); });
}

// The counts as a bigint[] datum.
Datum histogram_array(const std::vector<uint64_t>& hist) {
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

// The histogram of relation `relid` as bigint[nbuckets] (width <= 0 when derived from the
// data), or NULL for no rows.
Datum sdh_relation(FunctionCallInfo fcinfo, Oid relid, int32 nbuckets, ArrayType* coords,
                   bool explicit_width, double width) {
  const Precision prec = current_precision();
  make_sdh_params(nbuckets, width, explicit_width, Bounds(), prec);  // arguments, before reading
  SimjoinInput in;
  read_coordinates(relid, coords, &in);
  if (in.rels[0].n == 0) {
    drop_points(&in);
    PG_RETURN_NULL();
  }
  PgControl ctl;
  const SdhProblem prob =
      make_sdh(points_view(in.rels[0]), nbuckets, width, explicit_width, prec, &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, admission_want(prob.pts, prob.prec, prob.params.nbuckets),
                    admission_min(prob.pts, prob.prec, prob.params.nbuckets),
                    admission_in_memory(prob.pts, prob.prec, prob.params.nbuckets), true);
  std::vector<uint64_t> hist = eng->sdh(prob, ctl);
  record_run(explicit_width ? "gpu_sdh_fixed" : "gpu_sdh", eng->name(), ctl.stats);
  drop_points(&in);
  return histogram_array(hist);
}

}  // namespace

// gpu_sdh(rel, nbuckets, coords): the histogram with the width derived from the data.
GPU2BS_FUNCTION(gpu2bs_sdh_rel) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_NULL();
  return sdh_relation(fcinfo, PG_GETARG_OID(0), PG_GETARG_INT32(1),
                      PG_ARGISNULL(2) ? nullptr : PG_GETARG_ARRAYTYPE_P(2), false, 0);
}

// gpu_sdh_fixed(rel, nbuckets, width, coords): the histogram with an explicit bucket width.
GPU2BS_FUNCTION(gpu2bs_sdh_fixed_rel) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) PG_RETURN_NULL();
  return sdh_relation(fcinfo, PG_GETARG_OID(0), PG_GETARG_INT32(1),
                      PG_ARGISNULL(3) ? nullptr : PG_GETARG_ARRAYTYPE_P(3), true,
                      PG_GETARG_FLOAT8(2));
}

// gpu_pair_count(rel, r, coords): unordered pairs with distance <= r, NULL for no rows.
GPU2BS_FUNCTION(gpu2bs_pair_count_rel) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_NULL();
  const Oid relid = PG_GETARG_OID(0);
  const double r = PG_GETARG_FLOAT8(1);
  ArrayType* coords = PG_ARGISNULL(2) ? nullptr : PG_GETARG_ARRAYTYPE_P(2);
  const Precision prec = current_precision();
  make_pair_count(PointsView(), r, prec);  // the radius, before reading
  SimjoinInput in;
  read_coordinates(relid, coords, &in);
  if (in.rels[0].n == 0) {
    drop_points(&in);
    PG_RETURN_NULL();
  }
  PgControl ctl;
  const PairCountProblem prob = make_pair_count(points_view(in.rels[0]), r, prec, &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, admission_want_count(prob.pts, prob.prec, prob.r), admission_min(prob.pts, prob.prec, 0),
                    admission_in_memory(prob.pts, prob.prec, 0), true);
  const uint64_t n = eng->pair_count(prob, ctl);
  record_run("gpu_pair_count", eng->name(), ctl.stats);
  drop_points(&in);
  PG_RETURN_INT64(int64(n));
}

// gpu_sdh_fixed(rel, nbuckets, width, coords, box): the explicit-width histogram over a periodic
// box (minimum-image distances, the RDF engine's cell lists); nbuckets * width at most half the
// shortest periodic length (22023, before reading). A box with no periodic axis is the plain
// form.
GPU2BS_FUNCTION(gpu2bs_sdh_fixed_rel_box) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) PG_RETURN_NULL();
  const Oid relid = PG_GETARG_OID(0);
  const int32 nbuckets = PG_GETARG_INT32(1);
  const double width = PG_GETARG_FLOAT8(2);
  ArrayType* coords = PG_ARGISNULL(3) ? nullptr : PG_GETARG_ARRAYTYPE_P(3);
  const Precision prec = current_precision();
  make_sdh_params(nbuckets, width, true, Bounds(), prec);  // arguments, before reading
  SimjoinArgs box;
  simjoin_box_arg(fcinfo, 4, double(nbuckets) * width, "nbuckets * width", &box);
  if (!box.periodic) return sdh_relation(fcinfo, relid, nbuckets, coords, true, width);
  SimjoinInput in;
  read_coordinates(relid, coords, &in);
  if (in.rels[0].n == 0) {
    drop_points(&in);
    PG_RETURN_NULL();
  }
  const PointsView pts = points_view(in.rels[0]);
  double lens[kMaxDims];
  check_box(box.box.data(), int(box.box.size()), pts.dims, double(nbuckets) * width, "nbuckets * width", lens);
  const RdfProblem prob = make_periodic_sdh(pts, nbuckets, width, lens, prec);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, 0, 0);
  const std::vector<uint64_t> hist = eng->rdf(prob, ctl);
  record_run("gpu_sdh_fixed", eng->name(), ctl.stats);
  drop_points(&in);
  return histogram_array(hist);
}

// gpu_pair_count(rel, r, coords, box): unordered pairs with minimum-image distance <= r over a
// periodic box, NULL for no rows; r at most half the shortest periodic length (22023, before
// reading). A box with no periodic axis is the plain form.
GPU2BS_FUNCTION(gpu2bs_pair_count_rel_box) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) PG_RETURN_NULL();
  const Oid relid = PG_GETARG_OID(0);
  const double r = PG_GETARG_FLOAT8(1);
  ArrayType* coords = PG_ARGISNULL(2) ? nullptr : PG_GETARG_ARRAYTYPE_P(2);
  const Precision prec = current_precision();
  const Threshold radius = make_radius(r, prec);  // the radius, before reading
  SimjoinArgs box;
  simjoin_box_arg(fcinfo, 3, r, "r", &box);
  SimjoinInput in;
  read_coordinates(relid, coords, &in);
  if (in.rels[0].n == 0) {
    drop_points(&in);
    PG_RETURN_NULL();
  }
  const PointsView pts = points_view(in.rels[0]);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  uint64_t n = 0;
  if (!box.periodic) {
    const PairCountProblem prob = make_pair_count(pts, r, prec, &ctl);
    DeviceGrant grant(eng, ctl, admission_want_count(prob.pts, prob.prec, prob.r), admission_min(prob.pts, prob.prec, 0),
                      admission_in_memory(prob.pts, prob.prec, 0), true);
    n = eng->pair_count(prob, ctl);
  } else {
    double lens[kMaxDims];
    check_box(box.box.data(), int(box.box.size()), pts.dims, r, "r", lens);
    const PeriodicJoin pj = make_periodic_join(make_simjoin(pts, nullptr, radius, prec, 0), lens, "r");
    DeviceGrant grant(eng, ctl, 0, 0);
    n = eng->periodic_count(pj, ctl);
  }
  record_run("gpu_pair_count", eng->name(), ctl.stats);
  drop_points(&in);
  PG_RETURN_INT64(int64(n));
}
