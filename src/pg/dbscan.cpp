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
#include "admission.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

// gpu_dbscan(rel, eps, minpoints, coords, id) -> (id bigint, cluster int): NULL rel, eps or
// minpoints return no rows; minpoints < 1 is 22023 before the relation is read.
GPU2BS_FUNCTION(gpu2bs_dbscan) {
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
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, 0, 0);
  DbscanResult res = dbscan(*eng, prob, rel.ids, minpoints, ctl);
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
