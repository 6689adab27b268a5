// gpu_dbscan: DBSCAN clustering of a relation's points (src/core/dbscan.h) as a set-returning
// function (id, cluster). The relation is read exactly as gpu_simjoin reads it (simjoin_read:
// the calling user's query, key and coordinate columns, NULL rows skipped), the engine chosen
// by gpu2bs.device runs the self-join passes, and the rows come in key order.
//
// In FROM (gpu2bs.enable_customscan), the planner replaces the function scan, which copies every
// row into a tuplestore (one palloc'd minimal tuple a row) and out of it, with the custom scan
// `gpu2bs dbscan`: it keeps the engine's labels and the key order and returns each row straight
// into the scan slot. Same rows, same errors. LATERAL calls (arguments that reference other
// relations), whole-row references and queries with row marks keep the function scan.
#include "pg.h"

extern "C" {
#include "catalog/objectaccess.h"
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
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <cstring>
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

// The labels of one call in output order: row r is point order[r], key ids[order[r]], cluster
// cluster[order[r]] (-1: noise, NULL). ids live in ctx (the points' memory context).
struct DbscanRows {
  MemoryContext ctx = nullptr;
  const int64* ids = nullptr;
  std::vector<int32_t> cluster;
  std::vector<uint32_t> order;
  size_t n = 0;
};

// Runs gpu_dbscan over the argument values (rel, eps, minpoints, coords, id [, box]) into
// *out; false when rel, eps or minpoints is NULL (no rows). minpoints < 1 and a bad box are
// 22023 before the relation is read. With a periodic box the passes run over PeriodicEngine
// (minimum-image distances, the pairs streamed from the engine's periodic join). The points'
// memory context is a child of CurrentMemoryContext. Throws.
bool dbscan_compute(const Datum* v, const bool* isnull, bool with_box, DbscanRows* out) {
  if (isnull[0] || isnull[1] || isnull[2]) return false;
  const int64_t minpoints = DatumGetInt32(v[2]);
  if (minpoints < 1)
    throw Error(ErrorCode::InvalidParameter, "minpoints must be at least 1",
                "minpoints is " + std::to_string(minpoints) + ".",
                "A point is a core point when at least minpoints points, itself included, lie within eps.");
  SimjoinArgs args;
  args.nrel = 1;
  args.relids[0] = DatumGetObjectId(v[0]);
  args.eps = DatumGetFloat8(v[1]);
  pg_guard([&] {
    args.coords = isnull[3] ? nullptr : DatumGetArrayTypeP(v[3]);
    args.id = isnull[4] ? nullptr : DatumGetTextPP(v[4]);
  });
  if (with_box) {
    ArrayType* box = nullptr;
    if (!isnull[5]) pg_guard([&] { box = DatumGetArrayTypeP(v[5]); });
    simjoin_box_value(box, args.eps, "eps", &args);
  }
  SimjoinInput in;
  simjoin_read(args, &in);  // validates eps (22023) before reading
  out->ctx = in.ctx;
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
  out->ids = ids;
  out->n = pts.n;
  out->cluster = std::move(res.cluster);
  out->order.resize(pts.n);
  std::iota(out->order.begin(), out->order.end(), 0u);
  auto by_key = [ids](uint32_t a, uint32_t b) { return ids[a] < ids[b] || (ids[a] == ids[b] && a < b); };
  if (!std::is_sorted(out->order.begin(), out->order.end(), by_key))
    std::sort(out->order.begin(), out->order.end(), by_key);
  return true;
}

// Shared body of gpu_dbscan(rel, eps, minpoints, coords, id [, box]) -> (id bigint, cluster int)
// as a function scan: the rows go to the tuplestore of a materialized set-returning function.
Datum dbscan_impl(FunctionCallInfo fcinfo, bool with_box) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  Datum v[6];
  bool isnull[6];
  const int nargs = with_box ? 6 : 5;
  for (int k = 0; k < nargs; ++k) {
    isnull[k] = PG_ARGISNULL(k);
    v[k] = isnull[k] ? (Datum)0 : PG_GETARG_DATUM(k);
  }
  DbscanRows rows;
  if (!dbscan_compute(v, isnull, with_box, &rows)) return (Datum)0;
  const int32_t* cluster = rows.cluster.data();
  const uint32_t* ord = rows.order.data();
  const int64* ids = rows.ids;
  const size_t n = rows.n;
  MemoryContext ctx = rows.ctx;
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

// ---- custom scan: executor ------------------------------------------------------------------

struct DbscanScanState {
  CustomScanState css;
  bool with_box;
  List* arg_states;   // the call's argument expressions
  DbscanRows* rows;   // the labels (nullptr before the first row, or no rows)
  bool started;
  size_t pos;         // next output row
};

// Deletes a DbscanRows when its points' memory context goes (end of scan, rescan with new
// parameters, or an error anywhere in the query).
void free_rows(void* arg) { delete (DbscanRows*)arg; }

// Evaluates the arguments and runs DBSCAN into st->rows (C++; the points live in the query's
// memory until the scan ends).
void scan_run(void* arg) {
  DbscanScanState* st = (DbscanScanState*)arg;
  ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
  Datum v[6] = {};
  bool isnull[6] = {true, true, true, true, true, true};
  pg_guard([&] {
    int k = 0;
    ListCell* lc;
    foreach (lc, st->arg_states) {
      if (k < 6) v[k] = ExecEvalExpr((ExprState*)lfirst(lc), econtext, &isnull[k]);
      ++k;
    }
  });
  DbscanRows* rows = new DbscanRows();
  MemoryContext old = CurrentMemoryContext;
  CurrentMemoryContext = st->css.ss.ps.state->es_query_cxt;
  bool any;
  try {
    any = dbscan_compute(v, isnull, st->with_box, rows);
  } catch (...) {
    CurrentMemoryContext = old;
    delete rows;
    throw;
  }
  CurrentMemoryContext = old;
  if (!any) {
    delete rows;
    return;
  }
  try {
    pg_guard([&] {
      MemoryContextCallback* cb = (MemoryContextCallback*)MemoryContextAlloc(rows->ctx, sizeof(MemoryContextCallback));
      cb->func = free_rows;
      cb->arg = rows;
      MemoryContextRegisterResetCallback(rows->ctx, cb);
    });
  } catch (...) {
    delete rows;
    throw;
  }
  st->rows = rows;
}

// Frees the labels and the points.
void scan_release(DbscanScanState* st) {
  if (st->rows) MemoryContextDelete(st->rows->ctx);  // also deletes st->rows
  st->rows = nullptr;
  st->started = false;
  st->pos = 0;
}

// The next row (id, cluster) as a virtual tuple, or an empty slot at the end.
TupleTableSlot* scan_next(ScanState* ss) {
  DbscanScanState* st = (DbscanScanState*)ss;
  TupleTableSlot* slot = ss->ss_ScanTupleSlot;
  if (!st->started) {
    st->started = true;
    call_at_boundary(scan_run, st);
  }
  ExecClearTuple(slot);
  const DbscanRows* rows = st->rows;
  if (!rows || st->pos >= rows->n) return slot;
  const uint32_t g = rows->order[st->pos++];
  const int32_t c = rows->cluster[g];
  slot->tts_values[0] = Int64GetDatum(rows->ids[g]);
  slot->tts_isnull[0] = false;
  slot->tts_values[1] = Int32GetDatum(c < 0 ? 0 : c);
  slot->tts_isnull[1] = c < 0;
  return ExecStoreVirtualTuple(slot);
}

// No EvalPlanQual recheck is needed: the scan is not offered to queries with row marks.
bool scan_recheck(ScanState*, TupleTableSlot*) { return true; }

// Checks the EXECUTE privilege on the function, as the function scan's executor does, and
// prepares the argument expressions.
void begin_scan(CustomScanState* node, EState*, int) {
  DbscanScanState* st = (DbscanScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  const Oid funcid = Oid(intVal(lsecond(cs->custom_private)));
  const AclResult acl = pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE);
  if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(funcid));
  InvokeFunctionExecuteHook(funcid);
  st->arg_states = ExecInitExprList(cs->custom_exprs, &node->ss.ps);
}

// Returns the next row that passes the scan's quals, projected.
TupleTableSlot* exec_scan(CustomScanState* node) {
  return ExecScan(&node->ss, (ExecScanAccessMtd)scan_next, (ExecScanRecheckMtd)scan_recheck);
}

// Frees the labels at the end of the scan.
void end_scan(CustomScanState* node) { scan_release((DbscanScanState*)node); }

// Rescan: new parameter values run DBSCAN again; otherwise the labels are read again.
void rescan(CustomScanState* node) {
  DbscanScanState* st = (DbscanScanState*)node;
  if (node->ss.ps.chgParam != nullptr) {
    scan_release(st);
    return;
  }
  st->pos = 0;
}

const CustomExecMethods exec_methods = {"gpu2bs dbscan", begin_scan, exec_scan, end_scan, rescan,
                                        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

// The scan state of a plan (custom_private: with_box, the function's OID).
Node* create_state(CustomScan* cs) {
  DbscanScanState* st = (DbscanScanState*)newNode(sizeof(DbscanScanState), T_CustomScanState);
  st->css.methods = &exec_methods;
  st->with_box = intVal(linitial(cs->custom_private)) != 0;
  return (Node*)st;
}

const CustomScanMethods scan_methods = {"gpu2bs dbscan", create_state};

// ---- custom scan: planner -------------------------------------------------------------------

set_rel_pathlist_hook_type prev_pathlist_hook = nullptr;

// 5 or 6 (its number of arguments) when funcid is gpu2bs's gpu_dbscan or its periodic form,
// else 0.
int dbscan_form(Oid funcid) {
  const char* s = gpu2bs_symbol(funcid);
  return strcmp(s, "gpu2bs_dbscan") == 0 ? 5 : strcmp(s, "gpu2bs_dbscan_box") == 0 ? 6 : 0;
}

// The gpu_dbscan call of range table entry `rte`, or nullptr.
FuncExpr* dbscan_call(RangeTblEntry* rte) {
  if (rte->rtekind != RTE_FUNCTION || rte->funcordinality || list_length(rte->functions) != 1) return nullptr;
  RangeTblFunction* rtf = linitial_node(RangeTblFunction, rte->functions);
  if (!IsA(rtf->funcexpr, FuncExpr)) return nullptr;
  FuncExpr* fe = (FuncExpr*)rtf->funcexpr;
  const int form = dbscan_form(fe->funcid);
  if (form == 0 || list_length(fe->args) != form || contain_volatile_functions((Node*)fe->args)) return nullptr;
  return fe;
}

// The plan: a scan with no relation of its own whose scan tuple is (id, cluster) and whose
// custom_exprs are the call's arguments.
Plan* plan_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* path, List* tlist, List* clauses, List*) {
  const Index relid = rel->relid;
  FuncExpr* fe = dbscan_call(root->simple_rte_array[relid]);
  CustomScan* cs = makeNode(CustomScan);
  cs->scan.plan.targetlist = tlist;
  cs->scan.plan.qual = extract_actual_clauses(clauses, false);
  cs->scan.scanrelid = 0;
  cs->flags = path->flags;
  cs->custom_exprs = (List*)copyObjectImpl(fe->args);
  cs->custom_scan_tlist =
      list_make2(makeTargetEntry((Expr*)makeVar(relid, 1, INT8OID, -1, InvalidOid, 0), 1, pstrdup("id"), false),
                 makeTargetEntry((Expr*)makeVar(relid, 2, INT4OID, -1, InvalidOid, 0), 2, pstrdup("cluster"), false));
  cs->custom_private = list_make2(makeInteger(list_length(fe->args) == 6 ? 1 : 0), makeInteger(int(fe->funcid)));
  cs->methods = &scan_methods;
  return &cs->scan.plan;
}

const CustomPathMethods path_methods = {"gpu2bs dbscan", plan_path, nullptr};

// Offers the custom scan for gpu_dbscan(...) in FROM when its arguments need no other relation,
// nothing references the whole row and the query has no row marks.
void pathlist_hook(PlannerInfo* root, RelOptInfo* rel, Index rti, RangeTblEntry* rte) {
  if (prev_pathlist_hook) prev_pathlist_hook(root, rel, rti, rte);
  if (!customscan_enabled() || rte->rtekind != RTE_FUNCTION || !bms_is_empty(rel->lateral_relids) ||
      rel->pathlist == NIL || root->rowMarks != NIL || root->parse->rowMarks != NIL)
    return;
  if (dbscan_call(rte) == nullptr) return;
  ListCell* lc;
  foreach (lc, rel->reltarget->exprs) {
    Node* e = (Node*)lfirst(lc);
    if (!IsA(e, Var) || ((Var*)e)->varattno < 1 || ((Var*)e)->varattno > 2) return;
  }
  add_path(rel, &function_scan_custom_path(rel, &path_methods)->path);
}

}  // namespace

// gpu_dbscan(rel, eps, minpoints, coords, id).
GPU2BS_FUNCTION(gpu2bs_dbscan) { return dbscan_impl(fcinfo, false); }

// gpu_dbscan(rel, eps, minpoints, coords, id, box): over a periodic box.
GPU2BS_FUNCTION(gpu2bs_dbscan_box) { return dbscan_impl(fcinfo, true); }

namespace gpu2bs {
namespace pg {

void register_dbscan_scan() {
  RegisterCustomScanMethods(&scan_methods);
  prev_pathlist_hook = set_rel_pathlist_hook;
  set_rel_pathlist_hook = pathlist_hook;
}

}  // namespace pg
}  // namespace gpu2bs
