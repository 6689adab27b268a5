// Weighted relation forms of the SDH and the pair count: gpu_sdh_weighted and
// gpu_pair_count_weighted read a relation's coordinates and a weight column (read_coordinates'
// query and receiver), and the chosen engine counts the pairs and sums w_i * w_j exactly
// (src/core/weights.h), returned as rows.
#include "pg.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include <cmath>
#include <string>
#include <vector>

#include "../core/error.h"
#include "../core/weights.h"
#include "admission.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// Frees the points' memory context.
void drop_weighted_points(SimjoinInput* in) {
  MemoryContext ctx = in->ctx;
  in->ctx = nullptr;
  if (ctx) pg_guard([&] { MemoryContextDelete(ctx); });
}

// The weight column's name from a text argument.
const char* weight_arg(text* t) {
  const char* name = nullptr;
  pg_guard([&] { name = text_to_cstring(t); });
  return name;
}

// Device bytes of a weighted run (kernels/weights_engine.cu): the points in the precision, the
// weights, the counts and limbs of `slots` entries, and 1 MiB of headroom; the run needs all
// of it at once (no blocks), so it is both what the call asks for and the least it takes.
uint64_t weighted_device_bytes(const PointsView& pts, Precision prec, size_t slots) {
  const uint64_t coord = prec == Precision::Float32 ? 4 : 8;
  return uint64_t(pts.n) * (uint64_t(pts.dims) * coord + 8) + uint64_t(slots) * 24 + (uint64_t(1) << 20);
}

}  // namespace

// gpu_sdh_weighted(rel, nbuckets, weight, width, coords) -> (bucket, lo, hi, pairs, weight_sum):
// width NULL derives it from the bounding box (as gpu_sdh), else as gpu_sdh_fixed. No rows for
// a NULL rel, nbuckets or weight, or a relation without rows.
GPU2BS_FUNCTION(gpu2bs_sdh_weighted_rel) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) return (Datum)0;
  const Oid relid = PG_GETARG_OID(0);
  const int32 nbuckets = PG_GETARG_INT32(1);
  const char* weight = weight_arg(PG_GETARG_TEXT_PP(2));
  const bool explicit_width = !PG_ARGISNULL(3);
  const double width = explicit_width ? PG_GETARG_FLOAT8(3) : 0;
  ArrayType* coords = PG_ARGISNULL(4) ? nullptr : PG_GETARG_ARRAYTYPE_P(4);
  const Precision prec = current_precision();
  make_sdh_params(nbuckets, width, explicit_width, Bounds(), prec);  // arguments, before reading
  SimjoinInput in;
  read_weighted_coordinates(relid, coords, weight, &in);
  if (in.rels[0].n == 0) {
    drop_weighted_points(&in);
    return (Datum)0;
  }
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  const SdhProblem prob =
      make_sdh(points_view(in.rels[0]), nbuckets, width, explicit_width, prec, &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  const uint64_t need = weighted_device_bytes(prob.pts, prob.prec, size_t(nbuckets));
  DeviceGrant grant(eng, ctl, need, need, need);
  const WeightedCounts res = eng->sdh_weighted(prob, in.rels[0].weight, ctl);
  record_run("gpu_sdh_weighted", eng->name(), ctl.stats);
  drop_weighted_points(&in);
  std::vector<double> sums(res.sums.size());
  for (size_t k = 0; k < sums.size(); ++k) sums[k] = weight_value(res.sums[k], res.scale);
  const double w = prob.params.width;
  pg_guard([&] {
    Datum values[5];
    bool nulls[5] = {false, false, false, false, false};
    for (int k = 0; k < nbuckets; ++k) {
      values[0] = Int32GetDatum(k + 1);
      values[1] = Float8GetDatum(double(k) * w);
      values[2] = Float8GetDatum(double(k + 1) * w);
      values[3] = Int64GetDatum(int64(res.pairs[size_t(k)]));
      values[4] = Float8GetDatum(sums[size_t(k)]);
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}

// gpu_pair_count_weighted(rel, r, weight, coords) -> (pairs, weight_sum): one row, none for a
// NULL rel, r or weight or a relation without rows.
GPU2BS_FUNCTION(gpu2bs_pair_count_weighted_rel) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) return (Datum)0;
  const Oid relid = PG_GETARG_OID(0);
  const double r = PG_GETARG_FLOAT8(1);
  const char* weight = weight_arg(PG_GETARG_TEXT_PP(2));
  ArrayType* coords = PG_ARGISNULL(3) ? nullptr : PG_GETARG_ARRAYTYPE_P(3);
  const Precision prec = current_precision();
  make_pair_count(PointsView(), r, prec);  // the radius, before reading
  SimjoinInput in;
  read_weighted_coordinates(relid, coords, weight, &in);
  if (in.rels[0].n == 0) {
    drop_weighted_points(&in);
    return (Datum)0;
  }
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  const PairCountProblem prob = make_pair_count(points_view(in.rels[0]), r, prec, &ctl);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  const uint64_t need = weighted_device_bytes(prob.pts, prob.prec, 1);
  DeviceGrant grant(eng, ctl, need, need, need);
  const WeightedCounts res = eng->pair_count_weighted(prob, in.rels[0].weight, ctl);
  record_run("gpu_pair_count_weighted", eng->name(), ctl.stats);
  drop_weighted_points(&in);
  const double sum = weight_value(res.sums[0], res.scale);
  pg_guard([&] {
    Datum values[2] = {Int64GetDatum(int64(res.pairs[0])), Float8GetDatum(sum)};
    bool nulls[2] = {false, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
  });
  return (Datum)0;
}
