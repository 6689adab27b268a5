// Translation of PostgreSQL's analyzed quals over gpu_simjoin's columns (id1, id2, dist) into
// the pair IR (src/core/pair_ir.h). At plan time a clause becomes a template: IR instructions
// whose constants are literals or the values of parameter expressions (prepared statement and
// executor parameters), kept in the plan as expressions without Vars; at execution the template
// is instantiated with the parameters' current values.
#pragma once

#include "../pg.h"

extern "C" {
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "lib/stringinfo.h"
}

#include "core/pair_ir.h"

namespace gpu2bs {
namespace pg {

// Appends the template of `clause` to *code (one truth value), its parameter expressions to
// *params (their indices in the template count from `param_base`) and a readable form to
// *desc. Returns false, appending nothing, when the clause is not translatable: only
// comparisons of id1 / id2 with integer constants or parameters or with each other, of dist
// with float constants or parameters, (id % k) compared likewise with a constant k != 0,
// BETWEEN, AND, OR and NOT over them. `relid`: the function's range table index.
bool translate_clause(Node* clause, Index relid, List** code, List** params, int param_base, StringInfo desc);

// The predicate of a template, with parameters evaluated from `param_states` (ExprStates of
// the template's parameter expressions, in order) in `econtext`. PostgreSQL code (may ereport).
void instantiate_predicate(List* code, List* param_states, ExprContext* econtext, PairPredicate* out);

}  // namespace pg
}  // namespace gpu2bs
