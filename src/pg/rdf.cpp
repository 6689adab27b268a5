// gpu_rdf: the radial distribution function of one relation (self) or two, as a set-returning
// function (r_lo, r_hi, pairs, g). The relations are read as gpu_sdh's relation form reads them
// (read_coordinates: the calling user's query, coordinate columns, NULL rows skipped), the
// engine chosen by gpu2bs.device counts the pairs (src/core/rdf.h) and g(r) is normalized on the
// host.
#include "pg.h"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include <cmath>
#include <string>
#include <vector>

#include "../core/error.h"
#include "../core/rdf.h"
#include "../core/weights.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace gpu2bs {
namespace pg {

// The box argument as lengths (0 for a NULL element: not periodic); a multi-dimensional array is
// 22023.
std::vector<double> box_lengths(ArrayType* arr) {
  std::vector<double> out;
  pg_guard([&] {
    if (ARR_NDIM(arr) > 1)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("box must be a one-dimensional array"),
                      errdetail("The array has %d dimensions.", ARR_NDIM(arr))));
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
    for (int k = 0; k < n; ++k) out.push_back(nulls[k] ? 0.0 : DatumGetFloat8(elems[k]));
  });
  return out;
}

namespace {

// Checks nbuckets, r_max and box (argument box_arg, coords at box_arg + 1) of gpu_rdf or
// gpu_rdf_weighted before any row is read, reads a and b (with the weight column when `weight`
// is not null) into `in` and returns the problem. a, b, nbuckets and r_max are not NULL.
RdfProblem rdf_read(FunctionCallInfo fcinfo, int box_arg, const char* weight, SimjoinInput* in) {
  const Oid rel_a = PG_GETARG_OID(0), rel_b = PG_GETARG_OID(1);
  const int32 nbuckets = PG_GETARG_INT32(2);
  const double r_max = PG_GETARG_FLOAT8(3);
  std::vector<double> box;
  const bool has_box = !PG_ARGISNULL(box_arg);
  if (has_box) box = box_lengths(PG_GETARG_ARRAYTYPE_P(box_arg));
  ArrayType* coords = PG_ARGISNULL(box_arg + 1) ? nullptr : PG_GETARG_ARRAYTYPE_P(box_arg + 1);
  const Precision prec = current_precision();
  check_rdf_args(nbuckets, r_max, prec);
  const bool self = rel_a == rel_b;
  SimjoinArgs args;
  args.nrel = self ? 1 : 2;
  args.relids[0] = rel_a;
  args.relids[1] = self ? InvalidOid : rel_b;
  args.coords = coords;
  args.keyless = true;
  args.weight = weight;
  simjoin_read(args, in);
  if (!self) check_same_srid(*in);
  const PointsView va = points_view(in->rels[0]);
  const PointsView vb = self ? va : points_view(in->rels[1]);
  return make_rdf(va, self ? nullptr : &vb, nbuckets, r_max, has_box ? box.data() : nullptr,
                  int(box.size()), prec);
}

}  // namespace
}  // namespace pg
}  // namespace gpu2bs

// gpu_rdf(a, b, nbuckets, r_max, box, coords) -> (r_lo, r_hi, pairs, g): a = b is the self form
// (unordered pairs of distinct rows). NULL a, b, nbuckets or r_max return no rows; nbuckets,
// r_max and the shape of box are checked before reading.
GPU2BS_FUNCTION(gpu2bs_rdf) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3)) return (Datum)0;
  SimjoinInput in;
  const RdfProblem prob = rdf_read(fcinfo, 4, nullptr, &in);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  std::vector<uint64_t> counts = eng->rdf(prob, ctl);
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  ctl.stats.pairs_emitted = total;
  record_run("gpu_rdf", eng->name(), ctl.stats);
  const std::vector<RdfRow> rows = rdf_rows(prob, counts);
  MemoryContext ctx = in.ctx;
  pg_guard([&] {
    MemoryContextDelete(ctx);
    Datum values[4];
    bool nulls[4] = {false, false, false, false};
    for (const RdfRow& r : rows) {
      values[0] = Float8GetDatum(r.r_lo);
      values[1] = Float8GetDatum(r.r_hi);
      values[2] = Int64GetDatum(int64(r.pairs));
      values[3] = Float8GetDatum(r.g);
      nulls[3] = !r.has_g;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}

// gpu_rdf_weighted(a, b, nbuckets, r_max, weight, box, coords) -> (r_lo, r_hi, pairs,
// weight_sum, g): gpu_rdf with the numeric column `weight` of each relation read beside the
// coordinates (rows with a NULL weight skipped), the exact sum of w_i * w_j per bucket and the
// weighted g (src/core/rdf.h rdf_rows_weighted). NULL a, b, nbuckets, r_max or weight return
// no rows; nbuckets, r_max and the shape of box are checked before reading.
GPU2BS_FUNCTION(gpu2bs_rdf_weighted) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  for (int k = 0; k < 5; ++k)
    if (PG_ARGISNULL(k)) return (Datum)0;
  const char* weight = nullptr;
  pg_guard([&] { weight = text_to_cstring(PG_GETARG_TEXT_PP(4)); });
  SimjoinInput in;
  const RdfProblem prob = rdf_read(fcinfo, 5, weight, &in);
  const double* wa = in.rels[0].weight;
  const double* wb = prob.self ? wa : in.rels[1].weight;
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  const WeightedCounts counts = eng->rdf_weighted(prob, wa, wb, ctl);
  uint64_t total = 0;
  for (uint64_t c : counts.pairs) total += c;
  ctl.stats.pairs_emitted = total;
  record_run("gpu_rdf_weighted", eng->name(), ctl.stats);
  const std::vector<RdfRow> rows =
      rdf_rows_weighted(prob, counts, rdf_weight_totals(prob, wa, wb));
  MemoryContext ctx = in.ctx;
  pg_guard([&] {
    MemoryContextDelete(ctx);
    Datum values[5];
    bool nulls[5] = {false, false, false, false, false};
    for (const RdfRow& r : rows) {
      values[0] = Float8GetDatum(r.r_lo);
      values[1] = Float8GetDatum(r.r_hi);
      values[2] = Int64GetDatum(int64(r.pairs));
      values[3] = Float8GetDatum(r.weight_sum);
      values[4] = Float8GetDatum(r.g);
      nulls[4] = !r.has_g;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}
