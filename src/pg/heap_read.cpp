// The direct heap reader: the rows of `SELECT key::int8, x::float8, ... FROM rel` for a plain heap
// table, read from its pages under the active snapshot without the executor. Used only where it
// gives exactly what that query gives (same rows and values, same order, same errors); every
// other relation, and every case where the query would raise a permission error, goes through
// SPI.
#include "pg.h"

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "parser/parse_coerce.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

#include <cmath>
#include <cstring>

#include "heap_read.h"
#include "settings.h"

namespace gpu2bs {
namespace pg {

namespace {

// How a column's stored value becomes the query's int8 key or float8 coordinate.
enum ValKind : uint8 { VK_F8 = 0, VK_F4, VK_I2, VK_I4, VK_I8, VK_OTHER };

// The kind of a column of type `typid` (domains resolved: a cast from a domain is its base
// type's cast).
ValKind val_kind(Oid typid) {
  switch (getBaseType(typid)) {
    case FLOAT8OID: return VK_F8;
    case FLOAT4OID: return VK_F4;
    case INT2OID: return VK_I2;
    case INT4OID: return VK_I4;
    case INT8OID: return VK_I8;
    default: return VK_OTHER;
  }
}

// A stored coordinate as float8, exactly as PostgreSQL's casts to float8 convert it.
inline double datum_double(Datum d, uint8 kind) {
  switch (kind) {
    case VK_F8: return DatumGetFloat8(d);
    case VK_F4: return double(DatumGetFloat4(d));
    case VK_I2: return double(DatumGetInt16(d));
    case VK_I4: return double(DatumGetInt32(d));
    default: return double(DatumGetInt64(d));
  }
}

// A stored key as int8.
inline int64 datum_int(Datum d, uint8 kind) {
  switch (kind) {
    case VK_I2: return DatumGetInt16(d);
    case VK_I4: return DatumGetInt32(d);
    default: return DatumGetInt64(d);
  }
}

// A fixed-width coordinate stored at `p` as float8.
inline double raw_double(const char* p, uint8 kind) {
  switch (kind) {
    case VK_F8: { double v; memcpy(&v, p, 8); return v; }
    case VK_F4: { float v; memcpy(&v, p, 4); return double(v); }
    case VK_I2: { int16 v; memcpy(&v, p, 2); return double(v); }
    case VK_I4: { int32 v; memcpy(&v, p, 4); return double(v); }
    default: { int64 v; memcpy(&v, p, 8); return double(v); }
  }
}

// A fixed-width key stored at `p` as int8.
inline int64 raw_int(const char* p, uint8 kind) {
  switch (kind) {
    case VK_I2: { int16 v; memcpy(&v, p, 2); return v; }
    case VK_I4: { int32 v; memcpy(&v, p, 4); return v; }
    default: { int64 v; memcpy(&v, p, 8); return v; }
  }
}

// Offset of attribute `attno` in the data of a tuple without NULLs, or -1 when a variable-width
// attribute precedes it (offsets of fixed-width attributes depend only on the descriptor).
int fixed_offset(TupleDesc td, AttrNumber attno) {
  int off = 0;
  for (int a = 0; a < attno; ++a) {
    Form_pg_attribute att = TupleDescAttr(td, a);
    if (att->attlen <= 0) return -1;
    off = att_align_nominal(off, att->attalign);
    if (a == attno - 1) return off;
    off += att->attlen;
  }
  return -1;
}

// Whether the calling user may execute PostgreSQL's cast from a column of type `typid` (domains
// resolved) to `target`, as the SQL query's cast expression requires (none needed: true).
bool may_cast(Oid typid, Oid target) {
  const Oid base = getBaseType(typid);
  if (base == target) return true;
  Oid funcid = InvalidOid;
  if (find_coercion_pathway(target, base, COERCION_EXPLICIT, &funcid) != COERCION_PATH_FUNC) return false;
  return pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
}

}  // namespace

// Whether the direct reader gives exactly the SQL query's rows and errors (heap_read.h).
bool direct_read_eligible(Relation rel, AttrNumber key, const AttrNumber* cols, int dims, RelPoints* out) {
  out->direct = false;
  // Hooks may refuse what the SQL query does (permission checks, name lookups, function calls).
  if (!direct_scan_setting || ExecutorCheckPerms_hook != nullptr || object_access_hook != nullptr) return false;
  const char kind = rel->rd_rel->relkind;
  if (kind != RELKIND_RELATION && !(kind == RELKIND_MATVIEW && RelationIsPopulated(rel))) return false;
  if (rel->rd_tableam != GetHeapamTableAmRoutine() || RELATION_IS_OTHER_TEMP(rel)) return false;
  const Oid relid = RelationGetRelid(rel);
  if (has_subclass(relid)) return false;
  if (!ActiveSnapshotSet() || !IsMVCCSnapshot(GetActiveSnapshot())) return false;
  if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) return false;
  TupleDesc td = RelationGetDescr(rel);
  if (!out->keyless) {
    const ValKind k = val_kind(TupleDescAttr(td, key - 1)->atttypid);
    if ((k != VK_I2 && k != VK_I4 && k != VK_I8) || !may_cast(TupleDescAttr(td, key - 1)->atttypid, INT8OID))
      return false;
    out->key_att = key;
    out->key_kind = k;
  }
  for (int d = 0; d < dims; ++d) {
    const ValKind k = val_kind(TupleDescAttr(td, cols[d] - 1)->atttypid);
    if (k == VK_OTHER || !may_cast(TupleDescAttr(td, cols[d] - 1)->atttypid, FLOAT8OID)) return false;
    out->col_att[d] = cols[d];
    out->col_kind[d] = k;
  }
  // The SELECT names the relation schema-qualified (USAGE on the schema) and needs SELECT on
  // the table or on every column it reads; without them the SPI path raises the query's own
  // error.
  const Oid user = GetUserId();
  if (pg_namespace_aclcheck(RelationGetNamespace(rel), user, ACL_USAGE) != ACLCHECK_OK) return false;
  if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK) {
    if (!out->keyless && pg_attribute_aclcheck(relid, key, user, ACL_SELECT) != ACLCHECK_OK) return false;
    for (int d = 0; d < dims; ++d)
      if (pg_attribute_aclcheck(relid, cols[d], user, ACL_SELECT) != ACLCHECK_OK) return false;
  }
  out->direct = true;
  return true;
}

// Reads the relation's points from its heap pages (heap_read.h).
void direct_read_points(RelPoints* out, MemoryContext ctx, DirectBadRow* bad) {
  Relation rel = relation_open(out->relid, NoLock);  // locked by open_locked
  TupleDesc td = RelationGetDescr(rel);
  const int dims = out->dims;
  const bool keyless = out->keyless;
  AttrNumber maxatt = keyless ? 0 : out->key_att;
  for (int d = 0; d < dims; ++d) maxatt = Max(maxatt, out->col_att[d]);
  // Tuples without NULLs holding every attribute read are read at fixed offsets when no
  // variable-width attribute precedes the last one read; others are deformed by a slot.
  const int key_off = keyless ? 0 : fixed_offset(td, out->key_att);
  int col_off[kMaxDims];
  bool fixed = key_off >= 0;
  for (int d = 0; d < dims; ++d) {
    col_off[d] = fixed_offset(td, out->col_att[d]);
    fixed = fixed && col_off[d] >= 0;
  }
  TupleTableSlot* slot = MakeSingleTupleTableSlot(td, &TTSOpsHeapTuple);
  HeapTupleData tup;
  tup.t_tableOid = out->relid;
  // A sequential scan as the executor's (bulk-read buffer strategy for large tables, page-mode
  // visibility, serializable predicate lock), but always from block 0.
  TableScanDesc scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, nullptr, true, false);
  HeapScanDesc hs = (HeapScanDesc)scan;
  const uint8 key_kind = out->key_kind;
  uint8 col_kind[kMaxDims];
  int col_idx[kMaxDims];  // 0-based attribute index of each coordinate
  for (int d = 0; d < dims; ++d) {
    col_kind[d] = out->col_kind[d];
    col_idx[d] = out->col_att[d] - 1;
  }
  const int key_idx = out->key_att - 1;
  // The arrays and row count in locals (stores through them cannot change them), written back
  // around every growth and at the end.
  int64 n = out->n, cap = out->cap;
  int64* ids = out->ids;
  double* coord[kMaxDims];
  for (int d = 0; d < dims; ++d) coord[d] = out->coord[d];
  for (BlockNumber b = 0; b < hs->rs_nblocks && !bad->bad; ++b) {
    CHECK_FOR_INTERRUPTS();
    heapgetpage(scan, b);  // pins the page, keeps the offsets of the tuples the snapshot sees
    Page page = BufferGetPage(hs->rs_cbuf);
    const int ntup = hs->rs_ntuples;
    int seen = ntup;  // tuples returned (up to a bad row)
    for (int t = 0; t < ntup; ++t) {
      const OffsetNumber lineoff = hs->rs_vistuples[t];
      ItemId lpp = PageGetItemId(page, lineoff);
      HeapTupleHeader th = (HeapTupleHeader)PageGetItem(page, lpp);
      int64 k = 0;
      double v[kMaxDims];
      if (fixed && !(th->t_infomask & HEAP_HASNULL) && HeapTupleHeaderGetNatts(th) >= maxatt) {
        const char* tp = (const char*)th + th->t_hoff;
        if (!keyless) k = raw_int(tp + key_off, key_kind);
        for (int d = 0; d < dims; ++d) v[d] = raw_double(tp + col_off[d], col_kind[d]);
      } else {
        tup.t_len = ItemIdGetLength(lpp);
        tup.t_data = th;
        ItemPointerSet(&tup.t_self, b, lineoff);
        ExecStoreHeapTuple(&tup, slot, false);
        slot_getsomeattrs(slot, maxatt);
        if (!keyless) {
          if (slot->tts_isnull[key_idx]) continue;
          k = datum_int(slot->tts_values[key_idx], key_kind);
        }
        bool null = false;
        for (int d = 0; d < dims && !null; ++d) {
          null = slot->tts_isnull[col_idx[d]];
          if (!null) v[d] = datum_double(slot->tts_values[col_idx[d]], col_kind[d]);
        }
        if (null) continue;
      }
      bool finite = true;
      for (int d = 0; d < dims; ++d) finite = finite && std::isfinite(v[d]);
      if (!finite) {
        int d = 0;
        while (std::isfinite(v[d])) ++d;
        bad->bad = true;
        bad->nan = std::isnan(v[d]);
        bad->key = k;
        bad->col = d;
        seen = t + 1;
        break;
      }
      if (n == cap) {
        out->n = n;
        grow_points(out, ctx, n + 1);
        cap = out->cap;
        ids = out->ids;
        for (int d = 0; d < dims; ++d) coord[d] = out->coord[d];
      }
      if (!keyless) ids[n] = k;
      for (int d = 0; d < dims; ++d) coord[d][n] = v[d];
      ++n;
    }
    if (pgstat_should_count_relation(rel)) rel->pgstat_info->t_counts.t_tuples_returned += seen;
  }
  out->n = n;
  ExecClearTuple(slot);
  ExecDropSingleTupleTableSlot(slot);
  table_endscan(scan);
  relation_close(rel, NoLock);
}

}  // namespace pg
}  // namespace gpu2bs
