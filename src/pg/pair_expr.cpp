// Pair expressions at the SQL surface: gpu_pair_count(a, b, predicate), gpu_pair_sum,
// gpu_pair_histogram and gpu_join. The expression text is parsed by PostgreSQL's parser and
// analyzed as the calling user in a parse state whose range table holds the two relations as
// `a` and `b` (privileges checked as a SELECT of the columns it names would check them), constant
// subexpressions are folded by the planner's own routine, and the analyzed tree is translated
// into the engine's pair expression (src/core/pair_expr.h) when every node is on the allow-list
// below; anything else is 0A000. The columns it names are read through SPI as the calling user.
#include "pg.h"

extern "C" {
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
}

#include <chrono>
#include <cmath>

#include "../core/error.h"
#include "../core/pair_expr.h"
#include "pair_expr_sql.h"
#include "settings.h"
#include "simjoin.h"

using namespace gpu2bs;
using namespace gpu2bs::pg;

namespace {

// ------------------------------------------------------------------------------------------
// The allow-list: built-in functions (by OID) and what they are in the pair expression.
// ------------------------------------------------------------------------------------------

enum FnKind { FN_NUM, FN_CAST, FN_CMP, FN_PLUS };

struct AllowedFn {
  Oid fn;
  FnKind kind;
  ExprOp op;
  CmpOp cmp;
};

#define NUM(f, o) {f, FN_NUM, ExprOp::o, CmpOp::Eq}
#define CAST(f) {f, FN_CAST, ExprOp::Const, CmpOp::Eq}
#define CMP6(p) {F_##p##LT, FN_CMP, ExprOp::Cmp, CmpOp::Lt}, {F_##p##LE, FN_CMP, ExprOp::Cmp, CmpOp::Le}, \
                {F_##p##EQ, FN_CMP, ExprOp::Cmp, CmpOp::Eq}, {F_##p##NE, FN_CMP, ExprOp::Cmp, CmpOp::Ne}, \
                {F_##p##GE, FN_CMP, ExprOp::Cmp, CmpOp::Ge}, {F_##p##GT, FN_CMP, ExprOp::Cmp, CmpOp::Gt}

const AllowedFn kAllowed[] = {
    // float8 arithmetic (and float4 with float8 operands, computed in float8)
    NUM(F_FLOAT8PL, Add), NUM(F_FLOAT8MI, Sub), NUM(F_FLOAT8MUL, Mul), NUM(F_FLOAT8DIV, Div),
    NUM(F_FLOAT48PL, Add), NUM(F_FLOAT48MI, Sub), NUM(F_FLOAT48MUL, Mul), NUM(F_FLOAT48DIV, Div),
    NUM(F_FLOAT84PL, Add), NUM(F_FLOAT84MI, Sub), NUM(F_FLOAT84MUL, Mul), NUM(F_FLOAT84DIV, Div),
    NUM(F_FLOAT8UM, Neg), {F_FLOAT8UP, FN_PLUS, ExprOp::Const, CmpOp::Eq},
    NUM(F_FLOAT8ABS, Abs), NUM(F_ABS_FLOAT8, Abs),
    NUM(F_DSQRT, Sqrt), NUM(F_SQRT_FLOAT8, Sqrt), NUM(F_DPOW, Pow), NUM(F_POW_FLOAT8_FLOAT8, Pow), NUM(F_POWER_FLOAT8_FLOAT8, Pow),
    NUM(F_SIN, Sin), NUM(F_COS, Cos), NUM(F_TAN, Tan), NUM(F_ASIN, Asin), NUM(F_ACOS, Acos),
    NUM(F_ATAN, Atan), NUM(F_ATAN2, Atan2), NUM(F_DEXP, Exp), NUM(F_EXP_FLOAT8, Exp),
    NUM(F_DLOG1, Ln), NUM(F_LN_FLOAT8, Ln), NUM(F_RADIANS, Radians), NUM(F_DEGREES, Degrees),
    // casts that read a column or constant as float8 (exact but for int8 beyond 2^53 and
    // numeric, rounded to nearest as PostgreSQL's own cast does)
    CAST(F_FLOAT8_INT2), CAST(F_FLOAT8_INT4), CAST(F_FLOAT8_INT8), CAST(F_FLOAT8_FLOAT4),
    CAST(F_FLOAT8_NUMERIC), CAST(F_INT4_INT2), CAST(F_INT8_INT2), CAST(F_INT8_INT4),
    CAST(F_NUMERIC_INT2), CAST(F_NUMERIC_INT4), CAST(F_NUMERIC_INT8),
    // comparisons (float8 order: NaN equal to NaN and above every other value)
    CMP6(FLOAT8), CMP6(FLOAT4), CMP6(FLOAT48), CMP6(FLOAT84), CMP6(INT2), CMP6(INT4), CMP6(INT8),
    CMP6(INT24), CMP6(INT42), CMP6(INT28), CMP6(INT82), CMP6(INT48), CMP6(INT84),
    {F_NUMERIC_LT, FN_CMP, ExprOp::Cmp, CmpOp::Lt}, {F_NUMERIC_LE, FN_CMP, ExprOp::Cmp, CmpOp::Le},
    {F_NUMERIC_EQ, FN_CMP, ExprOp::Cmp, CmpOp::Eq}, {F_NUMERIC_NE, FN_CMP, ExprOp::Cmp, CmpOp::Ne},
    {F_NUMERIC_GE, FN_CMP, ExprOp::Cmp, CmpOp::Ge}, {F_NUMERIC_GT, FN_CMP, ExprOp::Cmp, CmpOp::Gt},
};

#undef NUM
#undef CAST
#undef CMP6

const AllowedFn* allowed_fn(Oid fn) {
  for (const AllowedFn& a : kAllowed)
    if (a.fn == fn) return &a;
  return nullptr;
}

// Types read as float8: smallint, integer, bigint, real, double precision, numeric (domains
// over them too).
bool number_type(Oid t) {
  t = getBaseType(t);
  return t == INT2OID || t == INT4OID || t == INT8OID || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

const char* kAllowHint =
    "Pair expressions accept columns of a and b of numeric types, constants, float8 + - * /, "
    "unary minus, abs, sqrt, ^ and power with a constant exponent, least, greatest, sin, cos, "
    "tan, asin, acos, atan, atan2, radians, degrees, exp, ln, comparisons, AND, OR, NOT, CASE "
    "and IS [NOT] NULL; cast integer and numeric columns to float8 (a.n::float8) for arithmetic.";

// ------------------------------------------------------------------------------------------
// Translation of the analyzed tree into pair-expression nodes. Plain data in palloc'd arrays,
// so an ereport may leave it at any point (no C++ object is alive in these frames).
// ------------------------------------------------------------------------------------------

struct Builder {
  ExprNode* nodes;
  int nnodes, capn;
  uint32* args;
  int nargs, capa;
  AttrNumber* cols[2];  // attribute numbers read, per side (self: side 0 holds both)
  int ncols[2];
  int capc[2];
  bool self;
};

void builder_init(Builder* b, bool self, int natts_a, int natts_b) {
  memset(b, 0, sizeof *b);
  b->capn = 32;
  b->nodes = (ExprNode*)palloc(sizeof(ExprNode) * b->capn);
  b->capa = 64;
  b->args = (uint32*)palloc(sizeof(uint32) * b->capa);
  b->capc[0] = Max(natts_a, 1);
  b->capc[1] = Max(natts_b, 1);
  b->cols[0] = (AttrNumber*)palloc(sizeof(AttrNumber) * b->capc[0]);
  b->cols[1] = (AttrNumber*)palloc(sizeof(AttrNumber) * b->capc[1]);
  b->self = self;
}

int add_node(Builder* b, ExprNode n, int nops, const int* ops) {
  if (b->nnodes >= 100000)
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("pair expression is too large")));
  if (b->nnodes == b->capn) {
    b->capn *= 2;
    b->nodes = (ExprNode*)repalloc(b->nodes, sizeof(ExprNode) * b->capn);
  }
  while (b->nargs + nops > b->capa) {
    b->capa *= 2;
    b->args = (uint32*)repalloc(b->args, sizeof(uint32) * b->capa);
  }
  n.first = uint32(b->nargs);
  n.nargs = uint32(nops);
  for (int k = 0; k < nops; ++k) b->args[b->nargs++] = uint32(ops[k]);
  b->nodes[b->nnodes] = n;
  return b->nnodes++;
}

ExprNode make(ExprOp op, ExprType t) {
  ExprNode n;
  n.op = op;
  n.type = t;
  return n;
}

// Index of column `att` of side `side` in the columns read (added on first use).
int column_index(Builder* b, int side, AttrNumber att) {
  const int s = b->self ? 0 : side;
  for (int c = 0; c < b->ncols[s]; ++c)
    if (b->cols[s][c] == att) return c;
  if (b->ncols[s] == b->capc[s]) {
    b->capc[s] *= 2;
    b->cols[s] = (AttrNumber*)repalloc(b->cols[s], sizeof(AttrNumber) * b->capc[s]);
  }
  b->cols[s][b->ncols[s]] = att;
  return b->ncols[s]++;
}

[[noreturn]] void unsupported(Node* node);

// The value of a constant of a number type as float8 (numeric rounded to nearest).
double const_value(Const* c) {
  const Oid t = getBaseType(c->consttype);
  switch (t) {
    case FLOAT8OID: return DatumGetFloat8(c->constvalue);
    case FLOAT4OID: return double(DatumGetFloat4(c->constvalue));
    case INT2OID: return double(DatumGetInt16(c->constvalue));
    case INT4OID: return double(DatumGetInt32(c->constvalue));
    case INT8OID: return double(DatumGetInt64(c->constvalue));
    case NUMERICOID: return DatumGetFloat8(DirectFunctionCall1(numeric_float8, c->constvalue));
  }
  unsupported((Node*)c);
}

int translate_bool(Builder* b, Node* node);

// The allow-list entry of a FuncExpr or OpExpr (null when not allowed) and its arguments.
const AllowedFn* called_fn(Node* node, List** fargs) {
  Oid fn;
  if (IsA(node, FuncExpr)) {
    if (((FuncExpr*)node)->funcretset) return nullptr;
    fn = ((FuncExpr*)node)->funcid;
    *fargs = ((FuncExpr*)node)->args;
  } else {
    set_opfuncid((OpExpr*)node);
    fn = ((OpExpr*)node)->opfuncid;
    *fargs = ((OpExpr*)node)->args;
  }
  return allowed_fn(fn);
}

// A searched CASE whose results `result` translates (conditions are boolean): operands are
// condition, result pairs, then the ELSE result.
int translate_case(Builder* b, CaseExpr* c, ExprType type, int (*result)(Builder*, Node*)) {
  const int n = 2 * list_length(c->args) + 1;
  int* ops = (int*)palloc(sizeof(int) * n);
  int k = 0;
  ListCell* lc;
  foreach (lc, c->args) {
    CaseWhen* w = (CaseWhen*)lfirst(lc);
    ops[k++] = translate_bool(b, (Node*)w->expr);
    ops[k++] = result(b, (Node*)w->result);
  }
  ops[k++] = result(b, (Node*)c->defresult);
  return add_node(b, make(ExprOp::Case, type), n, ops);
}

// A number-valued node.
int translate_num(Builder* b, Node* node) {
  check_stack_depth();
  switch (nodeTag(node)) {
    case T_Var: {
      Var* v = (Var*)node;
      if (v->varlevelsup != 0 || (v->varno != 1 && v->varno != 2)) unsupported(node);
      if (v->varattno <= 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("system columns and whole-row references are not supported in pair expressions"),
                        errhint("%s", kAllowHint)));
      if (!number_type(v->vartype)) unsupported(node);
      ExprNode n = make(ExprOp::Col, ExprType::Num);
      n.side = uint8_t(v->varno - 1);
      n.col = uint16_t(column_index(b, v->varno - 1, v->varattno));
      return add_node(b, n, 0, nullptr);
    }
    case T_Const: {
      Const* c = (Const*)node;
      if (!number_type(c->consttype)) unsupported(node);
      ExprNode n = make(ExprOp::Const, ExprType::Num);
      n.is_null = c->constisnull;
      n.value = c->constisnull ? 0 : const_value(c);
      return add_node(b, n, 0, nullptr);
    }
    case T_RelabelType: {
      RelabelType* r = (RelabelType*)node;
      if (!number_type(r->resulttype)) unsupported(node);
      return translate_num(b, (Node*)r->arg);
    }
    case T_FuncExpr:
    case T_OpExpr: {
      List* fargs;
      const AllowedFn* a = called_fn(node, &fargs);
      if (!a || a->kind == FN_CMP) unsupported(node);
      if (a->kind == FN_CAST || a->kind == FN_PLUS) return translate_num(b, (Node*)linitial(fargs));
      if (a->op == ExprOp::Pow && !IsA(lsecond(fargs), Const))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("power and ^ need a constant exponent in pair expressions"),
                        errhint("%s", kAllowHint)));
      int ops[2];
      int k = 0;
      ListCell* lc;
      foreach (lc, fargs) ops[k++] = translate_num(b, (Node*)lfirst(lc));
      return add_node(b, make(a->op, ExprType::Num), k, ops);
    }
    case T_MinMaxExpr: {
      MinMaxExpr* m = (MinMaxExpr*)node;
      if (!number_type(m->minmaxtype)) unsupported(node);
      const int n = list_length(m->args);
      int* ops = (int*)palloc(sizeof(int) * n);
      int k = 0;
      ListCell* lc;
      foreach (lc, m->args) ops[k++] = translate_num(b, (Node*)lfirst(lc));
      return add_node(b, make(m->op == IS_LEAST ? ExprOp::Least : ExprOp::Greatest, ExprType::Num), n, ops);
    }
    case T_CaseExpr: {
      CaseExpr* c = (CaseExpr*)node;
      if (c->arg || !number_type(c->casetype)) unsupported(node);
      return translate_case(b, c, ExprType::Num, translate_num);
    }
    default:
      unsupported(node);
  }
}

// A boolean node.
int translate_bool(Builder* b, Node* node) {
  check_stack_depth();
  switch (nodeTag(node)) {
    case T_Const: {
      Const* c = (Const*)node;
      if (getBaseType(c->consttype) != BOOLOID) unsupported(node);
      ExprNode n = make(ExprOp::Truth, ExprType::Bool);
      n.truth = c->constisnull ? Tri::Unknown : DatumGetBool(c->constvalue) ? Tri::True : Tri::False;
      return add_node(b, n, 0, nullptr);
    }
    case T_FuncExpr:
    case T_OpExpr: {
      List* fargs;
      const AllowedFn* a = called_fn(node, &fargs);
      if (!a || a->kind != FN_CMP) unsupported(node);
      int ops[2] = {translate_num(b, (Node*)linitial(fargs)), translate_num(b, (Node*)lsecond(fargs))};
      ExprNode n = make(ExprOp::Cmp, ExprType::Bool);
      n.cmp = a->cmp;
      return add_node(b, n, 2, ops);
    }
    case T_BoolExpr: {
      BoolExpr* e = (BoolExpr*)node;
      const int n = list_length(e->args);
      int* ops = (int*)palloc(sizeof(int) * n);
      int k = 0;
      ListCell* lc;
      foreach (lc, e->args) ops[k++] = translate_bool(b, (Node*)lfirst(lc));
      const ExprOp op = e->boolop == AND_EXPR ? ExprOp::And : e->boolop == OR_EXPR ? ExprOp::Or : ExprOp::Not;
      return add_node(b, make(op, ExprType::Bool), n, ops);
    }
    case T_NullTest: {
      NullTest* t = (NullTest*)node;
      if (t->argisrow || !number_type(exprType((Node*)t->arg))) unsupported(node);
      int op = translate_num(b, (Node*)t->arg);
      return add_node(b, make(t->nulltesttype == IS_NULL ? ExprOp::IsNull : ExprOp::IsNotNull, ExprType::Bool), 1, &op);
    }
    case T_CaseExpr: {
      CaseExpr* c = (CaseExpr*)node;
      if (c->arg || getBaseType(c->casetype) != BOOLOID) unsupported(node);
      return translate_case(b, c, ExprType::Bool, translate_bool);
    }
    default:
      unsupported(node);
  }
}

// 0A000 naming the construct.
void unsupported(Node* node) {
  const char* what = nullptr;
  switch (nodeTag(node)) {
    case T_FuncExpr:
      what = psprintf("function %s", format_procedure(((FuncExpr*)node)->funcid));
      break;
    case T_OpExpr:
      what = psprintf("operator %s", format_operator(((OpExpr*)node)->opno));
      break;
    case T_Var:
      what = psprintf("a column of type %s", format_type_be(((Var*)node)->vartype));
      if (((Var*)node)->varno != 1 && ((Var*)node)->varno != 2) what = "a column of another relation";
      break;
    case T_Const:
      what = psprintf("a constant of type %s", format_type_be(((Const*)node)->consttype));
      break;
    case T_SubLink: what = "a subquery"; break;
    case T_Aggref: what = "an aggregate function"; break;
    case T_WindowFunc: what = "a window function"; break;
    case T_Param: what = "a parameter"; break;
    case T_CoalesceExpr: what = "COALESCE"; break;
    case T_NullIfExpr: what = "NULLIF"; break;
    case T_DistinctExpr: what = "IS DISTINCT FROM"; break;
    case T_ScalarArrayOpExpr: what = "IN, ANY or ALL"; break;
    case T_BooleanTest: what = "IS TRUE, IS FALSE or IS UNKNOWN"; break;
    case T_CaseExpr: what = "this form of CASE (simple CASE, or a result that is not a number or boolean)"; break;
    case T_MinMaxExpr: what = psprintf("LEAST or GREATEST of type %s", format_type_be(((MinMaxExpr*)node)->minmaxtype)); break;
    case T_CoerceViaIO: case T_ArrayCoerceExpr: case T_RelabelType: case T_CoerceToDomain:
      what = psprintf("a conversion to type %s", format_type_be(exprType(node)));
      break;
    case T_RowExpr: what = "a row constructor"; break;
    case T_ArrayExpr: what = "an array constructor"; break;
    case T_SQLValueFunction: what = "an SQL value function"; break;
    case T_NullTest: what = "IS NULL on a row or a non-numeric value"; break;
    default: what = psprintf("an expression of type %s", format_type_be(exprType(node))); break;
  }
  ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                  errmsg("%s is not supported in pair expressions", what),
                  errhint("%s", kAllowHint)));
  pg_unreachable();
}

// ------------------------------------------------------------------------------------------
// Parsing and analysis as the calling user.
// ------------------------------------------------------------------------------------------

const char kPrefix[] = "SELECT ";

// Error context of the parse and analysis: positions point into the expression text.
struct ParseCtx {
  const char* text;
  const char* what;  // "predicate" or "value"
};

void parse_error_callback(void* arg) {
  ParseCtx* c = (ParseCtx*)arg;
  const int pos = geterrposition();
  if (pos > 0) {
    errposition(0);
    internalerrposition(Max(pos - int(sizeof kPrefix - 1), 1));
    internalerrquery(c->text);
  }
  errcontext("pair expression (%s)", c->what);
}

// Parses `text` as one expression and analyzes it over the range table of `ps`.
Node* analyze(ParseState* ps, const char* text, bool predicate, const char* fname) {
  char* sql = psprintf("%s%s", kPrefix, text);
  ps->p_sourcetext = sql;
  List* raw = raw_parser(sql, RAW_PARSE_DEFAULT);
  SelectStmt* s = nullptr;
  if (list_length(raw) == 1 && IsA(((RawStmt*)linitial(raw))->stmt, SelectStmt))
    s = (SelectStmt*)((RawStmt*)linitial(raw))->stmt;
  if (!s || s->op != SETOP_NONE || list_length(s->targetList) != 1 || s->fromClause || s->whereClause ||
      s->groupClause || s->havingClause || s->windowClause || s->valuesLists || s->sortClause ||
      s->limitOffset || s->limitCount || s->lockingClause || s->withClause || s->distinctClause ||
      s->intoClause)
    ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                    errmsg("%s of %s must be a single expression", predicate ? "predicate" : "value", fname)));
  ResTarget* rt = (ResTarget*)linitial(s->targetList);
  if (rt->name || (IsA(rt->val, ColumnRef) && IsA(llast(((ColumnRef*)rt->val)->fields), A_Star)))
    ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                    errmsg("%s of %s must be a single expression", predicate ? "predicate" : "value", fname)));
  Node* e = transformExpr(ps, rt->val, predicate ? EXPR_KIND_WHERE : EXPR_KIND_SELECT_TARGET);
  if (predicate) {
    e = coerce_to_boolean(ps, e, "pair predicate");
  } else {
    const Oid t = exprType(e);
    Node* c = number_type(t) ? coerce_to_target_type(ps, e, t, FLOAT8OID, -1, COERCION_IMPLICIT,
                                                     COERCE_IMPLICIT_CAST, -1)
                             : nullptr;
    if (!c)
      ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                      errmsg("value of %s must be a number", fname),
                      errdetail("The expression has type %s.", format_type_be(t))));
    e = c;
  }
  assign_expr_collations(ps, e);
  return e;
}

// What one call reads and computes (palloc'd, filled by prepare()).
struct Prepared {
  Oid relid[2];
  bool self;
  const char* relname[2];
  Builder b;
  int pred_root;
  int value_root;
  AttrNumber key[2];  // gpu_join: the key column of each relation
  // rows read, per side (self: side 0)
  int64 n[2];
  double* data[2];
  uint8* nulls[2];
  int64* ids[2];
};

// Opens the relations, analyzes the texts, checks privileges and translates. PostgreSQL code.
void prepare(Prepared* p, const char* fname, const char* pred_text, const char* value_text, bool want_key,
             const char* id_name) {
  p->self = p->relid[0] == p->relid[1];
  Relation rel[2];
  int64 expect;
  rel[0] = open_locked(p->relid[0]);
  p->relname[0] = readable_relation_name(rel[0], &expect);
  rel[1] = p->self ? rel[0] : open_locked(p->relid[1]);
  p->relname[1] = p->self ? p->relname[0] : readable_relation_name(rel[1], &expect);
  ParseState* ps = make_parsestate(nullptr);
  ParseNamespaceItem* ns[2];
  const char* alias[2] = {"a", "b"};
  for (int s = 0; s < 2; ++s) {
    ns[s] = addRangeTableEntryForRelation(ps, rel[s], AccessShareLock, makeAlias(alias[s], NIL), false, true);
    addNSItemToQuery(ps, ns[s], false, true, true);
  }
  builder_init(&p->b, p->self, RelationGetDescr(rel[0])->natts, RelationGetDescr(rel[1])->natts);
  Node* pred = nullptr;
  Node* value = nullptr;
  ParseCtx ctx;
  ErrorContextCallback cb;
  cb.callback = parse_error_callback;
  cb.arg = &ctx;
  cb.previous = error_context_stack;
  error_context_stack = &cb;
  if (value_text) {
    ctx = {value_text, "value"};
    value = analyze(ps, value_text, false, fname);
  }
  if (pred_text) {
    ctx = {pred_text, "predicate"};
    pred = analyze(ps, pred_text, true, fname);
  }
  error_context_stack = cb.previous;
  // SELECT privilege on the relations, or on every column the expressions name.
  ExecCheckRTPerms(ps->p_rtable, true);
  if (value) value = eval_const_expressions(nullptr, value);
  if (pred) pred = eval_const_expressions(nullptr, pred);
  p->value_root = value ? translate_num(&p->b, value) : -1;
  p->pred_root = pred ? translate_bool(&p->b, pred) : -1;
  if (want_key) {
    for (int s = 0; s < (p->self ? 1 : 2); ++s)
      p->key[s] = key_column(rel[s], RelationGetDescr(rel[s]), p->relname[s], id_name,
                             id_name ? id_name : nullptr,
                             "Name the key column, for example gpu_join('a', 'b', 'a.x < b.x', id => 'star_id').");
  }
  free_parsestate(ps);
  if (!p->self) relation_close(rel[1], NoLock);
  relation_close(rel[0], NoLock);
}

// Receives rows (columns as float8, then the key) into growing column arrays.
struct ExprReceiver {
  DestReceiver pub;
  int ncols;
  bool with_key;
  int64 n, cap;
  double** cols;
  uint8** nuls;
  bool any_null;
  int64* ids;
  MemoryContext ctx;
};

bool receive_row(TupleTableSlot* slot, DestReceiver* self) {
  ExprReceiver* r = (ExprReceiver*)self;
  slot_getallattrs(slot);
  if (r->with_key && slot->tts_isnull[r->ncols]) return true;  // no key: cannot be reported
  if (r->n == r->cap) {
    const int64 cap = r->cap ? r->cap * 2 : 16384;
    if (cap > int64(UINT32_MAX))
      ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                      errmsg("too many rows for a pair expression"),
                      errdetail("A relation may have at most %u rows.", UINT32_MAX)));
    for (int c = 0; c < r->ncols; ++c) {
      r->cols[c] = (double*)realloc_big(r->ctx, r->cols[c], Size(r->n) * sizeof(double), Size(cap) * sizeof(double));
      r->nuls[c] = (uint8*)realloc_big(r->ctx, r->nuls[c], Size(r->n), Size(cap));
    }
    if (r->with_key) r->ids = (int64*)realloc_big(r->ctx, r->ids, Size(r->n) * sizeof(int64), Size(cap) * sizeof(int64));
    r->cap = cap;
  }
  for (int c = 0; c < r->ncols; ++c) {
    const bool isnull = slot->tts_isnull[c];
    r->nuls[c][r->n] = isnull ? 1 : 0;
    r->cols[c][r->n] = isnull ? 0.0 : DatumGetFloat8(slot->tts_values[c]);
    r->any_null |= isnull;
  }
  if (r->with_key) r->ids[r->n] = DatumGetInt64(slot->tts_values[r->ncols]);
  r->n++;
  return true;
}

// Reads the columns of side `s` (and its key) through SPI as the calling user, column-major.
void read_side(Prepared* p, int s, bool with_key, MemoryContext ctx) {
  Relation rel = relation_open(p->relid[s], NoLock);  // locked by prepare()
  TupleDesc td = RelationGetDescr(rel);
  StringInfoData q;
  initStringInfo(&q);
  appendStringInfoString(&q, "SELECT ");
  const int nc = p->b.ncols[s];
  for (int c = 0; c < nc; ++c)
    appendStringInfo(&q, "%s(%s)::pg_catalog.float8", c ? ", " : "",
                     quote_identifier(NameStr(TupleDescAttr(td, p->b.cols[s][c] - 1)->attname)));
  if (with_key)
    appendStringInfo(&q, "%s(%s)::pg_catalog.int8", nc ? ", " : "",
                     quote_identifier(NameStr(TupleDescAttr(td, p->key[s] - 1)->attname)));
  if (nc == 0 && !with_key) appendStringInfoString(&q, "NULL");
  appendStringInfo(&q, " FROM %s", p->relname[s]);
  relation_close(rel, NoLock);
  ExprReceiver r;
  memset(&r, 0, sizeof r);
  r.ncols = nc;
  r.with_key = with_key;
  r.ctx = ctx;
  r.cols = (double**)palloc0(sizeof(double*) * Max(nc, 1));
  r.nuls = (uint8**)palloc0(sizeof(uint8*) * Max(nc, 1));
  SPIPlanPtr plan = SPI_prepare(q.data, 0, nullptr);
  if (!plan) elog(ERROR, "SPI_prepare failed for %s: %s", p->relname[s], SPI_result_code_string(SPI_result));
  if (nc == 0 && !with_key) r.ncols = 0;
  run_plan_into(plan, &r.pub, receive_row, p->relname[s]);
  SPI_freeplan(plan);
  // Rows without columns still count (a constant predicate): grow once if none were stored.
  p->n[s] = r.n;
  p->data[s] = (double*)alloc_big(ctx, Max(Size(nc) * Size(r.n) * sizeof(double), 8));
  for (int c = 0; c < nc; ++c) memcpy(p->data[s] + Size(c) * Size(r.n), r.cols[c], Size(r.n) * sizeof(double));
  p->nulls[s] = nullptr;
  if (r.any_null) {
    p->nulls[s] = (uint8*)alloc_big(ctx, Max(Size(nc) * Size(r.n), 8));
    for (int c = 0; c < nc; ++c) memcpy(p->nulls[s] + Size(c) * Size(r.n), r.nuls[c], Size(r.n));
  }
  p->ids[s] = with_key ? r.ids : nullptr;
}

// Arguments of one call.
struct CallArgs {
  const char* fname;
  PairExprKind kind;
  Oid a, b;
  const char* pred;
  const char* value;
  const char* id;
  double lo, hi;
  int nbuckets;
};

// Runs one call: analysis, reading, the engine. Returns the result; join pairs go to `sink`.
PairExprResult run_call(const CallArgs& a, Prepared* p, PairSink* sink_or_null, ReturnSetInfo* rsinfo) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool join = a.kind == PairExprKind::Join;
  MemoryContext ctx = nullptr;
  pg_guard([&] {
    memset(p, 0, sizeof *p);
    p->relid[0] = a.a;
    p->relid[1] = a.b;
    ctx = AllocSetContextCreate(CurrentMemoryContext, "gpu2bs pair expression", ALLOCSET_DEFAULT_SIZES);
    MemoryContext old = MemoryContextSwitchTo(ctx);
    prepare(p, a.fname, a.pred, a.value, join, a.id);
    MemoryContextSwitchTo(old);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    for (int s = 0; s < (p->self ? 1 : 2); ++s) read_side(p, s, join, ctx);
    SPI_finish();
  });
  const double scan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  PairExpr e;
  for (int k = 0; k < p->b.nnodes; ++k) e.nodes.push_back(p->b.nodes[k]);
  e.args.assign(p->b.args, p->b.args + p->b.nargs);
  e.predicate = p->pred_root;
  e.value = p->value_root;
  e.ncols[0] = p->b.ncols[0];
  e.ncols[1] = p->self ? p->b.ncols[0] : p->b.ncols[1];
  e.validate();
  PairExprProblem prob;
  prob.kind = a.kind;
  prob.self = p->self;
  prob.prec = current_precision();
  prob.expr = &e;
  prob.a = ExprSide{p->data[0], p->nulls[0], p->n[0], e.ncols[0]};
  const int sb = p->self ? 0 : 1;
  prob.b = ExprSide{p->data[sb], p->nulls[sb], p->n[sb], e.ncols[1]};
  prob.lo = a.lo;
  prob.hi = a.hi;
  prob.nbuckets = a.nbuckets;
  prob.max_pairs = uint64_t(max_result_rows_setting);
  std::string reason;
  Engine* eng = choose_expr_engine(&reason);
  PgControl ctl;
  ctl.stats.scan_s = scan_s;
  std::unique_ptr<TuplestoreSink> js;
  if (join) js.reset(new TuplestoreSink(rsinfo, p->ids[0], p->ids[sb], p->self));
  PairExprResult res = eng->pair_expr(prob, join ? static_cast<PairSink*>(js.get()) : sink_or_null, ctl);
  record_run(a.fname, eng->name(), ctl.stats);
  pg_guard([&] { MemoryContextDelete(ctx); });
  return res;
}

const char* text_arg(FunctionCallInfo fcinfo, int k) {
  if (PG_ARGISNULL(k)) return nullptr;
  const char* s = nullptr;
  pg_guard([&] { s = text_to_cstring(PG_GETARG_TEXT_PP(k)); });
  return s;
}

}  // namespace

// gpu_pair_count(a regclass, b regclass, predicate text) -> bigint
GPU2BS_FUNCTION(gpu2bs_pair_expr_count) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) PG_RETURN_NULL();
  CallArgs a = {};
  a.fname = "gpu_pair_count";
  a.kind = PairExprKind::Count;
  a.a = PG_GETARG_OID(0);
  a.b = PG_GETARG_OID(1);
  a.pred = text_arg(fcinfo, 2);
  Prepared p;
  PairExprResult r = run_call(a, &p, nullptr, nullptr);
  PG_RETURN_INT64(int64(r.count));
}

// gpu_pair_sum(a regclass, b regclass, value text, predicate text DEFAULT NULL) -> float8
GPU2BS_FUNCTION(gpu2bs_pair_expr_sum) {
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) PG_RETURN_NULL();
  CallArgs a = {};
  a.fname = "gpu_pair_sum";
  a.kind = PairExprKind::Sum;
  a.a = PG_GETARG_OID(0);
  a.b = PG_GETARG_OID(1);
  a.value = text_arg(fcinfo, 2);
  a.pred = text_arg(fcinfo, 3);
  Prepared p;
  PairExprResult r = run_call(a, &p, nullptr, nullptr);
  if (r.count == 0) PG_RETURN_NULL();
  // sum(float8) raises when the running total overflows from finite values.
  if (std::isinf(r.sum) && !r.sum_has_inf) throw ExprError(ExprFault::Overflow);
  PG_RETURN_FLOAT8(r.sum);
}

// gpu_pair_histogram(a, b, value, lo, hi, nbuckets, predicate DEFAULT NULL) -> bigint[]
GPU2BS_FUNCTION(gpu2bs_pair_expr_histogram) {
  for (int k = 0; k < 6; ++k)
    if (PG_ARGISNULL(k)) PG_RETURN_NULL();
  CallArgs a = {};
  a.fname = "gpu_pair_histogram";
  a.kind = PairExprKind::Histogram;
  a.a = PG_GETARG_OID(0);
  a.b = PG_GETARG_OID(1);
  a.value = text_arg(fcinfo, 2);
  a.lo = PG_GETARG_FLOAT8(3);
  a.hi = PG_GETARG_FLOAT8(4);
  a.nbuckets = PG_GETARG_INT32(5);
  a.pred = text_arg(fcinfo, 6);
  // width_bucket's own checks, with its SQLSTATE and messages.
  const char* bad = a.nbuckets <= 0 ? "count must be greater than zero"
                    : std::isnan(a.lo) || std::isnan(a.hi) ? "operand, lower bound, and upper bound cannot be NaN"
                    : std::isinf(a.lo) || std::isinf(a.hi) ? "lower and upper bounds must be finite"
                    : a.lo == a.hi ? "lower bound cannot equal upper bound" : nullptr;
  if (bad) pg_guard([&] { ereport(ERROR, (errcode(ERRCODE_INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION), errmsg("%s", bad))); });
  if (a.lo > a.hi)
    throw Error(ErrorCode::InvalidParameter, "lo must be less than hi",
                "gpu_pair_histogram counts values in [lo, hi); width_bucket's reversed bounds are not supported.");
  if (a.nbuckets > 100000000)
    throw Error(ErrorCode::ProgramLimit, "nbuckets must be at most 100000000");
  Prepared p;
  PairExprResult r = run_call(a, &p, nullptr, nullptr);
  ArrayType* arr = nullptr;
  pg_guard([&] {
    Datum* d = (Datum*)palloc(sizeof(Datum) * size_t(a.nbuckets));
    for (int k = 0; k < a.nbuckets; ++k) d[k] = Int64GetDatum(int64(r.hist[size_t(k)]));
    arr = construct_array(d, a.nbuckets, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
  });
  PG_RETURN_ARRAYTYPE_P(arr);
}

// gpu_join(a, b, predicate, id DEFAULT NULL) -> TABLE(id1 bigint, id2 bigint)
GPU2BS_FUNCTION(gpu2bs_pair_expr_join) {
  ReturnSetInfo* rsinfo = (ReturnSetInfo*)fcinfo->resultinfo;
  pg_guard([&] { InitMaterializedSRF(fcinfo, 0); });
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2)) return (Datum)0;
  CallArgs a = {};
  a.fname = "gpu_join";
  a.kind = PairExprKind::Join;
  a.a = PG_GETARG_OID(0);
  a.b = PG_GETARG_OID(1);
  a.pred = text_arg(fcinfo, 2);
  a.id = text_arg(fcinfo, 3);
  Prepared p;
  run_call(a, &p, nullptr, rsinfo);
  return (Datum)0;
}

// ------------------------------------------------------------------------------------------
// The planner's entry points (pair_expr_sql.h): the same allow-list, checked without errors.
// ------------------------------------------------------------------------------------------

namespace {

bool bool_ok(Node* node, Index ra, Index rb);

// True when translate_num accepts `node` with Vars of ra / rb as sides a / b.
bool num_ok(Node* node, Index ra, Index rb) {
  if (!node || stack_is_too_deep()) return false;
  switch (nodeTag(node)) {
    case T_Var: {
      Var* v = (Var*)node;
      return v->varlevelsup == 0 && (Index(v->varno) == ra || Index(v->varno) == rb) && v->varattno > 0 &&
             number_type(v->vartype);
    }
    case T_Const: return number_type(((Const*)node)->consttype);
    case T_Param: {
      // a parameter the executor supplies (a prepared statement's, an outer query's): a
      // constant of the join, bound to its value before translation
      Param* p = (Param*)node;
      return (p->paramkind == PARAM_EXTERN || p->paramkind == PARAM_EXEC) && number_type(p->paramtype);
    }
    case T_RelabelType:
      return number_type(((RelabelType*)node)->resulttype) && num_ok((Node*)((RelabelType*)node)->arg, ra, rb);
    case T_FuncExpr:
    case T_OpExpr: {
      List* fargs;
      const AllowedFn* a = called_fn(node, &fargs);
      if (!a || a->kind == FN_CMP) return false;
      if (a->op == ExprOp::Pow && a->kind == FN_NUM && !IsA(lsecond(fargs), Const)) return false;
      ListCell* lc;
      foreach (lc, fargs)
        if (!num_ok((Node*)lfirst(lc), ra, rb)) return false;
      return true;
    }
    case T_MinMaxExpr: {
      MinMaxExpr* m = (MinMaxExpr*)node;
      if (!number_type(m->minmaxtype)) return false;
      ListCell* lc;
      foreach (lc, m->args)
        if (!num_ok((Node*)lfirst(lc), ra, rb)) return false;
      return true;
    }
    case T_CaseExpr: {
      CaseExpr* c = (CaseExpr*)node;
      if (c->arg || !number_type(c->casetype) || !c->defresult || !num_ok((Node*)c->defresult, ra, rb)) return false;
      ListCell* lc;
      foreach (lc, c->args) {
        CaseWhen* w = (CaseWhen*)lfirst(lc);
        if (!bool_ok((Node*)w->expr, ra, rb) || !num_ok((Node*)w->result, ra, rb)) return false;
      }
      return true;
    }
    default: return false;
  }
}

// True when translate_bool accepts `node`.
bool bool_ok(Node* node, Index ra, Index rb) {
  if (!node || stack_is_too_deep()) return false;
  switch (nodeTag(node)) {
    case T_Const: return getBaseType(((Const*)node)->consttype) == BOOLOID;
    case T_FuncExpr:
    case T_OpExpr: {
      List* fargs;
      const AllowedFn* a = called_fn(node, &fargs);
      return a && a->kind == FN_CMP && list_length(fargs) == 2 && num_ok((Node*)linitial(fargs), ra, rb) &&
             num_ok((Node*)lsecond(fargs), ra, rb);
    }
    case T_BoolExpr: {
      ListCell* lc;
      foreach (lc, ((BoolExpr*)node)->args)
        if (!bool_ok((Node*)lfirst(lc), ra, rb)) return false;
      return true;
    }
    case T_NullTest: {
      NullTest* t = (NullTest*)node;
      return !t->argisrow && number_type(exprType((Node*)t->arg)) && num_ok((Node*)t->arg, ra, rb);
    }
    case T_CaseExpr: {
      CaseExpr* c = (CaseExpr*)node;
      if (c->arg || getBaseType(c->casetype) != BOOLOID || !c->defresult || !bool_ok((Node*)c->defresult, ra, rb))
        return false;
      ListCell* lc;
      foreach (lc, c->args) {
        CaseWhen* w = (CaseWhen*)lfirst(lc);
        if (!bool_ok((Node*)w->expr, ra, rb) || !bool_ok((Node*)w->result, ra, rb)) return false;
      }
      return true;
    }
    default: return false;
  }
}

// Copies `node` with the Vars of rel_a / rel_b renumbered to 1 / 2 (translate_num's sides).
Node* remap_sides(Node* node, void* ctx) {
  if (!node) return nullptr;
  if (IsA(node, Var)) {
    const Index* r = (const Index*)ctx;
    Var* v = (Var*)copyObjectImpl(node);
    if (v->varlevelsup == 0) v->varno = Index(v->varno) == r[0] ? 1 : Index(v->varno) == r[1] ? 2 : 0;
    return (Node*)v;
  }
  return expression_tree_mutator(node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void*>(remap_sides)), ctx);
}

}  // namespace

namespace gpu2bs {
namespace pg {

bool pair_expr_clause_ok(Node* clause, Index rel_a, Index rel_b) {
  return rel_a != rel_b && bool_ok(clause, rel_a, rel_b);
}

void pair_expr_translate_clauses(List* clauses, Index rel_a, Index rel_b, PairExprClauses* out) {
  Builder b;
  builder_init(&b, false, 8, 8);
  const Index r[2] = {rel_a, rel_b};
  out->nroots = list_length(clauses);
  out->roots = (int*)palloc(sizeof(int) * Max(out->nroots, 1));
  int k = 0;
  ListCell* lc;
  foreach (lc, clauses) out->roots[k++] = translate_bool(&b, remap_sides((Node*)lfirst(lc), (void*)r));
  out->nodes = b.nodes;
  out->nnodes = b.nnodes;
  out->args = b.args;
  out->nargs = b.nargs;
  for (int s = 0; s < 2; ++s) {
    out->cols[s] = b.cols[s];
    out->ncols[s] = b.ncols[s];
  }
}

}  // namespace pg
}  // namespace gpu2bs
