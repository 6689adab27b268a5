// gpu_xi: the two-point correlation function xi(r) (or w(theta) of (ra, dec) points) of a
// relation of data points, with a relation of random points or, in a periodic box, the analytic
// RR, as a set-returning function (r_lo, r_hi, dd, dr, rr, xi). The relations are read as gpu_rdf
// reads them; the engine chosen by gpu2bs.device counts DD, DR and RR in the bins of the edges
// (the RDF cell lists with explicit edges, src/core/rdf.h); xi is computed on the host
// (src/core/xi.h).
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
#include "../core/rdf.h"
#include "../core/xi.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// A float8[] argument named `what` as values; NULL elements become `null_value`, or are 22023
// when `nulls_ok` is false; a multi-dimensional array is 22023.
std::vector<double> float8_values(ArrayType* arr, const char* what, bool nulls_ok,
                                  double null_value) {
  std::vector<double> out;
  pg_guard([&] {
    if (ARR_NDIM(arr) > 1)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("%s must be a one-dimensional array", what),
                      errdetail("The array has %d dimensions.", ARR_NDIM(arr))));
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
    for (int k = 0; k < n; ++k) {
      if (nulls[k] && !nulls_ok)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must not contain NULL elements", what),
                        errdetail("Element %d is NULL.", k + 1)));
      out.push_back(nulls[k] ? null_value : DatumGetFloat8(elems[k]));
    }
  });
  return out;
}

// The arguments of gpu_xi / gpu_xi_weighted after their checks, and the points read.
struct XiCall {
  std::vector<double> edges;      // as given (degrees with angular)
  std::vector<double> bin_edges;  // in the units the points are binned in
  XiEstimator est = XiEstimator::LandySzalay;
  std::vector<double> box;
  bool has_box = false;
  bool has_randoms = false;
  Precision prec = Precision::Float32;
  int nrel = 1;                   // 2 when randoms is another relation
  SimjoinInput in;
  PointsView vd, vr;              // data and randoms (vr = vd for one relation)
  SpherePoints sd, sr;            // the unit vectors of an angular call, which vd / vr view
  const int64_t* pd = nullptr;    // patches of data and randoms (jackknife), else null
  const int64_t* pr = nullptr;
  const double* wd = nullptr;     // weights of data and randoms (weighted form), else null
  const double* wr = nullptr;
};

// Checks the arguments of gpu_xi (weight null) or gpu_xi_weighted (weight the column name,
// its arguments after edges one place later) and reads the relations into `x`. Every argument
// is checked before a row is read. data and edges are not NULL.
void xi_read(FunctionCallInfo fcinfo, const char* weight, XiCall* x) {
  const int o = weight ? 1 : 0;  // estimator, box, coords, angular, patch at 3 + o .. 7 + o
  const Oid rel_d = PG_GETARG_OID(0);
  x->has_randoms = !PG_ARGISNULL(1);
  const Oid rel_r = x->has_randoms ? PG_GETARG_OID(1) : InvalidOid;
  x->edges = float8_values(PG_GETARG_ARRAYTYPE_P(2), "edges", false, 0.0);
  std::string est_name = "landy-szalay";
  if (!PG_ARGISNULL(3 + o)) pg_guard([&] { est_name = text_to_cstring(PG_GETARG_TEXT_PP(3 + o)); });
  x->est = parse_xi_estimator(est_name);
  x->has_box = !PG_ARGISNULL(4 + o);
  if (x->has_box) x->box = float8_values(PG_GETARG_ARRAYTYPE_P(4 + o), "box", true, 0.0);
  ArrayType* coords = PG_ARGISNULL(5 + o) ? nullptr : PG_GETARG_ARRAYTYPE_P(5 + o);
  const bool angular = !PG_ARGISNULL(6 + o) && PG_GETARG_BOOL(6 + o);
  x->prec = current_precision();
  if (angular && x->has_box)
    throw Error(ErrorCode::InvalidParameter, "angular correlation takes no box",
                "The points lie on the unit sphere.", "Pass box => NULL.");
  // The edges in the units the points are binned in: chords of the unit sphere for w(theta).
  x->bin_edges = angular ? chord_edges(x->edges) : x->edges;
  check_edges(x->bin_edges, x->prec, "edges");
  bool all_periodic = x->has_box && !x->box.empty();
  for (double L : x->box) all_periodic = all_periodic && L > 0;
  if (!x->has_randoms && (angular || !all_periodic))
    throw Error(ErrorCode::InvalidParameter,
                "randoms are required unless every axis is periodic",
                angular ? "The analytic RR needs a periodic box; w(theta) has none."
                        : "The analytic RR needs a periodic length on every axis.",
                "Give a relation of random points, or a box with a positive length per axis.");
  text* patch = PG_ARGISNULL(7 + o) ? nullptr : PG_GETARG_TEXT_PP(7 + o);
  if (patch && !x->has_randoms)
    throw Error(ErrorCode::InvalidParameter, "jackknife errors need randoms",
                "The analytic RR of a box has no patches.", "Give a relation of random points.");
  const bool same = x->has_randoms && rel_r == rel_d;
  SimjoinArgs args;
  args.nrel = x->has_randoms && !same ? 2 : 1;
  args.relids[0] = rel_d;
  args.relids[1] = args.nrel == 2 ? rel_r : InvalidOid;
  args.coords = coords;
  // The patch column is read as the key column (an integer; rows with a NULL patch are
  // skipped), the weight column after the coordinates; eps, which a keyed read validates, is
  // not used.
  args.keyless = patch == nullptr;
  args.id = patch;
  args.eps = 1;
  args.weight = weight;
  simjoin_read(args, &x->in);
  x->nrel = args.nrel;
  if (x->nrel == 2) check_same_srid(x->in);
  x->vd = points_view(x->in.rels[0]);
  x->vr = x->nrel == 2 ? points_view(x->in.rels[1]) : x->vd;
  if (weight) {
    x->wd = x->in.rels[0].weight;
    x->wr = x->in.rels[x->nrel - 1].weight;
  }
  if (patch) {
    x->pd = x->in.rels[0].ids;
    x->pr = x->in.rels[x->nrel - 1].ids;
  }
  if (angular) {
    x->sd = sphere_points(x->vd);
    x->vd = x->sd.view();
    if (x->has_randoms) {
      if (x->nrel == 2) {
        x->sr = sphere_points(x->vr);
        x->vr = x->sr.view();
      } else {
        x->vr = x->vd;
      }
    }
  }
}

}  // namespace

// gpu_xi(data, randoms, edges, estimator, box, coords, angular, patch) -> (r_lo, r_hi, dd, dr,
// rr, xi, xi_err). NULL data or edges return no rows; randoms NULL asks for the analytic RR of a
// periodic box; patch names the integer column of jackknife patches.
// Every argument is checked before a row is read.
GPU2BS_FUNCTION(gpu2bs_xi) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(2)) return (Datum)0;
  XiCall x;
  xi_read(fcinfo, nullptr, &x);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = x.in.scan_s;
  const std::vector<XiRow> rows =
      xi_run(*eng, ctl, x.est, x.vd, x.has_randoms ? &x.vr : nullptr, x.edges, x.bin_edges,
             x.has_box ? x.box.data() : nullptr, int(x.box.size()), x.prec, x.pd, x.pr);
  uint64_t total = 0;
  for (const XiRow& r : rows) total += r.dd + r.dr + (r.has_rr && !std::isnan(r.rr) ? uint64_t(r.rr) : 0);
  ctl.stats.pairs_emitted = total;
  record_run("gpu_xi", eng->name(), ctl.stats);
  MemoryContext ctx = x.in.ctx;
  pg_guard([&] {
    MemoryContextDelete(ctx);
    Datum values[7];
    bool nulls[7] = {false, false, false, false, false, false, false};
    for (const XiRow& r : rows) {
      values[0] = Float8GetDatum(r.r_lo);
      values[1] = Float8GetDatum(r.r_hi);
      values[2] = Int64GetDatum(int64(r.dd));
      values[3] = Int64GetDatum(int64(r.dr));
      nulls[3] = !r.has_dr;
      values[4] = Float8GetDatum(r.rr);
      nulls[4] = !r.has_rr;
      values[5] = Float8GetDatum(r.xi);
      nulls[5] = !r.has_xi;
      values[6] = Float8GetDatum(r.xi_err);
      nulls[6] = !r.has_err;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}

// gpu_xi_weighted(data, randoms, edges, weight, estimator, box, coords, angular, patch) ->
// (r_lo, r_hi, dd, dr, rr, dd_w, dr_w, rr_w, xi, xi_err): gpu_xi with the numeric column
// `weight` of each relation read beside the coordinates (rows with a NULL weight skipped), the
// exact sums of w_i * w_j per bin, xi from them (src/core/xi.h xi_rows_weighted) and the
// jackknife over the patch column. NULL data, edges or weight return no rows.
GPU2BS_FUNCTION(gpu2bs_xi_weighted) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(2) || PG_ARGISNULL(3)) return (Datum)0;
  const char* weight = nullptr;
  pg_guard([&] { weight = text_to_cstring(PG_GETARG_TEXT_PP(3)); });
  XiCall x;
  xi_read(fcinfo, weight, &x);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = x.in.scan_s;
  const std::vector<XiRow> rows =
      xi_run_weighted(*eng, ctl, x.est, x.vd, x.wd, x.has_randoms ? &x.vr : nullptr, x.wr, x.edges,
                      x.bin_edges, x.has_box ? x.box.data() : nullptr, int(x.box.size()), x.prec,
                      x.pd, x.pr);
  uint64_t total = 0;
  for (const XiRow& r : rows) total += r.dd + r.dr + (r.has_dr ? uint64_t(r.rr) : 0);
  ctl.stats.pairs_emitted = total;
  record_run("gpu_xi_weighted", eng->name(), ctl.stats);
  MemoryContext ctx = x.in.ctx;
  pg_guard([&] {
    MemoryContextDelete(ctx);
    Datum values[10];
    bool nulls[10] = {false, false, false, false, false, false, false, false, false, false};
    for (const XiRow& r : rows) {
      values[0] = Float8GetDatum(r.r_lo);
      values[1] = Float8GetDatum(r.r_hi);
      values[2] = Int64GetDatum(int64(r.dd));
      values[3] = Int64GetDatum(int64(r.dr));
      nulls[3] = !r.has_dr;
      values[4] = Float8GetDatum(r.rr);
      values[5] = Float8GetDatum(r.dd_w);
      values[6] = Float8GetDatum(r.dr_w);
      nulls[6] = !r.has_dr;
      values[7] = Float8GetDatum(r.rr_w);
      values[8] = Float8GetDatum(r.xi);
      nulls[8] = !r.has_xi;
      values[9] = Float8GetDatum(r.xi_err);
      nulls[9] = !r.has_err;
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
  });
  return (Datum)0;
}
