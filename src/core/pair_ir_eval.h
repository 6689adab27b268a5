// Evaluation of a pair IR program (pair_ir.h), shared by the CPU (PairPredicate::eval) and the
// GPU join kernel (kernels/join/kernel.cu), so both engines keep exactly the same pairs. SQL's
// rules: three-valued AND/OR/NOT, float8 comparison with NaN equal to NaN and above every other
// value, int8 % with the sign of the dividend (x % -1 = 0).
#pragma once

#include <cstdint>

#include "arith.h"
#include "pair_ir.h"

namespace gpu2bs {

// Deepest stack a program may use (PairPredicate::validate checks it).
constexpr int kPairStackDepth = 64;

namespace pair_eval {

G2_HD int cmp_double(double x, double y) {
  const bool nx = x != x, ny = y != y;
  if (nx) return ny ? 0 : 1;
  if (ny) return -1;
  return x < y ? -1 : x > y ? 1 : 0;
}

G2_HD int cmp_int(int64_t x, int64_t y) { return x < y ? -1 : x > y ? 1 : 0; }

G2_HD bool holds(CmpOp op, int c) {
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

G2_HD int64_t sql_mod(int64_t x, int64_t m) { return m == -1 ? 0 : x % m; }

G2_HD Tri tri_of(bool b) { return b ? Tri::True : Tri::False; }

}  // namespace pair_eval

// The truth of the program code[0, n) for one pair (an empty program is true). The program
// must have passed PairPredicate::validate.
G2_HD Tri eval_pair_program(const PairInstr* code, int n, int64_t id1, int64_t id2, double dist) {
  using namespace pair_eval;
  if (n == 0) return Tri::True;
  Tri stack[kPairStackDepth];
  int sp = 0;
  for (int pc = 0; pc < n; ++pc) {
    const PairInstr& in = code[pc];
    const int64_t v1 = in.col == PairCol::Id1 ? id1 : id2;
    switch (in.kind) {
      case PairInstr::CmpConst:
        stack[sp++] = in.col == PairCol::Dist ? tri_of(holds(in.op, cmp_double(dist, in.dval)))
                                              : tri_of(holds(in.op, cmp_int(v1, in.ival)));
        break;
      case PairInstr::CmpCols: {
        const int64_t v2 = in.col2 == PairCol::Id1 ? id1 : id2;
        stack[sp++] = in.col == PairCol::Dist ? tri_of(holds(in.op, 0)) : tri_of(holds(in.op, cmp_int(v1, v2)));
        break;
      }
      case PairInstr::ModCmp:
        stack[sp++] = tri_of(holds(in.op, cmp_int(sql_mod(v1, in.modulus), in.ival)));
        break;
      case PairInstr::Truth:
        stack[sp++] = in.truth;
        break;
      case PairInstr::And: {
        Tri r = Tri::True;
        for (uint32_t k = 0; k < in.n; ++k) {
          const Tri v = stack[--sp];
          if (v == Tri::False) r = Tri::False;
          else if (v == Tri::Unknown && r == Tri::True) r = Tri::Unknown;
        }
        stack[sp++] = r;
        break;
      }
      case PairInstr::Or: {
        Tri r = Tri::False;
        for (uint32_t k = 0; k < in.n; ++k) {
          const Tri v = stack[--sp];
          if (v == Tri::True) r = Tri::True;
          else if (v == Tri::Unknown && r == Tri::False) r = Tri::Unknown;
        }
        stack[sp++] = r;
        break;
      }
      case PairInstr::Not: {
        const Tri v = stack[sp - 1];
        stack[sp - 1] = v == Tri::Unknown ? v : v == Tri::True ? Tri::False : Tri::True;
        break;
      }
    }
  }
  return stack[0];
}

}  // namespace gpu2bs
