// Custom scan for gpu_simjoin(...) in FROM: the planner replaces the function scan (which
// copies every pair through a tuplestore) with a scan that spools the engine's result pages as
// raw 16-byte records (in memory up to work_mem, then in a temporary file) and returns each pair
// straight into the scan slot. Same rows, same errors; gpu2bs.enable_customscan = off restores
// the plain function scan. LATERAL calls (arguments that reference other relations) keep the
// function scan.
#include "pg.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "storage/buffile.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

bool enable_customscan = true;
set_rel_pathlist_hook_type prev_pathlist_hook = nullptr;

// 1 or 2 when funcid is gpu2bs's self-join or two-relation gpu_simjoin, else 0 (cached).
int simjoin_form(Oid funcid) {
  static Oid cached_oid[8];
  static int cached_form[8];
  static int ncached = 0;
  for (int i = 0; i < ncached; ++i)
    if (cached_oid[i] == funcid) return cached_form[i];
  int form = 0;
  HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
  if (HeapTupleIsValid(tup)) {
    Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tup);
    bool isnull;
    if (proc->prolang == ClanguageId) {
      Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
      Datum bin = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
      if (!isnull && strstr(TextDatumGetCString(bin), "gpu2bs")) {
        char* s = TextDatumGetCString(src);
        form = strcmp(s, "gpu2bs_simjoin_self") == 0 ? 1 : strcmp(s, "gpu2bs_simjoin_two") == 0 ? 2 : 0;
      }
    }
    ReleaseSysCache(tup);
  }
  if (ncached < 8) {
    cached_oid[ncached] = funcid;
    cached_form[ncached++] = form;
  }
  return form;
}

// ---- executor ---------------------------------------------------------------------------------

struct SimjoinScanState {
  CustomScanState css;
  int form;
  int ncols;        // columns of the scan tuple
  int attno[4];     // which output column (1 id1, 2 id2, 3 dist, 0 the whole row) each holds
  Index rti;        // the function's range table index (whole-row names, EvalPlanQual)
  TupleDesc row_desc;  // (id1, id2, dist) under the query's column aliases, blessed
  bool epq_done;    // EvalPlanQual: the test row was returned
  List* arg_states;
  bool started;
  bool self;
  const int64* ids_a;
  const int64* ids_b;
  MemoryContext points_ctx;
  // spool: records [0, mem_n) in memory, then file_n records in `file`
  PairRecord* mem;
  size_t mem_cap;
  size_t mem_n;
  BufFile* file;
  uint64 file_n;
  // reading position
  uint64 pos;
  PairRecord* rbuf;
  size_t rbuf_n;
  size_t rbuf_pos;
};

constexpr size_t kReadChunk = 4096;
constexpr uint64 kPrefetch = 16;  // records ahead whose keys are prefetched

// Copies result pages into the spool (memory first, then the temporary file).
class SpoolSink final : public PairSink {
 public:
  explicit SpoolSink(SimjoinScanState* st) : st_(st) {}
  void consume(const PairRecord* pairs, size_t n) override {
    SimjoinScanState* st = st_;
    size_t take = std::min(n, st->mem_cap - st->mem_n);
    memcpy(st->mem + st->mem_n, pairs, take * sizeof(PairRecord));
    st->mem_n += take;
    if (take == n) return;
    const PairRecord* rest = pairs + take;
    const size_t left = n - take;
    pg_guard([&] {
      if (!st->file) {
        MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
        st->file = BufFileCreateTemp(false);
        MemoryContextSwitchTo(old);
      }
      BufFileWrite(st->file, (void*)rest, left * sizeof(PairRecord));
    });
    st->file_n += left;
  }

 private:
  SimjoinScanState* st_;
};

// Evaluates the arguments, reads the relations and runs the join into the spool (C++).
void run_join(void* arg) {
  SimjoinScanState* st = (SimjoinScanState*)arg;
  ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
  List* states = st->arg_states;
  const int nrel = st->form;
  SimjoinArgs args;
  args.nrel = nrel;
  bool null_input = false;
  pg_guard([&] {
    Datum vals[5];
    bool nulls[5];
    int k = 0;
    ListCell* lc;
    foreach (lc, states) {
      if (k < 5) vals[k] = ExecEvalExpr((ExprState*)lfirst(lc), econtext, &nulls[k]);
      ++k;
    }
    for (int r = 0; r <= nrel; ++r) null_input = null_input || nulls[r];
    if (null_input) return;
    args.relids[0] = DatumGetObjectId(vals[0]);
    args.relids[1] = nrel == 2 ? DatumGetObjectId(vals[1]) : InvalidOid;
    args.eps = DatumGetFloat8(vals[nrel]);
    args.coords = nulls[nrel + 1] ? nullptr : DatumGetArrayTypeP(vals[nrel + 1]);
    args.id = nulls[nrel + 2] ? nullptr : DatumGetTextPP(vals[nrel + 2]);
    MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
    st->mem_cap = std::max<size_t>(size_t(work_mem) * 1024 / sizeof(PairRecord), 1024);
    st->mem = (PairRecord*)alloc_big(CurrentMemoryContext, st->mem_cap * sizeof(PairRecord));
    st->rbuf = (PairRecord*)palloc(kReadChunk * sizeof(PairRecord));
    MemoryContextSwitchTo(old);
  });
  if (null_input) return;
  SimjoinInput in;
  {
    MemoryContext qcxt = st->css.ss.ps.state->es_query_cxt;
    MemoryContext old = CurrentMemoryContext;
    CurrentMemoryContext = qcxt;  // the points live until the scan ends
    try {
      simjoin_read(args, &in);
    } catch (...) {
      CurrentMemoryContext = old;
      throw;
    }
    CurrentMemoryContext = old;
  }
  st->points_ctx = in.ctx;
  st->ids_a = in.rels[0].ids;
  st->ids_b = in.rels[nrel - 1].ids;
  st->self = nrel == 1;
  SpoolSink sink(st);
  simjoin_run(args, &in, sink);
}

// Frees the spool and the points.
void release(SimjoinScanState* st) {
  if (st->file) BufFileClose(st->file);
  st->file = nullptr;
  if (st->points_ctx) MemoryContextDelete(st->points_ctx);
  st->points_ctx = nullptr;
  if (st->mem) pfree(st->mem);
  if (st->rbuf) pfree(st->rbuf);
  st->mem = st->rbuf = nullptr;
  st->mem_n = st->file_n = st->pos = 0;
  st->rbuf_n = st->rbuf_pos = 0;
  st->started = false;
}

// Fills the scan slot's columns from one pair; a whole-row column gets a composite datum
// (allocated in the per-tuple memory, like the function scan's projection).
void store_row(SimjoinScanState* st, TupleTableSlot* slot, int64 a, int64 b, double dist) {
  for (int c = 0; c < st->ncols; ++c) {
    const int att = st->attno[c];
    slot->tts_isnull[c] = false;
    if (att == 0) {
      Datum v[3] = {Int64GetDatum(a), Int64GetDatum(b), Float8GetDatum(dist)};
      bool n[3] = {false, false, false};
      MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
      slot->tts_values[c] = HeapTupleGetDatum(heap_form_tuple(st->row_desc, v, n));
      MemoryContextSwitchTo(old);
    } else {
      slot->tts_values[c] = att == 1 ? Int64GetDatum(a) : att == 2 ? Int64GetDatum(b) : Float8GetDatum(dist);
    }
  }
}

// The next pair as a virtual tuple (id1, id2, dist), or an empty slot at the end.
TupleTableSlot* scan_next(ScanState* ss) {
  SimjoinScanState* st = (SimjoinScanState*)ss;
  TupleTableSlot* slot = ss->ss_ScanTupleSlot;
  if (!st->started) {
    st->started = true;
    call_at_boundary(run_join, st);
    if (st->file && BufFileSeek(st->file, 0, 0, SEEK_SET) != 0)
      ereport(ERROR, (errcode_for_file_access(), errmsg("could not rewind gpu2bs spool file")));
  }
  ExecClearTuple(slot);
  const PairRecord* r;
  if (st->pos < st->mem_n) {
    r = &st->mem[st->pos];
  } else if (st->pos < st->mem_n + st->file_n) {
    if (st->rbuf_pos == st->rbuf_n) {
      size_t want = size_t(std::min<uint64>(kReadChunk, st->mem_n + st->file_n - st->pos));
      size_t got = BufFileRead(st->file, st->rbuf, want * sizeof(PairRecord));
      if (got != want * sizeof(PairRecord))
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not read gpu2bs spool file")));
      st->rbuf_n = want;
      st->rbuf_pos = 0;
    }
    r = &st->rbuf[st->rbuf_pos++];
  } else {
    return slot;
  }
  st->pos++;
  if (st->ncols == 0) return ExecStoreVirtualTuple(slot);  // count(*): no key lookups
  // The keys of a record a few rows ahead (pairs come in cell order, keys in input order, so
  // these lookups miss the caches): prefetched while this row goes up the plan.
  const PairRecord* ahead = st->pos + kPrefetch < st->mem_n ? &st->mem[st->pos + kPrefetch]
                            : st->rbuf_pos + kPrefetch < st->rbuf_n ? &st->rbuf[st->rbuf_pos + kPrefetch]
                                                                    : nullptr;
  if (ahead) {
    __builtin_prefetch(&st->ids_a[ahead->i]);
    __builtin_prefetch(&st->ids_b[ahead->j]);
  }
  int64 a = st->ids_a[r->i], b = st->ids_b[r->j];
  if (st->self && a > b) std::swap(a, b);
  store_row(st, slot, a, b, r->dist);
  return ExecStoreVirtualTuple(slot);
}

// EvalPlanQual recheck (a row lock or UPDATE in the same query met a concurrently updated
// row): the scan returns once the row it returned before, saved by the ROW_MARK_COPY row mark
// as a whole-row value, then ends. The scan has no relation of its own (scanrelid 0), so
// PostgreSQL leaves this to the scan.
bool scan_recheck(ScanState* ss, TupleTableSlot* slot) {
  SimjoinScanState* st = (SimjoinScanState*)ss;
  EPQState* epq = ss->ps.state->es_epq_active;
  if (!epq || st->epq_done) return false;
  st->epq_done = true;
  const Index rti = st->rti;
  TupleTableSlot* src = nullptr;
  if (epq->relsubs_slot && epq->relsubs_slot[rti - 1]) {
    src = epq->relsubs_slot[rti - 1];
  } else if (epq->relsubs_rowmark && epq->relsubs_rowmark[rti - 1]) {
    src = MakeSingleTupleTableSlot(st->row_desc, &TTSOpsHeapTuple);
    if (!EvalPlanQualFetchRowMark(epq, rti, src)) return false;
  } else {
    return false;
  }
  if (TupIsNull(src)) return false;
  slot_getallattrs(src);
  if (src->tts_isnull[0] || src->tts_isnull[1] || src->tts_isnull[2]) return false;
  ExecClearTuple(slot);
  store_row(st, slot, DatumGetInt64(src->tts_values[0]), DatumGetInt64(src->tts_values[1]),
            DatumGetFloat8(src->tts_values[2]));
  ExecStoreVirtualTuple(slot);
  return true;
}

void begin_scan(CustomScanState* node, EState* estate, int) {
  SimjoinScanState* st = (SimjoinScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  st->arg_states = ExecInitExprList(cs->custom_exprs, &node->ss.ps);
  // The row type of whole-row references: RECORD with the range table entry's column names
  // (aliases included), as a function scan's whole-row Var has.
  RangeTblEntry* rte = exec_rt_fetch(st->rti, estate);
  TupleDesc desc = CreateTemplateTupleDesc(3);
  const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
  const char* names[3] = {"id1", "id2", "dist"};
  for (int k = 0; k < 3; ++k) {
    const char* name = names[k];
    if (rte->eref && list_length(rte->eref->colnames) > k) name = strVal(list_nth(rte->eref->colnames, k));
    TupleDescInitEntry(desc, AttrNumber(k + 1), name, types[k], -1, 0);
  }
  st->row_desc = BlessTupleDesc(desc);
}

TupleTableSlot* exec_scan(CustomScanState* node) {
  return ExecScan(&node->ss, (ExecScanAccessMtd)scan_next, (ExecScanRecheckMtd)scan_recheck);
}

void end_scan(CustomScanState* node) { release((SimjoinScanState*)node); }

// Rescan: new parameter values run the join again; otherwise the spool is read again.
void rescan(CustomScanState* node) {
  SimjoinScanState* st = (SimjoinScanState*)node;
  st->epq_done = false;
  if (node->ss.ps.chgParam != nullptr || !st->started) {
    release(st);
    return;
  }
  st->pos = 0;
  st->rbuf_n = st->rbuf_pos = 0;
  if (st->file && BufFileSeek(st->file, 0, 0, SEEK_SET) != 0)
    ereport(ERROR, (errcode_for_file_access(), errmsg("could not rewind gpu2bs spool file")));
}

const CustomExecMethods exec_methods = {
    "gpu2bs simjoin", begin_scan, exec_scan, end_scan, rescan,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

Node* create_state(CustomScan* cs) {
  SimjoinScanState* st = (SimjoinScanState*)newNode(sizeof(SimjoinScanState), T_CustomScanState);
  st->css.methods = &exec_methods;
  st->form = intVal(linitial(cs->custom_private));
  st->rti = Index(intVal(lsecond(cs->custom_private)));
  ListCell* lc;
  for_each_from(lc, cs->custom_private, 2) st->attno[st->ncols++] = intVal(lfirst(lc));
  return (Node*)st;
}

const CustomScanMethods scan_methods = {"gpu2bs simjoin", create_state};

// ---- planner ----------------------------------------------------------------------------------

Plan* plan_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* path, List* tlist, List* clauses,
                List*) {
  RangeTblEntry* rte = planner_rt_fetch(rel->relid, root);
  RangeTblFunction* rtf = linitial_node(RangeTblFunction, rte->functions);
  FuncExpr* fe = (FuncExpr*)rtf->funcexpr;
  CustomScan* cs = makeNode(CustomScan);
  cs->scan.plan.targetlist = tlist;
  cs->scan.plan.qual = extract_actual_clauses(clauses, false);
  cs->scan.scanrelid = 0;
  cs->flags = path->flags;
  cs->custom_exprs = (List*)copyObjectImpl(fe->args);
  // The scan tuple holds just the columns the query needs (none for count(*)), in the order
  // of the target list when that is a list of distinct plain columns and there is no qual:
  // then no projection step runs per row. Otherwise all three columns, plus the whole row
  // when the query references it (SELECT g, row_to_json(g), count(g), and the row marks of
  // UPDATE/DELETE/MERGE ... FROM and FOR UPDATE, which copy each joined row whole).
  const Oid types[3] = {INT8OID, INT8OID, FLOAT8OID};
  const char* names[3] = {"id1", "id2", "dist"};
  List* cols = NIL;
  bool plain = clauses == NIL;  // quals may read columns the target list does not
  Var* whole = nullptr;
  ListCell* lc;
  List* vars = pull_var_clause((Node*)list_concat(list_copy(tlist), extract_actual_clauses(clauses, false)),
                               PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
  foreach (lc, vars) {
    Var* v = (Var*)lfirst(lc);
    if (v->varno == int(rel->relid) && v->varattno == 0 && !whole) {
      whole = (Var*)copyObjectImpl(v);
    }
  }
  foreach (lc, tlist) {
    Node* e = (Node*)((TargetEntry*)lfirst(lc))->expr;
    if (!IsA(e, Var) || ((Var*)e)->varno != int(rel->relid) || ((Var*)e)->varattno < 1 ||
        ((Var*)e)->varattno > 3 || list_member_int(cols, ((Var*)e)->varattno)) {
      plain = false;
      break;
    }
    cols = lappend_int(cols, ((Var*)e)->varattno);
  }
  if (!plain) cols = list_make3_int(1, 2, 3);
  List* scan_tlist = NIL;
  List* priv = list_make2(makeInteger(intVal(linitial(path->custom_private))), makeInteger(int(rel->relid)));
  int resno = 1;
  foreach (lc, cols) {
    const int k = lfirst_int(lc) - 1;
    scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)makeVar(rel->relid, AttrNumber(k + 1), types[k], -1, InvalidOid, 0),
                                                     AttrNumber(resno++), pstrdup(names[k]), false));
    priv = lappend(priv, makeInteger(k + 1));
  }
  if (whole) {
    scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)whole, AttrNumber(resno++), pstrdup("row"), false));
    priv = lappend(priv, makeInteger(0));
  }
  cs->custom_scan_tlist = scan_tlist;
  cs->custom_private = priv;
  cs->methods = &scan_methods;
  return &cs->scan.plan;
}

const CustomPathMethods path_methods = {"gpu2bs simjoin", plan_path, nullptr};

// Offers the custom scan for gpu_simjoin(...) in FROM when its arguments need no other relation.
void pathlist_hook(PlannerInfo* root, RelOptInfo* rel, Index rti, RangeTblEntry* rte) {
  if (prev_pathlist_hook) prev_pathlist_hook(root, rel, rti, rte);
  if (!enable_customscan || rte->rtekind != RTE_FUNCTION || rte->funcordinality ||
      list_length(rte->functions) != 1 || !bms_is_empty(rel->lateral_relids) || rel->pathlist == NIL)
    return;
  RangeTblFunction* rtf = linitial_node(RangeTblFunction, rte->functions);
  if (!IsA(rtf->funcexpr, FuncExpr)) return;
  FuncExpr* fe = (FuncExpr*)rtf->funcexpr;
  int form = simjoin_form(fe->funcid);
  if (form == 0 || list_length(fe->args) != form + 3 || contain_volatile_functions((Node*)fe->args))
    return;
  Path* fs = (Path*)linitial(rel->pathlist);
  CustomPath* cp = makeNode(CustomPath);
  cp->path.pathtype = T_CustomScan;
  cp->path.parent = rel;
  cp->path.pathtarget = rel->reltarget;
  cp->path.param_info = nullptr;
  cp->path.rows = fs->rows;
  // No tuplestore: each row costs a fraction of the function scan's per-row cost.
  cp->path.startup_cost = fs->startup_cost;
  cp->path.total_cost = fs->startup_cost + (fs->total_cost - fs->startup_cost) * 0.5;
  cp->flags = 0;
  cp->custom_private = list_make1(makeInteger(form));
  cp->methods = &path_methods;
  add_path(rel, &cp->path);
}

}  // namespace

extern "C" {
// Planner support function of gpu_simjoin: being called loads this library (and so registers
// the custom scan's planner hook) before the first such query's paths are built. No estimates.
PG_FUNCTION_INFO_V1(gpu2bs_simjoin_support);
Datum gpu2bs_simjoin_support(PG_FUNCTION_ARGS) { PG_RETURN_POINTER(nullptr); }
}

namespace gpu2bs {
namespace pg {

void register_simjoin_scan() {
  DefineCustomBoolVariable("gpu2bs.enable_customscan",
                           "Runs gpu_simjoin in FROM as a custom scan that returns pairs without a tuplestore.",
                           nullptr, &enable_customscan, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  RegisterCustomScanMethods(&scan_methods);
  prev_pathlist_hook = set_rel_pathlist_hook;
  set_rel_pathlist_hook = pathlist_hook;
}

}  // namespace pg
}  // namespace gpu2bs
