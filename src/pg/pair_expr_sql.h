// Pair expressions from the planner: join clauses over two base relations checked against the
// allow-list of docs/pair-expressions.md and translated into the engine's tree
// (src/core/pair_expr.h) by the same translator as gpu_pair_count and gpu_join.
#pragma once

#include "pg.h"

extern "C" {
#include "nodes/pg_list.h"
}

#include "../core/pair_expr.h"

namespace gpu2bs {
namespace pg {

// Translated clauses (palloc'd): the nodes and arguments of one PairExpr, one boolean root per
// clause in clause order, and the attribute numbers of the columns each side reads (column c of
// side s in the tree is attribute cols[s][c] of that side's relation).
struct PairExprClauses {
  ExprNode* nodes;
  int nnodes;
  uint32* args;
  int nargs;
  AttrNumber* cols[2];
  int ncols[2];
  int* roots;
  int nroots;
};

// True when `clause` is a pair expression (boolean, every node on the allow-list) over the
// columns of range table entries rel_a and rel_b of this query level, where number-typed
// parameters (PARAM_EXTERN, PARAM_EXEC) stand for constants: with each parameter replaced by a
// Const, translating it raises no error. Raises no error itself.
bool pair_expr_clause_ok(Node* clause, Index rel_a, Index rel_b);
// Translates the clauses (each accepted by pair_expr_clause_ok) into *out. Side 0 is rel_a.
void pair_expr_translate_clauses(List* clauses, Index rel_a, Index rel_b, PairExprClauses* out);

}  // namespace pg
}  // namespace gpu2bs
