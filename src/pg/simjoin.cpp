// gpu_simjoin: the distance similarity join as a set-returning function. The relation is read
// through SPI as the calling user (privileges and row-level security apply), the engine runs,
// and result pages stream into a tuplestore (materialize mode, spills past work_mem).
#include "pg.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <chrono>
#include <cmath>

#include "../core/error.h"
#include "../core/periodic.h"
#include "../core/pipeline.h"
#include "admission.h"
#include "heap_read.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace gpu2bs {
namespace pg {

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

// A user-supplied name as shown in messages: at most NAMEDATALEN - 1 bytes (whole characters,
// "..." when cut), so a huge name does not flood the message.
const char* shown_name(const char* s) {
  const int len = int(strlen(s));
  if (len < NAMEDATALEN) return s;
  const int keep = pg_mbcliplen(s, len, NAMEDATALEN - 4);
  return psprintf("%.*s...", keep, s);
}

// Attribute number of column `name` (not dropped, not system), or an error.
AttrNumber find_column(TupleDesc td, const char* name, const char* relname) {
  for (int a = 0; a < td->natts; ++a) {
    Form_pg_attribute att = TupleDescAttr(td, a);
    if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0) return AttrNumber(a + 1);
  }
  ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                  errmsg("column \"%s\" of relation %s does not exist", shown_name(name), relname)));
  return InvalidAttrNumber;
}

enum PostgisKind { NOT_POSTGIS = 0, PG_GEOMETRY = 1, PG_GEOGRAPHY = 2 };

// PostGIS type of `typid` (domains resolved). The type is recognised by its name and by being a
// member of the extension postgis, never through search_path; `nsp` receives its schema, where
// PostGIS's functions are too.
PostgisKind postgis_kind(Oid typid, const char** nsp) {
  typid = getBaseType(typid);
  if (typid < FirstNormalObjectId) return NOT_POSTGIS;
  HeapTuple tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
  if (!HeapTupleIsValid(tup)) return NOT_POSTGIS;
  Form_pg_type t = (Form_pg_type)GETSTRUCT(tup);
  const PostgisKind kind = strcmp(NameStr(t->typname), "geometry") == 0    ? PG_GEOMETRY
                           : strcmp(NameStr(t->typname), "geography") == 0 ? PG_GEOGRAPHY
                                                                           : NOT_POSTGIS;
  const Oid typnsp = t->typnamespace;
  ReleaseSysCache(tup);
  if (kind == NOT_POSTGIS) return NOT_POSTGIS;
  const Oid ext = getExtensionOfObject(TypeRelationId, typid);
  const char* extname = OidIsValid(ext) ? get_extension_name(ext) : nullptr;
  if (!extname || strcmp(extname, "postgis") != 0) return NOT_POSTGIS;
  *nsp = get_namespace_name(typnsp);
  return kind;
}

// PostGIS's typmod of geometry(type, srid): the geometry type (0 any, 1 point), Z flag.
int geometry_typmod_type(int32 typmod) { return (typmod & 0x000000FC) >> 2; }
bool geometry_typmod_z(int32 typmod) { return (typmod & 0x00000002) != 0; }

// Appends to `q` the select list that reads the PostGIS point column `col` (schema `nsp`):
// x, y [, z] (NULL for a non-point), then its SRID and its shape (ST_Zmflag for a point, -1 for
// any other geometry, NULL for NULL), so the receiver can refuse what is not a point of the
// right dimension.
void append_geometry_columns(StringInfo q, const char* nsp, const char* col, int dims) {
  auto fn = [&](const char* f) { return quote_qualified_identifier(nsp, f); };
  const char* is_point = psprintf("%s(%s) = 'ST_Point'", fn("st_geometrytype"), col);
  const char* axes[3] = {"st_x", "st_y", "st_z"};
  for (int k = 0; k < dims; ++k)
    appendStringInfo(q, ", (CASE WHEN %s THEN %s(%s) END)::pg_catalog.float8", is_point, fn(axes[k]), col);
  appendStringInfo(q, ", %s(%s), (CASE WHEN %s IS NULL THEN NULL WHEN %s THEN %s(%s) ELSE -1 END)::pg_catalog.int4",
                   fn("st_srid"), col, col, is_point, fn("st_zmflag"), col);
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

// Locks relation `relid` (AccessShareLock, as any scan, kept to the end of the transaction) and
// opens it. Waits for a concurrent ALTER, DROP or rewrite to finish; the relation is then read
// as it is after that change: a relation dropped meanwhile is 42P01.
Relation open_locked(Oid relid) {
  LockRelationOid(relid, AccessShareLock);  // also processes the invalidations it waited for
  if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid))) {
    UnlockRelationOid(relid, AccessShareLock);
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                    errmsg("relation with OID %u does not exist", relid),
                    errdetail("The relation was dropped, possibly by a concurrent transaction."),
                    errhint("Run the query again: a relation re-created under the same name has a new OID.")));
  }
  return relation_open(relid, NoLock);
}

// Quoted, schema-qualified name of the locked relation `rel`, from the catalog (names cannot
// inject SQL); sets *expect to its row estimate (0 when unknown); 42809 unless it is a table,
// view, materialized view, partitioned or foreign table.
const char* readable_relation_name(Relation rel, int64* expect) {
  const char kind = rel->rd_rel->relkind;
  *expect = rel->rd_rel->reltuples > 0 ? int64(std::min<double>(rel->rd_rel->reltuples, 4e9)) : 0;
  const char* relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                   RelationGetRelationName(rel));
  if (kind != RELKIND_RELATION && kind != RELKIND_VIEW && kind != RELKIND_MATVIEW &&
      kind != RELKIND_PARTITIONED_TABLE && kind != RELKIND_FOREIGN_TABLE)
    ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                    errmsg("%s is not a table, view or materialized view", relname)));
  return relname;
}

// Key column of `rel` (descriptor `td`, shown as `relname`): column `id_name` when given (an
// integer column, else 42804 naming it as `id_shown`), else the single-column integer primary
// key, else the integer column named "id", else 42703 with hint `hint`.
AttrNumber key_column(Relation rel, TupleDesc td, const char* relname, const char* id_name,
                      const char* id_shown, const char* hint) {
  AttrNumber key = InvalidAttrNumber;
  if (id_name) {
    key = find_column(td, id_name, relname);
    if (!is_int_type(TupleDescAttr(td, key - 1)->atttypid))
      ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                      errmsg("key column \"%s\" must be of type smallint, integer or bigint", id_shown)));
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
                      errhint("%s", hint)));
  }
  return key;
}

// DestReceiver callbacks with nothing to do.
static void receiver_startup(DestReceiver*, int, TupleDesc) {}
static void receiver_noop(DestReceiver*) {}

// Runs `plan` through SPI as the calling user (privileges and row-level security apply) under
// the active snapshot, read-only, with its rows handed one by one to `receive` (no SPI tuple
// table, no tuple copies). `recv` is the zeroed first member of the caller's receiver.
void run_plan_into(SPIPlanPtr plan, DestReceiver* recv,
                   bool (*receive)(TupleTableSlot*, DestReceiver*), const char* what) {
  recv->receiveSlot = receive;
  recv->rStartup = receiver_startup;
  recv->rShutdown = receiver_noop;
  recv->rDestroy = receiver_noop;
  recv->mydest = DestNone;
  SPIExecuteOptions opts;
  memset(&opts, 0, sizeof opts);
  opts.read_only = true;
  opts.dest = recv;
  // A SELECT whose rows go to a DestNone receiver reports SPI_OK_UTILITY (SPI keeps no rows);
  // every row still went through `receive`.
  const int rc = SPI_execute_plan_extended(plan, &opts);
  if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
    elog(ERROR, "SPI_execute_plan_extended failed for %s: %s", what, SPI_result_code_string(rc));
}

}  // namespace pg
}  // namespace gpu2bs

namespace {

// Builds the SELECT that reads the locked relation `rel` (key and coordinates, schema-qualified
// and quoted from the catalog under the lock, so names cannot inject SQL and search_path plays
// no part). The columns are looked up in the descriptor as it is under the lock. `coords` may be
// NULL (default rule). With out->keyless no key column is looked up and the query's first
// column is the constant 0.
char* build_query(Relation rel, ArrayType* coords, const char* id_name, RelPoints* out) {
  out->relid = RelationGetRelid(rel);
  const char* relname = readable_relation_name(rel, &out->expect);
  out->relname = relname;
  TupleDesc td = RelationGetDescr(rel);
  AttrNumber key = InvalidAttrNumber;
  if (!out->keyless)  // else coordinates only
    key = key_column(rel, td, relname, id_name, id_name ? shown_name(id_name) : nullptr,
                     "Name the key column, for example gpu_simjoin('pts', 0.5, id => 'star_id').");
  AttrNumber cols[kMaxDims];
  int dims = 0;
  const char* geom_nsp = nullptr;  // set when the coordinates come from a PostGIS point column
  AttrNumber wcol = InvalidAttrNumber;  // the weight column (out->weight_name), a numeric one
  if (out->weight_name) {
    wcol = find_column(td, out->weight_name, relname);
    if (!is_numeric_type(TupleDescAttr(td, wcol - 1)->atttypid))
      ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                      errmsg("weight column \"%s\" is not numeric", shown_name(out->weight_name)),
                      errdetail("Column \"%s\" has type %s.", shown_name(out->weight_name),
                                format_type_be(TupleDescAttr(td, wcol - 1)->atttypid))));
  }
  if (coords) {
    if (ARR_NDIM(coords) > 1)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("coords must be a one-dimensional array of column names"),
                      errdetail("The array has %d dimensions.", ARR_NDIM(coords))));
    Datum* elems;
    bool* nulls;
    int nelems;
    deconstruct_array(coords, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
    for (int e = 0; e < nelems; ++e)
      if (nulls[e])
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("coords must not contain NULL")));
    if (nelems == 1) {
      // One column: a PostGIS point column (x, y from geometry(Point), x, y, z from PointZ).
      char* name = text_to_cstring(DatumGetTextPP(elems[0]));
      AttrNumber c = find_column(td, name, relname);
      Form_pg_attribute att = TupleDescAttr(td, c - 1);
      const char* nsp = nullptr;
      const PostgisKind pk = postgis_kind(att->atttypid, &nsp);
      if (pk == PG_GEOGRAPHY)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("column \"%s\" of %s is of type geography", shown_name(name), relname),
                        errdetail("gpu2bs computes Euclidean distances in the units of the coordinates; geography distances are on the spheroid."),
                        errhint("Project the points to a planar SRID and pass geometry, for example a view with ST_Transform(%s::geometry, 3857) AS geom.",
                                quote_identifier(shown_name(name)))));
      if (pk != PG_GEOMETRY)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("coords must name 2 to %d columns, or one geometry column", kMaxDims),
                        errdetail("Column \"%s\" has type %s; a single coordinate column must be a PostGIS geometry(Point) or geometry(PointZ).",
                                  shown_name(name), format_type_be(att->atttypid))));
      int32 typmod = att->atttypmod;
      if (typmod < 0 && att->atttypid != getBaseType(att->atttypid))
        getBaseTypeAndTypmod(att->atttypid, &typmod);
      const int gtype = typmod >= 0 ? geometry_typmod_type(typmod) : 0;
      if (gtype != 0 && gtype != 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("geometry column \"%s\" of %s is not a point column", shown_name(name), relname),
                        errdetail("Its type is %s; only points are accepted.",
                                  format_type_with_typemod(att->atttypid, att->atttypmod))));
      dims = typmod >= 0 && geometry_typmod_z(typmod) ? 3 : 2;
      cols[0] = c;
      geom_nsp = nsp;
      out->geometry = true;
      out->geom_col = pstrdup(NameStr(att->attname));
    } else {
      if (nelems < 2 || nelems > kMaxDims)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("coords must name 2 to %d columns", kMaxDims),
                        errdetail("%d columns were named.", nelems)));
      for (int e = 0; e < nelems; ++e) {
        char* name = text_to_cstring(DatumGetTextPP(elems[e]));
        AttrNumber c = find_column(td, name, relname);
        const char* nsp = nullptr;
        if (!is_numeric_type(TupleDescAttr(td, c - 1)->atttypid))
          ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                          errmsg("coordinate column \"%s\" is not numeric", shown_name(name)),
                          errdetail("Column \"%s\" has type %s.", shown_name(name),
                                    format_type_be(TupleDescAttr(td, c - 1)->atttypid)),
                          postgis_kind(TupleDescAttr(td, c - 1)->atttypid, &nsp) != NOT_POSTGIS
                              ? errhint("A PostGIS point column is named alone: coords => '{%s}'.", shown_name(name))
                              : 0));
        cols[dims++] = c;
      }
    }
  } else {
    for (int a = 0; a < td->natts; ++a) {
      Form_pg_attribute att = TupleDescAttr(td, a);
      if (att->attisdropped || AttrNumber(a + 1) == key || AttrNumber(a + 1) == wcol ||
          getBaseType(att->atttypid) != FLOAT8OID)
        continue;
      if (dims == kMaxDims)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("relation %s has more than %d float8 columns", relname, kMaxDims),
                        errhint("Name the coordinate columns, for example coords => '{x,y,z}'.")));
      cols[dims++] = AttrNumber(a + 1);
    }
    if (dims < 2)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("relation %s has fewer than 2 float8 coordinate columns", relname),
                      errhint("Name the coordinate columns, for example coords => '{x,y}', or a PostGIS point column, coords => '{geom}'.")));
  }
  StringInfoData q;
  initStringInfo(&q);
  if (out->keyless)
    appendStringInfoString(&q, "SELECT 0::pg_catalog.int8");
  else
    appendStringInfo(&q, "SELECT (%s)::pg_catalog.int8",
                     quote_identifier(NameStr(TupleDescAttr(td, key - 1)->attname)));
  if (geom_nsp) {
    append_geometry_columns(&q, geom_nsp, quote_identifier(NameStr(TupleDescAttr(td, cols[0] - 1)->attname)), dims);
  } else {
    for (int k = 0; k < dims; ++k)
      appendStringInfo(&q, ", (%s)::pg_catalog.float8",
                       quote_identifier(NameStr(TupleDescAttr(td, cols[k] - 1)->attname)));
  }
  if (wcol != InvalidAttrNumber)  // the last column of the query
    appendStringInfo(&q, ", (%s)::pg_catalog.float8", quote_identifier(NameStr(TupleDescAttr(td, wcol - 1)->attname)));
  appendStringInfo(&q, " FROM %s", relname);
  out->dims = dims;
  // The direct reader reads keys and coordinates only: a weight column goes through SPI.
  if (!geom_nsp && wcol == InvalidAttrNumber) direct_read_eligible(rel, key, cols, dims, out);
  return q.data;
}

}  // namespace

// Grows the arrays of `out` (allocated in `ctx`) to hold at least `need` rows (doubling, at
// most kMaxPoints). PostgreSQL code (may ereport).
void gpu2bs::pg::grow_points(RelPoints* out, MemoryContext ctx, int64 need, int64 points) {
  struct Want {
    uint64_t n;
    const char* name;
  } want = {uint64_t(points < 0 ? need : points), out->relname};
  call_at_boundary([](void* w) {
    check_point_count(static_cast<Want*>(w)->n, static_cast<Want*>(w)->name);
  }, &want);
  int64 cap = out->cap ? out->cap : 16384;
  while (cap < need) cap *= 2;
  cap = Min(cap, Max(need, int64(kMaxPoints)));
  if (!out->keyless)
    out->ids = (int64*)realloc_big(ctx, out->ids, Size(out->n) * sizeof(int64), Size(cap) * sizeof(int64));
  for (int k = 0; k < out->dims; ++k)
    out->coord[k] = (double*)realloc_big(ctx, out->coord[k], Size(out->n) * sizeof(double),
                                         Size(cap) * sizeof(double));
  if (out->weight_name)
    out->weight = (double*)realloc_big(ctx, out->weight, Size(out->n) * sizeof(double), Size(cap) * sizeof(double));
  out->cap = cap;
}

// Whether the catalog row of relation `relid` was written by a transaction that `snap` does not
// see: the relation was altered, rewritten or re-created after the snapshot was taken, so rows
// its storage holds now may be invisible to the snapshot (a rewrite is not MVCC-safe).
bool gpu2bs::pg::changed_after(Oid relid, Snapshot snap) {
  HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
  if (!HeapTupleIsValid(tup)) return true;
  const TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
  ReleaseSysCache(tup);
  return TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin) &&
         XidInMVCCSnapshot(xmin, snap);
}

namespace {

// Why the receiver stopped the query (the error is raised after SPI returns).
enum BadRow { ROW_OK = 0, ROW_NAN, ROW_INFINITE, ROW_NOT_POINT, ROW_NO_Z, ROW_HAS_Z, ROW_SRID, ROW_BAD_WEIGHT };

// Receives the query's rows straight from the executor (no SPI tuple table, no tuple copies).
struct PointsReceiver {
  DestReceiver pub;  // first member: the executor sees a DestReceiver
  RelPoints* out;
  MemoryContext ctx;
  BadRow bad;
  int64 bad_key;
  int32 bad_srid;
  double bad_weight;
  char bad_col[NAMEDATALEN];
};

// Records a bad row and stops the query.
bool stop_at(PointsReceiver* r, BadRow why, int64 key) {
  r->bad = why;
  r->bad_key = key;
  return false;
}

// One row (key, coordinates..., and for a geometry column its SRID and shape): skipped when the
// key, the geometry or a coordinate is NULL; a NaN or infinite coordinate, a geometry that is not
// a point of the column's dimension, or an SRID other than the first row's is recorded and stops
// the query; else the point is appended.
bool receive_point(TupleTableSlot* slot, DestReceiver* self) {
  PointsReceiver* r = (PointsReceiver*)self;
  RelPoints* out = r->out;
  slot_getallattrs(slot);
  if (slot->tts_isnull[0]) return true;
  const int64 key = DatumGetInt64(slot->tts_values[0]);
  if (out->geometry) {
    const int s = 1 + out->dims;  // SRID, then shape
    if (slot->tts_isnull[s + 1]) return true;  // NULL geometry
    const int32 shape = DatumGetInt32(slot->tts_values[s + 1]);
    if (shape < 0) return stop_at(r, ROW_NOT_POINT, key);
    const bool has_z = shape == 2 || shape == 3;
    if (out->dims == 3 && !has_z) return stop_at(r, ROW_NO_Z, key);
    if (out->dims == 2 && has_z) return stop_at(r, ROW_HAS_Z, key);
    const int32 srid = DatumGetInt32(slot->tts_values[s]);
    if (!out->srid_seen) {
      out->srid = srid;
      out->srid_seen = true;
    } else if (srid != out->srid) {
      r->bad_srid = srid;
      return stop_at(r, ROW_SRID, key);
    }
  }
  double v[kMaxDims];
  for (int k = 0; k < out->dims; ++k) {
    if (slot->tts_isnull[1 + k]) return true;
    v[k] = DatumGetFloat8(slot->tts_values[1 + k]);
  }
  for (int k = 0; k < out->dims; ++k)
    if (!std::isfinite(v[k])) {
      strlcpy(r->bad_col, NameStr(TupleDescAttr(slot->tts_tupleDescriptor, 1 + k)->attname), NAMEDATALEN);
      return stop_at(r, std::isnan(v[k]) ? ROW_NAN : ROW_INFINITE, key);
    }
  double wv = 0;
  if (out->weight_name) {  // the query's last column
    const int wa = slot->tts_tupleDescriptor->natts - 1;
    if (slot->tts_isnull[wa]) return true;
    wv = DatumGetFloat8(slot->tts_values[wa]);
    if (!std::isfinite(wv)) {
      r->bad_weight = wv;
      return stop_at(r, ROW_BAD_WEIGHT, key);
    }
  }
  if (out->n == out->cap) grow_points(out, r->ctx, out->n + 1);
  if (!out->keyless) out->ids[out->n] = key;
  for (int k = 0; k < out->dims; ++k) out->coord[k][out->n] = v[k];
  if (out->weight_name) out->weight[out->n] = wv;
  out->n++;
  return true;
}

// Raises 22023 for a NaN (`nan`) or infinite value in coordinate column `col` of `out`'s
// relation, in the row with key `key` (keyless reads: "A row").
void report_nonfinite(const RelPoints* out, const char* col, int64 key, bool nan) {
  const char* who = out->keyless ? "A row" : psprintf("The row with key " INT64_FORMAT, key);
  ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                  errmsg("column \"%s\" of %s has a non-finite value", col, out->relname),
                  errdetail("%s has %s; NaN and infinite coordinates are not accepted.",
                            who, nan ? "NaN" : "an infinite value")));
}

// Raises the error for the row the receiver stopped at.
void report_bad_row(const PointsReceiver& recv, const RelPoints* out) {
  const char* col = out->geometry ? out->geom_col : recv.bad_col;
  // The row, by its key (relations read without a key: "A row").
  const char* who = recv.bad == ROW_OK ? "" : out->keyless ? "A row" : psprintf("The row with key " INT64_FORMAT, recv.bad_key);
  switch (recv.bad) {
    case ROW_OK:
      return;
    case ROW_NAN:
    case ROW_INFINITE:
      report_nonfinite(out, col, recv.bad_key, recv.bad == ROW_NAN);
      break;
    case ROW_NOT_POINT:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("geometry column \"%s\" of %s has a geometry that is not a point", col, out->relname),
                      errdetail("%s is not a point; only points are accepted.", who),
                      errhint("Pass a point per row, for example ST_Centroid(geom) in a view.")));
      break;
    case ROW_NO_Z:
    case ROW_HAS_Z:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("geometry column \"%s\" of %s has a point of the wrong dimension", col, out->relname),
                      errdetail("%s has a %s point; the column is read as %d-D.",
                                who, recv.bad == ROW_HAS_Z ? "3-D" : "2-D", out->dims),
                      errhint("Declare the column geometry(Point, SRID) for 2-D or geometry(PointZ, SRID) for 3-D points.")));
      break;
    case ROW_BAD_WEIGHT:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("weight column \"%s\" of %s has a non-finite value", shown_name(out->weight_name), out->relname),
                      errdetail("%s has weight %s; NaN and infinite weights are not accepted.", who,
                                std::isnan(recv.bad_weight) ? "NaN" : recv.bad_weight > 0 ? "Infinity" : "-Infinity")));
      break;
    case ROW_SRID:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("geometry column \"%s\" of %s mixes SRIDs", col, out->relname),
                      errdetail("%s has SRID %d, earlier rows have SRID %d.",
                                who, recv.bad_srid, out->srid),
                      errhint("Transform every point to one SRID, for example with ST_Transform.")));
      break;
  }
}


// Whether any relation the prepared query reads (the relation itself, the tables under a view,
// the partitions or children of a parent; all locked by now) changed after `snap`.
bool plan_reads_changed(SPIPlanPtr plan, Snapshot snap) {
  ListCell* lc;
  foreach (lc, SPI_plan_get_plan_sources(plan)) {
    CachedPlanSource* src = (CachedPlanSource*)lfirst(lc);
    ListCell* rc;
    foreach (rc, src->relationOids) {
      const Oid relid = lfirst_oid(rc);
      if (changed_after(relid, snap)) return true;
      if (has_subclass(relid)) {
        List* kids = find_all_inheritors(relid, AccessShareLock, nullptr);
        ListCell* kc;
        foreach (kc, kids)
          if (changed_after(lfirst_oid(kc), snap)) return true;
      }
    }
  }
  return false;
}

// Whether the prepared query reads relation `relid` (its only FROM item, named from the catalog
// under the lock, so this always holds; checked so a mismatch can never go unnoticed).
bool plan_reads(SPIPlanPtr plan, Oid relid) {
  ListCell* lc;
  foreach (lc, SPI_plan_get_plan_sources(plan))
    if (list_member_oid(((CachedPlanSource*)lfirst(lc))->relationOids, relid)) return true;
  return false;
}

// Room for the rows the catalog expects (plus 1/16), at most kExpectRowsCap: usually one
// allocation, no copies; a stale estimate costs at most that much before the arrays grow.
void reserve_expected(RelPoints* out, MemoryContext ctx) {
  if (out->expect > 0)
    grow_points(out, ctx, std::min<int64>(out->expect + out->expect / 16 + 1024, kExpectRowsCap));
}

// Runs `plan` through SPI as the calling user (privileges and row-level security apply) under
// the active snapshot, with its rows streamed into `out` (allocated in `ctx`) by a DestReceiver.
// Sequential scans of the plan start at block 0 (synchronize_seqscans is off while it runs),
// as the direct reader's do, so a table's rows arrive in the same order on both paths.
void read_points(SPIPlanPtr plan, MemoryContext ctx, RelPoints* out) {
  PointsReceiver recv;
  memset(&recv, 0, sizeof recv);
  recv.out = out;
  recv.ctx = ctx;
  reserve_expected(out, ctx);
  const int nest = NewGUCNestLevel();
  (void)set_config_option("synchronize_seqscans", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
  run_plan_into(plan, &recv.pub, receive_point, out->relname);
  AtEOXact_GUC(true, nest);
  report_bad_row(recv, out);
}

// Reads `out`'s relation with the direct heap reader (direct_read_eligible held) under the
// active snapshot: the rows, values, order and errors of read_points over its query.
void read_points_direct(MemoryContext ctx, RelPoints* out) {
  reserve_expected(out, ctx);
  DirectBadRow bad;
  direct_read_points(out, ctx, &bad);
  if (bad.bad) {
    Relation rel = relation_open(out->relid, NoLock);
    const char* col = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), out->col_att[bad.col] - 1)->attname));
    relation_close(rel, NoLock);
    report_nonfinite(out, col, bad.key, bad.nan);
  }
}

}  // namespace

namespace gpu2bs {
namespace pg {

void TuplestoreSink::consume(const PairRecord* pairs, size_t n) {
  pg_guard([&] {
    Datum values[3];
    bool nulls[3] = {false, false, false};
    for (size_t p = 0; p < n; ++p) {
      int64 a = ids_a_[pairs[p].i], b = ids_b_[pairs[p].j];
      if (self_ && a > b) std::swap(a, b);
      values[0] = Int64GetDatum(a);
      values[1] = Int64GetDatum(b);
      values[2] = Float8GetDatum(pairs[p].dist);
      tuplestore_putvalues(rsinfo_->setResult, rsinfo_->setDesc, values, nulls);
    }
  });
}

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
  in->prec = current_precision();
  // Before reading: a bad eps fails at once. Coordinates read without a join have no eps.
  if (!a.keyless) in->eps = make_eps(a.eps, in->prec);
  in->nrel = a.nrel;
  RelPoints* rels = in->rels;
  const auto t0 = std::chrono::steady_clock::now();
  pg_guard([&] {
    in->ctx = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs simjoin points", ALLOCSET_DEFAULT_SIZES);
    const char* id_name = a.id ? text_to_cstring(a.id) : nullptr;
    // Lock each relation by the OID the argument resolved to, then build its query from the
    // catalog as it is under the lock (the lock is held to the end of the transaction, so the
    // name in the query stays this relation's).
    const char* queries[2];
    for (int r = 0; r < a.nrel; ++r) {
      rels[r].keyless = a.keyless;
      rels[r].weight_name = a.weight;
      Relation rel = open_locked(a.relids[r]);
      queries[r] = build_query(rel, a.coords, id_name, &rels[r]);
      relation_close(rel, NoLock);
    }
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    SPIPlanPtr plans[2] = {nullptr, nullptr};
    int changed_rel = -1;  // the first relation changed after the query's snapshot
    int path = 0;
    for (int r = 0; r < a.nrel; ++r) {
      if (rels[r].direct) {
        // A heap table without children: the only relation its query would read.
        path |= SCAN_DIRECT;
        if (changed_rel < 0 && changed_after(rels[r].relid, GetActiveSnapshot())) changed_rel = r;
        continue;
      }
      path |= SCAN_SPI;
      plans[r] = SPI_prepare(queries[r], 0, nullptr);
      if (!plans[r]) elog(ERROR, "SPI_prepare failed for %s: %s", rels[r].relname, SPI_result_code_string(SPI_result));
      if (!plan_reads(plans[r], rels[r].relid))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
                        errmsg("relation %s changed while it was being read", rels[r].relname),
                        errhint("Run the query again.")));
      if (changed_rel < 0 && plan_reads_changed(plans[r], GetActiveSnapshot())) changed_rel = r;
    }
    const bool changed = changed_rel >= 0;
    // A relation altered or rewritten after the query's snapshot (this call waited for the
    // change to commit): under READ COMMITTED the relations are read with a snapshot taken now,
    // as a statement that waited for the same lock before starting would see them; under
    // REPEATABLE READ or SERIALIZABLE the transaction's snapshot cannot change: 40001.
    if (changed) {
      if (IsolationUsesXactSnapshot())
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to a concurrent change of %s", rels[changed_rel].relname),
                        errdetail("A relation this call reads was altered, rewritten or re-created after the transaction's snapshot was taken."),
                        errhint("Run the transaction again.")));
      PushActiveSnapshot(GetTransactionSnapshot());
    }
    for (int r = 0; r < a.nrel; ++r) {
      if (rels[r].direct)
        read_points_direct(in->ctx, &rels[r]);
      else
        read_points(plans[r], in->ctx, &rels[r]);
    }
    if (changed) PopActiveSnapshot();
    for (int r = 0; r < a.nrel; ++r)
      if (plans[r]) SPI_freeplan(plans[r]);
    SPI_finish();
    note_scan_path(path);
    in->scan_path = path;
  });
  in->scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void read_coordinates(Oid relid, ArrayType* coords, SimjoinInput* in) {
  SimjoinArgs a;
  a.nrel = 1;
  a.relids[0] = relid;
  a.coords = coords;
  a.keyless = true;
  simjoin_read(a, in);
}

void read_weighted_coordinates(Oid relid, ArrayType* coords, const char* weight, SimjoinInput* in) {
  SimjoinArgs a;
  a.nrel = 1;
  a.relids[0] = relid;
  a.coords = coords;
  a.keyless = true;
  a.weight = weight;
  simjoin_read(a, in);
}

void check_same_srid(const SimjoinInput& in) {
  const RelPoints* rels = in.rels;
  if (rels[0].srid_seen && rels[1].srid_seen && rels[0].srid != rels[1].srid)
    throw Error(ErrorCode::InvalidParameter, "relations have different SRIDs",
                std::string(rels[0].relname) + " has SRID " + std::to_string(rels[0].srid) + ", " +
                    rels[1].relname + " has SRID " + std::to_string(rels[1].srid) + ".",
                "Transform both to one SRID, for example with ST_Transform.");
}

SimjoinPrepared simjoin_prepare(const SimjoinArgs& a, SimjoinInput* in) {
  const int nrel = a.nrel;
  const RelPoints* rels = in->rels;
  const PointsView va = points_view(rels[0]);
  const PointsView vb = nrel == 2 ? points_view(rels[1]) : va;
  if (nrel == 2) check_same_srid(*in);
  SimjoinPrepared out;
  out.prob = make_simjoin(va, nrel == 2 ? &vb : nullptr, in->eps, in->prec,
                          uint64_t(max_result_rows_setting));
  std::string reason;
  out.engine = choose_engine(&reason);
  return out;
}

void simjoin_box_arg(FunctionCallInfo fcinfo, int argno, double range, const char* what,
                     SimjoinArgs* a) {
  ArrayType* box = nullptr;
  if (!PG_ARGISNULL(argno)) pg_guard([&] { box = PG_GETARG_ARRAYTYPE_P(argno); });
  simjoin_box_value(box, range, what, a);
}

void simjoin_box_value(ArrayType* box, double range, const char* what, SimjoinArgs* a) {
  a->box.clear();
  a->periodic = false;
  if (box == nullptr) return;
  a->box = box_lengths(box);
  double lens[kMaxDims];
  const int nbox = int(a->box.size());
  if (nbox > kMaxDims)
    throw Error(ErrorCode::InvalidParameter, "box must have one length per coordinate",
                "box has " + std::to_string(nbox) + " elements, points have at most " +
                    std::to_string(kMaxDims) + " coordinates.");
  a->periodic = check_box(a->box.data(), nbox, nbox, range, what, lens);
}

bool simjoin_run(const SimjoinArgs& a, SimjoinInput* in, PairSink& sink, const PairFilter* filter, PairStage* stage,
                 PairReduce* reduce) {
  SimjoinPrepared prep = simjoin_prepare(a, in);
  Engine* eng = prep.engine;
  if (a.periodic) {
    // Over a periodic box: the engine's periodic join; a pushed-down filter or reduction is
    // applied to the pages by the sinks.
    double lens[kMaxDims];
    check_box(a.box.data(), int(a.box.size()), prep.prob.a.dims, prep.prob.eps, "eps", lens);
    const PeriodicJoin pj = make_periodic_join(prep.prob, lens, "eps");
    FilterSink filtered(filter, sink);
    PgControl ctl;
    ctl.stats.scan_s = in->scan_s;
    DeviceGrant grant(eng, ctl, 0, 0);
    eng->periodic_join(pj, filtered, ctl);
    record_run("gpu_simjoin", eng->name(), ctl.stats);
    return false;
  }
  if (reduce && (eng->reduces_pairs(reduce->kind) || eng->reduces_pairs_in_workers(reduce->kind))) {
    prep.prob.reduce = reduce;
    prep.prob.filter = filter;
    PgControl ctl;
    ctl.stats.scan_s = in->scan_s;
    DeviceGrant grant(eng, ctl, 0, 0, 0, true);
    eng->simjoin(prep.prob, sink, ctl);
    record_run("gpu_simjoin", eng->name(), ctl.stats);
    if (!reduce->done) throw Error(ErrorCode::Internal, "engine did not compute the pushed-down reduction");
    return false;
  }
  const bool use_stage = stage && eng->applies_pair_stage();
  if (use_stage) prep.prob.stage = stage;
  const bool engine_filters = filter && !use_stage && eng->applies_pair_filter();
  if (engine_filters) prep.prob.filter = filter;
  FilterSink filtered(engine_filters || use_stage ? nullptr : filter, sink);
  PgControl ctl;
  ctl.stats.scan_s = in->scan_s;
  DeviceGrant grant(eng, ctl, 0, 0, 0, true);
  eng->simjoin(prep.prob, filtered, ctl);
  record_run("gpu_simjoin", eng->name(), ctl.stats);
  return use_stage;
}

}  // namespace pg
}  // namespace gpu2bs

namespace {

// Shared body of the SRF forms: `nrel` relations in args 0..nrel-1, then eps, coords, id
// [, box].
Datum simjoin_impl(FunctionCallInfo fcinfo, int nrel, bool with_box) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  SimjoinArgs args;
  if (!with_box) {
    if (!simjoin_args(fcinfo, nrel, &args)) return (Datum)0;
  } else {
    for (int k = 0; k <= nrel; ++k)
      if (PG_ARGISNULL(k)) return (Datum)0;  // NULL relation or eps: no rows
    args.nrel = nrel;
    args.relids[0] = PG_GETARG_OID(0);
    args.relids[1] = nrel == 2 ? PG_GETARG_OID(1) : InvalidOid;
    args.eps = PG_GETARG_FLOAT8(nrel);
    args.coords = PG_ARGISNULL(nrel + 1) ? nullptr : PG_GETARG_ARRAYTYPE_P(nrel + 1);
    args.id = PG_ARGISNULL(nrel + 2) ? nullptr : PG_GETARG_TEXT_PP(nrel + 2);
    simjoin_box_arg(fcinfo, nrel + 3, args.eps, "eps", &args);
  }
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
GPU2BS_FUNCTION(gpu2bs_simjoin_self) { return simjoin_impl(fcinfo, 1, false); }

// gpu_simjoin(a, b, eps, coords, id): every (a, b) pair within eps.
GPU2BS_FUNCTION(gpu2bs_simjoin_two) { return simjoin_impl(fcinfo, 2, false); }

// gpu_simjoin(rel, eps, coords, id, box): the self-join over a periodic box.
GPU2BS_FUNCTION(gpu2bs_simjoin_self_box) { return simjoin_impl(fcinfo, 1, true); }

// gpu_simjoin(a, b, eps, coords, id, box): the two-relation join over a periodic box.
GPU2BS_FUNCTION(gpu2bs_simjoin_two_box) { return simjoin_impl(fcinfo, 2, true); }
