// Transition, combine, serialize and deserialize functions of the point-buffer aggregates.
// Plain PostgreSQL code (no C++ objects), so ereport is used directly.
#include "points_state.h"

extern "C" {
#include "libpq/pqformat.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/builtins.h"
}

#include <cmath>

namespace gpu2bs {
namespace pg {

PointsView points_view(const PointsState* st) {
  PointsView v;
  v.dims = st->dims;
  v.n = size_t(st->n);
  for (int k = 0; k < st->dims; ++k) v.coord[k] = st->coord[k];
  return v;
}

double scan_seconds(const PointsState* st) {
  return double(GetCurrentTimestamp() - st->first_row) / 1e6;
}

namespace {

const char* const kCoordNames[3] = {"x", "y", "z"};

// Memory context of the aggregate, or an error when called as a plain function.
MemoryContext agg_context(FunctionCallInfo fcinfo) {
  MemoryContext ctx;
  if (!AggCheckCallContext(fcinfo, &ctx))
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("gpu2bs aggregate support function called in non-aggregate context")));
  return ctx;
}

// A new empty state in the aggregate context.
PointsState* new_state(MemoryContext ctx, int dims, int32 nbuckets, bool has_param, double param) {
  PointsState* st = (PointsState*)MemoryContextAllocZero(ctx, sizeof(PointsState));
  st->dims = dims;
  st->nbuckets = nbuckets;
  st->has_param = has_param;
  st->param = param;
  st->first_row = GetCurrentTimestamp();
  return st;
}

// Room for `extra` more points (doubling from 16384 up to kMaxPoints, huge allocations
// allowed; new arrays are huge-page advised and the points so far copied over).
void reserve(MemoryContext ctx, PointsState* st, int64 extra) {
  if (st->n + extra <= st->cap) return;
  uint64_t need = uint64_t(st->n + extra);
  call_at_boundary([](void* n) { check_point_count(*static_cast<uint64_t*>(n), "a gpu2bs aggregate"); },
                   &need);
  int64 cap = st->cap ? st->cap : 16384;
  while (cap < st->n + extra) cap *= 2;
  cap = Min(cap, int64(kMaxPoints));
  for (int k = 0; k < st->dims; ++k)
    st->coord[k] = (double*)realloc_big(ctx, st->coord[k], Size(st->n) * sizeof(double),
                                        Size(cap) * sizeof(double));
  st->cap = cap;
}

// Checks a parameter against the value the state already holds.
void check_same(bool same, const char* what) {
  if (!same)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s must be the same for every row of the aggregate", what)));
}

// Shared transition: args 1..dims are coordinates; `nb_arg` (or -1) is nbuckets, `param_arg`
// (or -1) a width or radius. Rows with any NULL argument are skipped.
Datum accumulate(FunctionCallInfo fcinfo, int dims, int nb_arg, int param_arg,
                 const char* param_name) {
  MemoryContext ctx = agg_context(fcinfo);
  PointsState* st = PG_ARGISNULL(0) ? nullptr : (PointsState*)PG_GETARG_POINTER(0);
  int nargs = PG_NARGS();
  for (int a = 1; a < nargs; ++a)
    if (PG_ARGISNULL(a)) {
      if (st) PG_RETURN_POINTER(st);
      PG_RETURN_NULL();
    }
  int32 nbuckets = nb_arg > 0 ? PG_GETARG_INT32(nb_arg) : 0;
  double param = param_arg > 0 ? PG_GETARG_FLOAT8(param_arg) : 0;
  if (!st) {
    st = new_state(ctx, dims, nbuckets, param_arg > 0, param);  // validated by the final function
  } else {
    if (nb_arg > 0) check_same(st->nbuckets == nbuckets, "nbuckets");
    if (param_arg > 0)
      check_same(st->param == param || (std::isnan(st->param) && std::isnan(param)), param_name);
  }
  double v[3];
  for (int k = 0; k < dims; ++k) {
    v[k] = PG_GETARG_FLOAT8(1 + k);
    if (!std::isfinite(v[k]))
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("coordinate %s is not finite", kCoordNames[k]),
                      errdetail("Argument %s has the value %s; NaN and infinite coordinates are not accepted.",
                                kCoordNames[k], std::isnan(v[k]) ? "NaN" : (v[k] > 0 ? "Infinity" : "-Infinity")),
                      errhint("Filter the rows, for example WHERE %s <> 'NaN'.", kCoordNames[k])));
  }
  reserve(ctx, st, 1);
  for (int k = 0; k < dims; ++k) st->coord[k][st->n] = v[k];
  st->n++;
  PG_RETURN_POINTER(st);
}

}  // namespace

}  // namespace pg
}  // namespace gpu2bs

using gpu2bs::pg::PointsState;
using gpu2bs::pg::accumulate;

extern "C" {

// gpu_sdh(x, y, z, nbuckets) transition.
PG_FUNCTION_INFO_V1(gpu2bs_sdh3_sfunc);
Datum gpu2bs_sdh3_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 3, 4, -1, nullptr); }

// gpu_sdh(x, y, z, nbuckets, width) transition.
PG_FUNCTION_INFO_V1(gpu2bs_sdh3w_sfunc);
Datum gpu2bs_sdh3w_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 3, 4, 5, "width"); }

// gpu_sdh(x, y, nbuckets) transition.
PG_FUNCTION_INFO_V1(gpu2bs_sdh2_sfunc);
Datum gpu2bs_sdh2_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 2, 3, -1, nullptr); }

// gpu_sdh(x, y, nbuckets, width) transition.
PG_FUNCTION_INFO_V1(gpu2bs_sdh2w_sfunc);
Datum gpu2bs_sdh2w_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 2, 3, 4, "width"); }

// gpu_pair_count(x, y, z, r) transition.
PG_FUNCTION_INFO_V1(gpu2bs_count3_sfunc);
Datum gpu2bs_count3_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 3, -1, 4, "r"); }

// gpu_pair_count(x, y, r) transition.
PG_FUNCTION_INFO_V1(gpu2bs_count2_sfunc);
Datum gpu2bs_count2_sfunc(PG_FUNCTION_ARGS) { return accumulate(fcinfo, 2, -1, 3, "r"); }

// Combine: appends the second state's points to the first (copied into the aggregate context).
PG_FUNCTION_INFO_V1(gpu2bs_points_combine);
Datum gpu2bs_points_combine(PG_FUNCTION_ARGS) {
  MemoryContext ctx = gpu2bs::pg::agg_context(fcinfo);
  PointsState* a = PG_ARGISNULL(0) ? nullptr : (PointsState*)PG_GETARG_POINTER(0);
  PointsState* b = PG_ARGISNULL(1) ? nullptr : (PointsState*)PG_GETARG_POINTER(1);
  if (!b) {
    if (a) PG_RETURN_POINTER(a);
    PG_RETURN_NULL();
  }
  if (!a) a = gpu2bs::pg::new_state(ctx, b->dims, b->nbuckets, b->has_param, b->param);
  gpu2bs::pg::check_same(a->nbuckets == b->nbuckets, "nbuckets");
  // NaN-aware like the transition function: NaN in every row is the same parameter (and the
  // final function then reports it), not a mismatch between the partial states.
  gpu2bs::pg::check_same(a->param == b->param || (std::isnan(a->param) && std::isnan(b->param)),
                         "the width or radius");
  gpu2bs::pg::reserve(ctx, a, b->n);
  for (int k = 0; k < a->dims && b->n > 0; ++k)
    memcpy(a->coord[k] + a->n, b->coord[k], Size(b->n) * sizeof(double));
  a->n += b->n;
  a->first_row = Min(a->first_row, b->first_row);  // the scan began with the earliest part
  PG_RETURN_POINTER(a);
}

// Serialize: header then the coordinates, as a bytea (at most 1 GB).
PG_FUNCTION_INFO_V1(gpu2bs_points_serialize);
Datum gpu2bs_points_serialize(PG_FUNCTION_ARGS) {
  PointsState* st = (PointsState*)PG_GETARG_POINTER(0);
  Size payload = Size(st->n) * Size(st->dims) * sizeof(double);
  if (payload > MaxAllocSize - 1024)
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                    errmsg("too many points in a parallel worker's partial aggregate"),
                    errhint("Set max_parallel_workers_per_gather = 0 for this query.")));
  StringInfoData buf;
  pq_begintypsend(&buf);
  enlargeStringInfo(&buf, int(payload) + 64);  // one allocation, no doubling copies
  pq_sendint32(&buf, st->dims);
  pq_sendint32(&buf, st->nbuckets);
  pq_sendbyte(&buf, st->has_param ? 1 : 0);
  pq_sendfloat8(&buf, st->param);
  pq_sendint64(&buf, st->n);
  pq_sendint64(&buf, st->first_row);
  for (int k = 0; k < st->dims; ++k) pq_sendbytes(&buf, (const char*)st->coord[k], int(st->n * sizeof(double)));
  PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

// Deserialize: the inverse of serialize, into the current (aggregate) context.
PG_FUNCTION_INFO_V1(gpu2bs_points_deserialize);
Datum gpu2bs_points_deserialize(PG_FUNCTION_ARGS) {
  bytea* raw = PG_GETARG_BYTEA_PP(0);
  StringInfoData buf;
  buf.data = VARDATA_ANY(raw);
  buf.len = int(VARSIZE_ANY_EXHDR(raw));
  buf.maxlen = 0;
  buf.cursor = 0;
  int32 dims = pq_getmsgint(&buf, 4);
  int32 nbuckets = pq_getmsgint(&buf, 4);
  bool has_param = pq_getmsgbyte(&buf) != 0;
  double param = pq_getmsgfloat8(&buf);
  int64 n = pq_getmsgint64(&buf);
  TimestampTz first_row = pq_getmsgint64(&buf);
  if (dims < 2 || dims > 3 || n < 0)
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("invalid gpu2bs aggregate state")));
  PointsState* st = gpu2bs::pg::new_state(CurrentMemoryContext, dims, nbuckets, has_param, param);
  gpu2bs::pg::reserve(CurrentMemoryContext, st, n);
  for (int k = 0; k < dims && n > 0; ++k)
    memcpy(st->coord[k], pq_getmsgbytes(&buf, int(n * sizeof(double))), Size(n) * sizeof(double));
  st->n = n;
  st->first_row = first_row;
  pq_getmsgend(&buf);
  PG_RETURN_POINTER(st);
}

}  // extern "C"
