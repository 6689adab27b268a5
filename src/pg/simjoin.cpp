// gpu_simjoin: the distance similarity join as a set-returning function. The relation is read
// through SPI as the calling user (privileges and row-level security apply), the engine runs,
// and result pages stream into a tuplestore (materialize mode, spills past work_mem).
#include "pg.h"

extern "C" {
#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
}

#include <chrono>
#include <cmath>

#include "../core/error.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// Integer types accepted for the key column (or domains over them).
bool is_int_type(Oid t) {
  t = getBaseType(t);
  return t == INT2OID || t == INT4OID || t == INT8OID;
}

// Numeric types accepted for named coordinate columns (cast to float8), or domains over them.
bool is_numeric_type(Oid t) {
  t = getBaseType(t);
  return is_int_type(t) || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

// Attribute number of column `name` (not dropped, not system), or an error.
AttrNumber find_column(TupleDesc td, const char* name, const char* relname) {
  for (int a = 0; a < td->natts; ++a) {
    Form_pg_attribute att = TupleDescAttr(td, a);
    if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0) return AttrNumber(a + 1);
  }
  ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                  errmsg("column \"%s\" of relation %s does not exist", name, relname)));
  return InvalidAttrNumber;
}

// The single-column integer primary key of `rel`, or InvalidAttrNumber.
AttrNumber primary_key_column(Relation rel) {
  Oid pk = InvalidOid;
  if (rel->rd_rel->relkind == RELKIND_RELATION || rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ||
      rel->rd_rel->relkind == RELKIND_MATVIEW) {
    List* idx = RelationGetIndexList(rel);
    pk = rel->rd_pkindex;
    list_free(idx);
  }
  if (!OidIsValid(pk)) return InvalidAttrNumber;
  Relation irel = index_open(pk, AccessShareLock);
  AttrNumber col = InvalidAttrNumber;
  if (irel->rd_index->indnkeyatts == 1) col = irel->rd_index->indkey.values[0];
  index_close(irel, AccessShareLock);
  if (col > 0 && is_int_type(TupleDescAttr(RelationGetDescr(rel), col - 1)->atttypid)) return col;
  return InvalidAttrNumber;
}

// Builds the SELECT that reads `relid` (key and coordinates, schema-qualified and quoted, so
// names cannot inject SQL and search_path plays no part). `coords` may be NULL (default rule).
// `keyless`: no key column is looked up; the query's first column is the constant 0.
char* build_query(Oid relid, ArrayType* coords, const char* id_name, int* dims_out,
                  const char** relname_out, int64* expect_out, bool keyless = false) {
  // try_relation_open: a stale OID (a dropped relation) is 42P01, not an internal error.
  Relation rel = try_relation_open(relid, AccessShareLock);
  if (!rel)
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                    errmsg("relation with OID %u does not exist", relid)));
  char kind = rel->rd_rel->relkind;
  *expect_out = rel->rd_rel->reltuples > 0 ? int64(std::min<double>(rel->rd_rel->reltuples, 4e9)) : 0;
  const char* relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                   RelationGetRelationName(rel));
  if (kind != RELKIND_RELATION && kind != RELKIND_VIEW && kind != RELKIND_MATVIEW &&
      kind != RELKIND_PARTITIONED_TABLE && kind != RELKIND_FOREIGN_TABLE)
    ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                    errmsg("%s is not a table, view or materialized view", relname)));
  TupleDesc td = RelationGetDescr(rel);
  AttrNumber key = InvalidAttrNumber;
  if (keyless) {
    // no key: coordinates only
  } else if (id_name) {
    key = find_column(td, id_name, relname);
    if (!is_int_type(TupleDescAttr(td, key - 1)->atttypid))
      ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                      errmsg("key column \"%s\" must be of type smallint, integer or bigint", id_name)));
  } else {
    key = primary_key_column(rel);
    if (key == InvalidAttrNumber) {
      for (int a = 0; a < td->natts; ++a) {
        Form_pg_attribute att = TupleDescAttr(td, a);
        if (!att->attisdropped && strcmp(NameStr(att->attname), "id") == 0 && is_int_type(att->atttypid))
          key = AttrNumber(a + 1);
      }
    }
    if (key == InvalidAttrNumber)
      ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                      errmsg("relation %s has no integer key column", relname),
                      errdetail("The key is the single-column integer primary key, else an integer column named \"id\"."),
                      errhint("Name the key column, for example gpu_simjoin('pts', 0.5, id => 'star_id').")));
  }
  AttrNumber cols[kMaxDims];
  int dims = 0;
  if (coords) {
    Datum* elems;
    bool* nulls;
    int nelems;
    deconstruct_array(coords, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
    if (nelems < 2 || nelems > kMaxDims)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("coords must name 2 to %d columns", kMaxDims),
                      errdetail("%d columns were named.", nelems)));
    for (int e = 0; e < nelems; ++e) {
      if (nulls[e])
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("coords must not contain NULL")));
      char* name = text_to_cstring(DatumGetTextPP(elems[e]));
      AttrNumber c = find_column(td, name, relname);
      if (!is_numeric_type(TupleDescAttr(td, c - 1)->atttypid))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("coordinate column \"%s\" is not numeric", name),
                        errdetail("Column \"%s\" has type %s.", name, format_type_be(TupleDescAttr(td, c - 1)->atttypid))));
      cols[dims++] = c;
    }
  } else {
    for (int a = 0; a < td->natts; ++a) {
      Form_pg_attribute att = TupleDescAttr(td, a);
      if (att->attisdropped || AttrNumber(a + 1) == key || getBaseType(att->atttypid) != FLOAT8OID) continue;
      if (dims == kMaxDims)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("relation %s has more than %d float8 columns", relname, kMaxDims),
                        errhint("Name the coordinate columns, for example coords => '{x,y,z}'.")));
      cols[dims++] = AttrNumber(a + 1);
    }
    if (dims < 2)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("relation %s has fewer than 2 float8 coordinate columns", relname),
                      errhint("Name the coordinate columns, for example coords => '{x,y}'.")));
  }
  StringInfoData q;
  initStringInfo(&q);
  if (keyless)
    appendStringInfoString(&q, "SELECT 0::pg_catalog.int8");
  else
    appendStringInfo(&q, "SELECT (%s)::pg_catalog.int8",
                     quote_identifier(NameStr(TupleDescAttr(td, key - 1)->attname)));
  for (int k = 0; k < dims; ++k)
    appendStringInfo(&q, ", (%s)::pg_catalog.float8",
                     quote_identifier(NameStr(TupleDescAttr(td, cols[k] - 1)->attname)));
  appendStringInfo(&q, " FROM %s", relname);
  relation_close(rel, AccessShareLock);
  *dims_out = dims;
  *relname_out = relname;
  return q.data;
}

// Grows the arrays of `out` (allocated in `ctx`) to hold at least `need` rows.
void grow_points(RelPoints* out, MemoryContext ctx, int64 need) {
  int64 cap = out->cap ? out->cap : 16384;
  while (cap < need) cap *= 2;
  if (cap > int64(UINT32_MAX) + 1)
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                    errmsg("too many rows in %s for %s", out->relname,
                           out->keyless ? "gpu2bs" : "a similarity join")));
  if (!out->keyless)
    out->ids = (int64*)realloc_big(ctx, out->ids, Size(out->n) * sizeof(int64), Size(cap) * sizeof(int64));
  for (int k = 0; k < out->dims; ++k)
    out->coord[k] = (double*)realloc_big(ctx, out->coord[k], Size(out->n) * sizeof(double),
                                         Size(cap) * sizeof(double));
  out->cap = cap;
}

// Receives the query's rows straight from the executor (no SPI tuple table, no tuple copies).
struct PointsReceiver {
  DestReceiver pub;  // first member: the executor sees a DestReceiver
  RelPoints* out;
  MemoryContext ctx;
  bool bad;                    // a NaN or infinite coordinate stopped the query
  bool bad_nan;
  int64 bad_key;
  char bad_col[NAMEDATALEN];
};

// One row (key, coordinates...): skipped when any is NULL; a NaN or infinite coordinate is
// recorded and stops the query (the error is raised after SPI returns, without its context);
// else appended.
bool receive_point(TupleTableSlot* slot, DestReceiver* self) {
  PointsReceiver* r = (PointsReceiver*)self;
  RelPoints* out = r->out;
  slot_getallattrs(slot);
  if (slot->tts_isnull[0]) return true;
  double v[kMaxDims];
  for (int k = 0; k < out->dims; ++k) {
    if (slot->tts_isnull[1 + k]) return true;
    v[k] = DatumGetFloat8(slot->tts_values[1 + k]);
  }
  for (int k = 0; k < out->dims; ++k)
    if (!std::isfinite(v[k])) {
      r->bad = true;
      r->bad_nan = std::isnan(v[k]);
      r->bad_key = DatumGetInt64(slot->tts_values[0]);
      strlcpy(r->bad_col, NameStr(TupleDescAttr(slot->tts_tupleDescriptor, 1 + k)->attname), NAMEDATALEN);
      return false;
    }
  if (out->n == out->cap) grow_points(out, r->ctx, out->n + 1);
  if (!out->keyless) out->ids[out->n] = DatumGetInt64(slot->tts_values[0]);
  for (int k = 0; k < out->dims; ++k) out->coord[k][out->n] = v[k];
  out->n++;
  return true;
}

// DestReceiver callbacks with nothing to do.
void receiver_startup(DestReceiver*, int, TupleDesc) {}
void receiver_noop(DestReceiver*) {}

// Runs `query` through SPI as the calling user (privileges and row-level security apply) with
// its rows streamed into `out` (allocated in `ctx`) by a DestReceiver.
void read_points(const char* query, MemoryContext ctx, RelPoints* out) {
  SPIPlanPtr plan = SPI_prepare(query, 0, nullptr);
  if (!plan) elog(ERROR, "SPI_prepare failed for \"%s\": %s", query, SPI_result_code_string(SPI_result));
  PointsReceiver recv;
  memset(&recv, 0, sizeof recv);
  recv.pub.receiveSlot = receive_point;
  recv.pub.rStartup = receiver_startup;
  recv.pub.rShutdown = receiver_noop;
  recv.pub.rDestroy = receiver_noop;
  recv.pub.mydest = DestNone;
  recv.out = out;
  recv.ctx = ctx;
  // Room for the rows the catalog expects (plus 1/16): usually one allocation, no copies.
  if (out->expect > 0) grow_points(out, ctx, std::min<int64>(out->expect + out->expect / 16 + 1024, int64(UINT32_MAX) + 1));
  SPIExecuteOptions opts;
  memset(&opts, 0, sizeof opts);
  opts.read_only = true;
  opts.dest = &recv.pub;
  // A SELECT whose rows go to a DestNone receiver reports SPI_OK_UTILITY (SPI keeps no rows);
  // every row still went through receive_point.
  const int rc = SPI_execute_plan_extended(plan, &opts);
  if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
    elog(ERROR, "SPI_execute_plan_extended failed for \"%s\": %s", query, SPI_result_code_string(rc));
  SPI_freeplan(plan);
  if (recv.bad && out->keyless)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("column \"%s\" of %s has a non-finite value", recv.bad_col, out->relname),
                    errdetail("A row has %s; NaN and infinite coordinates are not accepted.",
                              recv.bad_nan ? "NaN" : "an infinite value"),
                    errhint("Filter the rows through a view, for example WHERE %s <> 'NaN'.", recv.bad_col)));
  if (recv.bad)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("column \"%s\" of %s has a non-finite value", recv.bad_col, out->relname),
                    errdetail("The row with key " INT64_FORMAT " has %s; NaN and infinite coordinates are not accepted.",
                              recv.bad_key, recv.bad_nan ? "NaN" : "an infinite value")));
}

PointsView view_of(const RelPoints& r) {
  PointsView v;
  v.dims = r.dims;
  v.n = size_t(r.n);
  for (int k = 0; k < r.dims; ++k) v.coord[k] = r.coord[k];
  return v;
}

// Writes result pages into the SRF's tuplestore as (id1, id2, dist).
class TuplestoreSink final : public PairSink {
 public:
  TuplestoreSink(ReturnSetInfo* rsinfo, const int64* ids_a, const int64* ids_b, bool self)
      : rsinfo_(rsinfo), ids_a_(ids_a), ids_b_(ids_b), self_(self) {}
  void consume(const PairRecord* pairs, size_t n) override {
    ReturnSetInfo* rs = rsinfo_;
    const int64* ia = ids_a_;
    const int64* ib = ids_b_;
    const bool self = self_;
    pg_guard([&] {
      Datum values[3];
      bool nulls[3] = {false, false, false};
      for (size_t p = 0; p < n; ++p) {
        int64 a = ia[pairs[p].i], b = ib[pairs[p].j];
        if (self && a > b) {
          int64 t = a;
          a = b;
          b = t;
        }
        values[0] = Int64GetDatum(a);
        values[1] = Int64GetDatum(b);
        values[2] = Float8GetDatum(pairs[p].dist);
        tuplestore_putvalues(rs->setResult, rs->setDesc, values, nulls);
      }
    });
  }

 private:
  ReturnSetInfo* rsinfo_;
  const int64* ids_a_;
  const int64* ids_b_;
  bool self_;
};

// A float8 as PostgreSQL prints it (shortest exact form: "-1", "1e-300", "-Infinity").
std::string shortest(double v) {
  char buf[64];
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  for (int prec = 1; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

namespace gpu2bs {
namespace pg {

bool simjoin_args(FunctionCallInfo fcinfo, int nrel, SimjoinArgs* a) {
  for (int k = 0; k <= nrel; ++k)
    if (PG_ARGISNULL(k)) return false;  // NULL relation or eps: no rows
  a->nrel = nrel;
  a->relids[0] = PG_GETARG_OID(0);
  a->relids[1] = nrel == 2 ? PG_GETARG_OID(1) : InvalidOid;
  a->eps = PG_GETARG_FLOAT8(nrel);
  a->coords = PG_ARGISNULL(nrel + 1) ? nullptr : PG_GETARG_ARRAYTYPE_P(nrel + 1);
  a->id = PG_ARGISNULL(nrel + 2) ? nullptr : PG_GETARG_TEXT_PP(nrel + 2);
  return true;
}

void simjoin_read(const SimjoinArgs& a, SimjoinInput* in) {
  if (std::isnan(a.eps) || a.eps <= 0)
    throw Error(ErrorCode::InvalidParameter, "eps must be a positive number",
                std::isnan(a.eps) ? std::string("eps is NaN.") : "eps is " + shortest(a.eps) + ".");
  in->nrel = a.nrel;
  RelPoints* rels = in->rels;
  const auto t0 = std::chrono::steady_clock::now();
  pg_guard([&] {
    in->ctx = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs simjoin points", ALLOCSET_DEFAULT_SIZES);
    const char* id_name = a.id ? text_to_cstring(a.id) : nullptr;
    const char* queries[2];
    for (int r = 0; r < a.nrel; ++r)
      queries[r] = build_query(a.relids[r], a.coords, id_name, &rels[r].dims, &rels[r].relname,
                               &rels[r].expect);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    for (int r = 0; r < a.nrel; ++r) read_points(queries[r], in->ctx, &rels[r]);
    SPI_finish();
  });
  in->scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void read_coordinates(Oid relid, ArrayType* coords, SimjoinInput* in) {
  in->nrel = 1;
  RelPoints* rel = &in->rels[0];
  rel->keyless = true;
  const auto t0 = std::chrono::steady_clock::now();
  pg_guard([&] {
    in->ctx = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs relation points", ALLOCSET_DEFAULT_SIZES);
    const char* query = build_query(relid, coords, nullptr, &rel->dims, &rel->relname, &rel->expect, true);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    read_points(query, in->ctx, rel);
    SPI_finish();
  });
  in->scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void simjoin_run(const SimjoinArgs& a, SimjoinInput* in, PairSink& sink) {
  const int nrel = a.nrel;
  const RelPoints* rels = in->rels;
  Precision prec = current_precision();
  PointsView va = view_of(rels[0]);
  PointsView vb = nrel == 2 ? view_of(rels[1]) : va;
  if (nrel == 2 && vb.dims != va.dims)
    throw Error(ErrorCode::InvalidParameter, "relations have different numbers of coordinates",
                std::string(rels[0].relname) + " has " + std::to_string(va.dims) + ", " +
                    rels[1].relname + " has " + std::to_string(vb.dims) + ".");
  check_range(compute_bounds(va, nrel == 2 ? &vb : nullptr), prec);
  SimjoinProblem prob = make_simjoin(va, nrel == 2 ? &vb : nullptr, a.eps, prec,
                                     uint64_t(max_result_rows_setting));
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in->scan_s;
  eng->simjoin(prob, sink, ctl);
  record_run("gpu_simjoin", eng->name(), ctl.stats);
}

}  // namespace pg
}  // namespace gpu2bs

namespace {

// Shared body of both SRF forms: `nrel` relations in args 0..nrel-1, then eps, coords, id.
Datum simjoin_impl(FunctionCallInfo fcinfo, int nrel) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  SimjoinArgs args;
  if (!simjoin_args(fcinfo, nrel, &args)) return (Datum)0;
  SimjoinInput in;
  simjoin_read(args, &in);
  TuplestoreSink sink(rsinfo, in.rels[0].ids, in.rels[nrel - 1].ids, nrel == 1);
  simjoin_run(args, &in, sink);
  MemoryContext ctx = in.ctx;
  pg_guard([&] { MemoryContextDelete(ctx); });
  return (Datum)0;
}

}  // namespace

// gpu_simjoin(rel, eps, coords, id): self-join, each unordered pair once with id1 < id2.
GPU2BS_FUNCTION(gpu2bs_simjoin_self) { return simjoin_impl(fcinfo, 1); }

// gpu_simjoin(a, b, eps, coords, id): every (a, b) pair within eps.
GPU2BS_FUNCTION(gpu2bs_simjoin_two) { return simjoin_impl(fcinfo, 2); }
