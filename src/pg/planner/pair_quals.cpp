// Quals over gpu_simjoin's columns as pair IR templates (pair_quals.h).
#include "pair_quals.h"

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
}

#include <cstdio>
#include <cstdlib>

namespace gpu2bs {
namespace pg {

namespace {

constexpr Oid kFloatBtreeFamily = 1970;  // float_ops (float4, float8 and their cross types)

// Template instruction: (kind, col, col2, op, truth, n, param index or -1, ival, modulus, dval)
// with int64 and double values as text (exact: decimal and hexadecimal float).
List* make_instr(const PairInstr& in, int param) {
  char iv[32], mv[32], dv[40];
  snprintf(iv, sizeof iv, "%lld", (long long)in.ival);
  snprintf(mv, sizeof mv, "%lld", (long long)in.modulus);
  snprintf(dv, sizeof dv, "%a", in.dval);
  return list_make4(list_make4(makeInteger(in.kind), makeInteger(int(in.col)), makeInteger(int(in.col2)),
                               makeInteger(int(in.op))),
                    list_make3(makeInteger(int(in.truth)), makeInteger(int(in.n)), makeInteger(param)),
                    list_make2(makeString(pstrdup(iv)), makeString(pstrdup(mv))), makeString(pstrdup(dv)));
}

// Which column `node` reads (Var of the function at this query level), or -1.
int column_of(Node* node, Index relid) {
  if (node && IsA(node, RelabelType)) node = (Node*)((RelabelType*)node)->arg;
  if (!node || !IsA(node, Var)) return -1;
  Var* v = (Var*)node;
  if (Index(v->varno) != relid || v->varlevelsup != 0 || v->varattno < 1 || v->varattno > 3) return -1;
  return v->varattno - 1;
}

bool int_type(Oid t) { return t == INT2OID || t == INT4OID || t == INT8OID; }
bool float_type(Oid t) { return t == FLOAT4OID || t == FLOAT8OID; }

// A constant or parameter operand of type class `want_float`; *param_out: its expression when a
// parameter (nullptr for a constant), *value: the constant.
bool operand_of(Node* node, bool want_float, Node** param_out, Datum* value, bool* isnull, Oid* type) {
  if (!node) return false;
  Oid t = exprType(node);
  if (want_float ? !float_type(t) : !int_type(t)) return false;
  *type = t;
  if (IsA(node, Const)) {
    *param_out = nullptr;
    *value = ((Const*)node)->constvalue;
    *isnull = ((Const*)node)->constisnull;
    return true;
  }
  if (IsA(node, Param) && (((Param*)node)->paramkind == PARAM_EXTERN || ((Param*)node)->paramkind == PARAM_EXEC)) {
    *param_out = node;
    return true;
  }
  return false;
}

int64 int_value(Datum d, Oid t) {
  return t == INT2OID ? int64(DatumGetInt16(d)) : t == INT4OID ? int64(DatumGetInt32(d)) : DatumGetInt64(d);
}
double float_value(Datum d, Oid t) { return t == FLOAT4OID ? double(DatumGetFloat4(d)) : DatumGetFloat8(d); }

// The comparison an operator performs in the btree family `family`, or false.
bool comparison_of(Oid opno, Oid family, CmpOp* op) {
  List* interp = get_op_btree_interpretation(opno);
  ListCell* lc;
  bool found = false;
  foreach (lc, interp) {
    OpBtreeInterpretation* b = (OpBtreeInterpretation*)lfirst(lc);
    if (b->opfamily_id != family) continue;
    switch (b->strategy) {
      case BTLessStrategyNumber: *op = CmpOp::Lt; found = true; break;
      case BTLessEqualStrategyNumber: *op = CmpOp::Le; found = true; break;
      case BTEqualStrategyNumber: *op = CmpOp::Eq; found = true; break;
      case BTGreaterEqualStrategyNumber: *op = CmpOp::Ge; found = true; break;
      case BTGreaterStrategyNumber: *op = CmpOp::Gt; found = true; break;
      case ROWCOMPARE_NE: *op = CmpOp::Ne; found = true; break;
      default: break;
    }
    if (found) break;
  }
  list_free_deep(interp);
  return found;
}

CmpOp commuted(CmpOp op) {
  switch (op) {
    case CmpOp::Lt: return CmpOp::Gt;
    case CmpOp::Le: return CmpOp::Ge;
    case CmpOp::Ge: return CmpOp::Le;
    case CmpOp::Gt: return CmpOp::Lt;
    default: return op;
  }
}

const char* op_text(CmpOp op) {
  static const char* t[] = {"<", "<=", "=", "<>", ">=", ">"};
  return t[int(op)];
}
const char* col_text(int c) {
  static const char* t[] = {"id1", "id2", "dist"};
  return t[c];
}

// Appends a constant's or parameter's text to desc.
void operand_text(StringInfo desc, Node* param, Datum v, bool isnull, Oid type) {
  if (param) {
    Param* p = (Param*)param;
    appendStringInfo(desc, p->paramkind == PARAM_EXTERN ? "$%d" : "$%d (executor)", p->paramid);
  } else if (isnull) {
    appendStringInfoString(desc, "NULL");
  } else {
    Oid out;
    bool varlena;
    getTypeOutputInfo(type, &out, &varlena);
    appendStringInfoString(desc, OidOutputFunctionCall(out, v));
  }
}

// The (id % k) of `node`: column and k, or false.
bool mod_of(Node* node, Index relid, int* col, int64* k) {
  if (!node || !IsA(node, OpExpr)) return false;
  OpExpr* e = (OpExpr*)node;
  if (e->opfuncid == InvalidOid) set_opfuncid(e);
  if (e->opfuncid != F_INT8MOD || list_length(e->args) != 2) return false;
  int c = column_of((Node*)linitial(e->args), relid);
  Node* m = (Node*)lsecond(e->args);
  if (c < 0 || c == 2 || !IsA(m, Const) || ((Const*)m)->constisnull) return false;
  *k = DatumGetInt64(((Const*)m)->constvalue);
  if (*k == 0) return false;  // division by zero stays an error raised by PostgreSQL
  *col = c;
  return true;
}

bool translate(Node* node, Index relid, List** code, List** params, int param_base, StringInfo desc);

bool translate_op(OpExpr* e, Index relid, List** code, List** params, int param_base, StringInfo desc) {
  if (list_length(e->args) != 2) return false;
  Node* l = (Node*)linitial(e->args);
  Node* r = (Node*)lsecond(e->args);
  int lc = column_of(l, relid), rc = column_of(r, relid);
  int64 k = 0;
  int mc = -1;
  bool lmod = false;
  if (lc < 0 && rc < 0) {
    // (id % k) op value, or value op (id % k)
    if (mod_of(l, relid, &mc, &k)) lmod = true;
    else if (!mod_of(r, relid, &mc, &k)) return false;
  }
  PairInstr in;
  if (lc >= 0 && rc >= 0) {
    // id1 op id2
    if (lc == 2 || rc == 2) return false;
    if (!comparison_of(e->opno, INTEGER_BTREE_FAM_OID, &in.op)) return false;
    in.kind = PairInstr::CmpCols;
    in.col = PairCol(lc);
    in.col2 = PairCol(rc);
    *code = lappend(*code, make_instr(in, -1));
    appendStringInfo(desc, "(%s %s %s)", col_text(lc), op_text(in.op), col_text(rc));
    return true;
  }
  const bool col_left = lc >= 0 || lmod;
  const int col = mc >= 0 ? mc : col_left ? lc : rc;
  const bool is_float = col == 2;
  Node* other = col_left ? r : l;
  Node* param = nullptr;
  Datum v = 0;
  bool isnull = false;
  Oid type = InvalidOid;
  if (!operand_of(other, is_float, &param, &v, &isnull, &type)) return false;
  if (!comparison_of(e->opno, is_float ? kFloatBtreeFamily : INTEGER_BTREE_FAM_OID, &in.op)) return false;
  if (!col_left) in.op = commuted(in.op);
  in.col = PairCol(col);
  in.kind = mc >= 0 ? PairInstr::ModCmp : PairInstr::CmpConst;
  in.modulus = mc >= 0 ? k : 1;
  int pidx = -1;
  if (param) {
    pidx = param_base + list_length(*params);
    *params = lappend(*params, copyObjectImpl(param));
  } else if (isnull) {
    in.kind = PairInstr::Truth;
    in.truth = Tri::Unknown;
  } else if (is_float) {
    in.dval = float_value(v, type);
  } else {
    in.ival = int_value(v, type);
  }
  // the parameter's type, for instantiation
  List* instr = make_instr(in, pidx);
  instr = lappend(instr, makeInteger(int(type)));
  *code = lappend(*code, instr);
  if (mc >= 0)
    appendStringInfo(desc, "((%s %% " INT64_FORMAT ") %s ", col_text(col), k, op_text(in.op));
  else
    appendStringInfo(desc, "(%s %s ", col_text(col), op_text(in.op));
  operand_text(desc, param, v, isnull, type);
  appendStringInfoChar(desc, ')');
  return true;
}

bool translate(Node* node, Index relid, List** code, List** params, int param_base, StringInfo desc) {
  if (!node) return false;
  if (IsA(node, OpExpr)) return translate_op((OpExpr*)node, relid, code, params, param_base, desc);
  if (IsA(node, BoolExpr)) {
    BoolExpr* b = (BoolExpr*)node;
    const char* sep = b->boolop == AND_EXPR ? " AND " : b->boolop == OR_EXPR ? " OR " : "";
    appendStringInfoString(desc, b->boolop == NOT_EXPR ? "(NOT " : "(");
    int k = 0;
    ListCell* lc;
    foreach (lc, b->args) {
      if (k++) appendStringInfoString(desc, sep);
      if (!translate((Node*)lfirst(lc), relid, code, params, param_base, desc)) return false;
    }
    appendStringInfoChar(desc, ')');
    PairInstr in;
    in.kind = b->boolop == AND_EXPR ? PairInstr::And : b->boolop == OR_EXPR ? PairInstr::Or : PairInstr::Not;
    in.n = uint32_t(list_length(b->args));
    if (b->boolop == NOT_EXPR && in.n != 1) return false;
    *code = lappend(*code, make_instr(in, -1));
    return true;
  }
  return false;
}

int int_at(List* l, int k) { return intVal(list_nth(l, k)); }

}  // namespace

bool translate_clause(Node* clause, Index relid, List** code, List** params, int param_base, StringInfo desc) {
  List* c = NIL;
  List* p = NIL;
  StringInfoData d;
  initStringInfo(&d);
  if (!translate(clause, relid, &c, &p, param_base + list_length(*params), &d)) return false;
  *code = list_concat(*code, c);
  *params = list_concat(*params, p);
  if (desc->len) appendStringInfoString(desc, " AND ");
  appendStringInfoString(desc, d.data);
  return true;
}

void instantiate_predicate(List* code, List* param_states, ExprContext* econtext, PairPredicate* out) {
  out->code.clear();
  int nleaves = 0;
  ListCell* lc;
  foreach (lc, code) {
    List* t = (List*)lfirst(lc);
    List* a = (List*)linitial(t);
    List* b = (List*)lsecond(t);
    List* c = (List*)lthird(t);
    PairInstr in;
    in.kind = PairInstr::Kind(int_at(a, 0));
    in.col = PairCol(int_at(a, 1));
    in.col2 = PairCol(int_at(a, 2));
    in.op = CmpOp(int_at(a, 3));
    in.truth = Tri(int_at(b, 0));
    in.n = uint32_t(int_at(b, 1));
    const int param = int_at(b, 2);
    in.ival = strtoll(strVal(linitial(c)), nullptr, 10);
    in.modulus = strtoll(strVal(lsecond(c)), nullptr, 10);
    in.dval = strtod(strVal(lfourth(t)), nullptr);
    if (param >= 0) {
      const Oid type = Oid(intVal(list_nth(t, 4)));
      bool isnull;
      Datum v = ExecEvalExpr((ExprState*)list_nth(param_states, param), econtext, &isnull);
      if (isnull) {
        in.kind = PairInstr::Truth;
        in.truth = Tri::Unknown;
      } else if (in.col == PairCol::Dist) {
        in.dval = float_value(v, type);
      } else {
        in.ival = int_value(v, type);
      }
    }
    if (in.kind != PairInstr::And && in.kind != PairInstr::Or && in.kind != PairInstr::Not) nleaves++;
    out->code.push_back(in);
  }
  // the top-level clauses are ANDed
  const int nclauses = [&] {
    int depth = 0;
    for (const PairInstr& in : out->code) {
      if (in.kind == PairInstr::And || in.kind == PairInstr::Or) depth -= int(in.n) - 1;
      else if (in.kind != PairInstr::Not) depth++;
    }
    return depth;
  }();
  if (nclauses > 1) {
    PairInstr all;
    all.kind = PairInstr::And;
    all.n = uint32_t(nclauses);
    out->code.push_back(all);
  }
  (void)nleaves;
}

}  // namespace pg
}  // namespace gpu2bs
