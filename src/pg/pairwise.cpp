// gpu_pairwise: the all-pairs matrix over float4[] / float8[] vectors (Sarje and Aluru 2013) as
// a set-returning function: the k best pairs of each row of a (exact kNN join) or every pair
// within a threshold. Relations are read as the calling user, like gpu_simjoin (privileges and
// row-level security apply): a plain heap table by the direct reader (heap_read.h), which
// assembles vectors stored out of line from the TOAST relation's pages, anything else through
// SPI; rows are ordered by key so ties fall to the smaller id, and the result streams into a
// tuplestore. In FROM, with quals on value or a LIMIT, the call runs as a custom scan that pushes
// them into the engine (below).
#include "pg.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
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
#include <memory>
#include <string>

#include "../core/error.h"
#include "../core/pairwise.h"
#include "../core/pipeline.h"
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

// Arguments of one gpu_pairwise call (the strings palloc'd).
struct PairwiseArgs {
  Oid rel_a = InvalidOid, rel_b = InvalidOid;
  const char* vec = nullptr;
  const char* metric = nullptr;
  const char* id = nullptr;
  bool has_k = false, has_thr = false;
  int k = 0;
  double thr = 0;
};

// A comparison of value with a constant or parameter the custom scan applies: value op c.
enum ValueOp { V_LT = 0, V_LE = 1, V_GE = 2, V_GT = 3 };
struct ValueQual {
  int op;
  double c;
  bool null;  // the operand is NULL: no row passes
};

// SQL's float8 order (NaN equal to NaN and above every other value): -1, 0 or 1.
int float8_order(double x, double y) {
  if (std::isnan(x)) return std::isnan(y) ? 0 : 1;
  if (std::isnan(y)) return -1;
  return x < y ? -1 : x > y ? 1 : 0;
}

// True when value `v` passes every qual, as PostgreSQL's float8 comparisons decide it.
bool value_passes(const std::vector<ValueQual>& qs, double v) {
  for (const ValueQual& q : qs) {
    if (q.null) return false;
    const int o = float8_order(v, q.c);
    const bool ok = q.op == V_LT ? o < 0 : q.op == V_LE ? o <= 0 : q.op == V_GE ? o >= 0 : o > 0;
    if (!ok) return false;
  }
  return true;
}

// The threshold narrowed by the quals in the metric's better direction (value <= c or < c for
// distances, >= c or > c for dot): every value the narrowed threshold drops fails a qual, so
// the engine's rows, filtered by the quals, are the rows of the unnarrowed call filtered by
// them. A strict comparison becomes the inclusive one with the next double towards the better
// side; a NaN operand narrows nothing (the quals decide).
double narrowed_threshold(const PairwiseMetric& m, double thr, const std::vector<ValueQual>& qs) {
  const bool larger = m.larger_is_better();
  for (const ValueQual& q : qs) {
    if (q.null || std::isnan(q.c)) continue;
    if (!larger && (q.op == V_LE || q.op == V_LT)) {
      const double t = q.op == V_LE ? q.c : std::nextafter(q.c, -HUGE_VAL);
      thr = std::min(thr, t);
    } else if (larger && (q.op == V_GE || q.op == V_GT)) {
      const double t = q.op == V_GE ? q.c : std::nextafter(q.c, HUGE_VAL);
      thr = std::max(thr, t);
    }
  }
  return thr;
}

// One call's vectors (ordered by key, in ctx), their engine views and the problem.
struct PairwiseInput {
  RelVectors rels[2];
  int nrel = 1;
  bool self = true;
  MemoryContext ctx = nullptr;
  VectorSet va, vb;
  PairwiseProblem prob;
  double scan_s = 0;
  const int64* ids_a() const { return rels[0].ids; }
  const int64* ids_b() const { return rels[nrel - 1].ids; }
};

// Checks the arguments, reads both relations as the calling user into a new memory context
// under `parent`, orders them by key and builds the problem; in threshold mode the threshold
// is narrowed by `quals` (narrowed_threshold). C++ code (PostgreSQL calls behind pg_guard).
void pairwise_prepare(const PairwiseArgs& args, MemoryContext parent, const std::vector<ValueQual>& quals,
                      PairwiseInput* in) {
  const PairwiseMetric metric = parse_pairwise_metric(args.metric);
  // Argument checks before reading anything (the same checks make_pairwise repeats).
  if (args.has_k == args.has_thr || (args.has_k && args.k < 1) || (args.has_thr && std::isnan(args.thr))) {
    VectorSet none;
    (void)make_pairwise(metric, none, nullptr, args.k, args.has_k, args.thr, args.has_thr, PairwisePrecision::Exact, 0);
  }
  const bool self = args.rel_a == args.rel_b;
  const int nrel = self ? 1 : 2;
  in->self = self;
  in->nrel = nrel;
  RelVectors* rels = in->rels;
  memset(rels, 0, sizeof in->rels);
  MemoryContext ctx = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  pg_guard([&] {
    ctx = AllocSetContextCreate(parent, "gpu2bs pairwise vectors", ALLOCSET_DEFAULT_SIZES);
    in->ctx = ctx;
    const char* queries[2];
    const Oid relids[2] = {args.rel_a, args.rel_b};
    for (int r = 0; r < nrel; ++r) {
      rels[r].d = -1;
      queries[r] = build_query(relids[r], args.vec, args.id, &rels[r]);
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
      report_bad_vector(&rels[r], args.vec);
    }
    SPI_finish();
    note_scan_path(path);
    note_toast_reads(toast_pages, detoasted);
  });
  for (int r = 0; r < nrel; ++r) order_by_key(&rels[r], ctx);
  // The scan time includes ordering the rows by key.
  in->scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int da = rels[0].d, db = rels[nrel - 1].d;
  if (nrel == 2 && da > 0 && db > 0 && da != db)
    throw Error(ErrorCode::InvalidParameter, "vectors of different lengths",
                std::string(rels[0].relname) + " has vectors of " + std::to_string(da) + " elements, " +
                    rels[1].relname + " of " + std::to_string(db) + ".");
  const int d = std::max(std::max(da, db), 1);
  view_of(rels[0], d, &in->va);
  if (!self) view_of(rels[1], d, &in->vb);
  normalize_vectors(metric, &in->va);
  if (!self) normalize_vectors(metric, &in->vb);
  const double thr = args.has_thr ? narrowed_threshold(metric, args.thr, quals) : args.thr;
  const PairwisePrecision prec = PairwisePrecision(pairwise_precision_setting);
  in->prob = make_pairwise(metric, in->va, self ? nullptr : &in->vb, args.k, args.has_k, thr, args.has_thr,
                           prec, uint64_t(max_result_rows_setting));
}

}  // namespace

// gpu_pairwise(a, b, vec, metric, k, threshold, id) RETURNS TABLE(id1, id2, value).
GPU2BS_FUNCTION(gpu2bs_pairwise) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  // A NULL relation, column or metric: no rows (as gpu_simjoin with a NULL relation).
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3)) return (Datum)0;
  PairwiseArgs args;
  args.rel_a = PG_GETARG_OID(0);
  args.rel_b = PG_GETARG_OID(1);
  args.has_k = !PG_ARGISNULL(4);
  args.has_thr = !PG_ARGISNULL(5);
  args.k = args.has_k ? PG_GETARG_INT32(4) : 0;
  args.thr = args.has_thr ? PG_GETARG_FLOAT8(5) : 0;
  pg_guard([&] {
    args.metric = text_to_cstring(PG_GETARG_TEXT_PP(3));
    args.vec = text_to_cstring(PG_GETARG_TEXT_PP(2));
    args.id = PG_ARGISNULL(6) ? nullptr : text_to_cstring(PG_GETARG_TEXT_PP(6));
  });
  PairwiseInput in;
  pairwise_prepare(args, CurrentMemoryContext, {}, &in);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = in.scan_s;
  DeviceGrant grant(eng, ctl, 0, 0);
  PairwiseSink sink(rsinfo, in.ids_a(), in.ids_b());
  eng->pairwise(in.prob, sink, ctl);
  record_run("gpu_pairwise", eng->name(), ctl.stats);
  pg_guard([&] { MemoryContextDelete(in.ctx); });
  return (Datum)0;
}

// ---- custom scan: pushdown of value quals and LIMIT ------------------------------------------
//
// With gpu2bs.enable_customscan and gpu2bs.enable_pushdown on, gpu_pairwise(...) in FROM whose
// arguments need no other relation runs as a custom scan when the query has quals comparing
// value with a constant or parameter (value < c, <=, >=, >, either operand order) or wants its
// first rows soon (LIMIT, EXISTS, cursors):
//   - the scan applies those quals to the engine's rows itself (PostgreSQL's float8 order), and
//     in threshold mode narrows the engine's threshold by those in the metric's better direction
//     (narrowed_threshold), so the engine neither computes the values nor hands over the rows
//     the quals drop; with k the quals apply after the k best of each row, as in SQL;
//   - a query that wants its first rows soon runs the engine on its own thread and takes its
//     result pages through a bounded queue (PagePipe, as gpu_simjoin's custom scan): the first
//     rows come with the first page, and the engine stops when the reading does.
// Same rows as the function scan; the remaining quals stay with PostgreSQL.

namespace {

// Fields of custom_private.
enum PwPriv { PW_PIPELINED, PW_NARGS, PW_OPS, PW_TYPES, PW_THRESHOLD_DESC, PW_FILTER_DESC, PW_FUNCID, PW_COUNT };

set_rel_pathlist_hook_type prev_pw_pathlist_hook = nullptr;

// C++ state of one run: the input, the quals' values and, when pipelined, the pipe.
struct PwRun {
  // The pipe's thread reads the input: it stops before the input goes.
  ~PwRun() {
    live_run_unlink(&live);
    if (pipe) pipe->stop();
  }
  LiveRun live;  // in the backend's list of live runs while pipelined
  std::unique_ptr<PairwiseInput> in;
  std::vector<ValueQual> quals;
  std::unique_ptr<PagePipe> pipe;
  std::unique_ptr<PgControl> ctl;
  std::unique_ptr<DeviceGrant> grant;
  std::string engine_name;
  PagePipe::Page page;
  size_t page_pos = 0;
  bool done = false;
};

struct PwScanState {
  CustomScanState css;
  bool pipelined;
  int nargs;
  List* ops;          // ValueOp of each pushed qual
  List* types;        // operand type of each pushed qual (float8 or float4)
  List* arg_states;   // the function's arguments
  List* qual_states;  // the pushed quals' operands
  TupleDesc row_desc; // (id1, id2, value)
  bool started;
  bool empty;         // a NULL argument or operand: no rows
  bool aborted;       // a subtransaction abort stopped the pipelined run before its end
  MemoryContext in_ctx;
  PwRun* run;
  Tuplestorestate* store;
  TupleTableSlot* store_slot;
};

// Writes the rows that pass the quals into the scan's tuplestore.
class PwStoreSink final : public PairSink {
 public:
  PwStoreSink(PwScanState* st, const PwRun* run) : st_(st), run_(run) {}
  void consume(const PairRecord* pairs, size_t n) override {
    const int64* ia = run_->in->ids_a();
    const int64* ib = run_->in->ids_b();
    const std::vector<ValueQual>& qs = run_->quals;
    PwScanState* st = st_;
    pg_guard([&] {
      Datum values[3];
      bool nulls[3] = {false, false, false};
      for (size_t p = 0; p < n; ++p) {
        if (!value_passes(qs, pairs[p].dist)) continue;
        values[0] = Int64GetDatum(ia[pairs[p].i]);
        values[1] = Int64GetDatum(ib[pairs[p].j]);
        values[2] = Float8GetDatum(pairs[p].dist);
        tuplestore_putvalues(st->store, st->row_desc, values, nulls);
      }
    });
  }

 private:
  PwScanState* st_;
  const PwRun* run_;
};

// Deletes the run (stopping its pipe) before the vectors it reads are freed.
void free_pw_run(void* arg) {
  PwScanState* st = (PwScanState*)arg;
  delete st->run;
  st->run = nullptr;
}

// Stops a pipelined run at a transaction or subtransaction abort (before admission releases
// its device memory); a later read of the scan fails instead of ending early.
void stop_pw_run(void* arg) {
  free_pw_run(arg);
  ((PwScanState*)arg)->aborted = true;
}

// Evaluates the arguments and the quals' operands, reads the relations and runs the engine into
// the tuplestore, or starts it on the pipe's thread (C++).
void pw_start(void* arg) {
  PwScanState* st = (PwScanState*)arg;
  ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
  PairwiseArgs args;
  std::vector<ValueQual> quals;
  bool null_arg = false;
  // The arguments' values and strings live in the per-tuple context until the relations are
  // read (a rescan evaluates them again).
  pg_guard([&] {
    MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
    Datum v[7];
    bool n[7];
    int a = 0;
    ListCell* lc;
    foreach (lc, st->arg_states) {
      if (a < 7) v[a] = ExecEvalExpr((ExprState*)lfirst(lc), econtext, &n[a]);
      ++a;
    }
    // A NULL relation, column or metric: no rows (as the function).
    null_arg = n[0] || n[1] || n[2] || n[3];
    if (null_arg) {
      MemoryContextSwitchTo(old);
      return;
    }
    args.rel_a = DatumGetObjectId(v[0]);
    args.rel_b = DatumGetObjectId(v[1]);
    args.vec = TextDatumGetCString(v[2]);
    args.metric = TextDatumGetCString(v[3]);
    args.has_k = !n[4];
    args.k = args.has_k ? DatumGetInt32(v[4]) : 0;
    args.has_thr = !n[5];
    args.thr = args.has_thr ? DatumGetFloat8(v[5]) : 0;
    args.id = n[6] ? nullptr : TextDatumGetCString(v[6]);
    ListCell *lo, *lt, *ls;
    forthree (lo, st->ops, lt, st->types, ls, st->qual_states) {
      bool isnull = false;
      const Datum d = ExecEvalExpr((ExprState*)lfirst(ls), econtext, &isnull);
      ValueQual q;
      q.op = lfirst_int(lo);
      q.null = isnull;
      q.c = isnull ? 0 : Oid(lfirst_oid(lt)) == FLOAT4OID ? double(DatumGetFloat4(d)) : DatumGetFloat8(d);
      quals.push_back(q);
    }
    MemoryContextSwitchTo(old);
  });
  if (null_arg) {
    st->empty = true;
    return;
  }
  std::unique_ptr<PairwiseInput> in(new PairwiseInput());
  pairwise_prepare(args, st->css.ss.ps.state->es_query_cxt, quals, in.get());
  pg_guard([&] { ResetExprContext(econtext); });
  // The run dies with the vectors (a reset callback on their context), so an error anywhere in
  // the query stops a running pipe before the vectors go.
  PwRun* run = new PwRun();
  run->in = std::move(in);
  run->quals = std::move(quals);
  st->run = run;
  st->in_ctx = run->in->ctx;
  pg_guard([&] {
    MemoryContextCallback* cb = (MemoryContextCallback*)MemoryContextAlloc(st->in_ctx, sizeof(MemoryContextCallback));
    cb->func = free_pw_run;
    cb->arg = st;
    MemoryContextRegisterResetCallback(st->in_ctx, cb);
  });
  // A NULL operand passes no row: nothing to compute once the relations are checked.
  for (const ValueQual& q : run->quals)
    if (q.null) {
      st->empty = true;
      return;
    }
  std::string reason;
  Engine* eng = choose_engine(&reason);
  if (!st->pipelined) {
    pg_guard([&] {
      MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
      st->store = tuplestore_begin_heap(false, false, work_mem);
      MemoryContextSwitchTo(old);
    });
    PgControl ctl;
    ctl.stats.scan_s = run->in->scan_s;
    DeviceGrant grant(eng, ctl, 0, 0);
    PwStoreSink sink(st, run);
    eng->pairwise(run->in->prob, sink, ctl);
    record_run("gpu_pairwise", eng->name(), ctl.stats);
    return;
  }
  // Pipelined: the engine runs on the pipe's thread from here on; it touches nothing of
  // PostgreSQL's but the vectors, kept until the pipe has stopped.
  run->engine_name = eng->name();
  run->pipe.reset(new PagePipe(4));
  run->ctl.reset(new PipeControl(run->pipe.get()));
  run->ctl->stats.scan_s = run->in->scan_s;
  run->grant.reset(new DeviceGrant(eng, *run->ctl, 0, 0));  // one device, as the function's call
  pg_guard([&] { live_run_link(&run->live, stop_pw_run, st, st->css.ss.ps.state); });
  PwRun* r = run;
  run->pipe->start([eng, r](PairSink& out) { eng->pairwise(r->in->prob, out, *r->ctl); });
}

// Frees the tuplestore, the run and the vectors; a pipelined run stopped before its end (LIMIT
// met, cursor closed, rescan) is recorded for gpu2bs_info() as far as it ran.
void pw_release(PwScanState* st) {
  if (st->run && st->run->pipe && !st->run->done) {
    st->run->pipe->stop();  // the engine's thread writes the statistics until it stops
    record_run("gpu_pairwise", st->run->engine_name, st->run->ctl->stats);
  }
  if (st->store) tuplestore_end(st->store);
  st->store = nullptr;
  if (st->in_ctx) MemoryContextDelete(st->in_ctx);  // also deletes st->run
  st->in_ctx = nullptr;
  st->started = false;
  st->empty = false;
  st->aborted = false;
}

// Waits for the pipe's next page (C++ side of pw_next_pipelined); true while none came.
void pw_pipe_wait(void* arg) {
  auto* w = (std::pair<PwScanState*, bool*>*)arg;
  PwRun* r = w->first->run;
  PagePipe::Status s = r->pipe->next(&r->page, 20);
  *w->second = s == PagePipe::Status::Wait;
  if (s == PagePipe::Status::Page) r->page_pos = 0;
  if (s == PagePipe::Status::Done) {
    r->page.clear();
    r->page_pos = 0;
    r->done = true;
    record_run("gpu_pairwise", r->engine_name, r->ctl->stats);
  }
}

// The next row of a pipelined run that passes the quals.
TupleTableSlot* pw_next_pipelined(PwScanState* st, TupleTableSlot* slot) {
  PwRun* r = st->run;
  for (;;) {
    while (r->page_pos >= r->page.size()) {
      if (r->done) return slot;
      bool waiting = false;
      std::pair<PwScanState*, bool*> w(st, &waiting);
      call_at_boundary(pw_pipe_wait, &w);
      if (waiting) CHECK_FOR_INTERRUPTS();
    }
    const PairRecord& p = r->page[r->page_pos++];
    if (!value_passes(r->quals, p.dist)) continue;
    slot->tts_values[0] = Int64GetDatum(r->in->ids_a()[p.i]);
    slot->tts_values[1] = Int64GetDatum(r->in->ids_b()[p.j]);
    slot->tts_values[2] = Float8GetDatum(p.dist);
    slot->tts_isnull[0] = slot->tts_isnull[1] = slot->tts_isnull[2] = false;
    return ExecStoreVirtualTuple(slot);
  }
}

// The next row (id1, id2, value), or an empty slot at the end.
TupleTableSlot* pw_scan_next(ScanState* ss) {
  PwScanState* st = (PwScanState*)ss;
  TupleTableSlot* slot = ss->ss_ScanTupleSlot;
  if (!st->started) {
    st->started = true;
    call_at_boundary(pw_start, st);
  }
  ExecClearTuple(slot);
  if (st->aborted)
    ereport(ERROR, (errcode(ERRCODE_INVALID_CURSOR_STATE),
                    errmsg("the pipelined gpu_pairwise run of this scan was stopped by a subtransaction abort"),
                    errhint("Reopen the cursor.")));
  if (st->empty || !st->run) return slot;
  if (st->pipelined) return pw_next_pipelined(st, slot);
  if (!tuplestore_gettupleslot(st->store, true, false, st->store_slot)) return slot;
  slot_getallattrs(st->store_slot);
  for (int c = 0; c < 3; ++c) {
    slot->tts_values[c] = st->store_slot->tts_values[c];
    slot->tts_isnull[c] = st->store_slot->tts_isnull[c];
  }
  return ExecStoreVirtualTuple(slot);
}

// EvalPlanQual recheck: the scan is not planned where rows can be rechecked (pw_pathlist_hook),
// so no row is returned.
bool pw_recheck(ScanState*, TupleTableSlot*) { return false; }

// Initializes the argument and operand expressions and checks EXECUTE on the function.
void pw_begin(CustomScanState* node, EState*, int) {
  PwScanState* st = (PwScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  List* exprs = cs->custom_exprs;
  st->arg_states = ExecInitExprList(list_copy_head(exprs, st->nargs), &node->ss.ps);
  st->qual_states = ExecInitExprList(list_copy_tail(exprs, st->nargs), &node->ss.ps);
  // The EXECUTE privilege on gpu_pairwise, checked as the function scan's executor does.
  const Oid funcid = Oid(intVal(list_nth(cs->custom_private, PW_FUNCID)));
  const AclResult acl = pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE);
  if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(funcid));
  InvokeFunctionExecuteHook(funcid);
  TupleDesc desc = CreateTemplateTupleDesc(3);
  TupleDescInitEntry(desc, 1, "id1", INT8OID, -1, 0);
  TupleDescInitEntry(desc, 2, "id2", INT8OID, -1, 0);
  TupleDescInitEntry(desc, 3, "value", FLOAT8OID, -1, 0);
  st->row_desc = desc;
  st->store_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
}

// The next row through ExecScan (remaining quals, projection).
TupleTableSlot* pw_exec(CustomScanState* node) {
  return ExecScan(&node->ss, (ExecScanAccessMtd)pw_scan_next, (ExecScanRecheckMtd)pw_recheck);
}

// Frees the run.
void pw_end(CustomScanState* node) {
  PwScanState* st = (PwScanState*)node;
  pw_release(st);
  ExecDropSingleTupleTableSlot(st->store_slot);
}

// Rescan: new parameter values, or a pipelined run, run the call again; otherwise the
// tuplestore is read again.
void pw_rescan(CustomScanState* node) {
  PwScanState* st = (PwScanState*)node;
  if (node->ss.ps.chgParam != nullptr || !st->started || st->pipelined || !st->store) {
    pw_release(st);
    return;
  }
  tuplestore_rescan(st->store);
}

// EXPLAIN: the pushed quals and the output mode.
void pw_explain(CustomScanState* node, List*, ExplainState* es) {
  PwScanState* st = (PwScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  if (st->pipelined || es->verbose) ExplainPropertyText("Pushdown", st->pipelined ? "rows (pipelined)" : "rows", es);
  const char* thr = strVal(list_nth(cs->custom_private, PW_THRESHOLD_DESC));
  const char* filt = strVal(list_nth(cs->custom_private, PW_FILTER_DESC));
  if (*thr) ExplainPropertyText("Pushed Threshold", thr, es);
  if (*filt) ExplainPropertyText("Pushed Filter", filt, es);
}

const CustomExecMethods pw_exec_methods = {"gpu2bs pairwise", pw_begin, pw_exec, pw_end, pw_rescan,
                                           nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           pw_explain};

// The scan state of a plan, with its plan data decoded.
Node* pw_create_state(CustomScan* cs) {
  PwScanState* st = (PwScanState*)newNode(sizeof(PwScanState), T_CustomScanState);
  st->css.methods = &pw_exec_methods;
  List* p = cs->custom_private;
  st->pipelined = intVal(list_nth(p, PW_PIPELINED)) != 0;
  st->nargs = intVal(list_nth(p, PW_NARGS));
  st->ops = NIL;
  st->types = NIL;
  ListCell* lc;
  foreach (lc, (List*)list_nth(p, PW_OPS)) st->ops = lappend_int(st->ops, intVal(lfirst(lc)));
  foreach (lc, (List*)list_nth(p, PW_TYPES)) st->types = lappend_oid(st->types, Oid(intVal(lfirst(lc))));
  return (Node*)st;
}

const CustomScanMethods pw_scan_methods = {"gpu2bs pairwise", pw_create_state};

// ---- custom scan: planner ----------------------------------------------------------------------

// The gpu_pairwise call of range table entry `rti` (a plain call with every argument and no
// volatile function), or null.
FuncExpr* pairwise_rte(PlannerInfo* root, Index rti) {
  if (rti < 1 || int(rti) >= root->simple_rel_array_size) return nullptr;
  RangeTblEntry* rte = root->simple_rte_array[rti];
  if (!rte || rte->rtekind != RTE_FUNCTION || rte->funcordinality || list_length(rte->functions) != 1) return nullptr;
  RangeTblFunction* rtf = linitial_node(RangeTblFunction, rte->functions);
  if (!IsA(rtf->funcexpr, FuncExpr)) return nullptr;
  FuncExpr* fe = (FuncExpr*)rtf->funcexpr;
  if (strcmp(gpu2bs_symbol(fe->funcid), "gpu2bs_pairwise") != 0 || list_length(fe->args) != 7 ||
      contain_volatile_functions((Node*)fe->args))
    return nullptr;
  return fe;
}

// Recognizes `clause` as value op c (c a float8 or float4 constant or parameter, either operand
// order) over range table entry `rti`: *op the ValueOp with value on the left, *operand c.
bool value_qual(Node* clause, Index rti, int* op, Expr** operand) {
  if (!IsA(clause, OpExpr) || list_length(((OpExpr*)clause)->args) != 2) return false;
  OpExpr* oe = (OpExpr*)clause;
  Node* l = (Node*)linitial(oe->args);
  Node* r = (Node*)lsecond(oe->args);
  auto is_value = [&](Node* n) {
    return IsA(n, Var) && Index(((Var*)n)->varno) == rti && ((Var*)n)->varattno == 3 && ((Var*)n)->varlevelsup == 0;
  };
  auto is_operand = [&](Node* n) {
    if (IsA(n, Param)) return ((Param*)n)->paramkind == PARAM_EXTERN || ((Param*)n)->paramkind == PARAM_EXEC;
    return IsA(n, Const);
  };
  int o = -1;
  switch (oe->opfuncid ? oe->opfuncid : get_opcode(oe->opno)) {
    case F_FLOAT8LT: case F_FLOAT84LT: case F_FLOAT48LT: o = V_LT; break;
    case F_FLOAT8LE: case F_FLOAT84LE: case F_FLOAT48LE: o = V_LE; break;
    case F_FLOAT8GE: case F_FLOAT84GE: case F_FLOAT48GE: o = V_GE; break;
    case F_FLOAT8GT: case F_FLOAT84GT: case F_FLOAT48GT: o = V_GT; break;
    default: return false;
  }
  Node* c;
  if (is_value(l) && is_operand(r)) {
    c = r;
  } else if (is_value(r) && is_operand(l)) {
    c = l;
    o = 3 - o;  // c op value is value (reversed op) c
  } else {
    return false;
  }
  const Oid t = exprType(c);
  if (t != FLOAT8OID && t != FLOAT4OID) return false;
  *op = o;
  *operand = (Expr*)c;
  return true;
}

// Text of a qual for EXPLAIN: (value op c).
void describe_qual(StringInfo out, int op, Expr* operand) {
  static const char* names[] = {"<", "<=", ">=", ">"};
  if (out->len) appendStringInfoString(out, " AND ");
  appendStringInfo(out, "(value %s ", names[op]);
  if (IsA(operand, Param)) {
    const Param* p = (const Param*)operand;
    appendStringInfo(out, "$%d", p->paramid);
  } else if (((Const*)operand)->constisnull) {
    appendStringInfoString(out, "NULL");
  } else {
    Oid out_fn;
    bool varlena;
    getTypeOutputInfo(((Const*)operand)->consttype, &out_fn, &varlena);
    appendStringInfoString(out, OidOutputFunctionCall(out_fn, ((Const*)operand)->constvalue));
  }
  appendStringInfoChar(out, ')');
}

// Makes the plan: scan tuple (id1, id2, value), custom_exprs = the call's arguments then the
// pushed quals' operands; quals left to PostgreSQL stay quals. A qual goes to the threshold
// when the plan knows the call is in threshold mode (k a NULL constant) and the metric (a
// constant) ranks in its direction; the others are applied by the scan to the engine's rows.
Plan* pw_plan_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* path, List* tlist, List* clauses, List*) {
  const Index rti = rel->relid;
  FuncExpr* fe = pairwise_rte(root, rti);
  CustomScan* cs = makeNode(CustomScan);
  cs->scan.plan.targetlist = tlist;
  cs->scan.scanrelid = 0;
  cs->flags = path->flags;
  cs->custom_relids = bms_make_singleton(int(rti));
  // What the plan knows of the mode and the metric's direction: 0 unknown, 1 smaller is
  // better, 2 larger is better (threshold mode only).
  int dir = 0;
  Node* karg = (Node*)list_nth(fe->args, 4);
  Node* marg = (Node*)list_nth(fe->args, 3);
  if (IsA(karg, Const) && ((Const*)karg)->constisnull && IsA(marg, Const) && !((Const*)marg)->constisnull) {
    const char* m = TextDatumGetCString(((Const*)marg)->constvalue);
    try {
      dir = parse_pairwise_metric(m).larger_is_better() ? 2 : 1;
    } catch (...) {
      dir = 0;  // the call raises the error when it runs
    }
  }
  List* kept = NIL;
  List* ops = NIL;
  List* types = NIL;
  List* operands = NIL;
  StringInfoData thr_desc, filt_desc;
  initStringInfo(&thr_desc);
  initStringInfo(&filt_desc);
  ListCell* lc;
  foreach (lc, extract_actual_clauses(clauses, false)) {
    Node* c = (Node*)lfirst(lc);
    int op;
    Expr* operand;
    if (!value_qual(c, rti, &op, &operand)) {
      kept = lappend(kept, c);
      continue;
    }
    ops = lappend(ops, makeInteger(op));
    types = lappend(types, makeInteger(int(exprType((Node*)operand))));
    operands = lappend(operands, copyObjectImpl(operand));
    const bool to_threshold = (dir == 1 && (op == V_LT || op == V_LE)) || (dir == 2 && (op == V_GT || op == V_GE));
    describe_qual(to_threshold ? &thr_desc : &filt_desc, op, operand);
  }
  cs->scan.plan.qual = kept;
  cs->custom_exprs = list_concat((List*)copyObjectImpl(fe->args), operands);
  const Oid coltypes[3] = {INT8OID, INT8OID, FLOAT8OID};
  const char* names[3] = {"id1", "id2", "value"};
  List* scan_tlist = NIL;
  for (int k = 0; k < 3; ++k)
    scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)makeVar(rti, AttrNumber(k + 1), coltypes[k], -1, InvalidOid, 0),
                                                     AttrNumber(k + 1), pstrdup(names[k]), false));
  cs->custom_scan_tlist = scan_tlist;
  List* priv = NIL;
  priv = lappend(priv, makeInteger(intVal(linitial(path->custom_private))));
  priv = lappend(priv, makeInteger(list_length(fe->args)));
  priv = lappend(priv, ops);
  priv = lappend(priv, types);
  priv = lappend(priv, makeString(thr_desc.data));
  priv = lappend(priv, makeString(filt_desc.data));
  priv = lappend(priv, makeInteger(int(fe->funcid)));
  cs->custom_private = priv;
  cs->methods = &pw_scan_methods;
  return &cs->scan.plan;
}

const CustomPathMethods pw_path_methods = {"gpu2bs pairwise", pw_plan_path, nullptr};

// True when the query level only takes rows from the scan (no grouping, sorting, window
// functions, set-returning target list, set operations), so it may stop reading early.
bool pw_only_takes_rows(PlannerInfo* root) {
  Query* q = root->parse;
  return !q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL && !root->hasHavingQual &&
         q->sortClause == NIL && q->distinctClause == NIL && !q->hasWindowFuncs && !q->hasTargetSRFs &&
         q->setOperations == nullptr;
}

// True when `node` references the whole row of range table entry `rti`.
bool reads_whole_row(Node* node, Index rti) {
  List* vars = pull_var_clause(node, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
  ListCell* lc;
  foreach (lc, vars) {
    Var* v = (Var*)lfirst(lc);
    if (Index(v->varno) == rti && v->varattno == 0) return true;
  }
  return false;
}

// Offers the custom scan for gpu_pairwise(...) in FROM when there is something to push: a value
// qual, or a query that wants its first rows soon and reads this call alone.
void pw_pathlist_hook(PlannerInfo* root, RelOptInfo* rel, Index rti, RangeTblEntry* rte) {
  if (prev_pw_pathlist_hook) prev_pw_pathlist_hook(root, rel, rti, rte);
  if (!customscan_enabled() || !pushdown_enabled() || rte->rtekind != RTE_FUNCTION ||
      !bms_is_empty(rel->lateral_relids) || rel->pathlist == NIL || pairwise_rte(root, rti) == nullptr)
    return;
  // Row marks and EvalPlanQual need the function scan's rows: not offered where any query level
  // locks rows or modifies data.
  for (PlannerInfo* r = root; r; r = r->parent_root) {
    const CmdType cmd = r->parse->commandType;
    if (r->parse->rowMarks != NIL || (cmd != CMD_SELECT && cmd != CMD_INSERT)) return;
  }
  if (reads_whole_row((Node*)rel->reltarget->exprs, rti)) return;
  bool any_qual = false;
  ListCell* lc;
  foreach (lc, rel->baserestrictinfo) {
    RestrictInfo* ri = (RestrictInfo*)lfirst(lc);
    if (reads_whole_row((Node*)ri->clause, rti)) return;
    int op;
    Expr* operand;
    if (!ri->pseudoconstant && value_qual((Node*)ri->clause, rti, &op, &operand)) any_qual = true;
  }
  // A kNN call (k a non-NULL constant) completes its lists only at the end: nothing to pipeline.
  FuncExpr* fe = pairwise_rte(root, rti);
  Node* karg = (Node*)list_nth(fe->args, 4);
  const bool knn = IsA(karg, Const) && !((Const*)karg)->constisnull;
  const bool pipelined = !knn && root->tuple_fraction > 0 && bms_membership(root->all_baserels) == BMS_SINGLETON &&
                         pw_only_takes_rows(root);
  if (!any_qual && !pipelined) return;
  CustomPath* cp = function_scan_custom_path(rel, &pw_path_methods);
  if (pipelined) cp->path.startup_cost *= 0.2;
  cp->custom_private = list_make1(makeInteger(pipelined ? 1 : 0));
  add_path(rel, &cp->path);
}

}  // namespace

namespace gpu2bs {
namespace pg {

// Registers the custom scan and its planner hook (from _PG_init).
void register_pairwise_scan() {
  RegisterCustomScanMethods(&pw_scan_methods);
  prev_pw_pathlist_hook = set_rel_pathlist_hook;
  set_rel_pathlist_hook = pw_pathlist_hook;
}

}  // namespace pg
}  // namespace gpu2bs
