// The planner's join path for pair-expression joins. A set_join_pathlist_hook offers a custom
// join for an inner join of two base relations whose join quals are all pair expressions
// (docs/pair-expressions.md) and none an equi-join: the custom scan reads both inputs from
// their own scan plans, hands the columns the quals read to the engine and returns the rows
// of the pairs it keeps.
//   - A distance predicate, `sqrt((a.x-b.x)^2 + ...) <= c` or `(a.x-b.x)^2 + ... <= c` (also
//     `<`, either operand order), or PostGIS's ST_DWithin / ST_3DDWithin on point columns, runs
//     as the grid-indexed similarity join. In float4 with `<=` that is the join's own rule;
//     otherwise the engine joins in float64 with eps slightly above the bound and the pairs
//     near the bound are decided by the precision's formula (float8: PostgreSQL's evaluation of
//     the clause). The other quals are applied to the pairs as a pair expression.
//   - Otherwise the whole conjunction is one pair expression over every pair (gpu_join's
//     engine path).
//   - A self-join of one unfiltered table reads it once; with a distance predicate over the
//     same columns on both sides the engine joins the unordered pairs once and each pair is
//     tried in both orders (and each row with itself).
//   - count(*) over such a join alone (UPPERREL_GROUP_AGG) is computed by the scan, which then
//     never keeps pairs.
// gpu2bs.enable_join = off leaves these joins to PostgreSQL.
#include "../pg.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "commands/extension.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "../../core/error.h"
#include "../../core/pair_expr.h"
#include "../../core/pipeline.h"
#include "../pair_expr_sql.h"
#include "../settings.h"
#include "../simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

set_join_pathlist_hook_type prev_join_hook = nullptr;
create_upper_paths_hook_type prev_upper_hook = nullptr;

enum JoinMode { JM_ROWS = 0, JM_COUNT = 1 };

// custom_private: mode, self (one input read for both sides), rel_a, rel_b, the pair
// expression join clauses, for each scan column its source (side * 100000 + column of that
// side's input rows), the index of the distance clause (-1: none), per side the input target
// list positions of the engine columns, the PostGIS distance clause's description (or null).
// A path's list holds the PostGIS clause itself after these.
enum PrivIndex { P_MODE, P_SELF, P_RA, P_RB, P_CLAUSES, P_SCANMAP, P_DIST, P_ECOLS, P_GIS };

// P_DIST of a PostGIS distance clause (ST_DWithin, ST_3DDWithin; kept apart from the pair
// expression clauses, P_GIS describes it).
constexpr int kGisClause = -2;

// Fixed cost of one engine run (threads, grid, buffers): small joins stay with PostgreSQL.
constexpr double kStartupCost = 200.0;
// Cost per pair the pair-expression engine evaluates, relative to cpu_operator_cost: the CPU
// engine evaluates simple predicates about a hundred times faster than a nested loop.
constexpr double kPairCostFactor = 0.01;

// ---- recognizing the distance predicate --------------------------------------------------------

// A distance clause: sum over terms of (a.col - b.col)^2, optionally under sqrt, compared with
// a constant bound (`<=` or `<`).
struct DistShape {
  int clause = -1;
  bool sqrt_form = false;
  bool strict = false;  // `<` rather than `<=`
  double bound = 0;     // c (sqrt form) or the bound on the squared distance
  int dims = 0;
  int col[2][kMaxDims];  // tree column of side a and side b of each term
};

// Node k of the translated clauses.
const ExprNode& node_at(const PairExprClauses& t, int k) { return t.nodes[k]; }
// Argument a of node k.
int arg_at(const PairExprClauses& t, int k, int a) { return int(t.args[t.nodes[k].first + uint32(a)]); }

// The (side a column, side b column) of `a.x - b.x` or `b.x - a.x`, or false.
bool diff_of(const PairExprClauses& t, int k, int* ca, int* cb) {
  const ExprNode& n = node_at(t, k);
  if (n.op != ExprOp::Sub || n.nargs != 2) return false;
  const ExprNode& l = node_at(t, arg_at(t, k, 0));
  const ExprNode& r = node_at(t, arg_at(t, k, 1));
  if (l.op != ExprOp::Col || r.op != ExprOp::Col || l.side == r.side) return false;
  *ca = l.side == 0 ? l.col : r.col;
  *cb = l.side == 0 ? r.col : l.col;
  return true;
}

// One squared difference: (d)^2, power(d, 2) or d * d with the same difference twice.
bool square_of(const PairExprClauses& t, int k, int* ca, int* cb) {
  const ExprNode& n = node_at(t, k);
  if (n.op == ExprOp::Pow && n.nargs == 2) {
    const ExprNode& e = node_at(t, arg_at(t, k, 1));
    return e.op == ExprOp::Const && !e.is_null && e.value == 2.0 && diff_of(t, arg_at(t, k, 0), ca, cb);
  }
  if (n.op == ExprOp::Mul && n.nargs == 2) {
    int a1, b1, a2, b2;
    const int l = arg_at(t, k, 0), r = arg_at(t, k, 1);
    if (!diff_of(t, l, &a1, &b1) || !diff_of(t, r, &a2, &b2) || a1 != a2 || b1 != b2) return false;
    // both factors must be the same difference (same operand order): their product is then
    // the square PostgreSQL computes
    if (node_at(t, arg_at(t, l, 0)).side != node_at(t, arg_at(t, r, 0)).side) return false;
    *ca = a1;
    *cb = b1;
    return true;
  }
  return false;
}

// True when the subtree at k reads no column (constants and parameters bound to constants).
bool column_free(const PairExprClauses& t, int k) {
  const ExprNode& n = node_at(t, k);
  if (n.op == ExprOp::Col) return false;
  for (uint32 a = 0; a < n.nargs; ++a)
    if (!column_free(t, arg_at(t, k, int(a)))) return false;
  return true;
}

// The value of the column-free number subtree at k: a constant's value; an expression of
// constants (parameters bound to values) evaluated as the engine evaluates it, when `evaluate`
// (C++ code: an evaluation error leaves the clause to the pair-expression path, which raises it
// where PostgreSQL would); else 1 (the planner's guess of the shape). False for NULL.
bool bound_value(const PairExprClauses& t, int k, bool evaluate, double* v) {
  const ExprNode& n = node_at(t, k);
  if (n.type != ExprType::Num) return false;
  if (n.op == ExprOp::Const) {
    *v = n.value;
    return !n.is_null;
  }
  if (!evaluate) {
    *v = 1;
    return true;
  }
  PairExpr e;
  e.nodes.assign(t.nodes, t.nodes + t.nnodes);
  e.args.assign(t.args, t.args + t.nargs);
  e.ncols[0] = t.ncols[0];
  e.ncols[1] = t.ncols[1];
  e.value = k;
  const ExprSide none{nullptr, nullptr, 1, 0};
  bool isnull = true;
  try {
    e.validate();
    pair_expr_eval_one(e, Precision::Float64, none, 0, none, 0, v, &isnull);
  } catch (const ExprError&) {
    return false;
  }
  return !isnull;
}

// Recognizes clause `c` as a distance predicate with a positive finite bound (`evaluate`: see
// bound_value).
bool distance_shape(const PairExprClauses& t, int c, DistShape* d, bool evaluate) {
  const int root = t.roots[c];
  const ExprNode& n = node_at(t, root);
  if (n.op != ExprOp::Cmp) return false;
  int e, k;
  CmpOp op = n.cmp;
  if (column_free(t, arg_at(t, root, 1))) {
    e = arg_at(t, root, 0);
    k = arg_at(t, root, 1);
  } else if (column_free(t, arg_at(t, root, 0))) {
    e = arg_at(t, root, 1);
    k = arg_at(t, root, 0);
    op = op == CmpOp::Ge ? CmpOp::Le : op == CmpOp::Gt ? CmpOp::Lt : CmpOp::Eq;
  } else {
    return false;
  }
  if (op != CmpOp::Le && op != CmpOp::Lt) return false;
  double bound;
  if (!bound_value(t, k, evaluate, &bound) || !std::isfinite(bound) || !(bound > 0)) return false;
  d->sqrt_form = node_at(t, e).op == ExprOp::Sqrt;
  if (d->sqrt_form) e = arg_at(t, e, 0);
  // a left-deep sum of squares: ((t0 + t1) + t2) + ...
  int terms[kMaxDims];
  int nt = 0;
  while (node_at(t, e).op == ExprOp::Add) {
    if (nt == kMaxDims) return false;
    terms[nt++] = arg_at(t, e, 1);
    e = arg_at(t, e, 0);
  }
  if (nt == kMaxDims) return false;
  terms[nt++] = e;
  if (nt < 2) return false;
  for (int i = 0; i < nt; ++i) {
    const int term = terms[nt - 1 - i];
    if (!square_of(t, term, &d->col[0][i], &d->col[1][i])) return false;
  }
  d->dims = nt;
  d->clause = c;
  d->strict = op == CmpOp::Lt;
  d->bound = bound;
  // the similarity join needs eps whose square is a normal float8
  const double eps = d->sqrt_form ? d->bound : std::sqrt(d->bound);
  return std::isnormal(eps * eps);
}

// The index of the first distance clause, or -1.
int find_distance(const PairExprClauses& t, DistShape* d) {
  for (int c = 0; c < t.nroots; ++c)
    if (distance_shape(t, c, d, false)) return c;
  return -1;
}

// ---- parameters ------------------------------------------------------------------------------

// Replaces each parameter by a constant: its current value (ctx: the scan state, at execution)
// or 1.0 (ctx null: the plan's guess of the clauses' shape).
Node* bind_params(Node* node, void* ctx) {
  if (!node) return nullptr;
  if (IsA(node, Param)) {
    Param* p = (Param*)node;
    if (!ctx) return (Node*)makeConst(FLOAT8OID, -1, InvalidOid, 8, Float8GetDatum(1.0), false, true);
    CustomScanState* css = (CustomScanState*)ctx;
    ExprState* es = ExecInitExpr((Expr*)p, &css->ss.ps);
    bool isnull;
    const Datum v = ExecEvalExpr(es, css->ss.ps.ps_ExprContext, &isnull);
    int16 len;
    bool byval;
    get_typlenbyval(p->paramtype, &len, &byval);
    return (Node*)makeConst(p->paramtype, p->paramtypmod, p->paramcollid, len,
                            isnull ? (Datum)0 : datumCopy(v, byval, len), isnull, byval);
  }
  return expression_tree_mutator(node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void*>(bind_params)), ctx);
}

// ---- PostGIS distance clauses ------------------------------------------------------------------

// A PostGIS point distance clause: ST_DWithin(a.g, b.g, c) (2-D) or ST_3DDWithin (3-D on
// PointZ columns) with a positive finite constant c.
struct GisClause {
  AttrNumber att[2] = {0, 0};
  int dims = 0;
  double bound = 0;
  Oid axis_fn[3] = {InvalidOid, InvalidOid, InvalidOid};  // st_x, st_y, st_z of PostGIS's schema
  Oid srid_fn = InvalidOid;                              // st_srid
  bool check_srid = false;  // the columns' types leave the SRID open: every row's is checked
};

Oid get_func_signature_first_arg(Oid fn);

// The function `name`(geometry) of the schema `nsp`, or InvalidOid.
Oid gis_function(Oid nsp, const char* name, Oid geom_type) {
  oidvector* args = buildoidvector(&geom_type, 1);
  HeapTuple tup = SearchSysCache3(PROCNAMEARGSNSP, CStringGetDatum(name), PointerGetDatum(args), ObjectIdGetDatum(nsp));
  if (!HeapTupleIsValid(tup)) return InvalidOid;
  const Oid fn = ((Form_pg_proc)GETSTRUCT(tup))->oid;
  ReleaseSysCache(tup);
  return fn;
}

// Recognizes `clause` as a PostGIS point distance clause between rel_a and rel_b. The function
// and the geometry type are PostGIS's (members of the extension postgis), the columns
// geometry(Point[Z], srid) of the same SRID (or both open).
bool gis_clause(Node* clause, Index rel_a, Index rel_b, GisClause* g) {
  if (!IsA(clause, FuncExpr)) return false;
  FuncExpr* f = (FuncExpr*)clause;
  if (list_length(f->args) != 3 || f->funcretset) return false;
  HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(f->funcid));
  if (!HeapTupleIsValid(tup)) return false;
  Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tup);
  const bool d2 = strcmp(NameStr(proc->proname), "st_dwithin") == 0;
  const bool d3 = strcmp(NameStr(proc->proname), "st_3ddwithin") == 0;
  const Oid nsp = proc->pronamespace;
  ReleaseSysCache(tup);
  if (!d2 && !d3) return false;
  const Oid ext = getExtensionOfObject(ProcedureRelationId, f->funcid);
  const char* extname = OidIsValid(ext) ? get_extension_name(ext) : nullptr;
  if (!extname || strcmp(extname, "postgis") != 0) return false;
  Node* c = (Node*)lthird(f->args);
  if (!IsA(c, Const) || ((Const*)c)->consttype != FLOAT8OID || ((Const*)c)->constisnull) return false;
  g->bound = DatumGetFloat8(((Const*)c)->constvalue);
  if (!std::isfinite(g->bound) || !(g->bound > 0) || !std::isnormal(g->bound * g->bound)) return false;
  int32 srid[2];
  bool z[2];
  Oid geom_type = InvalidOid;
  for (int k = 0; k < 2; ++k) {
    Node* a = (Node*)list_nth(f->args, k);
    if (!IsA(a, Var) || ((Var*)a)->varlevelsup != 0 || ((Var*)a)->varattno < 1) return false;
    Var* v = (Var*)a;
    const int side = Index(v->varno) == rel_a ? 0 : Index(v->varno) == rel_b ? 1 : -1;
    if (side < 0 || g->att[side] != 0 || getBaseType(v->vartype) != get_func_signature_first_arg(f->funcid))
      return false;
    geom_type = getBaseType(v->vartype);
    int32 typmod = v->vartypmod;
    if (typmod < 0 && v->vartype != geom_type) getBaseTypeAndTypmod(v->vartype, &typmod);
    // geometry(Point[Z], srid) only: other columns may hold other shapes
    if (typmod < 0 || ((typmod & 0x000000FC) >> 2) != 1) return false;
    srid[side] = ((typmod & 0x0FFFFF00) - (typmod & 0x10000000)) >> 8;
    z[side] = (typmod & 0x00000002) != 0;
    g->att[side] = v->varattno;
  }
  if (srid[0] != srid[1]) return false;  // PostGIS raises an error for mixed SRIDs
  g->check_srid = srid[0] == 0;
  g->dims = d3 && z[0] && z[1] ? 3 : 2;
  if (d3 && !(z[0] && z[1])) return false;  // 3-D distance of 2-D points: left to PostGIS
  const char* axes[3] = {"st_x", "st_y", "st_z"};
  for (int k = 0; k < g->dims; ++k)
    if (!OidIsValid(g->axis_fn[k] = gis_function(nsp, axes[k], geom_type))) return false;
  return OidIsValid(g->srid_fn = gis_function(nsp, "st_srid", geom_type));
}

// The first argument type of function `fn`.
Oid get_func_signature_first_arg(Oid fn) {
  HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
  if (!HeapTupleIsValid(tup)) return InvalidOid;
  Form_pg_proc proc = (Form_pg_proc)GETSTRUCT(tup);
  const Oid t = proc->pronargs > 0 ? proc->proargtypes.values[0] : InvalidOid;
  ReleaseSysCache(tup);
  return t;
}

// The PostGIS clause as plan data (the bound as exact hexadecimal text).
List* gis_to_list(const GisClause& g) {
  char b[40];
  snprintf(b, sizeof b, "%a", g.bound);
  List* l = list_make4(makeInteger(g.att[0]), makeInteger(g.att[1]), makeInteger(g.dims), makeString(pstrdup(b)));
  for (int k = 0; k < 3; ++k) l = lappend(l, makeInteger(int(g.axis_fn[k])));
  l = lappend(l, makeInteger(int(g.srid_fn)));
  return lappend(l, makeInteger(g.check_srid ? 1 : 0));
}

// The PostGIS clause from its plan data.
GisClause gis_from_list(List* l) {
  GisClause g;
  g.att[0] = AttrNumber(intVal(list_nth(l, 0)));
  g.att[1] = AttrNumber(intVal(list_nth(l, 1)));
  g.dims = intVal(list_nth(l, 2));
  g.bound = strtod(strVal(list_nth(l, 3)), nullptr);
  for (int k = 0; k < 3; ++k) g.axis_fn[k] = Oid(intVal(list_nth(l, 4 + k)));
  g.srid_fn = Oid(intVal(list_nth(l, 7)));
  g.check_srid = intVal(list_nth(l, 8)) != 0;
  return g;
}

// ---- executor ---------------------------------------------------------------------------------

// One input's rows: the values of its plan's target list (by-reference values copied) and,
// column-major, the engine columns as float8 with NULL flags.
struct InputRows {
  int ncols;        // target list columns kept (0 in count mode)
  int64 n;
  int64 cap;
  Datum** values;   // [ncols][n]
  bool** nulls;
};

struct JoinScanState {
  CustomScanState css;
  int mode;
  bool self;
  Index ra, rb;     // the sides' range table indexes as planned (those of `clauses`' Vars)
  int rt_offset;    // what set_plan_references added to them (a flattened subquery's entries)
  List* clauses;
  int dist_clause;
  bool has_gis;
  GisClause gis;
  int necols[2];    // engine columns per side: the pair expression's, then the geometry's axes
  int nscan;
  int* scan_side;   // per scan column: input side (0, 1) and column
  int* scan_col;
  bool* scan_needed;  // per scan column: read by the plan's target list
  MemoryContext ctx;  // the inputs and the results; reset callback frees the C++ results
  PairExprClauses tr;
  InputRows rows[2];
  // engine columns: for side s, ExprSide over tr.ncols[s] columns
  double* edata[2];
  uint8* enulls[2];
  int64 en[2];
  struct JoinResult* result;
  bool srid_seen;
  int32 srid;
  double scan_s;    // reading the inputs (gpu2bs_info: last_scan_ms)
  bool started;
  uint64 pos;
};

// The pairs kept (row of input a, row of input b) or their count.
struct JoinResult {
  std::vector<uint64_t> pairs;
  uint64_t count = 0;
};

// Frees the C++ results with the scan's memory.
void free_result(void* arg) {
  JoinScanState* st = (JoinScanState*)arg;
  delete st->result;
  st->result = nullptr;
}

// float8 value of a number datum of base type `t` (PostgreSQL's own casts).
double number_value(Datum d, Oid t) {
  switch (t) {
    case INT2OID: return double(DatumGetInt16(d));
    case INT4OID: return double(DatumGetInt32(d));
    case INT8OID: return double(DatumGetInt64(d));
    case FLOAT4OID: return double(DatumGetFloat4(d));
    case FLOAT8OID: return DatumGetFloat8(d);
    default: return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
  }
}

// Calls a PostGIS function of one geometry; *isnull when it returns NULL.
Datum call_gis(FmgrInfo* fn, Datum g, bool* isnull) {
  LOCAL_FCINFO(fcinfo, 1);
  InitFunctionCallInfoData(*fcinfo, fn, 1, InvalidOid, nullptr, nullptr);
  fcinfo->args[0].value = g;
  fcinfo->args[0].isnull = false;
  Datum r = FunctionCallInvoke(fcinfo);
  *isnull = fcinfo->isnull;
  return r;
}

// Reads every row of the input plans into st->rows and the engine columns (PostgreSQL code).
void read_inputs(JoinScanState* st) {
  MemoryContext old = MemoryContextSwitchTo(st->ctx);
  const int ninputs = st->self ? 1 : 2;
  // The engine columns of side s come from input (self ? 0 : s) at these target list positions.
  CustomScan* cs = (CustomScan*)st->css.ss.ps.plan;
  List* enginecols = (List*)list_nth(cs->custom_private, P_ECOLS);
  for (int s = 0; s < 2; ++s) st->en[s] = 0;
  for (int in = 0; in < ninputs; ++in) {
    PlanState* child = (PlanState*)list_nth(st->css.custom_ps, in);
    InputRows* r = &st->rows[in];
    List* tl = child->plan->targetlist;
    const int ntl = list_length(tl);
    r->ncols = st->mode == JM_ROWS ? ntl : 0;
    r->n = 0;
    r->cap = 1024;
    r->values = (Datum**)palloc0(sizeof(Datum*) * Max(ntl, 1));
    r->nulls = (bool**)palloc0(sizeof(bool*) * Max(ntl, 1));
    Oid* types = (Oid*)palloc(sizeof(Oid) * Max(ntl, 1));
    int16* typlen = (int16*)palloc(sizeof(int16) * Max(ntl, 1));
    bool* byval = (bool*)palloc(sizeof(bool) * Max(ntl, 1));
    int k = 0;
    ListCell* lc;
    foreach (lc, tl) {
      types[k] = getBaseType(exprType((Node*)((TargetEntry*)lfirst(lc))->expr));
      get_typlenbyval(exprType((Node*)((TargetEntry*)lfirst(lc))->expr), &typlen[k], &byval[k]);
      ++k;
    }
    // only the columns the plan's target list reads are kept
    bool* keep = (bool*)palloc0(sizeof(bool) * Max(ntl, 1));
    for (int c = 0; c < st->nscan; ++c)
      if (st->scan_needed[c] && (st->self ? 0 : st->scan_side[c]) == in) keep[st->scan_col[c]] = true;
    for (int c = 0; c < r->ncols; ++c) {
      if (!keep[c]) continue;
      r->values[c] = (Datum*)alloc_big(st->ctx, sizeof(Datum) * r->cap);
      r->nulls[c] = (bool*)alloc_big(st->ctx, sizeof(bool) * r->cap);
    }
    // engine columns read from this input: (side, tree column, target list position)
    struct EC {
      int side, col, pos, axis;  // axis: -1 a number column, else the geometry's axis
    };
    EC* ecs = (EC*)palloc(sizeof(EC) * Max(st->necols[0] + st->necols[1], 1));
    int nec = 0;
    // a self-join whose sides read the same columns in the same order reads them once
    const bool alias = st->self && st->tr.ncols[0] == st->tr.ncols[1] &&
                       memcmp(st->tr.cols[0], st->tr.cols[1], sizeof(AttrNumber) * st->tr.ncols[0]) == 0 &&
                       (!st->has_gis || st->gis.att[0] == st->gis.att[1]);
    for (int s = 0; s < 2; ++s) {
      if ((st->self ? 0 : s) != in || (alias && s == 1)) continue;
      List* pos = (List*)list_nth(enginecols, s);
      for (int c = 0; c < st->tr.ncols[s]; ++c) ecs[nec++] = EC{s, c, list_nth_int(pos, c), -1};
      for (int k = 0; st->has_gis && k < st->gis.dims; ++k)
        ecs[nec++] = EC{s, st->tr.ncols[s] + k, list_nth_int(pos, st->tr.ncols[s]), k};
    }
    FmgrInfo axis_fn[3], srid_fn;
    for (int k = 0; st->has_gis && k < st->gis.dims; ++k) fmgr_info(st->gis.axis_fn[k], &axis_fn[k]);
    if (st->has_gis) fmgr_info(st->gis.srid_fn, &srid_fn);
    double** ecol = (double**)palloc0(sizeof(double*) * Max(nec, 1));
    uint8** enul = (uint8**)palloc0(sizeof(uint8*) * Max(nec, 1));
    for (int e = 0; e < nec; ++e) {
      ecol[e] = (double*)alloc_big(st->ctx, sizeof(double) * r->cap);
      enul[e] = (uint8*)alloc_big(st->ctx, r->cap);
    }
    // numeric and PostGIS conversions allocate per value: they run in a context reset per row
    MemoryContext scratch = AllocSetContextCreate(st->ctx, "gpu2bs join input row", ALLOCSET_SMALL_SIZES);
    for (;;) {
      // the input plans allocate their state (a scan's descriptor) in the caller's context,
      // which outlives st->ctx (deleted on a rescan with new parameters)
      MemoryContextSwitchTo(old);
      TupleTableSlot* slot = ExecProcNode(child);
      MemoryContextSwitchTo(st->ctx);
      if (TupIsNull(slot)) break;
      CHECK_FOR_INTERRUPTS();
      slot_getallattrs(slot);
      if (r->n == r->cap) {
        const int64 cap = r->cap * 2;
        if (cap > int64(UINT32_MAX))
          ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("too many rows for a gpu2bs join"),
                          errdetail("An input may have at most %u rows.", UINT32_MAX)));
        for (int c = 0; c < r->ncols; ++c) {
          if (!keep[c]) continue;
          r->values[c] = (Datum*)realloc_big(st->ctx, r->values[c], sizeof(Datum) * r->n, sizeof(Datum) * cap);
          r->nulls[c] = (bool*)realloc_big(st->ctx, r->nulls[c], sizeof(bool) * r->n, sizeof(bool) * cap);
        }
        for (int e = 0; e < nec; ++e) {
          ecol[e] = (double*)realloc_big(st->ctx, ecol[e], sizeof(double) * r->n, sizeof(double) * cap);
          enul[e] = (uint8*)realloc_big(st->ctx, enul[e], r->n, cap);
        }
        r->cap = cap;
      }
      for (int c = 0; c < r->ncols; ++c) {
        if (!keep[c]) continue;
        const bool isnull = slot->tts_isnull[c];
        r->nulls[c][r->n] = isnull;
        r->values[c][r->n] = isnull ? (Datum)0 : datumCopy(slot->tts_values[c], byval[c], typlen[c]);
      }
      MemoryContextSwitchTo(scratch);
      for (int e = 0; e < nec; ++e) {
        const int p = ecs[e].pos;
        bool isnull = slot->tts_isnull[p];
        double v = 0;
        if (!isnull && ecs[e].axis < 0) {
          v = number_value(slot->tts_values[p], types[p]);
        } else if (!isnull) {
          // a point's axis through PostGIS (NULL for an empty point); its SRID when open
          Datum d = call_gis(&axis_fn[ecs[e].axis], slot->tts_values[p], &isnull);
          v = isnull ? 0.0 : DatumGetFloat8(d);
          if (ecs[e].axis == 0 && st->gis.check_srid) {
            bool sn;
            const int32 srid = DatumGetInt32(call_gis(&srid_fn, slot->tts_values[p], &sn));
            if (!st->srid_seen) {
              st->srid_seen = true;
              st->srid = srid;
            } else if (srid != st->srid) {
              ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                              errmsg("operation on mixed SRID geometries (%d and %d)", st->srid, srid)));
            }
          }
        }
        enul[e][r->n] = isnull ? 1 : 0;
        ecol[e][r->n] = v;
      }
      MemoryContextSwitchTo(st->ctx);
      MemoryContextReset(scratch);
      r->n++;
      ResetPerTupleExprContext(st->css.ss.ps.state);
    }
    MemoryContextDelete(scratch);
    // column-major engine data per side
    for (int s = 0; s < 2; ++s) {
      if ((st->self ? 0 : s) != in) continue;
      if (alias && s == 1) {
        st->en[1] = st->en[0];
        st->edata[1] = st->edata[0];
        st->enulls[1] = st->enulls[0];
        continue;
      }
      const int nc = st->necols[s];
      st->en[s] = r->n;
      st->edata[s] = (double*)alloc_big(st->ctx, Max(sizeof(double) * Size(nc) * Size(r->n), 8));
      st->enulls[s] = (uint8*)alloc_big(st->ctx, Max(Size(nc) * Size(r->n), 8));
      for (int e = 0; e < nec; ++e) {
        if (ecs[e].side != s) continue;
        memcpy(st->edata[s] + Size(ecs[e].col) * Size(r->n), ecol[e], sizeof(double) * Size(r->n));
        memcpy(st->enulls[s] + Size(ecs[e].col) * Size(r->n), enul[e], Size(r->n));
      }
    }
  }
  if (st->self) st->rows[1] = st->rows[0];
  MemoryContextSwitchTo(old);
}

// SQL's float comparison (NaN equal to NaN and above every other value), in T.
template <typename T>
bool cmp_sql(T x, T y, CmpOp op) {
  const int c = std::isnan(x) ? (std::isnan(y) ? 0 : 1) : std::isnan(y) ? -1 : x < y ? -1 : x > y ? 1 : 0;
  switch (op) {
    case CmpOp::Lt: return c < 0;
    case CmpOp::Le: return c <= 0;
    case CmpOp::Eq: return c == 0;
    case CmpOp::Ne: return c != 0;
    case CmpOp::Ge: return c >= 0;
    case CmpOp::Gt: return c > 0;
  }
  return false;
}

// Decides the pairs of one run: the distance clause by the precision's formula, the other
// clauses as a pair expression (with a fast path for comparisons of two columns).
struct PairTester {
  const JoinScanState* st;
  Precision prec;
  const DistShape* d;
  const PairExpr* rest;  // predicate over the other clauses, or null
  ExprSide sa, sb;
  double thr8 = 0;
  float thr4 = 0;
  // fast residual: comparisons (side, column) op (side, column)
  struct ColCmp {
    int s1, c1, s2, c2;
    CmpOp op;
  };
  std::vector<ColCmp> fast;
  bool use_fast = false;

  // Engine column c of side s at row `row`, and whether it is NULL.
  double val(int s, int c, int64_t row) const {
    const ExprSide& x = s == 0 ? sa : sb;
    return x.data[size_t(c) * size_t(x.n) + size_t(row)];
  }
  bool isnull(int s, int c, int64_t row) const {
    const ExprSide& x = s == 0 ? sa : sb;
    return x.nulls && x.nulls[size_t(c) * size_t(x.n) + size_t(row)];
  }

  // The distance clause for rows (i of a, j of b) with non-NULL finite coordinates.
  bool distance_ok(int64_t i, int64_t j) const {
    if (prec == Precision::Float64) {
      double d2 = 0;
      for (int k = 0; k < d->dims; ++k) {
        const double dx = val(0, d->col[0][k], i) - val(1, d->col[1][k], j);
        const double sq = dx * dx;
        if (sq == 0 && dx != 0) throw ExprError(ExprFault::Underflow);
        d2 = k == 0 ? sq : d2 + sq;
      }
      const double v = d->sqrt_form ? std::sqrt(d2) : d2;
      return d->strict ? v < d->bound : v <= d->bound;
    }
    float d2 = 0;
    for (int k = 0; k < d->dims; ++k) {
      const float dx = float(val(0, d->col[0][k], i)) - float(val(1, d->col[1][k], j));
      d2 = k == 0 ? dx * dx : std::fma(dx, dx, d2);
    }
    return d->strict ? d2 < thr4 : d2 <= thr4;
  }

  // The other clauses for rows (i of a, j of b).
  bool rest_ok(int64_t i, int64_t j) const {
    if (!rest) return true;
    if (use_fast) {
      const int64_t row[2] = {i, j};
      for (const ColCmp& f : fast) {
        if (isnull(f.s1, f.c1, row[f.s1]) || isnull(f.s2, f.c2, row[f.s2])) return false;
        const double x = val(f.s1, f.c1, row[f.s1]), y = val(f.s2, f.c2, row[f.s2]);
        const bool ok = prec == Precision::Float64 ? cmp_sql<double>(x, y, f.op) : cmp_sql<float>(float(x), float(y), f.op);
        if (!ok) return false;
      }
      return true;
    }
    double v;
    bool vn;
    return pair_expr_eval_one(*rest, prec, sa, i, sb, j, &v, &vn) == Tri::True;
  }
};

// Collects or counts the kept pairs.
class ResultSink final : public PairSink {
 public:
  ResultSink(JoinResult* r, bool count, const PairTester* tester, const std::vector<uint32_t>* map_a,
             const std::vector<uint32_t>* map_b, bool unordered, uint64_t max_rows)
      : r_(r), count_(count), t_(tester), map_a_(map_a), map_b_(map_b), unordered_(unordered), max_rows_(max_rows) {}
  // One page: each pair decided and kept (or counted), in one or both orders.
  void consume(const PairRecord* pairs, size_t n) override {
    for (size_t k = 0; k < n; ++k) {
      if (!t_) {
        keep(pairs[k].i, pairs[k].j);
        continue;
      }
      const uint32_t i = (*map_a_)[pairs[k].i], j = (*map_b_)[pairs[k].j];
      if (per_pair_) {
        // a count whose other quals keep each pair per_pair_ times
        if (engine_decides_ || pairs[k].dist < certain_ || t_->distance_ok(i, j)) r_->count += per_pair_;
        continue;
      }
      if (orient_) {
        // one strict comparison of distinct keys: exactly one order of the pair is kept
        if (!(engine_decides_ || pairs[k].dist < certain_ || t_->distance_ok(i, j))) continue;
        const PairTester::ColCmp& f = t_->fast[0];
        const uint32_t row[2] = {i, j};  // the orientation a = i, b = j, whichever side is named first
        const double x = t_->val(f.s1, f.c1, row[f.s1]), y = t_->val(f.s2, f.c2, row[f.s2]);
        const bool ij = t_->prec == Precision::Float64 ? cmp_sql<double>(x, y, f.op) : cmp_sql<float>(float(x), float(y), f.op);
        if (ij) keep(i, j);
        else keep(j, i);
        continue;
      }
      // the distance (symmetric: the squares of a - b and b - a are equal) is decided by the
      // engine, or certainly within the bound, or computed by the precision's formula
      if (!(engine_decides_ || pairs[k].dist < certain_ || t_->distance_ok(i, j))) continue;
      if (t_->rest_ok(i, j)) keep(i, j);
      if (unordered_ && t_->rest_ok(j, i)) keep(j, i);
    }
  }
  // The engine's decision of the distance is the precision's (float4, `<=`): no recheck.
  void set_engine_decides(bool v) { engine_decides_ = v; }
  // Engine distances below this are within the bound by the precision's formula too.
  void set_certain(double v) { certain_ = v; }
  // Counts each pair within the bound this many times without evaluating the other quals.
  void set_per_pair(int v) { per_pair_ = v; }
  // Rows of an unordered join whose other qual is one strict comparison of distinct keys.
  void set_orient(bool v) { orient_ = v; }
  // Keeps (or counts) the pair of row i of a and row j of b.
  void keep(uint32_t i, uint32_t j) {
    if (count_) {
      r_->count++;
      return;
    }
    if (max_rows_ && r_->pairs.size() >= max_rows_)
      throw Error(ErrorCode::ProgramLimit, "gpu2bs join result exceeds gpu2bs.max_result_rows",
                  "The join keeps more than " + std::to_string(max_rows_) + " pairs.",
                  "Raise gpu2bs.max_result_rows (0: no limit), or set gpu2bs.enable_join = off.");
    r_->pairs.push_back((uint64_t(i) << 32) | j);
  }

 private:
  JoinResult* r_;
  bool count_;
  const PairTester* t_;
  const std::vector<uint32_t>* map_a_;
  const std::vector<uint32_t>* map_b_;
  bool unordered_;
  uint64_t max_rows_;
  bool engine_decides_ = false;
  double certain_ = -1;
  int per_pair_ = 0;
  bool orient_ = false;
};

// The PairExpr of the translated clauses with predicate = AND of `roots` (none: -1).
void build_expr(const PairExprClauses& t, const std::vector<int>& roots, PairExpr* e) {
  e->nodes.assign(t.nodes, t.nodes + t.nnodes);
  e->args.assign(t.args, t.args + t.nargs);
  e->ncols[0] = t.ncols[0];
  e->ncols[1] = t.ncols[1];
  if (roots.empty()) {
    e->predicate = -1;
  } else if (roots.size() == 1) {
    e->predicate = roots[0];
  } else {
    ExprNode n;
    n.op = ExprOp::And;
    n.type = ExprType::Bool;
    e->predicate = e->add(n, roots);
  }
  e->validate();
}

// Runs the engine over the inputs read (C++; called at the boundary).
void run_engine(void* arg) {
  JoinScanState* st = (JoinScanState*)arg;
  JoinResult* res = st->result;
  const bool count = st->mode == JM_COUNT;
  const Precision prec = current_precision();
  const uint64_t max_rows = count ? 0 : uint64_t(max_result_rows_setting);
  ExprSide sa{st->edata[0], st->enulls[0], st->en[0], st->necols[0]};
  ExprSide sb{st->edata[1], st->enulls[1], st->en[1], st->necols[1]};
  // Every pair: the conjunction as one pair expression.
  auto all_pairs = [&] {
    std::vector<int> roots(st->tr.roots, st->tr.roots + st->tr.nroots);
    PairExpr e;
    build_expr(st->tr, roots, &e);
    PairExprProblem p;
    p.kind = count ? PairExprKind::Count : PairExprKind::Join;
    p.self = false;
    p.prec = prec;
    p.a = sa;
    p.b = sb;
    p.expr = &e;
    p.max_pairs = max_rows;
    std::string reason;
    Engine* eng = choose_expr_engine(&reason);
    PgControl ctl;
    ctl.stats.scan_s = st->scan_s;
    ResultSink sink(res, false, nullptr, nullptr, nullptr, false, max_rows);
    PairExprResult r = eng->pair_expr(p, count ? nullptr : &sink, ctl);
    record_run("gpu2bs join", eng->name(), ctl.stats);
    if (count) res->count = r.count;
  };
  DistShape d;
  if (st->has_gis) {
    // sqrt(dx*dx + dy*dy [+ dz*dz]) <= c over the axes read after the pair expression's columns
    d.clause = kGisClause;
    d.sqrt_form = true;
    d.strict = false;
    d.bound = st->gis.bound;
    d.dims = st->gis.dims;
    for (int s = 0; s < 2; ++s)
      for (int k = 0; k < d.dims; ++k) d.col[s][k] = st->tr.ncols[s] + k;
  } else if (st->dist_clause < 0 || !distance_shape(st->tr, st->dist_clause, &d, true)) {
    all_pairs();
    return;
  }
  std::vector<int> rest_roots;
  for (int c = 0; c < st->tr.nroots; ++c)
    if (c != d.clause) rest_roots.push_back(st->tr.roots[c]);
  PairExpr rest;
  build_expr(st->tr, rest_roots, &rest);
  PairTester t;
  t.st = st;
  t.prec = prec;
  t.d = &d;
  t.rest = rest_roots.empty() ? nullptr : &rest;
  t.sa = sa;
  t.sb = sb;
  {
    const double e = d.sqrt_form ? d.bound : std::sqrt(d.bound);
    t.thr4 = float(e * e);  // the similarity join's fl4(eps²)
  }
  t.use_fast = true;
  for (int r : rest_roots) {
    const ExprNode& n = rest.node(r);
    if (n.op != ExprOp::Cmp || rest.node(rest.arg(r, 0)).op != ExprOp::Col || rest.node(rest.arg(r, 1)).op != ExprOp::Col) {
      t.use_fast = false;
      break;
    }
    const ExprNode& x = rest.node(rest.arg(r, 0));
    const ExprNode& y = rest.node(rest.arg(r, 1));
    t.fast.push_back(PairTester::ColCmp{x.side, x.col, y.side, y.col, n.cmp});
  }
  // The points: rows whose coordinates are all non-NULL and finite (no other row can be within
  // a finite bound of anything).
  const bool unordered = st->self && [&] {
    if (st->has_gis) return st->gis.att[0] == st->gis.att[1];
    for (int k = 0; k < d.dims; ++k)
      if (st->tr.cols[0][d.col[0][k]] != st->tr.cols[1][d.col[1][k]]) return false;
    return true;
  }();
  std::vector<uint32_t> map[2];
  std::vector<double> coord[2][kMaxDims];
  double maxabs = 0;
  PointsView v[2];
  for (int s = 0; s < (unordered ? 1 : 2); ++s) {
    const ExprSide& x = s == 0 ? sa : sb;
    v[s].dims = d.dims;
    // every row a point: the columns themselves, no copy
    bool all = true;
    for (int k = 0; k < d.dims; ++k) {
      const double* c = x.data + size_t(d.col[s][k]) * size_t(x.n);
      const uint8_t* nl = x.nulls ? x.nulls + size_t(d.col[s][k]) * size_t(x.n) : nullptr;
      double m = 0;
      bool ok = true;
      for (int64_t i = 0; i < x.n; ++i) {
        ok &= std::isfinite(c[i]) && !(nl && nl[i]);
        m = std::max(m, std::fabs(c[i]));
      }
      all = all && ok;
      if (ok) maxabs = std::max(maxabs, m);
      v[s].coord[k] = c;
    }
    if (all) {
      map[s].resize(size_t(x.n));
      for (int64_t i = 0; i < x.n; ++i) map[s][size_t(i)] = uint32_t(i);
      v[s].n = size_t(x.n);
      continue;
    }
    for (int64_t i = 0; i < x.n; ++i) {
      bool ok = true;
      for (int k = 0; k < d.dims && ok; ++k) {
        const size_t at = size_t(d.col[s][k]) * size_t(x.n) + size_t(i);
        ok = !(x.nulls && x.nulls[at]) && std::isfinite(x.data[at]);
      }
      if (!ok) continue;
      map[s].push_back(uint32_t(i));
      for (int k = 0; k < d.dims; ++k) {
        const double c = x.data[size_t(d.col[s][k]) * size_t(x.n) + size_t(i)];
        coord[s][k].push_back(c);
        maxabs = std::max(maxabs, std::fabs(c));
      }
    }
    v[s].n = map[s].size();
    for (int k = 0; k < d.dims; ++k) v[s].coord[k] = coord[s][k].data();
  }
  // float4 with `<=` is the similarity join's own rule with eps = c (sqrt form) or sqrt(c):
  // the engine decides in float4. Otherwise the engine joins in float64 with eps above the
  // bound by more than either formula's rounding (relative to the bound and to the
  // coordinates' magnitude), and pairs within that margin of the bound are decided by the
  // precision's formula.
  const double eps = d.sqrt_form ? d.bound : std::sqrt(d.bound);
  // Coordinates the float64 grid refuses (a bounding box over 1e150): every pair instead.
  if (maxabs > 1e140 && !st->has_gis) {
    all_pairs();
    return;
  }
  // The float4 join refuses bounding boxes over 1e18 and an eps² that is not a normal float4:
  // the float64 candidates and the float4 formula decide those.
  const bool engine_decides = prec == Precision::Float32 && !d.strict && maxabs < 1e17 &&
                              std::isnormal(float(eps * eps));
  const double slack = prec == Precision::Float64 ? 1e-12 : 1e-5;
  const double margin = eps * slack + slack * maxabs;
  ResultSink sink(res, count, &t, &map[0], unordered ? &map[0] : &map[1], unordered, max_rows);
  sink.set_engine_decides(engine_decides);
  if (prec == Precision::Float64) sink.set_certain(eps - margin);
  if (unordered) {
    // each row with itself (distance 0), then the unordered pairs in both orders
    for (uint32_t i : map[0])
      if (t.distance_ok(i, i) && t.rest_ok(i, i)) sink.keep(i, i);
  }
  if (map[0].empty() || (!unordered && map[1].empty())) return;
  SimjoinProblem prob = make_simjoin(v[0], unordered ? nullptr : &v[1], engine_decides ? eps : eps + margin,
                                     engine_decides ? Precision::Float32 : Precision::Float64, 0);
  std::string reason;
  Engine* eng = choose_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = st->scan_s;
  // A count whose other quals keep each engine pair a fixed number of times (none: both orders
  // of an unordered pair; one strict comparison of a column whose values are distinct: exactly
  // one order) needs no other qual per pair: with the engine's decision it is the engine's own
  // count, reduced where the pairs are made; else the pairs are counted as they come.
  int per_pair = 0;
  {
    if (rest_roots.empty()) {
      per_pair = unordered ? 2 : 1;
    } else if (unordered && t.use_fast && t.fast.size() == 1 && t.fast[0].s1 != t.fast[0].s2 &&
               (t.fast[0].op == CmpOp::Lt || t.fast[0].op == CmpOp::Gt) &&
               st->tr.cols[t.fast[0].s1][t.fast[0].c1] == st->tr.cols[t.fast[0].s2][t.fast[0].c2]) {
      std::vector<float> keys;
      keys.reserve(map[0].size());
      bool ok = true;
      for (uint32_t i : map[0]) {
        const float k = float(t.val(t.fast[0].s1, t.fast[0].c1, i));
        ok = ok && !t.isnull(t.fast[0].s1, t.fast[0].c1, i) && !std::isnan(k);
        keys.push_back(k);
      }
      // distinct: integer keys in a range up to 8 times their number by a bitmap, else sorted
      float lo = HUGE_VALF, hi = -HUGE_VALF;
      bool integral = true;
      for (float k : keys) {
        lo = std::min(lo, k);
        hi = std::max(hi, k);
        integral = integral && k == std::floor(k);
      }
      if (ok && integral && !keys.empty() && double(hi) - double(lo) < 8.0 * double(keys.size()) + 64) {
        std::vector<uint8_t> seen(size_t(double(hi) - double(lo)) + 1, 0);
        for (size_t k = 0; ok && k < keys.size(); ++k) {
          uint8_t& b = seen[size_t(double(keys[k]) - double(lo))];
          ok = !b;
          b = 1;
        }
      } else if (ok) {
        std::sort(keys.begin(), keys.end());
        for (size_t k = 1; ok && k < keys.size(); ++k) ok = keys[k] != keys[k - 1];
      }
      if (ok) per_pair = 1;
    }
  }
  if (count && per_pair && engine_decides) {
    PairPredicate none;
    AggregateStage stage(&none);
    PairReduce red;
    red.kind = PairReduce::Aggregate;
    AggregateSink agg;
    if (eng->reduces_pairs(PairReduce::Aggregate)) {
      prob.reduce = &red;
    } else if (eng->applies_pair_stage()) {
      prob.stage = &stage;
    }
    eng->simjoin(prob, agg, ctl);
    if (prob.reduce && !red.done) throw Error(ErrorCode::Internal, "engine did not compute the pushed-down count");
    if (prob.stage) stage.finish(&agg);
    res->count += uint64_t(per_pair) * (prob.reduce ? red.count : agg.count);
  } else {
    if (count) sink.set_per_pair(per_pair);
    sink.set_orient(!count && unordered && per_pair == 1 && !rest_roots.empty());
    eng->simjoin(prob, sink, ctl);
  }
  record_run("gpu2bs join", eng->name(), ctl.stats);
}

// Reads the inputs and runs the join, once.
void start(JoinScanState* st) {
  st->started = true;
  st->pos = 0;
  if (!st->ctx)
    st->ctx = AllocSetContextCreate(st->css.ss.ps.state->es_query_cxt, "gpu2bs join", ALLOCSET_DEFAULT_SIZES);
  MemoryContext old = MemoryContextSwitchTo(st->ctx);
  pair_expr_translate_clauses((List*)bind_params((Node*)st->clauses, &st->css), st->ra, st->rb, &st->tr);
  MemoryContextSwitchTo(old);
  for (int s = 0; s < 2; ++s) st->necols[s] = st->tr.ncols[s] + (st->has_gis ? st->gis.dims : 0);
  const auto t0 = std::chrono::steady_clock::now();
  read_inputs(st);
  st->scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st->result = new JoinResult();
  MemoryContextCallback* cb = (MemoryContextCallback*)MemoryContextAlloc(st->ctx, sizeof(MemoryContextCallback));
  cb->func = free_result;
  cb->arg = st;
  MemoryContextRegisterResetCallback(st->ctx, cb);
  call_at_boundary(run_engine, st);
}

// The next joined row (or the count row).
TupleTableSlot* scan_next(ScanState* ss) {
  JoinScanState* st = (JoinScanState*)ss;
  TupleTableSlot* slot = ss->ss_ScanTupleSlot;
  if (!st->started) start(st);
  ExecClearTuple(slot);
  const int natts = slot->tts_tupleDescriptor->natts;
  if (st->mode == JM_COUNT) {
    if (st->pos++ > 0) return slot;
    for (int c = 0; c < natts; ++c) {
      slot->tts_isnull[c] = c != 0;
      slot->tts_values[c] = c == 0 ? Int64GetDatum(int64(st->result->count)) : (Datum)0;
    }
    return ExecStoreVirtualTuple(slot);
  }
  if (st->pos >= st->result->pairs.size()) return slot;
  const uint64_t p = st->result->pairs[st->pos++];
  const int64 row[2] = {int64(p >> 32), int64(p & 0xffffffffu)};
  for (int c = 0; c < natts; ++c) {
    const int s = st->scan_side[c], k = st->scan_col[c];
    const InputRows& r = st->rows[s];
    if (!st->scan_needed[c]) {
      slot->tts_isnull[c] = true;
      slot->tts_values[c] = (Datum)0;
      continue;
    }
    slot->tts_isnull[c] = r.nulls[k][row[s]];
    slot->tts_values[c] = r.values[k][row[s]];
  }
  return ExecStoreVirtualTuple(slot);
}

// EvalPlanQual recheck: the join takes no row locks (FOR UPDATE keeps PostgreSQL's join).
bool scan_recheck(ScanState*, TupleTableSlot*) { return true; }

// Starts the input plans and finds the scan columns the target list reads.
void begin_scan(CustomScanState* node, EState* estate, int eflags) {
  JoinScanState* st = (JoinScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  ListCell* lc;
  // the scan columns the target list reads (the quals' columns go to the engine only)
  st->scan_needed = (bool*)palloc0(sizeof(bool) * Max(st->nscan, 1));
  List* vars = pull_var_clause((Node*)cs->scan.plan.targetlist,
                               PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
  foreach (lc, vars) {
    Var* v = (Var*)lfirst(lc);
    if (v->varno == INDEX_VAR && v->varattno >= 1 && v->varattno <= st->nscan) st->scan_needed[v->varattno - 1] = true;
  }
  foreach (lc, cs->custom_plans) node->custom_ps = lappend(node->custom_ps, ExecInitNode((Plan*)lfirst(lc), estate, eflags));
}

// The next row through ExecScan (projection).
TupleTableSlot* exec_scan(CustomScanState* node) {
  return ExecScan(&node->ss, (ExecScanAccessMtd)scan_next, (ExecScanRecheckMtd)scan_recheck);
}

// Ends the input plans and frees the rows and results.
void end_scan(CustomScanState* node) {
  JoinScanState* st = (JoinScanState*)node;
  ListCell* lc;
  foreach (lc, node->custom_ps) ExecEndNode((PlanState*)lfirst(lc));
  if (st->ctx) MemoryContextDelete(st->ctx);
  st->ctx = nullptr;
}

// Rescan: its rows (or count) again; when a parameter its inputs read changed (a correlated
// subquery), the inputs are read and the join run again.
void rescan(CustomScanState* node) {
  JoinScanState* st = (JoinScanState*)node;
  st->pos = 0;
  if (node->ss.ps.chgParam == nullptr || !st->started) return;
  if (st->ctx) MemoryContextDelete(st->ctx);  // also frees the results
  st->ctx = nullptr;
  st->started = false;
  st->srid_seen = false;
  ListCell* lc;
  foreach (lc, node->custom_ps) {
    PlanState* child = (PlanState*)lfirst(lc);
    // ExecReScan hands the changed parameters to lefttree/righttree only: custom children get
    // them here, so that they (an Append's run-time pruning) see the new values
    UpdateChangedParamSet(child, node->ss.ps.chgParam);
    if (child->chgParam == nullptr) ExecReScan(child);  // the others rescan on their next read
  }
}

// EXPLAIN: the method, the distance predicate and the quals applied with it.
void explain_scan(CustomScanState* node, List* ancestors, ExplainState* es) {
  JoinScanState* st = (JoinScanState*)node;
  CustomScan* cs = (CustomScan*)node->ss.ps.plan;
  // Names for every range table entry: a self-join's side b and the count's relations appear
  // in no scan node of their own, so EXPLAIN gave them none.
  List* names = NIL;
  int rti = 1;
  ListCell* nc;
  foreach (nc, es->rtable_names) {
    const char* name = (const char*)lfirst(nc);
    if (!name && (rti - st->rt_offset == int(st->ra) || rti - st->rt_offset == int(st->rb)))
      name = rt_fetch(rti, es->rtable)->eref->aliasname;
    names = lappend(names, (void*)name);
    ++rti;
  }
  List* ctx = set_deparse_context_plan(deparse_context_for_plan_tree(es->pstmt, names), node->ss.ps.plan, ancestors);
  List* dist = NIL;
  List* rest = NIL;
  int k = 0;
  ListCell* lc;
  const int ndist = st->dist_clause == kGisClause ? list_length(cs->custom_exprs) - 1 : st->dist_clause;
  foreach (lc, cs->custom_exprs) {
    if (k++ == ndist) dist = lappend(dist, lfirst(lc));
    else rest = lappend(rest, lfirst(lc));
  }
  ExplainPropertyText("Join Method", dist ? "similarity join (grid index)" : "pair expression (all pairs)", es);
  if (dist)
    ExplainPropertyText("Distance Predicate", deparse_expression((Node*)linitial(dist), ctx, true, false), es);
  if (rest)
    ExplainPropertyText(dist ? "Pushed Filter" : "Pushed Join Filter",
                        deparse_expression((Node*)make_ands_explicit(rest), ctx, true, false), es);
  if (st->self) ExplainPropertyText("Self-Join", dist ? "one scan, unordered pairs in both orders" : "one scan", es);
  if (st->mode == JM_COUNT) ExplainPropertyText("Pushdown", "count", es);
}

const CustomExecMethods exec_methods = {
    "gpu2bs join", begin_scan, exec_scan, end_scan, rescan,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, explain_scan};

// The scan state of a plan, with its plan data decoded.
Node* create_state(CustomScan* cs) {
  JoinScanState* st = (JoinScanState*)newNode(sizeof(JoinScanState), T_CustomScanState);
  st->css.methods = &exec_methods;
  List* p = cs->custom_private;
  st->mode = intVal(list_nth(p, P_MODE));
  st->self = intVal(list_nth(p, P_SELF)) != 0;
  st->ra = Index(intVal(list_nth(p, P_RA)));
  st->rb = Index(intVal(list_nth(p, P_RB)));
  // custom_relids (the join relation's indexes, renumbered with the range table; empty for
  // the pushed count, an upper path) against the planned ones.
  st->rt_offset = bms_is_empty(cs->custom_relids) ? 0 : bms_next_member(cs->custom_relids, -1) - int(Min(st->ra, st->rb));
  st->clauses = (List*)list_nth(p, P_CLAUSES);
  st->dist_clause = intVal(list_nth(p, P_DIST));
  st->has_gis = list_nth(p, P_GIS) != nullptr;
  if (st->has_gis) st->gis = gis_from_list((List*)list_nth(p, P_GIS));
  List* map = (List*)list_nth(p, P_SCANMAP);
  st->nscan = list_length(map);
  st->scan_side = (int*)palloc(sizeof(int) * Max(st->nscan, 1));
  st->scan_col = (int*)palloc(sizeof(int) * Max(st->nscan, 1));
  int k = 0;
  ListCell* lc;
  foreach (lc, map) {
    const int v = lfirst_int(lc);
    st->scan_side[k] = v / 100000;
    st->scan_col[k++] = v % 100000;
  }
  return (Node*)st;
}

const CustomScanMethods scan_methods = {"gpu2bs join", create_state};

// ---- planner ----------------------------------------------------------------------------------

// Position (0-based) of Var (varno, attno) in `tlist`, or -1.
int tlist_pos(List* tlist, Index varno, AttrNumber attno) {
  int k = 0;
  ListCell* lc;
  foreach (lc, tlist) {
    Node* e = (Node*)((TargetEntry*)lfirst(lc))->expr;
    if (IsA(e, Var) && Index(((Var*)e)->varno) == varno && ((Var*)e)->varattno == attno && ((Var*)e)->varlevelsup == 0)
      return k;
    ++k;
  }
  return -1;
}

// Makes the plan: input plans (one for a self-join), scan tuple = the inputs' columns (or the
// count, then the inputs' columns for EXPLAIN), engine column positions.
Plan* plan_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* path, List* tlist, List* clauses, List* custom_plans) {
  List* priv = path->custom_private;
  const int mode = intVal(list_nth(priv, P_MODE));
  const bool self = intVal(list_nth(priv, P_SELF)) != 0;
  const Index ra = Index(intVal(list_nth(priv, P_RA)));
  const Index rb = Index(intVal(list_nth(priv, P_RB)));
  List* jclauses = (List*)list_nth(priv, P_CLAUSES);
  CustomScan* cs = makeNode(CustomScan);
  cs->scan.plan.targetlist = tlist;
  cs->scan.plan.qual = NIL;
  cs->scan.scanrelid = 0;
  cs->flags = path->flags;
  cs->custom_plans = custom_plans;
  Plan* in0 = (Plan*)linitial(custom_plans);
  // A self-join reads one input: its target list gets the columns side b needs too.
  List* inner_tl = NIL;
  if (self) {
    Path* inner_path = (Path*)lsecond(path->custom_paths);
    inner_tl = make_tlist_from_pathtarget(inner_path->pathtarget);
    List* tl = list_copy(in0->targetlist);
    ListCell* lc;
    foreach (lc, inner_tl) {
      Var* v = (Var*)((TargetEntry*)lfirst(lc))->expr;
      if (tlist_pos(tl, ra, v->varattno) < 0) {
        Var* w = (Var*)copyObjectImpl(v);
        w->varno = ra;
        w->varnosyn = ra;
        tl = lappend(tl, makeTargetEntry((Expr*)w, AttrNumber(list_length(tl) + 1), nullptr, false));
      }
    }
    in0->targetlist = tl;
    cs->custom_plans = list_make1(in0);
  }
  // scan tuple: [count,] side a's columns, side b's columns
  List* scan_tlist = NIL;
  List* map = NIL;
  int resno = 1;
  if (mode == JM_COUNT) {
    List* aggs = pull_var_clause((Node*)tlist, PVC_INCLUDE_AGGREGATES);
    scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)linitial(aggs), AttrNumber(resno++), nullptr, false));
    map = lappend_int(map, 0);
  }
  for (int s = 0; s < 2; ++s) {
    List* tl = s == 0 ? in0->targetlist : self ? inner_tl : ((Plan*)lsecond(custom_plans))->targetlist;
    int k = 0;
    ListCell* lc;
    foreach (lc, tl) {
      Var* v = (Var*)((TargetEntry*)lfirst(lc))->expr;
      scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr*)copyObjectImpl(v), AttrNumber(resno++), nullptr, false));
      const int src = s == 1 && self ? tlist_pos(in0->targetlist, ra, v->varattno) : k;
      map = lappend_int(map, s * 100000 + src);  // a self-join's side 1 reads input 0's copy
      ++k;
    }
  }
  cs->custom_scan_tlist = scan_tlist;
  List* gis = (List*)list_nth(priv, P_GIS);
  cs->custom_exprs = (List*)copyObjectImpl(jclauses);  // EXPLAIN deparses them
  if (gis) cs->custom_exprs = lappend(cs->custom_exprs, copyObjectImpl(list_nth(priv, P_GIS + 1)));
  // engine columns: target list positions of the columns the translated clauses read
  PairExprClauses tr;
  pair_expr_translate_clauses((List*)bind_params((Node*)jclauses, nullptr), ra, rb, &tr);
  List* ecols = NIL;
  for (int s = 0; s < 2; ++s) {
    List* tl = self || s == 0 ? in0->targetlist : ((Plan*)lsecond(custom_plans))->targetlist;
    List* pos = NIL;
    for (int c = 0; c < tr.ncols[s]; ++c) {
      const int p = tlist_pos(tl, self ? ra : s == 0 ? ra : rb, tr.cols[s][c]);
      if (p < 0) elog(ERROR, "gpu2bs join: a column of the join quals is missing from its input");
      pos = lappend_int(pos, p);
    }
    if (gis) {
      const int p = tlist_pos(tl, self ? ra : s == 0 ? ra : rb, AttrNumber(intVal(list_nth(gis, s))));
      if (p < 0) elog(ERROR, "gpu2bs join: a geometry column of the join quals is missing from its input");
      pos = lappend_int(pos, p);
    }
    ecols = lappend(ecols, pos);
  }
  List* p = NIL;
  p = lappend(p, makeInteger(mode));
  p = lappend(p, makeInteger(self ? 1 : 0));
  p = lappend(p, makeInteger(int(ra)));
  p = lappend(p, makeInteger(int(rb)));
  p = lappend(p, copyObjectImpl(jclauses));
  p = lappend(p, map);
  p = lappend(p, makeInteger(intVal(list_nth(priv, P_DIST))));
  p = lappend(p, ecols);
  p = lappend(p, gis ? copyObjectImpl(gis) : nullptr);
  cs->custom_private = p;
  cs->methods = &scan_methods;
  (void)root;
  (void)rel;
  (void)clauses;
  return &cs->scan.plan;
}

const CustomPathMethods path_methods = {"gpu2bs join", plan_path, nullptr};

// True when every expression of the target is a plain Var of this query level.
bool plain_vars(PathTarget* target) {
  ListCell* lc;
  foreach (lc, target->exprs) {
    Node* e = (Node*)lfirst(lc);
    if (!IsA(e, Var) || ((Var*)e)->varlevelsup != 0) return false;
  }
  return true;
}

// The base relation of `rel` when it is a plain table scan of this query level, else null.
RangeTblEntry* table_rte(PlannerInfo* root, RelOptInfo* rel) {
  if (rel->reloptkind != RELOPT_BASEREL || rel->rtekind != RTE_RELATION || rel->cheapest_total_path == nullptr ||
      rel->cheapest_total_path->param_info != nullptr || !bms_is_empty(rel->lateral_relids) ||
      !plain_vars(rel->reltarget))
    return nullptr;
  RangeTblEntry* rte = planner_rt_fetch(rel->relid, root);
  return rte->rtekind == RTE_RELATION ? rte : nullptr;
}

// True when the statement, at any query level, can recheck rows by EvalPlanQual (UPDATE, DELETE,
// MERGE, row locks): a scan without a scan relation returns no rows in such a recheck.
bool epq_possible(PlannerInfo* root) {
  for (PlannerInfo* r = root; r; r = r->parent_root) {
    const CmdType cmd = r->parse->commandType;
    if (r->parse->rowMarks != NIL || (cmd != CMD_SELECT && cmd != CMD_INSERT)) return true;
  }
  return false;
}

// Offers the gpu2bs join for an inner join of two tables whose join quals are pair expressions.
void join_hook(PlannerInfo* root, RelOptInfo* joinrel, RelOptInfo* outerrel, RelOptInfo* innerrel, JoinType jointype,
               JoinPathExtraData* extra) {
  if (prev_join_hook) prev_join_hook(root, joinrel, outerrel, innerrel, jointype, extra);
  // SELECT (also CREATE TABLE AS) and INSERT ... SELECT; no row locks (FOR UPDATE, UPDATE ...
  // FROM), whose rechecks need PostgreSQL's join
  if (!enable_join_setting || jointype != JOIN_INNER || epq_possible(root) || extra->restrictlist == NIL)
    return;
  RangeTblEntry* rte_a = table_rte(root, outerrel);
  RangeTblEntry* rte_b = table_rte(root, innerrel);
  if (!rte_a || !rte_b || outerrel->relid >= innerrel->relid || !bms_is_empty(joinrel->lateral_relids) ||
      !plain_vars(joinrel->reltarget))
    return;
  const Index ra = outerrel->relid, rb = innerrel->relid;
  List* clauses = NIL;
  Node* gis_node = nullptr;
  GisClause gis;
  ListCell* lc;
  foreach (lc, extra->restrictlist) {
    RestrictInfo* ri = (RestrictInfo*)lfirst(lc);
    // equi-joins are PostgreSQL's (hash and merge joins)
    if (ri->pseudoconstant || ri->hashjoinoperator != InvalidOid || ri->mergeopfamilies != NIL ||
        contain_volatile_functions((Node*)ri->clause))
      return;
    if (pair_expr_clause_ok((Node*)ri->clause, ra, rb)) {
      clauses = lappend(clauses, ri->clause);
    } else if (!gis_node && gis_clause((Node*)ri->clause, ra, rb, &gis)) {
      gis_node = (Node*)ri->clause;
    } else {
      return;
    }
  }
  PairExprClauses tr;
  pair_expr_translate_clauses((List*)bind_params((Node*)clauses, nullptr), ra, rb, &tr);
  DistShape d;
  const int dist = gis_node ? kGisClause : find_distance(tr, &d);
  // One input for both sides: the same table, no quals of its own, read by a plain scan.
  const bool self = rte_a->relid == rte_b->relid && outerrel->baserestrictinfo == NIL &&
                    innerrel->baserestrictinfo == NIL && rte_a->tablesample == nullptr &&
                    rte_b->tablesample == nullptr && !rte_a->inh && !rte_b->inh &&
                    IsA(outerrel->cheapest_total_path, Path) && outerrel->cheapest_total_path->pathtype == T_SeqScan;
  Path* pa = outerrel->cheapest_total_path;
  Path* pb = innerrel->cheapest_total_path;
  const double na = Max(pa->rows, 1), nb = Max(pb->rows, 1);
  const double inputs = self ? pa->total_cost : pa->total_cost + pb->total_cost;
  const double engine = dist != -1 ? (na + nb) * cpu_operator_cost * 4 + Min(joinrel->rows, na * nb) * cpu_operator_cost
                                  : na * nb * cpu_operator_cost * kPairCostFactor * Max(list_length(clauses), 1);
  CustomPath* cp = makeNode(CustomPath);
  cp->path.pathtype = T_CustomScan;
  cp->path.parent = joinrel;
  cp->path.pathtarget = joinrel->reltarget;
  cp->path.param_info = nullptr;
  cp->path.parallel_aware = false;
  cp->path.parallel_safe = false;
  cp->path.parallel_workers = 0;
  cp->path.rows = joinrel->rows;
  cp->path.startup_cost = inputs + kStartupCost + engine;
  cp->path.total_cost = cp->path.startup_cost + joinrel->rows * cpu_tuple_cost;
  cp->path.pathkeys = NIL;
  cp->flags = 0;
  cp->custom_paths = list_make2(pa, pb);
  cp->custom_private = list_make5(makeInteger(JM_ROWS), makeInteger(self ? 1 : 0), makeInteger(int(ra)),
                                  makeInteger(int(rb)), clauses);
  cp->custom_private = lappend(cp->custom_private, NIL);  // P_SCANMAP (made by plan_path)
  cp->custom_private = lappend(cp->custom_private, makeInteger(dist));
  cp->custom_private = lappend(cp->custom_private, NIL);  // P_ECOLS (made by plan_path)
  cp->custom_private = lappend(cp->custom_private, gis_node ? gis_to_list(gis) : nullptr);
  cp->custom_private = lappend(cp->custom_private, gis_node);  // P_GIS + 1: the clause
  cp->methods = &path_methods;
  add_path(joinrel, &cp->path);
}

// count(*) over the gpu2bs join alone: the scan returns the count.
void upper_hook(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                void* extra) {
  if (prev_upper_hook) prev_upper_hook(root, stage, input_rel, output_rel, extra);
  if (!enable_join_setting || stage != UPPERREL_GROUP_AGG || input_rel->reloptkind != RELOPT_JOINREL) return;
  Query* q = root->parse;
  if (q->groupClause != NIL || q->groupingSets != NIL || root->hasHavingQual || epq_possible(root) ||
      q->hasTargetSRFs || q->hasWindowFuncs || !bms_equal(root->all_baserels, input_rel->relids))
    return;
  CustomPath* join = nullptr;
  ListCell* lc;
  foreach (lc, input_rel->pathlist) {
    Path* p = (Path*)lfirst(lc);
    if (IsA(p, ProjectionPath)) p = ((ProjectionPath*)p)->subpath;
    if (IsA(p, CustomPath) && ((CustomPath*)p)->methods == &path_methods) join = (CustomPath*)p;
  }
  if (!join) return;
  PathTarget* target = root->upper_targets[UPPERREL_GROUP_AGG];
  List* found = pull_var_clause((Node*)target->exprs, PVC_INCLUDE_AGGREGATES);
  if (found == NIL) return;
  foreach (lc, found) {
    Node* n = (Node*)lfirst(lc);
    if (!IsA(n, Aggref)) return;
    Aggref* a = (Aggref*)n;
    if (a->aggfnoid != F_COUNT_ || a->aggorder != NIL || a->aggdistinct != NIL || a->aggfilter ||
        a->agglevelsup != 0 || a->aggkind != AGGKIND_NORMAL || a->aggsplit != AGGSPLIT_SIMPLE)
      return;
  }
  CustomPath* cp = makeNode(CustomPath);
  cp->path.pathtype = T_CustomScan;
  cp->path.parent = output_rel;
  cp->path.pathtarget = target;
  cp->path.param_info = nullptr;
  cp->path.parallel_safe = false;
  cp->path.rows = 1;
  cp->path.startup_cost = join->path.startup_cost;
  cp->path.total_cost = join->path.startup_cost + cpu_tuple_cost;
  cp->flags = 0;
  cp->custom_paths = join->custom_paths;
  cp->custom_private = list_copy(join->custom_private);
  linitial(cp->custom_private) = makeInteger(JM_COUNT);
  cp->methods = &path_methods;
  add_path(output_rel, &cp->path);
}

}  // namespace

namespace gpu2bs {
namespace pg {

// Registers the custom scan and the planner hooks (from _PG_init).
void register_join_path() {
  RegisterCustomScanMethods(&scan_methods);
  prev_join_hook = set_join_pathlist_hook;
  set_join_pathlist_hook = join_hook;
  prev_upper_hook = create_upper_paths_hook;
  create_upper_paths_hook = upper_hook;
}

}  // namespace pg
}  // namespace gpu2bs
