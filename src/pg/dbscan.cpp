// gpu_dbscan: DBSCAN clustering of a relation's points (src/core/dbscan.h) as a set-returning
// function (id, cluster). The relation is read exactly as gpu_simjoin reads it (simjoin_read:
// the calling user's query, key and coordinate columns, NULL rows skipped), the engine chosen
// by gpu2bs.device runs the self-join passes, and the rows go to a tuplestore in key order.
#include "pg.h"

extern "C" {
#include "funcapi.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <numeric>
#include <string>

#include "../core/dbscan.h"
#include "../core/error.h"
#include "../core/periodic.h"
#include "admission.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// Shared body of gpu_dbscan(rel, eps, minpoints, coords, id [, box]) -> (id bigint, cluster int):
// NULL rel, eps or minpoints return no rows; minpoints < 1 and a bad box are 22023 before the
// relation is read. With a periodic box the passes run over PeriodicEngine (minimum-image
// distances, the pairs streamed from the engine's periodic join).
Datum dbscan_impl(FunctionCallInfo fcinfo, bool with_box) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) return (Datum)0;
  const int64_t minpoints = PG_GETARG_INT32(2);
  if (minpoints < 1)
    throw Error(ErrorCode::InvalidParameter, "minpoints must be at least 1",
                "minpoints is " + std::to_string(minpoints) + ".",
                "A point is a core point when at least minpoints points, itself included, lie within eps.");
  SimjoinArgs args;
  args.nrel = 1;
  args.relids[0] = PG_GETARG_OID(0);
  args.eps = PG_GETARG_FLOAT8(1);
  args.coords = PG_ARGISNULL(3) ? nullptr : PG_GETARG_ARRAYTYPE_P(3);
  args.id = PG_ARGISNULL(4) ? nullptr : PG_GETARG_TEXT_PP(4);
  if (with_box) simjoin_box_arg(fcinfo, 5, args.eps, "eps", &args);
  SimjoinInput in;
  simjoin_read(args, &in);  // validates eps (22023) before reading
  const RelPoints& rel = in.rels[0];
  PointsView pts;
  pts.dims = rel.dims;
  pts.n = size_t(rel.n);
  pts.name = rel.relname;
  for (int k = 0; k < rel.dims; ++k) pts.coord[k] = rel.coord[k];
  // No limit on the pairs: they are reduced as they come, never returned (gpu2bs.max_result_rows
  // bounds result rows only).
  SimjoinProblem prob = make_simjoin(pts, nullptr, in.eps, in.prec, 0);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  double lens[kMaxDims] = {};
  if (args.periodic) check_box(args.box.data(), int(args.box.size()), pts.dims, prob.eps, "eps", lens);
  PeriodicEngine periodic(*eng, lens, pts.dims);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, 0, 0);
  DbscanResult res = dbscan(args.periodic ? periodic : *eng, prob, rel.ids, minpoints, ctl);
  ctl.stats.pairs_emitted = res.pairs_seen;
  record_run("gpu_dbscan", eng->name(), ctl.stats);

  // Rows in ascending key order (read order is often that order already).
  const int64* ids = rel.ids;
  std::vector<uint32_t> order(pts.n);
  std::iota(order.begin(), order.end(), 0u);
  auto by_key = [ids](uint32_t a, uint32_t b) { return ids[a] < ids[b] || (ids[a] == ids[b] && a < b); };
  if (!std::is_sorted(order.begin(), order.end(), by_key)) std::sort(order.begin(), order.end(), by_key);
  const int32_t* cluster = res.cluster.data();
  const uint32_t* ord = order.data();
  const size_t n = pts.n;
  MemoryContext ctx = in.ctx;
  pg_guard([&] {
    Datum values[2];
    bool nulls[2] = {false, false};
    for (size_t r = 0; r < n; ++r) {
      const uint32_t g = ord[r];
      values[0] = Int64GetDatum(ids[g]);
      nulls[1] = cluster[g] < 0;
      values[1] = Int32GetDatum(nulls[1] ? 0 : cluster[g]);
      tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
      if ((r & 65535) == 65535) CHECK_FOR_INTERRUPTS();
    }
    MemoryContextDelete(ctx);
  });
  return (Datum)0;
}

}  // namespace

// gpu_dbscan(rel, eps, minpoints, coords, id).
GPU2BS_FUNCTION(gpu2bs_dbscan) { return dbscan_impl(fcinfo, false); }

// gpu_dbscan(rel, eps, minpoints, coords, id, box): over a periodic box.
GPU2BS_FUNCTION(gpu2bs_dbscan_box) { return dbscan_impl(fcinfo, true); }
