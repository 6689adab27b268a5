// Whole-table aggregates read as the relation forms: a planner hook turns
//   SELECT gpu_pair_count(x, y, z, r) FROM t      into   SELECT gpu_pair_count('t', r, '{x,y,z}')
//   SELECT gpu_sdh(x, y, z, nbuckets) FROM t      into   SELECT gpu_sdh('t', nbuckets, '{x,y,z}')
// (2-D forms too), so the rows reach the engine through the relation reader (the direct heap
// reader where it applies) instead of one aggregate transition call per row. It applies only
// where both give the same result: one plain relation read whole (no WHERE, GROUP BY, HAVING,
// DISTINCT, ORDER BY, LIMIT, window functions, sub-queries, row locks, ONLY over a table with
// children, TABLESAMPLE), every output expression built from such aggregates and constants, each
// aggregate over distinct float8 columns of that relation with a constant, valid, non-NULL
// radius or bucket count (no DISTINCT, ORDER BY or FILTER), the relation form executable by the
// user, and gpu2bs.direct_scan on. The relation stays in the plan's range table, so the
// executor checks the same privileges and takes the same lock as for the aggregate.
#include "../pg.h"

extern "C" {
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include <cmath>

#include "../settings.h"
#include "../simjoin.h"

namespace gpu2bs {
namespace pg {

namespace {

planner_hook_type prev_planner = nullptr;

// The rewrite's state: the relation read and whether an expression could not be rewritten.
struct AggRead {
  Index rti;
  Oid relid;
  Oid ext;       // the gpu2bs extension
  int replaced;  // aggregates rewritten
  bool bad;      // something that is not such an aggregate or a constant
};

// The constant value of `expr` (folded), or null when it is not a non-NULL constant.
Const* folded_const(Expr* expr) {
  Node* n = eval_const_expressions(nullptr, (Node*)copyObjectImpl(expr));
  if (!IsA(n, Const) || ((Const*)n)->constisnull) return nullptr;
  return (Const*)n;
}

// The relation-form call that gives aggregate `a`'s value over the whole relation, or null.
Node* relation_call(Aggref* a, AggRead* c) {
  if (a->agglevelsup != 0 || a->aggstar || a->aggvariadic || a->aggdistinct != NIL ||
      a->aggorder != NIL || a->aggfilter != nullptr || a->aggkind != AGGKIND_NORMAL)
    return nullptr;
  if (getExtensionOfObject(ProcedureRelationId, a->aggfnoid) != c->ext) return nullptr;
  const char* name = get_func_name(a->aggfnoid);
  if (!name) return nullptr;
  const bool sdh = strcmp(name, "gpu_sdh") == 0;
  if (!sdh && strcmp(name, "gpu_pair_count") != 0) return nullptr;
  Oid* argtypes = nullptr;
  int nargs = 0;
  const Oid rettype = get_func_signature(a->aggfnoid, &argtypes, &nargs);
  // gpu_sdh(x, y[, z], nbuckets int4) or gpu_pair_count(x, y[, z], r float8)
  const int dims = nargs - 1;
  if ((dims != 2 && dims != 3) || list_length(a->args) != nargs) return nullptr;
  for (int k = 0; k < dims; ++k)
    if (argtypes[k] != FLOAT8OID) return nullptr;
  if (argtypes[dims] != (sdh ? INT4OID : FLOAT8OID) || rettype != a->aggtype) return nullptr;
  // The coordinates: distinct float8 user columns of the relation read.
  Datum names[3];
  AttrNumber atts[3];
  for (int k = 0; k < dims; ++k) {
    Expr* e = ((TargetEntry*)list_nth(a->args, k))->expr;
    if (!IsA(e, Var)) return nullptr;
    Var* v = (Var*)e;
    if (v->varno != int(c->rti) || v->varlevelsup != 0 || v->varattno <= 0 || v->vartype != FLOAT8OID)
      return nullptr;
    for (int j = 0; j < k; ++j)
      if (atts[j] == v->varattno) return nullptr;
    atts[k] = v->varattno;
    char* att = get_attname(c->relid, v->varattno, true);
    if (!att) return nullptr;
    names[k] = PointerGetDatum(cstring_to_text(att));
  }
  // The parameter: a valid constant, so that both forms accept it (the relation form checks it
  // before reading; the aggregate only when a row arrives).
  Const* param = folded_const(((TargetEntry*)list_nth(a->args, dims))->expr);
  if (!param) return nullptr;
  if (sdh) {
    const int32 nb = DatumGetInt32(param->constvalue);
    if (nb < 1 || nb > (1 << 20)) return nullptr;
  } else {
    const double r = DatumGetFloat8(param->constvalue);
    if (std::isnan(r) || r < 0) return nullptr;
  }
  // The relation form in the aggregate's schema, a member of the extension too.
  Oid rel_args[3] = {REGCLASSOID, Oid(sdh ? INT4OID : FLOAT8OID), TEXTARRAYOID};
  List* qname = list_make2(makeString(get_namespace_name(get_func_namespace(a->aggfnoid))), makeString(pstrdup(name)));
  const Oid fn = LookupFuncName(qname, 3, rel_args, true);
  if (!OidIsValid(fn) || getExtensionOfObject(ProcedureRelationId, fn) != c->ext ||
      get_func_rettype(fn) != a->aggtype ||
      pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK ||
      pg_proc_aclcheck(a->aggfnoid, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
    return nullptr;
  ArrayType* coords = construct_array(names, dims, TEXTOID, -1, false, TYPALIGN_INT);
  List* args = list_make3(makeConst(REGCLASSOID, -1, InvalidOid, 4, ObjectIdGetDatum(c->relid), false, true),
                          param,
                          makeConst(TEXTARRAYOID, -1, InvalidOid, -1, PointerGetDatum(coords), false, false));
  FuncExpr* call = makeFuncExpr(fn, a->aggtype, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
  call->location = a->location;
  ++c->replaced;
  return (Node*)call;
}

// Replaces every rewritable aggregate in `node`; flags anything else that reads the relation.
Node* rewrite_aggs(Node* node, AggRead* c) {
  if (node == nullptr || c->bad) return node;
  if (IsA(node, Aggref)) {
    Node* call = relation_call((Aggref*)node, c);
    if (!call) c->bad = true;
    return call ? call : node;
  }
  if (IsA(node, Var) || IsA(node, GroupingFunc) || IsA(node, WindowFunc) || IsA(node, SubLink)) {
    c->bad = true;
    return node;
  }
  return expression_tree_mutator(node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void*>(rewrite_aggs)), c);
}

// Whether `parse` is a plain whole-relation aggregate query (see the file comment); sets the
// range table index and relation in `c`.
bool whole_relation_aggregate(Query* parse, AggRead* c) {
  if (parse->commandType != CMD_SELECT || parse->utilityStmt || !parse->hasAggs || parse->hasWindowFuncs ||
      parse->hasTargetSRFs || parse->hasSubLinks || parse->hasDistinctOn || parse->hasRecursive ||
      parse->hasModifyingCTE || parse->hasForUpdate || parse->cteList != NIL || parse->groupClause != NIL ||
      parse->groupingSets != NIL || parse->havingQual || parse->windowClause != NIL ||
      parse->distinctClause != NIL || parse->sortClause != NIL || parse->limitOffset || parse->limitCount ||
      parse->setOperations || parse->rowMarks != NIL || parse->returningList != NIL ||
      list_length(parse->rtable) != 1 || !parse->jointree || parse->jointree->quals ||
      list_length(parse->jointree->fromlist) != 1 || !IsA(linitial(parse->jointree->fromlist), RangeTblRef))
    return false;
  c->rti = Index(((RangeTblRef*)linitial(parse->jointree->fromlist))->rtindex);
  RangeTblEntry* rte = rt_fetch(c->rti, parse->rtable);
  if (rte->rtekind != RTE_RELATION || rte->tablesample || OidIsValid(rte->checkAsUser)) return false;
  if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW && rte->relkind != RELKIND_PARTITIONED_TABLE)
    return false;
  // FROM ONLY over a table with children reads less than the relation form would.
  if (!rte->inh && has_subclass(rte->relid)) return false;
  c->relid = rte->relid;
  return true;
}

// The planner hook: plans the rewritten query where the rewrite applies, else the query as is.
PlannedStmt* agg_read_planner(Query* parse, const char* query_string, int cursor_options, ParamListInfo params) {
  AggRead c{};
  bool rewritten = false;
  if (direct_scan_setting && parse->hasAggs && whole_relation_aggregate(parse, &c)) {
    c.ext = get_extension_oid("gpu2bs", true);
    if (OidIsValid(c.ext)) {
      Query* q = (Query*)copyObjectImpl(parse);
      List* tlist = NIL;
      ListCell* lc;
      foreach (lc, q->targetList) {
        TargetEntry* te = (TargetEntry*)lfirst(lc);
        te->expr = (Expr*)rewrite_aggs((Node*)te->expr, &c);
        tlist = lappend(tlist, te);
      }
      if (!c.bad && c.replaced > 0) {
        q->targetList = tlist;
        q->hasAggs = false;
        q->jointree->fromlist = NIL;  // the relation stays in the range table (privileges, lock)
        parse = q;
        rewritten = true;
      }
    }
  }
  PlannedStmt* plan = prev_planner ? prev_planner(parse, query_string, cursor_options, params)
                                    : standard_planner(parse, query_string, cursor_options, params);
  // The rewrite depends on the planning user's EXECUTE rights: a cached plan is not reused by
  // another role.
  if (rewritten) plan->dependsOnRole = true;
  return plan;
}

}  // namespace

void register_agg_read() {
  prev_planner = planner_hook;
  planner_hook = agg_read_planner;
}

}  // namespace pg
}  // namespace gpu2bs
