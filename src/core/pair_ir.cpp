// CPU evaluation of the pair IR (pair_ir.h).
#include "pair_ir.h"

#include <cmath>
#include <cstdio>

#include "error.h"
#include "pair_ir_eval.h"
#include "sliding.h"

namespace gpu2bs {

namespace {

const char* op_text(CmpOp op) {
  static const char* t[] = {"<", "<=", "=", "<>", ">=", ">"};
  return t[int(op)];
}

const char* col_text(PairCol c) {
  static const char* t[] = {"id1", "id2", "dist"};
  return t[int(c)];
}

constexpr size_t kMaxStack = size_t(kPairStackDepth);

}  // namespace

void PairPredicate::validate() const {
  size_t depth = 0, max_depth = 0;
  for (const PairInstr& in : code) {
    switch (in.kind) {
      case PairInstr::CmpConst:
      case PairInstr::Truth:
        depth++;
        break;
      case PairInstr::CmpCols:
        if ((in.col == PairCol::Dist) != (in.col2 == PairCol::Dist))
          throw Error(ErrorCode::Internal, "pair predicate compares dist with a key");
        depth++;
        break;
      case PairInstr::ModCmp:
        if (in.col == PairCol::Dist || in.modulus == 0)
          throw Error(ErrorCode::Internal, "pair predicate has a bad modulus");
        depth++;
        break;
      case PairInstr::And:
      case PairInstr::Or:
        if (in.n < 1 || in.n > depth) throw Error(ErrorCode::Internal, "pair predicate stack underflow");
        depth -= in.n - 1;
        break;
      case PairInstr::Not:
        if (depth < 1) throw Error(ErrorCode::Internal, "pair predicate stack underflow");
        break;
    }
    max_depth = std::max(max_depth, depth);
  }
  if (!code.empty() && depth != 1) throw Error(ErrorCode::Internal, "pair predicate leaves no single value");
  if (max_depth > kMaxStack) throw Error(ErrorCode::Internal, "pair predicate too deep");
}

Tri PairPredicate::eval(int64_t id1, int64_t id2, double dist) const {
  return eval_pair_program(code.data(), int(code.size()), id1, id2, dist);
}

bool PairPredicate::dist_interval(double* lo, bool* lo_incl, double* hi, bool* hi_incl) const {
  double l = -HUGE_VAL, h = HUGE_VAL;
  bool li = true, hi_in = true;
  size_t leaves = 0;
  for (size_t k = 0; k < code.size(); ++k) {
    const PairInstr& in = code[k];
    if (in.kind == PairInstr::And && k + 1 == code.size() && in.n == leaves) break;
    if (in.kind != PairInstr::CmpConst || in.col != PairCol::Dist || std::isnan(in.dval)) return false;
    ++leaves;
    const double c = in.dval;
    switch (in.op) {
      case CmpOp::Gt: if (c > l || (c == l && li)) { l = c; li = false; } break;
      case CmpOp::Ge: if (c > l) { l = c; li = true; } break;
      case CmpOp::Lt: if (c < h || (c == h && hi_in)) { h = c; hi_in = false; } break;
      case CmpOp::Le: if (c < h) { h = c; hi_in = true; } break;
      default: return false;
    }
  }
  if (leaves > 1 && code.back().kind != PairInstr::And) return false;
  *lo = l;
  *lo_incl = li;
  *hi = h;
  *hi_incl = hi_in;
  return true;
}

std::string PairPredicate::describe() const {
  std::vector<std::string> st;
  char buf[96];
  for (const PairInstr& in : code) {
    switch (in.kind) {
      case PairInstr::CmpConst:
        if (in.col == PairCol::Dist)
          snprintf(buf, sizeof buf, "(dist %s %.17g)", op_text(in.op), in.dval);
        else
          snprintf(buf, sizeof buf, "(%s %s %lld)", col_text(in.col), op_text(in.op), (long long)in.ival);
        st.push_back(buf);
        break;
      case PairInstr::CmpCols:
        snprintf(buf, sizeof buf, "(%s %s %s)", col_text(in.col), op_text(in.op), col_text(in.col2));
        st.push_back(buf);
        break;
      case PairInstr::ModCmp:
        snprintf(buf, sizeof buf, "((%s %% %lld) %s %lld)", col_text(in.col), (long long)in.modulus,
                 op_text(in.op), (long long)in.ival);
        st.push_back(buf);
        break;
      case PairInstr::Truth:
        st.push_back(in.truth == Tri::True ? "true" : in.truth == Tri::False ? "false" : "null");
        break;
      case PairInstr::And:
      case PairInstr::Or: {
        std::string s;
        for (size_t k = st.size() - in.n; k < st.size(); ++k)
          s += (s.empty() ? "" : in.kind == PairInstr::And ? " AND " : " OR ") + st[k];
        st.resize(st.size() - in.n);
        st.push_back("(" + s + ")");
        break;
      }
      case PairInstr::Not:
        st.back() = "(NOT " + st.back() + ")";
        break;
    }
  }
  return st.empty() ? "true" : st.back();
}

bool PairPredicate::uses_keys() const {
  for (const PairInstr& in : code)
    if ((in.kind == PairInstr::CmpConst && in.col != PairCol::Dist) || in.kind == PairInstr::ModCmp ||
        (in.kind == PairInstr::CmpCols && in.col != PairCol::Dist))
      return true;
  return false;
}

size_t PairFilter::select(PairRecord* pairs, size_t n) const {
  // The in-place stable select of the data-sliding primitives (src/core/sliding.h): the kept
  // pairs move down in order within the page, with no second buffer.
  if (!keys_used_) {
    // dist alone: no key lookups (two cache misses per pair on large inputs)
    return sliding::select_inplace(pairs, n, [&](const PairRecord& r) { return pred_.keep(0, 0, r.dist); });
  }
  return sliding::select_inplace(pairs, n, [&](const PairRecord& r) {
    int64_t id1, id2;
    keys_.get(r, &id1, &id2);
    return pred_.keep(id1, id2, r.dist);
  });
}

}  // namespace gpu2bs
