// gpu_pairwise: the all-pairs matrix over float4[] / float8[] vectors (Sarje and Aluru 2013) as
// a set-returning function: the k best pairs of each row of a (exact kNN join) or every pair
// within a threshold. Relations are read as the calling user, like gpu_simjoin (privileges and
// row-level security apply): a plain heap table by the direct reader (heap_read.h), which
// assembles vectors stored out of line from the TOAST relation's pages, anything else through
// SPI; rows are ordered by key so ties fall to the smaller id, and the result streams into a
// tuplestore.
#include "pg.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <thread>
#include <utility>
#include <vector>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <numeric>

#include "../core/error.h"
#include "../core/pairwise.h"
#include "admission.h"
#include "heap_read.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// One relation's vectors as read: keys and row-major float32 rows in a memory context.
struct RelVectors {
  const char* relname;
  int64 n;
  int64 cap;
  int d;                 // -1 until the first non-NULL vector
  int64 expect;
  int64* ids;
  float* rows;
  // The first problem seen while reading (raised after SPI returns): 1 ragged, 2 NULL
  // element, 3 non-finite, 4 empty, 5 multi-dimensional, 6 float8 beyond float4 range.
  int bad;
  int64 bad_key;
  int bad_len;
  // Read by the direct reader (direct_vectors_eligible held), else through SPI.
  bool direct;
  DirectVectors dv;
};

// Builds the SELECT that reads key and vector column of `relid` (names quoted, schema
// qualified). Checks the relation kind, the vector column type (float4[] or float8[]) and the
// key (as gpu_simjoin chooses it). PostgreSQL code (may ereport).
char* build_query(Oid relid, const char* vec, const char* id_name, RelVectors* out) {
  // Locked by OID to the end of the transaction (as gpu_simjoin), then described from the
  // catalog under the lock, so the name in the query stays this relation's.
  Relation rel = open_locked(relid);
  const char* relname = readable_relation_name(rel, &out->expect);
  out->relname = relname;
  TupleDesc td = RelationGetDescr(rel);
  const AttrNumber key = key_column(
      rel, td, relname, id_name, id_name,
      "Name the key column, for example gpu_pairwise('q', 'items', 'emb', 'l2', k => 10, id => 'item_id').");
  const AttrNumber col = find_column(td, vec, relname);
  const Oid vt = getBaseType(TupleDescAttr(td, col - 1)->atttypid);
  if (vt != FLOAT4ARRAYOID && vt != FLOAT8ARRAYOID)
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("vector column \"%s\" must be of type real[] or double precision[]", vec),
                    errdetail("Column \"%s\" has type %s.", vec, format_type_be(TupleDescAttr(td, col - 1)->atttypid))));
  StringInfoData q;
  initStringInfo(&q);
  appendStringInfo(&q, "SELECT (%s)::pg_catalog.int8, %s FROM %s",
                   quote_identifier(NameStr(TupleDescAttr(td, key - 1)->attname)),
                   quote_identifier(NameStr(TupleDescAttr(td, col - 1)->attname)), relname);
  out->direct = direct_vectors_eligible(rel, key, col, &out->dv);
  relation_close(rel, NoLock);
  return q.data;
}

// Grows the arrays of `out` to hold `need` rows of out->d floats. PostgreSQL code.
void grow_vectors(RelVectors* out, MemoryContext ctx, int64 need) {
  int64 cap = out->cap ? out->cap : 1024;
  while (cap < need) cap *= 2;
  if (cap > int64(UINT32_MAX) + 1)
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                    errmsg("too many rows in %s for gpu_pairwise", out->relname)));
  out->ids = (int64*)realloc_big(ctx, out->ids, Size(out->n) * sizeof(int64), Size(cap) * sizeof(int64));
  out->rows = (float*)realloc_big(ctx, out->rows, Size(out->n) * Size(out->d) * sizeof(float),
                                  Size(cap) * Size(out->d) * sizeof(float));
  out->cap = cap;
}

struct VectorReceiver {
  DestReceiver pub;  // first member: the executor sees a DestReceiver
  RelVectors* out;
  MemoryContext ctx;
};

// Stops the scan with problem `what` on the row with key `key` (raised after SPI returns).
bool reject(RelVectors* out, int what, int64 key, int len) {
  out->bad = what;
  out->bad_key = key;
  out->bad_len = len;
  return false;
}

// One row (key, vector): skipped when either is NULL; appended as float32 otherwise. The first
// vector fixes the length d.
bool receive_vector(TupleTableSlot* slot, DestReceiver* self) {
  VectorReceiver* r = (VectorReceiver*)self;
  RelVectors* out = r->out;
  slot_getallattrs(slot);
  if (slot->tts_isnull[0] || slot->tts_isnull[1]) return true;
  const int64 key = DatumGetInt64(slot->tts_values[0]);
  ArrayType* arr = DatumGetArrayTypeP(slot->tts_values[1]);
  const int ndim = ARR_NDIM(arr);
  if (ndim > 1) return reject(out, 5, key, 0);
  const int len = ndim == 0 ? 0 : ARR_DIMS(arr)[0];
  if (len == 0) return reject(out, 4, key, 0);
  if (ARR_HASNULL(arr) && array_contains_nulls(arr)) return reject(out, 2, key, len);
  if (out->d < 0) {
    if (len > kMaxVectorDims) return reject(out, 1, key, len);
    out->d = len;
  } else if (len != out->d) {
    return reject(out, 1, key, len);
  }
  if (out->n == out->cap) {
    MemoryContext old = MemoryContextSwitchTo(r->ctx);
    grow_vectors(out, r->ctx, out->n + 1);
    MemoryContextSwitchTo(old);
  }
  float* dst = out->rows + Size(out->n) * Size(len);
  if (ARR_ELEMTYPE(arr) == FLOAT4OID) {
    const float* src = (const float*)ARR_DATA_PTR(arr);
    for (int k = 0; k < len; ++k) {
      if (!std::isfinite(src[k])) return reject(out, 3, key, len);
      dst[k] = src[k];
    }
  } else {
    const double* src = (const double*)ARR_DATA_PTR(arr);
    for (int k = 0; k < len; ++k) {
      if (!std::isfinite(src[k])) return reject(out, 3, key, len);
      if (std::fabs(src[k]) > double(FLT_MAX)) return reject(out, 6, key, len);
      dst[k] = float(src[k]);
    }
  }
  out->ids[out->n++] = key;
  if ((Pointer)arr != DatumGetPointer(slot->tts_values[1])) pfree(arr);
  return true;
}

// Runs `query` as the calling user with its rows streamed into `out`; the first bad row is left
// in `out`. Sequential scans start at block 0 (synchronize_seqscans is off while it runs), as the
// direct reader's do, so rows with equal keys keep one order on both paths. PostgreSQL code.
void read_vectors_spi(const char* query, MemoryContext ctx, RelVectors* out) {
  SPIPlanPtr plan = SPI_prepare(query, 0, nullptr);
  if (!plan) elog(ERROR, "SPI_prepare failed for \"%s\": %s", query, SPI_result_code_string(SPI_result));
  VectorReceiver recv;
  memset(&recv, 0, sizeof recv);
  recv.out = out;
  recv.ctx = ctx;
  const int nest = NewGUCNestLevel();
  (void)set_config_option("synchronize_seqscans", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
  run_plan_into(plan, &recv.pub, receive_vector, psprintf("\"%s\"", query));
  AtEOXact_GUC(true, nest);
  SPI_freeplan(plan);
}

// Reads `out`'s relation with the direct reader into `out` (the first bad row left in `out`);
// false when the reader met a layout it leaves to the SPI path (nothing read). PostgreSQL code.
bool read_vectors_direct(MemoryContext ctx, RelVectors* out, int64* toast_pages, int64* detoasted) {
  DirectVectorRows rows;
  direct_read_vectors(out->dv, out->relname, ctx, &rows);
  *toast_pages += rows.toast_pages;
  *detoasted += rows.detoasted;
  if (rows.retry) return false;
  out->n = rows.n;
  out->cap = rows.n;
  out->d = rows.d;
  out->ids = rows.ids;
  out->rows = rows.rows;
  out->bad = rows.bad;
  out->bad_key = rows.bad_key;
  out->bad_len = rows.bad_len;
  return true;
}

// Raises the first bad row recorded in `out` as 22023 (nothing when there is none).
void report_bad_vector(const RelVectors* out, const char* vec) {
  switch (out->bad) {
    case 0: break;
    case 1:
      if (out->d < 0 || out->bad_len > kMaxVectorDims)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("vector too long in column \"%s\" of %s", vec, out->relname),
                        errdetail("The row with key " INT64_FORMAT " has %d elements; at most %d are supported.",
                                  out->bad_key, out->bad_len, kMaxVectorDims)));
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("vectors of different lengths in column \"%s\" of %s", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " has %d elements, earlier rows have %d.",
                                out->bad_key, out->bad_len, out->d)));
      break;
    case 2:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("vector with a NULL element in column \"%s\" of %s", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " has a NULL element.", out->bad_key)));
      break;
    case 3:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("column \"%s\" of %s has a non-finite value", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " has NaN or an infinite element.", out->bad_key)));
      break;
    case 4:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("empty vector in column \"%s\" of %s", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " has no elements.", out->bad_key)));
      break;
    case 5:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("multi-dimensional array in column \"%s\" of %s", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " is not a one-dimensional array.", out->bad_key)));
      break;
    default:
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("vector element out of float4 range in column \"%s\" of %s", vec, out->relname),
                      errdetail("The row with key " INT64_FORMAT " has an element beyond 3.4e38.", out->bad_key)));
  }
}

// Runs fn(t) for t in [0, nt) on nt threads (the calling one included); helpers start with every
// signal blocked and make no PostgreSQL call; a share whose helper cannot start runs on the
// calling thread.
void run_shares(int nt, const std::function<void(int)>& fn) {
  std::vector<std::thread> helpers;
  std::vector<int> left;
  helpers.reserve(size_t(nt));
  left.reserve(size_t(nt));  // no allocation while the signals are blocked
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  for (int t = 1; t < nt; ++t) {
    try {
      helpers.emplace_back([&fn, t] { fn(t); });
    } catch (...) {
      left.push_back(t);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  fn(0);
  for (int t : left) fn(t);
  for (auto& h : helpers) h.join();
}

// Orders the rows by key (stable: equal keys keep scan order), so the engines' ties by column
// index are ties by id. Rows already in order (the common case) are left alone; others are
// gathered into new arrays by the CPU engine's threads (gpu2bs.cpu_threads, at most 16).
void order_by_key(RelVectors* r, MemoryContext ctx) {
  bool sorted = true;
  for (int64 i = 1; i < r->n && sorted; ++i) sorted = r->ids[i - 1] <= r->ids[i];
  if (sorted) return;
  // (key, scan position) pairs: sorted, they give the stable order.
  std::vector<std::pair<int64, uint32_t>> order(size_t(r->n));
  const int64* ids = r->ids;
  for (size_t t = 0; t < order.size(); ++t) order[t] = {ids[t], uint32_t(t)};
  const size_t n = order.size();
  const int nt = int(std::max<int64>(1, std::min<int64>({int64(PgControl().threads), 16, r->n / 4096 + 1})));
  // Sorted in nt runs on the threads, then merged pairwise (the runs double each pass).
  auto bound = [&](int t) { return order.begin() + ptrdiff_t(n * size_t(t) / size_t(nt)); };
  run_shares(nt, [&](int t) { std::sort(bound(t), bound(t + 1)); });
  for (int width = 1; width < nt; width *= 2) {
    const int merges = (nt + 2 * width - 1) / (2 * width);
    run_shares(merges, [&](int m) {
      const int lo = m * 2 * width, mid = std::min(nt, lo + width), hi = std::min(nt, lo + 2 * width);
      if (mid < hi) std::inplace_merge(bound(lo), bound(mid), bound(hi));
    });
  }
  int64* nid = nullptr;
  float* nrows = nullptr;
  const Size d = Size(r->d);
  pg_guard([&] {
    nid = (int64*)alloc_big(ctx, Size(r->n) * sizeof(int64));
    nrows = (float*)alloc_big(ctx, Size(r->n) * d * sizeof(float));
  });
  const float* rows = r->rows;
  run_shares(nt, [&](int t) {
    const size_t lo = n * size_t(t) / size_t(nt), hi = n * size_t(t + 1) / size_t(nt);
    for (size_t i = lo; i < hi; ++i) {
      nid[i] = order[i].first;
      memcpy(nrows + i * d, rows + Size(order[i].second) * d, d * sizeof(float));
    }
  });
  pg_guard([&] {
    pfree(r->ids);
    pfree(r->rows);
  });
  r->ids = nid;
  r->rows = nrows;
}

// Writes result pages into the SRF's tuplestore as (id1, id2, value).
class PairwiseSink final : public PairSink {
 public:
  PairwiseSink(ReturnSetInfo* rsinfo, const int64* ids_a, const int64* ids_b)
      : rsinfo_(rsinfo), ids_a_(ids_a), ids_b_(ids_b) {}
  void consume(const PairRecord* pairs, size_t n) override {
    ReturnSetInfo* rs = rsinfo_;
    const int64* ia = ids_a_;
    const int64* ib = ids_b_;
    pg_guard([&] {
      Datum values[3];
      bool nulls[3] = {false, false, false};
      for (size_t p = 0; p < n; ++p) {
        values[0] = Int64GetDatum(ia[pairs[p].i]);
        values[1] = Int64GetDatum(ib[pairs[p].j]);
        values[2] = Float8GetDatum(pairs[p].dist);
        tuplestore_putvalues(rs->setResult, rs->setDesc, values, nulls);
      }
    });
  }

 private:
  ReturnSetInfo* rsinfo_;
  const int64* ids_a_;
  const int64* ids_b_;
};

// The engine's view of one relation's rows (no copy).
void view_of(const RelVectors& r, int d, VectorSet* v) {
  v->n = size_t(r.n);
  v->d = d;
  v->data = r.rows;
}

}  // namespace

// gpu_pairwise(a, b, vec, metric, k, threshold, id) RETURNS TABLE(id1, id2, value).
GPU2BS_FUNCTION(gpu2bs_pairwise) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  // A NULL relation, column or metric: no rows (as gpu_simjoin with a NULL relation).
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3)) return (Datum)0;
  const Oid rel_a = PG_GETARG_OID(0), rel_b = PG_GETARG_OID(1);
  const bool has_k = !PG_ARGISNULL(4), has_thr = !PG_ARGISNULL(5);
  const int k = has_k ? PG_GETARG_INT32(4) : 0;
  const double thr = has_thr ? PG_GETARG_FLOAT8(5) : 0;
  const bool has_id = !PG_ARGISNULL(6);
  char* metric_c = nullptr;
  char* vec_c = nullptr;
  char* id_c = nullptr;
  pg_guard([&] {
    metric_c = text_to_cstring(PG_GETARG_TEXT_PP(3));
    vec_c = text_to_cstring(PG_GETARG_TEXT_PP(2));
    id_c = has_id ? text_to_cstring(PG_GETARG_TEXT_PP(6)) : nullptr;
  });
  const PairwiseMetric metric = parse_pairwise_metric(metric_c);
  // Argument checks before reading anything (the same checks make_pairwise repeats).
  if (has_k == has_thr || (has_k && k < 1) || (has_thr && std::isnan(thr))) {
    VectorSet none;
    (void)make_pairwise(metric, none, nullptr, k, has_k, thr, has_thr, PairwisePrecision::Exact, 0);
  }
  const bool self = rel_a == rel_b;
  const int nrel = self ? 1 : 2;
  RelVectors rels[2];
  memset(rels, 0, sizeof rels);
  MemoryContext ctx = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  pg_guard([&] {
    ctx = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs pairwise vectors", ALLOCSET_DEFAULT_SIZES);
    const char* queries[2];
    const Oid relids[2] = {rel_a, rel_b};
    for (int r = 0; r < nrel; ++r) {
      rels[r].d = -1;
      queries[r] = build_query(relids[r], vec_c, id_c, &rels[r]);
    }
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    // A relation altered or rewritten after the query's snapshot: under READ COMMITTED the
    // direct reader reads with a snapshot taken now (as the SPI query would, having waited for
    // the lock), under REPEATABLE READ or SERIALIZABLE it is 40001 (see simjoin_read).
    int changed_rel = -1;
    for (int r = 0; r < nrel; ++r)
      if (rels[r].direct && changed_rel < 0 && changed_after(rels[r].dv.relid, GetActiveSnapshot())) changed_rel = r;
    if (changed_rel >= 0 && IsolationUsesXactSnapshot())
      ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                      errmsg("could not serialize access due to a concurrent change of %s", rels[changed_rel].relname),
                      errdetail("A relation this call reads was altered, rewritten or re-created after the transaction's snapshot was taken."),
                      errhint("Run the transaction again.")));
    int path = 0;
    int64 toast_pages = 0, detoasted = 0;
    for (int r = 0; r < nrel; ++r) {
      bool done = false;
      if (rels[r].direct) {
        if (changed_rel >= 0) PushActiveSnapshot(GetTransactionSnapshot());
        done = read_vectors_direct(ctx, &rels[r], &toast_pages, &detoasted);
        if (changed_rel >= 0) PopActiveSnapshot();
      }
      if (done) {
        path |= SCAN_DIRECT;
      } else {
        path |= SCAN_SPI;
        read_vectors_spi(queries[r], ctx, &rels[r]);
      }
      report_bad_vector(&rels[r], vec_c);
    }
    SPI_finish();
    note_scan_path(path);
    note_toast_reads(toast_pages, detoasted);
  });
  for (int r = 0; r < nrel; ++r) order_by_key(&rels[r], ctx);
  // The scan time includes ordering the rows by key.
  const double scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int da = rels[0].d, db = rels[nrel - 1].d;
  if (nrel == 2 && da > 0 && db > 0 && da != db)
    throw Error(ErrorCode::InvalidParameter, "vectors of different lengths",
                std::string(rels[0].relname) + " has vectors of " + std::to_string(da) + " elements, " +
                    rels[1].relname + " of " + std::to_string(db) + ".");
  const int d = std::max(std::max(da, db), 1);
  VectorSet va, vb;
  view_of(rels[0], d, &va);
  if (!self) view_of(rels[1], d, &vb);
  normalize_vectors(metric, &va);
  if (!self) normalize_vectors(metric, &vb);
  const PairwisePrecision prec = PairwisePrecision(pairwise_precision_setting);
  PairwiseProblem prob = make_pairwise(metric, va, self ? nullptr : &vb, k, has_k, thr, has_thr,
                                       prec, uint64_t(max_result_rows_setting));
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = scan_s;
  DeviceGrant grant(eng, ctl, 0, 0);
  PairwiseSink sink(rsinfo, rels[0].ids, rels[nrel - 1].ids);
  eng->pairwise(prob, sink, ctl);
  record_run("gpu_pairwise", eng->name(), ctl.stats);
  pg_guard([&] { MemoryContextDelete(ctx); });
  return (Datum)0;
}
